"""Harness settings: which forge, which repo, which students, where state lives.

One YAML file (`--config`, or `SENPAI_CONFIG`) read by the wrapper and by every job it launches;
on Kubernetes the chart renders it into a ConfigMap.  Secrets are never in it: only the *names*
of the environment variables that hold them.
"""

import hashlib
import json
import logging
import math
import os
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from senpai.config import credentials, prices
from senpai.config.load import load_yaml_model
from senpai.config.pod import JobPodSettings, env_problems
from senpai.config.roles import Role
from senpai.config.time_limits import JOB_OVERHEAD_SECONDS, RELAUNCH, HarnessTimes, LLMCall, waits
from senpai.errors import ConfigError

ENV_CONFIG = "SENPAI_CONFIG"
log = logging.getLogger(__name__)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def renamed(data: object, old: str, new: str, where: str, info: ValidationInfo) -> object:
    """`data` (a mapping being validated, at `where`: "" or "runtime.advisor.") with its deprecated
    key `old` read as `new`, and a one-line warning naming the file (`info.context["source"]`, as
    `load.parse_yaml_model` passes it; "harness config" without one) and the new key; the rename is
    noted in `info.context["renamed"]`, so an error inside the section names `old`. A file that
    sets both is refused (ValueError: the load's ConfigError names the file). Anything else is
    returned as is."""
    if not isinstance(data, dict) or old not in data:
        return data
    if new in data:
        raise ValueError(
            f"{where}{old} and {where}{new} are both set: {where}{old} is the deprecated name of {where}{new}; "
            f"keep {where}{new} alone"
        )
    context = info.context or {}
    context.get("renamed", {})[f"{where}{new}"] = f"{where}{old}"  # an error inside it names the file's key
    source = context.get("source", "harness config")
    log.warning("%s: %s%s is deprecated, read as %s%s: rename it", source, where, old, where, new)
    return {(new if k == old else k): v for k, v in data.items()}


class StudentSpec(_Strict):
    """One configured student: its name (the `student:<name>` label, job names) and the GPUs and CPU
    cores each of its jobs and its verifier's get."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,30}$")
    gpus: int = Field(0, ge=0)
    cpus: int = Field(
        1,
        ge=1,
        le=1024,
        description="CPU cores of each of its jobs (and its verifier's): OMP_NUM_THREADS, MKL_NUM_THREADS and "
        "OPENBLAS_NUM_THREADS are set to it, so concurrent jobs do not oversubscribe the machine. On Kubernetes, "
        "give fleet.resources.student and .verifier a cpu request to match.",
    )


class ForgeSettings(_Strict):
    """Which forge and repository: the REST root, `owner/name`, the env var holding the bot's token, the
    research base branch and the author associations whose free text steers."""

    base_url: str = Field("https://api.github.com", description="REST root: github.com, GHES or local.")
    repo: str = Field(pattern=r"^[\w.-]+/[\w.-]+$", description="owner/name of the target repository.")
    token_env: str = Field(
        "GITHUB_TOKEN", description="Env var holding the bot's token (required: the local forge refuses anonymous writes too)."
    )
    base_branch: str = Field("advisor", description="Research base branch; merges land here.")
    trusted: list[str] = Field(
        default=["OWNER", "COLLABORATOR"],
        description="author_association values whose free text steers (is delivered to the agents). A slash "
        "command that changes state needs write permission on the repository instead, whatever the association "
        "(GitHub's MEMBER is any member of the owning organisation, even read-only, so it is not in the default).",
    )

    def token(self) -> str | None:
        """The bot's token, the secret named `token_env` (`senpai.config.credentials.get`); None if unset or empty."""
        return credentials.get(self.token_env)

    @property
    def scope(self) -> str:
        """ "<base_url> <repo>": the one repository these settings name, e.g. to key a cache by it."""
        return f"{self.base_url.rstrip('/')} {self.repo}"


INSTALLATION_ID = r"^[0-9a-f]{8}$"  # what an installation id is (`TrackerSettings.installation`)


class TrackerSettings(_Strict):
    """The W&B project, entity, shared `WANDB_DIR` and mode of every run."""

    project: str = "senpai"
    entity: str | None = None
    dir: str = Field(description="WANDB_DIR shared by every job; offline runs are written under it.")
    mode: Literal["auto", "online", "offline"] = Field("auto", description="auto: online if WANDB_API_KEY is set, else offline.")
    installation: str | None = Field(
        None,
        pattern=INSTALLATION_ID,
        description="This installation's id (8 hex digits), the end of every run id. Unset: derived from the "
        "repository, project, entity and dir (`installation_id`).",
    )

    def installation_id(self, repo: str = "") -> str:
        """`installation`, else the first 8 hex digits of the SHA-256 of (`repo`, project, entity,
        dir) as configured: the same in the wrapper, every job and the CLI, and different for two
        installations (two demos, two clusters on two repositories) logging to one W&B project.
        It is never read from a file: every folder a job can write (WANDB_DIR, the shared PVC) is
        one a PR's train command can write too (docs/wandb.md)."""
        if self.installation:
            return self.installation
        parts = (repo, self.project, self.entity or "", self.dir)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]

    def resolved_mode(self) -> str:
        """`online` or `offline`: `mode`, with `auto` resolved by whether the secret `WANDB_API_KEY` is held now."""
        if self.mode != "auto":
            return self.mode
        return "online" if credentials.get("WANDB_API_KEY") else "offline"


class LocalFleetSettings(_Strict):
    """Local backend: jobs are supervised subprocesses on this machine, one folder each under `dir`."""

    backend: Literal["local"] = "local"
    dir: str = Field(description="Local backend: one folder per job (work copy, log, status).")
    holdout_dir: str | None = Field(
        None,
        description="The sealed holdout: a directory outside every work copy, given only to the verifier's score step "
        "(as `{holdout}`). None: the score command gets an empty directory.",
    )


class Resources(_Strict):
    """Kubernetes container resources; quantities are strings ("500m", "2Gi")."""

    requests: dict[str, str] = Field(default_factory=lambda: {"cpu": "500m", "memory": "1Gi"})
    limits: dict[str, str] = Field(default_factory=lambda: {"memory": "4Gi"})


class SecretEnv(_Strict):
    """One env var of a job filled from an existing Secret (by reference; values never in config)."""

    env: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    secret: str = Field(description="Secret name in the fleet namespace.")
    key: str
    optional: bool = False


class Toleration(_Strict):
    """A core/v1 Toleration of GPU (student) job pods, in the Kubernetes shape (tolerationSeconds)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    key: str | None = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = Field(
        None, ge=0, alias="tolerationSeconds", description="NoExecute only: seconds the pod stays bound after a taint."
    )


class SealedHoldout(_Strict):
    """Where verifier Jobs find the sealed holdout on Kubernetes: a Secret, or a PVC (sub)path.

    Mounted read-only into the scoring container of verifier Jobs only; student and advisor pods and
    the verifier's train container never mount it.
    """

    secret: str | None = Field(None, description="Secret whose keys are the holdout's files.")
    claim: str | None = Field(None, description="PersistentVolumeClaim holding the holdout.")
    sub_path: str | None = Field(None, description="Sub-path of the claim to mount (claim only).")
    mount_path: str = Field("/holdout", pattern=r"^/")

    @model_validator(mode="after")
    def _one_source(self) -> "SealedHoldout":
        if (self.secret is None) == (self.claim is None):
            raise ValueError("holdout: give exactly one of secret or claim")
        if self.sub_path is not None and self.claim is None:
            raise ValueError("holdout.sub_path needs a claim")
        return self


class KubernetesFleetSettings(_Strict):
    """Kubernetes backend: one batch/v1 Job per turn, created by the wrapper's ServiceAccount.

    The Job shape is described in docs/kubernetes.md; the chart renders these settings.
    """

    backend: Literal["kubernetes"]
    namespace: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", description="Namespace of the Jobs (the wrapper's own).")
    instance: str = Field(
        "senpai",
        pattern=r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$",
        description="Value of the app.kubernetes.io/instance label (the Helm release); the fleet lists only Jobs of its "
        "instance, and Jobs of other instances are named `<instance>-<role>-...` instead of `senpai-<role>-...`.",
    )
    images: dict[Role, str] = Field(description="Image per job role.")
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    service_account: str | None = Field(None, description="ServiceAccount of job pods (none: namespace default).")
    pvc: str = Field(description="Shared PersistentVolumeClaim mounted in every job (datasets, checkpoints, W&B dir).")
    mount_path: str = Field("/data", pattern=r"^/", description="Where the PVC is mounted in job pods.")
    config_map: str = Field(
        description="ConfigMap holding the harness config under key `harness.yaml`; mounted read-only in job pods "
        "at the directory of the job's SENPAI_CONFIG path."
    )
    secret_env: list[SecretEnv] = Field(default_factory=list, description="GitHub token, W&B key, LLM keys, by reference.")
    gpu_resource: str = Field("nvidia.com/gpu", description="Extended resource a student's `gpus` is requested as.")
    node_selector: dict[str, str] = Field(default_factory=dict, description="Applied to GPU (student) jobs.")
    tolerations: list[Toleration] = Field(default_factory=list, description="Applied to GPU (student) jobs.")
    resources: dict[Role, Resources] = Field(
        default_factory=dict, description="Container requests/limits per role; a role not listed gets Resources()."
    )
    ttl_seconds_after_finished: int = Field(
        3600, ge=300, description="Finished Jobs are garbage-collected after this, seconds; the wrapper reaps them first."
    )
    kubeconfig_context: str | None = Field(None, description="Outside a cluster: kubeconfig context (None: current).")
    holdout: SealedHoldout | None = Field(None, description="The sealed holdout, mounted only into verifier scoring.")
    pod: JobPodSettings = Field(
        default_factory=JobPodSettings,
        description="What the operator adds to every Job pod: env, volumes, labels, scheduling, security contexts "
        "(senpai.config.pod says what is refused: no credential reaches code agents wrote).",
    )

    @model_validator(mode="after")
    def _holdout_not_shared(self) -> "KubernetesFleetSettings":
        who = "students would read the holdout"
        if self.holdout is not None and self.holdout.claim == self.pvc:
            raise ValueError(f"fleet.holdout.claim is the shared claim {self.pvc!r} that every job mounts: {who}")
        claims = {pvc.get("claimName") for v in self.pod.volumes if isinstance(pvc := v.get("persistentVolumeClaim"), dict)}
        if self.holdout is not None and self.holdout.claim in claims:
            raise ValueError(f"fleet.pod.volumes mounts the holdout claim {self.holdout.claim!r} into every job: {who}")
        if problems := env_problems(self.pod.env, [s.env for s in self.secret_env]):
            raise ValueError("fleet.pod." + "; fleet.pod.".join(problems))
        return self

    def resources_for(self, role: Role) -> Resources:
        """The container resources of `role`'s jobs (advisor, student, verifier); `Resources()` if not listed."""
        return self.resources.get(role, Resources())


def _backend(v: object) -> str:
    return v.get("backend", "local") if isinstance(v, dict) else getattr(v, "backend", "local")


FleetSettings = Annotated[
    Annotated[LocalFleetSettings, Tag("local")] | Annotated[KubernetesFleetSettings, Tag("kubernetes")], Discriminator(_backend)
]


MAX_EXTRA_BODY = 8192  # bytes of `llm.extra_body` as JSON, sent with every call
_PROMPT = "the turn builds it"
# request fields senpai (or the SDK on its behalf) sets on every call, and where to set each instead
OWNED_BODY_FIELDS = {
    "model": "set llm.model",
    "messages": _PROMPT,
    "tools": _PROMPT,
    "functions": _PROMPT,
    "function_call": _PROMPT,
    "max_completion_tokens": "set llm.max_output_tokens",
    "n": "one completion per call is what the turn limits count",
    "stream": "the SDK reads whole responses",
    "stream_options": "the SDK reads whole responses",
    "reasoning_effort": "set llm.reasoning_effort",
    "timeout": "set llm.timeout",
    "num_retries": "set llm.num_retries",
    "api_key": "keys come from the env var llm.api_key_env",
    "api_base": "set llm.base_url",
    "base_url": "set llm.base_url",
}


class LLMSettings(_Strict):
    """A LiteLLM model. The key is read from `api_key_env` at call time and never enters a prompt."""

    model: str = Field(min_length=1, description='LiteLLM model name, e.g. "anthropic/claude-sonnet-4-5".')
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint; None: the provider default.")
    api_key_env: str = Field("LLM_API_KEY", description="Env var holding the provider key.")
    reasoning_effort: Literal["none", "low", "medium", "high"] | None = None
    input_cost_per_token: float | None = Field(
        None,
        ge=0,
        description="Dollars; with output_cost_per_token (the SDK applies them only together), overrides LiteLLM's price map.",
    )
    output_cost_per_token: float | None = Field(
        None,
        ge=0,
        description="Dollars; with input_cost_per_token (the SDK applies them only together), overrides LiteLLM's price map.",
    )
    timeout: int | None = Field(
        None,
        gt=0,
        strict=True,  # YAML's `true` is no number of seconds
        description="Seconds one attempt of an LLM call may take. Unset: 300 (the SDK's default), or less where the "
        "turn.wall_seconds cannot hold num_retries + 1 attempts of 300 s and the waits between them "
        "(`senpai.config.time_limits.LLMCall`); set, they must fit it.",
    )
    # bounded: the load sums the waits between attempts (`time_limits.waits`), and no provider needs more
    num_retries: int = Field(
        2, ge=0, le=10, strict=True, description="Attempts of a failed or timed-out LLM call after the first."
    )
    max_output_tokens: int | None = Field(
        None,
        ge=1,
        strict=True,
        le=1_000_000,
        description="Cap on the tokens of each completion, sent as `max_completion_tokens`. Unset: the SDK's default from "
        "LiteLLM's model info (none sent for a model LiteLLM does not know).",
    )
    extra_body: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="Fields added to every request's JSON body (the SDK's `litellm_extra_body`), e.g. `{tool_choice: required}` "
        "for a llama.cpp server.",
    )

    @field_validator("extra_body")
    @classmethod
    def _extra_body(cls, v: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """Refuse a field senpai sets itself (LiteLLM puts extra_body over the request's own fields, so
        it would replace the prompt, the tools, the output cap or the cost silently) and a body over
        MAX_EXTRA_BODY bytes as JSON, or one JSON cannot carry (NaN, infinity)."""
        for key in v:
            if key in OWNED_BODY_FIELDS:
                raise ValueError(f"{key!r} is senpai's: {OWNED_BODY_FIELDS[key]}")
        try:
            size = len(json.dumps(v, allow_nan=False).encode())
        except ValueError as e:
            raise ValueError(f"not JSON ({e})") from None
        if size > MAX_EXTRA_BODY:
            raise ValueError(f"{size} bytes as JSON (at most {MAX_EXTRA_BODY}): it goes out with every LLM call")
        return v

    def api_key(self) -> str | None:
        """The provider key, the secret named `api_key_env` (`senpai.config.credentials.get`); None if unset or empty."""
        return credentials.get(self.api_key_env)

    def unpriced(self) -> bool:
        """True when a call of this model counts $0: the two per-token prices are not both set, and
        LiteLLM's bundled price map has no non-zero price for `model` (`senpai.config.prices`).
        False when priced, or when LiteLLM is not installed here (then it cannot be told)."""
        given = self.input_cost_per_token is not None and self.output_cost_per_token is not None
        return not given and prices.litellm_prices(self.model) is False


class TurnLimits(_Strict):
    """Turn limits: hard limits on one agent turn (`runtime.<role>.turn`), enforced by the harness's
    turn guard (`senpai.agents.openhands.turn_guard`)."""

    llm_calls: int = Field(60, ge=1)
    tokens: int = Field(2_000_000, ge=1, description="Prompt + completion tokens summed over the turn's calls.")
    # finite: a stopped turn's report (`senpai-budget`) holds it as a TurnUsage (no infinite figure in the ledger)
    dollars: float = Field(5.0, ge=0, allow_inf_nan=False, description="LiteLLM's cost of the turn, dollars.")
    wall_seconds: int = Field(1800, gt=0)


class SearchRuntimeSettings(_Strict):
    """The `search` runtime of a role: no LLM, no agent turn. `llm` and `turn` are accepted and
    unused, so that a config (or the chart's values) switches runtimes by `kind` alone."""

    kind: Literal["search"] = "search"
    llm: LLMSettings | None = None
    turn: TurnLimits = TurnLimits()
    llm_agent: ClassVar[bool] = False


class OpenHandsRuntimeSettings(_Strict):
    """The `openhands` runtime of a role: an LLM agent's turn, held to its `turn` limits."""

    kind: Literal["openhands"] = "openhands"
    llm: LLMSettings
    turn: TurnLimits = TurnLimits()
    # an LLM agent: preflight pings its llm, and its job's deadline holds its turn's wall_seconds
    llm_agent: ClassVar[bool] = True


def _kind(v: object) -> str:
    return v.get("kind", "search") if isinstance(v, dict) else getattr(v, "kind", "search")


# The runtimes themselves (senpai.agents.base.Runtime) are registered in senpai.cli.wiring.RUNTIMES.
RoleRuntime = Annotated[
    Annotated[SearchRuntimeSettings, Tag("search")] | Annotated[OpenHandsRuntimeSettings, Tag("openhands")],
    Discriminator(_kind),
]


class DiversitySettings(_Strict):
    """Thresholds of the diversity alarm (`senpai.ledger.diversity`): over the newest `window`
    hypotheses, it is raised when their params spread is under `min_spread`, when more than
    `max_near_rejected` of them lie within `radius` of a rejected point, or when their code-change
    texts are more alike than `max_change_similarity`. Distances and fractions are 0..1."""

    window: int = Field(6, ge=2, description="Newest hypotheses measured.")
    min_spread: float = Field(0.1, ge=0, le=1, description="Mean pairwise params distance under which the alarm is raised.")
    radius: float = Field(0.05, ge=0, le=1, description="Distance within which a point counts as near a rejected one.")
    max_near_rejected: float = Field(0.5, ge=0, le=1, description="Fraction of near-rejected points over which it is raised.")
    max_change_similarity: float = Field(0.8, ge=0, le=1, description="Code-change similarity over which it is raised.")


class NoEffectSettings(_Strict):
    """What the wrapper does with an LLM advisor turn that changed nothing (status `no_effect`, exit
    7: `senpai.errors.NoEffect`): the same events are woken again no sooner than `wait(k)` after the
    k-th such turn ended, and after `turns` of them one issue for humans says the model calls no
    tools (`senpai.wrapper.policy`). The turns are counted from the fleet's jobs, so on Kubernetes
    the waits must end within `ttl_seconds_after_finished` (defaults: 300 + 600 s), or the config
    is refused at load (`senpai.config.harness.time_problems`)."""

    # bounded so that the longest wait, backoff_seconds * 2**(turns - 2), is a timedelta the wrapper can add
    turns: int = Field(3, ge=1, le=20, description="No-effect advisor turns over the same events before the issue for humans.")
    backoff_seconds: float = Field(
        300.0,
        ge=0,
        le=86_400,
        allow_inf_nan=False,
        description="Wait after the first no-effect turn before its events wake another, seconds; doubled per turn.",
    )

    def wait(self, k: int) -> float:
        """Seconds the same events wait after the k-th (k >= 1) no-effect turn over them ended."""
        return self.backoff_seconds * 2 ** (k - 1)


class RuntimeSettings(_Strict):
    """The advisor's and the students' runtimes (a bare string is the kind: `advisor: search`), the
    search sampler's seed, the diversity alarm's thresholds, and the backoff from advisor turns
    that change nothing."""

    advisor: RoleRuntime = SearchRuntimeSettings()
    student: RoleRuntime = SearchRuntimeSettings()
    seed: int = Field(0, description="Seed of the search runtime's sampler.")
    arms: int = Field(
        1, ge=1, le=5, description="Arms per search experiment: the proposed point (control) and arms - 1 neighbours."
    )
    diversity: DiversitySettings = DiversitySettings()
    no_effect: NoEffectSettings = NoEffectSettings()

    @field_validator("advisor", "student", mode="before")
    @classmethod
    def _shorthand(cls, v: object, info: ValidationInfo) -> object:
        return {"kind": v} if isinstance(v, str) else renamed(v, "budget", "turn", f"runtime.{info.field_name}.", info)


class SteeringSettings(_Strict):
    """How the wrapper batches human messages into one agent turn."""

    batch_seconds: float = Field(10.0, ge=0, description="Messages within this window of the first go in one turn, seconds.")


# the largest fleet cap taken, from the config or a `/senpai caps` command
CAP_MOST = {"dollars": 1e9, "tokens": 10**13, "gpu_hours": 1e9, "cpu_hours": 1e9}


class CapSettings(_Strict):
    """Fleet caps: what the whole programme may spend, summed from the ledger (`senpai.ledger.spend`); unset
    means no cap. With `max_experiments` (the experiment cap) and `patience` (no merge in the last N
    decided experiments) they are the programme's stop conditions. Once one is reached the wrapper
    opens no new experiment and opens one issue with an exhaustion report; `/senpai caps key=value`
    from a trusted human there raises it and the work resumes (`senpai.wrapper.caps`). Once
    `dollars` or `tokens` is reached, no new turn of an LLM role starts whatever `on_exhausted`
    says, except the advisor's answers to trusted humans (`senpai.wrapper.caps.llm_held`)."""

    # at most CAP_MOST, as `/senpai caps` (`senpai.ledger.commands.CAP_KEYS`): no cap is unset, never inf or nan
    dollars: float | None = Field(None, gt=0, le=CAP_MOST["dollars"], allow_inf_nan=False, description="LLM dollars in all.")
    tokens: int | None = Field(None, gt=0, le=CAP_MOST["tokens"], description="LLM tokens in all.")
    gpu_hours: float | None = Field(
        None, gt=0, le=CAP_MOST["gpu_hours"], allow_inf_nan=False, description="GPU hours of student and verifier jobs."
    )
    cpu_hours: float | None = Field(
        None, gt=0, le=CAP_MOST["cpu_hours"], allow_inf_nan=False, description="CPU-core hours of student and verifier jobs."
    )
    end_at: AwareDatetime | None = Field(None, description="Wall-clock end (ISO 8601 with a zone): nothing new after it.")
    on_exhausted: Literal["finish", "stop"] = Field(
        "finish",
        description="finish: running student and verifier jobs go on, and open experiments settle (an LLM role's new turns "
        "stop at a dollars or tokens cap either way); stop: they are deleted (no attempt is spent).",
    )

    @field_validator("dollars", "tokens", "gpu_hours", "cpu_hours", mode="before")
    @classmethod
    def _no_cap_is_unset(cls, value: object) -> object:
        # pydantic reads `dollars: true` as a cap of $1, where "capped" was meant
        if isinstance(value, bool):
            raise ValueError(f"must be a number, not {str(value).lower()}")
        # `dollars: 0` (or '0') is most often meant as "no cap": say how to write that
        if _number(value) <= 0:
            raise ValueError("must be greater than 0: leave the line out for no cap")
        return value

    @field_validator("end_at", mode="before")
    @classmethod
    def _end_is_a_time(cls, value: object) -> object:
        # pydantic reads a number (or a numeric string) as Unix seconds: `end_at: 0`, meant as
        # "no end", would end the programme in 1970
        if isinstance(value, int | float) or not math.isnan(_number(value)):
            raise ValueError("must be a time, ISO 8601 with a zone (2026-12-31T18:00Z): leave the line out for no end")
        return value


def _number(value: object) -> float | int:
    """`value` (a YAML int, float or string) as a number (an int as it is: it may be past any float);
    nan if it is none."""
    if isinstance(value, int | float):
        return value
    try:
        return float(value) if isinstance(value, str) else math.nan
    except (ValueError, OverflowError):
        return math.nan


class WallSettings(_Strict):
    """What code from a PR may reach on the machine that runs it (`senpai.fleet.wall`). Besides its
    own folders it may write nothing; it may read everything but senpai's state dir, the tracker's
    dir, the local fleet's jobs, the sealed holdout, the home folder of the user senpai runs as, /run
    and `hidden`. As root it runs as `uid`."""

    readable: list[str] = Field(
        default_factory=list, description="Paths it may read although they lie under a hidden one (a dataset in HOME)."
    )
    writable: list[str] = Field(default_factory=list, description="Paths it may also write (a shared checkpoint folder).")
    hidden: list[str] = Field(default_factory=list, description="More paths it may not read (the local forge's data).")
    uid: int | Literal["auto"] = Field(
        "auto",
        description="As root, the user it runs as. auto: 65534 (nobody) where that user can run senpai's interpreter; "
        "else it stays root with every capability dropped, behind Landlock (refused where the kernel has none).",
    )
    landlock: Literal["auto", "required"] = Field(
        "auto", description="auto: behind Landlock where the kernel offers it; required: refuse to run it elsewhere."
    )
    namespaces: Literal["auto", "required"] = Field(
        "auto",
        description="auto: in a view of its own (mount and PID namespaces: senpai's folders, HOME and /run empty, /tmp "
        "fresh, all but its own folders read-only, nothing left running) where the machine allows it; required: refuse "
        "to run it elsewhere.",
    )

    @field_validator("readable", "writable", "hidden")
    @classmethod
    def _absolute(cls, v: list[str]) -> list[str]:
        if bad := [p for p in v if not p.startswith("/")]:
            raise ValueError(f"paths must be absolute: {bad}")
        return v


class HarnessConfig(_Strict):
    """Schema of the harness config file (schema_version 1)."""

    schema_version: Literal[1] = 1
    forge: ForgeSettings
    tracker: TrackerSettings
    fleet: FleetSettings
    runtime: RuntimeSettings = RuntimeSettings()
    steering: SteeringSettings = SteeringSettings()
    students: list[StudentSpec] = Field(min_length=1)
    state_dir: str = Field(
        description="The ledger snapshot and base mirror the wrapper leaves for its jobs (caches: deleting them loses nothing)."
    )
    cache_dir: str | None = Field(
        None,
        description="The wrapper's own SQLite cache (wrapper.sqlite): a folder no job mounts (Kubernetes: the wrapper "
        "pod's emptyDir); None: state_dir. Deleting it loses nothing.",
    )
    tick_seconds: float = Field(
        5.0,
        gt=0,
        description="Wrapper poll period, seconds: a tick starts every tick_seconds (its own duration is taken off the wait).",
    )
    full_refresh_seconds: float = Field(60.0, gt=0, description="Re-list the forge even without a change.")
    max_experiments: int | None = Field(None, ge=1, description="Open no more than this many experiments in all (any state).")
    patience: int | None = Field(None, ge=1, description="Pause assignments after this many decided experiments without a merge.")
    caps: CapSettings = CapSettings()
    wall: WallSettings = WallSettings()
    advisor_wall_seconds: int | None = Field(
        None,
        gt=0,
        description="Deadline of one advisor job, seconds. Unset: 600 for the search runtime, the turn's "
        "wall_seconds + 300 for openhands (`senpai.config.time_limits`); set, it must hold that turn.",
    )
    verifier_wall_seconds: int | None = Field(
        None,
        gt=0,
        description="Deadline of one verifier job, seconds. Unset: derived from senpai.yaml (every train and score "
        "step of both sides, the test, + 300); set, it must hold them, or jobs refuse the target.",
    )
    stale_after_seconds: float = Field(1800.0, gt=0, description="WIP with no live job this long is stale.")
    round_wait_seconds: float = Field(
        1800.0,
        ge=0,
        description="Once a verification of a base passes, how long its round waits for the other verifications of "
        "that base still owed before the best one goes to the merge gate, seconds (`senpai.wrapper.rounds`); 0: "
        "the best of those verified so far goes at once.",
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: object, info: ValidationInfo) -> object:
        return renamed(data, "limits", "caps", "", info)

    @model_validator(mode="after")
    def _consistent(self) -> "HarnessConfig":
        if isinstance(self.fleet, KubernetesFleetSettings):
            keys = [self.forge.token_env, *(r.llm.api_key_env for r in (self.runtime.advisor, self.runtime.student) if r.llm)]
            if problems := env_problems(self.fleet.pod.env, keys):
                raise ValueError("fleet.pod." + "; fleet.pod.".join(problems))
        if problems := time_problems(self):
            raise ValueError("; ".join(problems))
        if self.caps.dollars is not None and (unpriced := self.unpriced_llms()):
            raise ValueError(
                f"caps.dollars ({self.caps.dollars:g}) cannot be enforced: "
                + "; ".join(_UNPRICED.format(role=r, model=m) for r, m in unpriced.items())
            )
        return self

    def times(self) -> HarnessTimes:
        """What the time limits read of this config (`senpai.config.time_limits.TimeLimits.of`)."""
        advisor, student = self.runtime.advisor, self.runtime.student
        return HarnessTimes(
            advisor_turn=advisor.turn.wall_seconds if advisor.llm_agent else None,
            student_turn=student.turn.wall_seconds if student.llm_agent else None,
            advisor_wall_seconds=self.advisor_wall_seconds,
            verifier_wall_seconds=self.verifier_wall_seconds,
        )

    def unpriced_llms(self) -> dict[Role, str]:
        """The LLM model of each role with an openhands runtime whose calls count $0
        (`LLMSettings.unpriced`), by role."""
        runtimes = {Role.ADVISOR: self.runtime.advisor, Role.STUDENT: self.runtime.student}
        return {role: rt.llm.model for role, rt in runtimes.items() if rt.llm_agent and rt.llm.unpriced()}


def time_problems(harness: "HarnessConfig") -> list[str]:
    """Where an inner time limit of the harness config alone does not fit its outer one
    (`senpai.config.time_limits` lists the pairs), one sentence each."""
    problems = []
    rt, wall = harness.runtime.advisor, harness.advisor_wall_seconds
    if rt.llm_agent and wall is not None and wall < rt.turn.wall_seconds + JOB_OVERHEAD_SECONDS:
        problems.append(
            f"advisor_wall_seconds ({wall} s) cannot hold the advisor's turn: runtime.advisor.turn.wall_seconds "
            f"({rt.turn.wall_seconds} s) + {JOB_OVERHEAD_SECONDS} s for clone and report; "
            "raise it, or leave it unset to derive it"
        )
    problems += [p for role in (Role.ADVISOR, Role.STUDENT) if (p := _llm_call_problem(harness, role))]
    if harness.full_refresh_seconds < harness.tick_seconds:
        problems.append(
            f"full_refresh_seconds ({harness.full_refresh_seconds:g} s) is shorter than tick_seconds "
            f"({harness.tick_seconds:g} s): a refresh happens on a tick"
        )
    gap = harness.tick_seconds + harness.steering.batch_seconds + RELAUNCH.longest_wait()
    if harness.stale_after_seconds <= gap:
        problems.append(
            f"stale_after_seconds ({harness.stale_after_seconds:g} s) must exceed the longest a healthy WIP PR waits for "
            f"its next job: tick_seconds ({harness.tick_seconds:g}) + steering.batch_seconds "
            f"({harness.steering.batch_seconds:g}) + the last relaunch backoff ({RELAUNCH.longest_wait():g}) = {gap:g} s"
        )
    ttl = getattr(harness.fleet, "ttl_seconds_after_finished", None)  # Kubernetes deletes a finished Job then
    ne = harness.runtime.no_effect
    waited = sum(ne.wait(k) for k in range(1, ne.turns))
    if ttl is not None and harness.runtime.advisor.llm_agent and waited >= ttl:
        problems.append(
            f"runtime.no_effect: the waits before the last of {ne.turns} no-effect advisor turns ({waited:g} s) must end "
            f"within fleet.ttl_seconds_after_finished ({ttl} s), as the wrapper counts those turns from the fleet's Jobs; "
            "lower runtime.no_effect.turns or backoff_seconds, or raise the ttl"
        )
    return problems


def _llm_call_problem(harness: "HarnessConfig", role: Role) -> str | None:
    """Where one LLM call of `role`'s openhands turn, retries included, could outlast the turn."""
    rt = getattr(harness.runtime, role)
    if not rt.llm_agent:
        return None
    try:
        call = LLMCall.of(rt.llm.timeout, rt.llm.num_retries, rt.turn.wall_seconds)
    except ConfigError as e:
        return f"runtime.{role}.{e}"
    if call.seconds() <= rt.turn.wall_seconds:
        return None
    return (
        f"runtime.{role}.llm.timeout ({call.timeout} s) x {call.attempts} attempts (llm.num_retries {rt.llm.num_retries} + 1) "
        f"+ {waits(rt.llm.num_retries):g} s of waits between them = {call.seconds():g} s: one LLM call could outlast the "
        f"turn, runtime.{role}.turn.wall_seconds ({rt.turn.wall_seconds} s); lower llm.timeout or llm.num_retries, "
        "or raise turn.wall_seconds"
    )


_UNPRICED = (
    "runtime.{role}.llm.model {model!r} has no price in LiteLLM's price map and its per-token prices are not both set "
    "(the SDK applies them only as a pair), so its calls count $0: set runtime.{role}.llm.input_cost_per_token and "
    "output_cost_per_token (dollars; 0 for a free server)"
)


def load_harness(path: Path | str | None = None) -> HarnessConfig:
    """Load the harness config from `path` or `$SENPAI_CONFIG`, and log a warning for each role whose
    LLM calls count $0 (`HarnessConfig.unpriced_llms`). Raises ConfigError (exit 2)."""
    path = path or os.environ.get(ENV_CONFIG)
    if not path:
        raise ConfigError(f"no harness config: pass --config or set {ENV_CONFIG}")
    if not Path(path).exists():
        raise ConfigError(
            f"{path}: no such harness config: check --config (or ${ENV_CONFIG}); "
            "`senpai demo` writes one to its --out folder (demo-out/<time>/harness.yaml)"
        )
    cfg = load_yaml_model(path, HarnessConfig)
    for role, model in cfg.unpriced_llms().items():
        log.warning("%s: %s", path, _UNPRICED.format(role=role, model=model))
    return cfg
