"""The machine-readable records' contents, as fenced YAML blocks.

    ```senpai-evidence
    schema_version: 1
    ...
    ```

`render(block)` and `parse(text)` are a strict round trip: parse(render(b)) == b for every value
(fuzzed in tests).  Where a block counts as a record (only where senpai's renderer put it) is
`senpai.ledger.records`.  A block that is not valid YAML, breaks a limit of `safe_yaml`, or does
not match its schema raises LedgerFormatError naming the block kind and the field, with at most a
bounded excerpt of the text.
"""

import math
import re
from datetime import datetime
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from senpai.config import safe_yaml
from senpai.errors import LedgerFormatError
from senpai.ledger.redact import redact_data

Scalar = str | int | float | bool | None
MAX_METRICS = 64  # numbers one evidence keeps (a W&B summary may hold thousands: per-class metrics)
_KEY_BYTES = 300  # YAML bytes of one kept metric name
_TEXT_BYTES = 8 * 1024  # YAML bytes of one free text of an evidence (command, failure, interpretation, log tail) or a decision
_PLAN_BYTES = 6 * 1024  # YAML bytes of one free text of a hypothesis (five of them, and the prose, in one PR body)
_FENCE = re.compile(r"\A(`{3,})senpai-([a-z]+)\n(.*)^\1[ \t]*\n?\Z", re.MULTILINE | re.DOTALL)


class Block(BaseModel):
    """Base of every ledger block: strict, frozen, versioned."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    KIND: ClassVar[str]
    schema_version: Literal[1] = 1


class MetricRef(BaseModel):
    """The hypothesis's primary metric, copied from the target's `senpai.yaml` `metric` when the PR opens."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    direction: Literal["maximize", "minimize"]
    target: float | None = None


class BaselineRef(BaseModel):
    """The baseline a hypothesis is measured against: the base head it was cut from and that head's
    metric as the ledger knew it (`senpai.ledger.baseline.current_baseline`; None before the first
    verified merge)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    commit: str = Field(description="Base branch head the hypothesis was cut from.")
    run_id: str | None = Field(description="W&B run that measured the baseline; None if not yet measured.")
    value: float | None = Field(description="Primary metric of the baseline run.")


class BudgetRef(BaseModel):
    """What the experiment may spend: the wall seconds of one student job (`senpai.yaml`
    `budget.wall_seconds` per arm, so k times it for k arms, plus the turn's wall budget for an
    openhands student; `senpai.config.time_limits.StudentLimits.job_deadline`) and the student
    attempts in all (`budget.attempts`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    wall_seconds: int
    attempts: int


MAX_ARMS = 8  # arms one experiment may run: each is a full training run of the student's job


class Arm(BaseModel):
    """One variant of a multi-arm hypothesis: `params` override the hypothesis's `params` for this
    arm (the control's are usually empty). The student trains every arm under the same seed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[a-z0-9-]{1,16}$")
    params: dict[str, Scalar] = Field(default_factory=dict, description="Params this arm sets over the hypothesis's.")
    control: bool = False


class Hypothesis(Block):
    """`senpai-hypothesis`, in the PR body, written by the advisor."""

    KIND: ClassVar[str] = "hypothesis"
    id: str = Field(pattern=r"^[a-z0-9-]+$")
    hypothesis: str
    rationale: str
    plan: str
    params: dict[str, Scalar] = Field(default_factory=dict, description="Params to set; empty for code changes.")
    change: str | None = Field(None, description="A code change in prose, when not a params change.")
    metric: MetricRef
    baseline: BaselineRef
    budget: BudgetRef
    stop_condition: str
    student: str
    request: str | None = Field(None, description="Ref of the `/senpai try` that asked for it (`<n>:<comment>:<version>/<i>`).")
    exploration: str | None = Field(
        None, description="The diversity alarm's reading when it was proposed under the alarm (`senpai.ledger.diversity`)."
    )
    arms: list[Arm] | None = Field(
        None, description=f"Named variants, exactly one the control (2 to {MAX_ARMS}); None: a single-arm experiment."
    )
    measures_base: bool = Field(
        False,
        description="It measures the base itself on validation (its params are the base's): closed once measured, never "
        "verified or merged; its value is the base's until a verified merge moves it (`baseline.current_baseline`).",
    )

    @model_validator(mode="after")
    def _one_control(self) -> "Hypothesis":
        if self.arms is None:
            return self
        names = [a.name for a in self.arms]
        if not 2 <= len(names) <= MAX_ARMS or len(set(names)) != len(names):
            raise ValueError(f"arms: 2 to {MAX_ARMS} arms with distinct names, got {names}")
        if sum(a.control for a in self.arms) != 1:
            raise ValueError("arms: exactly one arm must be the control")
        return self

    def arm_count(self) -> int:
        """How many variants compete in this experiment (1 without arms): the multiplicity the
        verifier and the merge gate correct for (`senpai.ledger.stats.for_arms`)."""
        return len(self.arms) if self.arms else 1

    def arm_params(self, arm: Arm) -> dict[str, Scalar]:
        """The full params point arm `arm` trains: the hypothesis's params with the arm's over them."""
        return {**self.params, **arm.params}

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        """At most _PLAN_BYTES per free text (an advisor may write 60,000 characters), so the PR body
        stays under GitHub's 65,536 characters and `safe_yaml.MAX_BYTES`."""
        return _fit_fields(data, ("hypothesis", "rationale", "plan", "change", "stop_condition", "exploration"), _PLAN_BYTES)


class RunRef(BaseModel):
    """The tracker run of one attempt: W&B run id, its web URL (None offline) and its `RunRecord.state`
    (`finished`, `crashed`, `running`, `unknown`), or `missing` when no run was found."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    url: str | None
    state: str


class PrimaryResult(BaseModel):
    """An attempt's primary metric: its value (None: not reported) and the hypothesis's baseline value,
    in the metric's units."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    value: float | None
    baseline: float | None
    delta: float | None = Field(description="value - baseline (raw, not direction-adjusted).")


class Cost(BaseModel):
    """What one attempt spent: train seconds times the job's GPUs (`gpu_seconds`), wall seconds, and
    for an LLM turn its prompt + completion tokens and LiteLLM's cost in dollars."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # finite and >= 0: the fleet caps sum them (`senpai.ledger.spend`), and a NaN would never reach a cap
    gpu_seconds: float = Field(0.0, ge=0, allow_inf_nan=False)
    wall_seconds: float = Field(0.0, ge=0, allow_inf_nan=False)
    tokens: int = Field(0, ge=0)
    dollars: float = Field(0.0, ge=0, allow_inf_nan=False)


class ArmResult(BaseModel):
    """One arm's validation run in a multi-arm evidence: its primary metric (None: failed) and run."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    control: bool = False
    params: dict[str, Scalar] = Field(default_factory=dict, description="The full params point the arm trained.")
    value: float | None
    run: RunRef
    failure: str | None = None


class Evidence(Block):
    """`senpai-evidence`, a student comment (or the wrapper's failure evidence for a dead job)."""

    KIND: ClassVar[str] = "evidence"
    pr: int
    attempt: int = Field(ge=1)
    student: str
    head: str = Field(description="Commit the run trained.")
    command: str
    outcome: Literal["ok", "failed"]
    failure: str | None = Field(None, description="Why the attempt failed (crash, NaN, deadline ...).")
    runs: list[RunRef] = Field(default_factory=list)
    metrics: dict[str, float] = Field(default_factory=dict)
    primary: PrimaryResult
    interpretation: str
    cost: Cost = Cost()
    log_tail: str | None = None
    arms: list[ArmResult] = Field(
        default_factory=list, description="Multi-arm: one row per arm, same seed; empty for a single-arm experiment."
    )
    arm: str | None = Field(None, description="Multi-arm: the winning arm, whose params the evidence's head carries.")

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        """Keep the block readable: at most MAX_METRICS numbers and _TEXT_BYTES per free text, so
        `render` stays under `safe_yaml.MAX_BYTES` whatever a run's summary or an agent wrote."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("metrics"), dict):
            data["metrics"] = _kept_metrics(data["metrics"], data.get("primary"))
        if isinstance(data.get("arms"), list):
            data["arms"] = data["arms"][:MAX_ARMS]
        return _fit_fields(data, ("command", "failure", "interpretation", "log_tail"), _TEXT_BYTES)

    @classmethod
    def of(
        cls,
        h: Hypothesis | None,
        *,
        metric: str,
        value: float | None,
        failure: str | None,
        interpretation: str,
        **fields: Any,
    ) -> "Evidence":
        """Evidence for hypothesis `h`: outcome `failed` if there is a `failure` (else `ok`), and the
        primary result `value` of `metric` against `h`'s baseline value (None without `h`, or before
        the first verified merge), with `delta` = value - baseline when both are known and `value`
        is finite. `fields`: the rest (pr, attempt, student, head, command, and any optional ones)."""
        base = h.baseline.value if h else None
        delta = value - base if value is not None and math.isfinite(value) and base is not None else None
        primary = PrimaryResult(name=metric, value=value, baseline=base, delta=delta)
        outcome = "failed" if failure else "ok"
        return cls(outcome=outcome, failure=failure, primary=primary, interpretation=interpretation, **fields)


def _yaml_bytes(text: str) -> int:
    return len(safe_yaml.dump(text).encode("utf-8", "surrogatepass"))


def _fit_fields(data: Any, fields: tuple[str, ...], limit: int) -> Any:
    """`data` (a block's input) with each of its string `fields` `_fit` to `limit` YAML bytes."""
    if not isinstance(data, dict):
        return data
    return {k: _fit(v, limit) if k in fields and isinstance(v, str) else v for k, v in data.items()}


def _fit(text: str, limit: int) -> str:
    """`text`, or its head with a note of its length, whose YAML is at most `limit` bytes.
    A text that fits comes back unchanged, so fitting again changes nothing (the round trip holds)."""
    cut, out = len(text), text
    while _yaml_bytes(out) > limit:
        cut //= 2
        out = f"{text[:cut]} ... (cut: {len(text)} chars)"
    return out


def _kept_metrics(metrics: dict, primary: Any) -> dict:
    """At most MAX_METRICS of `metrics`: the primary's, then the first names in sorted order whose
    YAML fits _KEY_BYTES; in their original order."""
    name = primary.get("name") if isinstance(primary, dict) else getattr(primary, "name", None)
    fitting = sorted(k for k in metrics if k != name and isinstance(k, str) and _yaml_bytes(k) <= _KEY_BYTES)
    keep = set(fitting[: MAX_METRICS - (name in metrics)]) | ({name} if name in metrics else set())
    return {k: v for k, v in metrics.items() if k in keep}


class Verification(Block):
    """`senpai-verification`, written by the verifier: holdout numbers for candidate vs baseline."""

    KIND: ClassVar[str] = "verification"
    pr: int
    candidate: str = Field(description="PR head commit measured.")
    baseline: str = Field(description="Base branch commit measured.")
    metric: str
    direction: Literal["maximize", "minimize"] = Field(
        description="Which way `metric` is better, as the verifier judged it: the target's holdout direction."
    )
    seeds: list[int]
    candidate_values: list[float]
    baseline_values: list[float]
    candidate_mean: float | None
    baseline_mean: float | None
    improvement: float | None = Field(
        description="Candidate mean minus baseline mean, signed so that positive is better in the metric's direction."
    )
    noise_floor: float | None = Field(
        description="Rule noise_floor: noise_k x stdev of baseline repeats, at least min_floor; None for the test rules."
    )
    at: datetime | None = Field(None, description="When the verifier recorded it, UTC; None in older records.")
    holdout: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{16}$",
        description="Which sealed holdout judged it: 16 hex digits of a hash of its fingerprint (`reuse.holdout_id`), so "
        "`senpai status` counts the verdicts each holdout served; None: not fingerprinted (see `holdout_fingerprint`).",
    )
    resolution: float | None = Field(
        None,
        description="The smallest difference this verdict tells apart, metric units (`ladder.resolution`): what every "
        "text senpai renders from it is rounded to (`ladder.for_proposer`); None: not rounded.",
    )
    protected_touched: list[str] = Field(default_factory=list)
    out_of_scope: list[str] = Field(default_factory=list, description="Changed paths outside the target's scope.")
    files: list[str] = Field(
        default_factory=list, description="Paths the measured pair changes: git's list for exactly it, joined with the forge's."
    )
    rule: Literal["noise_floor", "welch", "paired", "bootstrap"] = "noise_floor"
    statistic: float | None = Field(None, description="The rule's statistic: t, or the bootstrap interval's lower bound.")
    p_value: float | None = Field(None, description="One-sided p-value of the test rules, before correction.")
    candidate_seconds: list[float] = Field(default_factory=list, description="Train-step seconds per candidate seed.")
    baseline_seconds: list[float] = Field(default_factory=list, description="Train-step seconds per baseline seed.")
    candidate_compute: list[float] = Field(default_factory=list, description="The target's compute figure per seed.")
    baseline_compute: list[float] = Field(default_factory=list)
    compute_ratio: float | None = Field(
        None, description="Largest candidate/baseline ratio of mean compute over the compared figures; None: not measured."
    )
    guards: dict[str, list[float]] = Field(default_factory=dict, description="Guard metric -> [candidate mean, baseline mean].")
    test_passed: bool | None = Field(None, description="The target's test command on the candidate; None: none declared.")
    candidate_gpu_seconds: list[float] = Field(
        default_factory=list, description="Train-step seconds x the GPUs the verifier job holds, per candidate seed."
    )
    baseline_gpu_seconds: list[float] = Field(default_factory=list, description="The same per baseline seed.")
    baseline_guards: dict[str, list[float]] = Field(
        default_factory=dict, description="Guard metric -> its baseline value per seed."
    )
    candidate_guards: dict[str, list[float]] = Field(
        default_factory=dict, description="Guard metric -> its candidate value per seed."
    )
    baseline_key: str | None = Field(
        None,
        description="sha256 of what makes the baseline's numbers comparable (its git tree, target config, sealed holdout, "
        "environment: `senpai.verifier.reuse.measurement_key`); a later side with the same key reuses its seeds. "
        "None: not reusable.",
    )
    candidate_key: str | None = Field(None, description="The same for the candidate side's numbers.")
    arms: int = Field(
        1, ge=1, description="Variants the hypothesis ran; the rule was corrected for them (`senpai.ledger.stats.for_arms`)."
    )
    conflict: bool = Field(
        False, description="Refused because the PR conflicts with a base that moved: not the hypothesis's failure."
    )
    baseline_reused: dict[int, int] = Field(
        default_factory=dict, description="Seed -> the PR whose verification measured that baseline seed (not re-trained here)."
    )
    candidate_reused: dict[int, int] = Field(
        default_factory=dict, description="Seed -> the PR whose verification measured that candidate seed (not re-trained here)."
    )
    runs: list[RunRef] = Field(
        default_factory=list, description="The W&B run of these holdout numbers (job_type verify); empty: none logged."
    )
    passed: bool
    reason: str


class Decision(Block):
    """`senpai-decision`, the advisor's verdict on one head of a PR."""

    KIND: ClassVar[str] = "decision"
    pr: int
    head: str
    verdict: Literal["merge", "close", "changes"]
    reason: str
    base: str | None = Field(None, description="merge: the base commit the verification measured.")
    merged_onto: str | None = Field(
        None, description="merge: the merge commit's first parent; not `base` if the base moved before the merge landed."
    )
    metric: str | None = None
    candidate: float | None = None
    baseline: float | None = None
    improvement: float | None = None
    noise_floor: float | None = None
    resolution: float | None = Field(
        None, description="Numbers from a verification: its `resolution`, which the texts rendered from them are rounded to."
    )
    approval: str | None = Field(
        None, description="merge: the fingerprint of the human approval it consumed (`gate.fingerprint`); single-use."
    )
    findings: list[str] = Field(
        default_factory=list, description="Multi-arm: one line per arm that does not merge (its params and validation value)."
    )
    hypothesis: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{16}$",
        description="The digest of the PR's hypothesis record it was decided on (`records.digest`); None before "
        "decisions carried it. `senpai ledger --check` flags a PR body that no longer holds it.",
    )

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        """At most _TEXT_BYTES of reason: the comment is posted after the merge, and one GitHub
        refuses (over 65,536 characters) would leave a merge with no decision."""
        return _fit_fields(data, ("reason",), _TEXT_BYTES)


class ApprovalRequest(Block):
    """`senpai-approval`, the bot's request that a trusted human approve one merge (posted once per
    fingerprint, by the advisor's merge path when the gate raises ApprovalRequired)."""

    KIND: ClassVar[str] = "approval"
    pr: int
    head: str
    base: str
    fingerprint: str = Field(description="12 hex: `gate.fingerprint(head, base, verification)`.")
    reasons: list[str] = Field(description="The senpai.yaml `approval` rules that name this merge.")


class Reapply(Block):
    """`senpai-reapply`: senpai wrote a params-only PR's params onto a base that moved, as a commit
    of its own on the PR's branch (`review.reapply`), instead of a student attempt: its head
    conflicted with the new base only in the params file. The PR stays verifying, and the verifier
    measures the new head; where its tree is one measured before, the numbers are reused."""

    KIND: ClassVar[str] = "reapply"
    pr: int
    head: str = Field(pattern=r"^[0-9a-f]{40}$", description="The commit senpai pushed: the base with the PR's params.")
    replaces: str = Field(pattern=r"^[0-9a-f]{40}$", description="The head it replaced, which conflicted with the base.")
    base: str = Field(pattern=r"^[0-9a-f]{40}$", description="The base it was written onto.")
    tree: str = Field(pattern=r"^[0-9a-f]{40}$", description="The git tree of `head`.")
    measured: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{40}$",
        description="An earlier head of the PR whose ok evidence trained this same tree, if any: its numbers stand for `head`.",
    )


CAPS_VERB = "budget"  # the verb a `/senpai caps` is recorded under: the command's name before it was renamed, kept on record


class SteerCommand(BaseModel):
    """One slash command as the wrapper applied it (the fields its verb uses; the rest stay empty).
    A `/senpai caps` (fleet caps) is recorded with the verb `budget` (CAPS_VERB), as before its rename."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    verb: Literal["pause", "resume", "budget", "try", "stop", "allow", "approve", "reject"]
    experiments: int | None = Field(None, description="caps (verb `budget`): the new experiment cap.")
    dollars: float | None = Field(None, description="caps: the new cap of LLM dollars.")
    tokens: int | None = Field(None, description="caps: the new cap of LLM tokens.")
    gpu_hours: float | None = Field(None, description="caps: the new cap of job GPU hours.")
    cpu_hours: float | None = Field(None, description="caps: the new cap of job CPU-core hours.")
    end_at: str | None = Field(None, description="caps: the new wall-clock end, ISO 8601 UTC.")
    params: dict[str, Scalar] = Field(default_factory=dict, description="try: the human's params, typed by the space.")
    pr: int | None = Field(
        None, description="stop: the PR stopped; allow: the PR allowed more compute than the tolerance; approve/reject: the PR."
    )
    decided: list[int] = Field(default_factory=list, description="resume: PRs decided before it (patience restarts).")
    fingerprint: str | None = Field(None, description="approve/reject: the merge fingerprint (12 hex) the human answers.")
    reason: str | None = Field(None, description="reject: the human's reason, recorded in the closing decision.")


class Steer(Block):
    """`senpai-steer`, the wrapper's acknowledgement of a slash-command message: what was applied.

    Steering state (paused, experiment cap, queued tries) is the fold of these blocks in comment
    order, so it is rebuilt from the forge alone.
    """

    KIND: ClassVar[str] = "steer"
    message: str = Field(description="`<number>:<comment id, 0 for an issue body>:<version>` of the message.")
    author: str
    commands: list[SteerCommand]


class TurnUsage(BaseModel):
    """What an agent turn spent, or may spend (a TurnLimits's shape)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # finite and >= 0: the fleet caps sum the spent ones (`senpai.ledger.spend`)
    llm_calls: int = Field(0, ge=0)
    tokens: int = Field(0, ge=0, description="Prompt + completion tokens.")
    dollars: float = Field(0.0, ge=0, allow_inf_nan=False, description="LiteLLM's cost, dollars.")
    wall_seconds: float = Field(0.0, ge=0, allow_inf_nan=False)


class BudgetReport(Block):
    """`senpai-budget`, the turn-limit report, posted when the turn guard stops an agent turn at one of
    its turn limits (design §3). The kind keeps its name from before the rename: the ledger holds it.

    On a PR (a student turn, or an advisor turn about that PR) or, for an advisor turn with no PR,
    on an issue.  It is a record, not a state change: a student's stopped attempt also gets a
    failed `senpai-evidence` so the label state machine moves on as for any failed attempt.
    """

    KIND: ClassVar[str] = "budget"
    role: Literal["advisor", "student"]
    pr: int | None = None
    revision: str = Field(description="Commit the turn worked on: PR head, or base head for the advisor.")
    exhausted: list[str] = Field(description="Which limits ran out: llm_calls, tokens, dollars, wall_seconds.")
    spent: TurnUsage
    limits: TurnUsage
    known: str = Field(description="What the turn found out before it stopped.")
    missing: str = Field(description="What evidence is still missing.")
    tried: list[str] = Field(default_factory=list, description="The tool calls the turn made, in order (summarised).")
    needed: TurnUsage = Field(description="Turn limits to ask for to finish the work (larger TurnLimits).")


# How an openhands turn ended: finished; no_effect (no ledger effect and no reason, even after a
# directive); budget (its turn guard stopped it: the status keeps that name on record); stuck (the
# SDK's stuck detector); error (the SDK's error state).
TurnStatus = Literal["finished", "no_effect", "budget", "stuck", "error"]


class TurnCost(Block):
    """`senpai-turn`, what one openhands advisor turn spent (`transitions.record_turn`), so the
    fleet's caps count it (`senpai.ledger.spend`). Posted after every run of the turn, stopped by
    its turn guard or not: `spent` is the conversation's spend so far (the SDK keeps its LLM figures
    across a resume, so a later run's record holds the earlier runs' calls too) and this run's wall
    seconds. The search advisor spends no LLM money and posts none; a student's spend is in its
    evidence's `cost`."""

    KIND: ClassVar[str] = "turn"
    role: Literal["advisor"] = "advisor"
    pr: int | None = Field(None, ge=1, description="The one PR the turn was about; None: several or none.")
    revision: str = Field(pattern=r"^[0-9a-f]{7,64}$", description="The base head the turn worked on.")
    key: str = Field(
        pattern=r"^[0-9a-z-]{1,100}$",
        description="The turn's key (`conversation.turn_key`): one conversation, however often resumed.",
    )
    status: TurnStatus = Field(
        description="no_effect: it finished with no ledger effect and no reason, even after a directive naming the tool."
    )
    spent: TurnUsage


KINDS: dict[str, type[Block]] = {
    m.KIND: m for m in (Hypothesis, Evidence, Verification, Decision, Steer, BudgetReport, ApprovalRequest, TurnCost, Reapply)
}


def render(block: Block) -> str:
    """The fenced YAML block for `block` (no surrounding prose); the fence is longer than any
    backtick run in the YAML, so no field can close it."""
    text = safe_yaml.dump(redact_data(block.model_dump(mode="python")))
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", text)), default=0))
    return f"{fence}senpai-{block.KIND}\n{text}{fence}"


def excerpt(text: str, limit: int = 80) -> str:
    """`text` cut to `limit` characters, one line, for error messages (never the whole value)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else f"{flat[:limit]}... ({len(flat)} chars)"


def _describe(kind: str, err: ValidationError) -> str:
    problems = []
    for e in err.errors()[:5]:
        loc = ".".join(str(p) for p in e["loc"]) or "<root>"
        got = e.get("input")
        shown = f" (got {excerpt(got, 40)})" if isinstance(got, (str, int, float, bool)) else ""
        problems.append(f"{loc}: {e['msg']}{shown}")
    more = f"; and {err.error_count() - 5} more" if err.error_count() > 5 else ""
    return f"senpai-{kind} block is invalid: " + "; ".join(problems) + more


def parse_block[B: Block](model: type[B], text: str) -> B:
    """The `model` block whose YAML is `text` (a fence's content). Raises LedgerFormatError."""
    kind = model.KIND
    try:
        data: Any = safe_yaml.load(text)
    except yaml.YAMLError as e:
        raise LedgerFormatError(f"senpai-{kind} block is not valid YAML: {excerpt(str(e), 300)}") from None
    if not isinstance(data, dict):
        raise LedgerFormatError(f"senpai-{kind} block must be a YAML mapping, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise LedgerFormatError(_describe(kind, e)) from None


def parse(text: str) -> Block:
    """The block of one `render` output `text` (the inverse of `render`). Raises LedgerFormatError."""
    m = _FENCE.match(text.replace("\r\n", "\n"))
    if m is None:
        raise LedgerFormatError(f"not one senpai block: {excerpt(text)}")
    model = KINDS.get(m.group(2))
    if model is None:
        raise LedgerFormatError(f"unknown block kind senpai-{excerpt(m.group(2), 20)}; expected one of {sorted(KINDS)}")
    return parse_block(model, m.group(3))
