"""The target repository's `senpai.yaml`: what to train, what to measure, what to search, what is
protected, and what one experiment may spend."""

import fnmatch
import math
import posixpath
import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from senpai.config.load import load_yaml_model

CONFIG_FILE = "senpai.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Metric(_Strict):
    """The primary metric: one scalar the program reports."""

    name: str = Field(description="Key of the metric, e.g. `val_accuracy`.", min_length=1)
    direction: Literal["maximize", "minimize"] = Field(description="Which way is better.")
    source: Literal["wandb", "stdout"] = Field(
        "wandb",
        description="`wandb`: the summary of the W&B run the program logs; "
        "`stdout`: the last value the program prints of it: a `name: value` line, `name: value` or `name=value` "
        "inside a longer line (`test loss: 2.27` is `test_loss`), or a line that is one JSON object.",
    )
    target: float | None = Field(None, description="Value at which the research program is done.")

    def better(self, a: float, b: float) -> float:
        """Improvement of `a` over `b` in the metric's direction (positive = `a` is better)."""
        return a - b if self.direction == "maximize" else b - a


class IntParam(_Strict):
    """An integer param searched in [`low`, `high`], both included; `log`: sampled on a log scale (then `low` > 0)."""

    type: Literal["int"]
    low: int
    high: int
    log: bool = False

    @model_validator(mode="after")
    def _range(self):
        if self.low > self.high or (self.log and self.low <= 0):
            raise ValueError("expected low <= high (and low > 0 with log: true)")
        return self


class FloatParam(_Strict):
    """A float param searched in [`low`, `high`], both finite; `log`: sampled on a log scale (then `low` > 0)."""

    type: Literal["float"]
    low: float
    high: float
    log: bool = False

    @model_validator(mode="after")
    def _range(self):
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low > self.high:
            raise ValueError("expected finite low <= high")
        if self.log and self.low <= 0:
            raise ValueError("expected low > 0 with log: true")
        return self


class CategoricalParam(_Strict):
    """A param that takes one of `choices` (strings, numbers or booleans, at least one)."""

    type: Literal["categorical"]
    choices: list[str | int | float | bool] = Field(min_length=1)


ParamSpec = Annotated[Union[IntParam, FloatParam, CategoricalParam], Field(discriminator="type")]


def _inside_repo(path: str) -> str:
    """A repo-relative path that stays inside the repository (no absolute path, no `..`)."""
    parts = PurePosixPath(path).parts
    if not path or PurePosixPath(path).is_absolute() or ".." in parts:
        raise ValueError(f"expected a path relative to the repository root, inside it (no leading / and no ..), got {path!r}")
    return path


RepoPath = Annotated[str, AfterValidator(_inside_repo)]


def _interpreter_path(path: str) -> str:
    """An absolute, normalised path (`holdout.python`). A relative one would name a file of the checkout
    the job cloned, which holds no venv (one is not committed) and whose files a PR may supply."""
    if not PurePosixPath(path).is_absolute() or any(c < " " for c in path):
        raise ValueError(
            "must be an absolute path, such as /home/me/proj/.venv/bin/python: each job clones the repository afresh, "
            "so a path inside it names no venv"
        )
    if path != posixpath.normpath(path):
        raise ValueError("must be a normalised absolute path (no .., no . and no //)")
    return path


class Params(_Strict):
    """The params file the program reads, and the space the `search` runtime explores."""

    file: RepoPath = Field(description="Path of the params file (.json, .yaml/.yml or .toml), relative to the repo root.")
    space: dict[str, ParamSpec] = Field(min_length=1, description="Search space, one entry per key.")


class Compute(_Strict):
    """How the verifier compares the compute each side spent training."""

    key: str | None = Field(
        None, description="A `key: value` line the train step prints (steps, tokens, FLOPs); compared as well as seconds."
    )
    tolerance: float = Field(
        0.25, ge=0, description="Fraction 0..: a candidate may spend at most (1 + tolerance) x the baseline's compute."
    )
    seconds: bool = Field(True, description="Compare training seconds too (noisy on a shared machine: set false there).")
    budget: float | None = Field(
        None,
        gt=0,
        description="What one training may spend, in `key`'s units (digits: 30 epochs), fixed as autoresearch fixes "
        "5 minutes a run: the gate compares the candidate's mean `key` figure with it, never with the baseline's, so a "
        "cheap merge cannot narrow what may merge after it. Needs `key`; seconds are then recorded, not compared.",
    )
    param: str | None = Field(
        None,
        description="The params key that sets the `key` figure (digits: max_iter, the epochs): `senpai validate` "
        "refuses a search space whose range for it exceeds `budget`, so the search never proposes what the gate refuses.",
    )

    @model_validator(mode="after")
    def _budgeted(self) -> "Compute":
        if self.budget is not None and self.key is None:
            raise ValueError("holdout.compute.budget needs holdout.compute.key: the figure it budgets")
        if self.param is not None and self.budget is None:
            raise ValueError("holdout.compute.param needs holdout.compute.budget: the budget its range must fit")
        return self


class Guard(_Strict):
    """A secondary metric the evaluator prints that a merge may not regress by more than `tolerance`."""

    direction: Literal["maximize", "minimize"]
    tolerance: float = Field(0.0, ge=0, description="Largest allowed regression, in the metric's units.")


class Holdout(_Strict):
    """The verifier's trusted evaluation, two steps per seed, for the candidate head and the base head.

    Train step: the target's `train` command, in a checkout of the side's commit, with `SEED` set and
    `SENPAI_ARTIFACT_DIR` naming an empty directory the model artifact must be written to.
    Score step: `command`, run in a directory holding only `files` as they are at the **base**
    revision (no secret; `python` there runs the `python` field, else senpai's interpreter, as
    `python -I -P`), with `{artifact}`, `{holdout}` and `{seed}` replaced; it prints
    `metric: value` (and any guard metric) on stdout.

    Refused at load (ValueError, a ConfigError naming senpai.yaml when loaded from there): a command
    without `{artifact}` or `{holdout}`, a `python` that is not an absolute path, repeated seeds,
    `max_seeds` below the seeds, a guard named like the metric, and a setting the rule would ignore
    or need (`min_floor` is required with and only with `noise_floor`; `min_delta` is refused with
    it). Whether `python` exists and runs is checked where the score step runs (`senpai validate`,
    the verifier job), not at load: the wrapper may run on another machine or image.
    """

    command: str = Field(description="Score command; must contain `{artifact}` and `{holdout}`; these and `{seed}` are replaced.")
    sample: str | None = Field(
        None,
        description="Optional command that writes a tiny artifact into `{artifact}` and a holdout it can score into "
        "`{holdout}`; `senpai validate` runs it, then `command` on them, and checks what `command` prints.",
    )
    files: list[RepoPath] = Field(
        min_length=1, description="The evaluator's files (or directories), taken from the base revision; all protected."
    )
    python: Annotated[str, AfterValidator(_interpreter_path)] | None = Field(
        None,
        description="Absolute path of the interpreter that runs the score step (`python` in `command` and `sample`), "
        "e.g. the target's venv's `/home/me/proj/.venv/bin/python`: one that has the evaluator's packages (torch, "
        "safetensors). None: senpai's own interpreter (on Kubernetes, the verifier image's).",
    )
    metric: str = Field(description="Key of the `key: value` line the score command prints on stdout.")
    direction: Literal["maximize", "minimize"] | None = Field(
        None,
        description="Which way the holdout metric is better, if not `metric.direction`'s (an evaluator that prints "
        "accuracy for a loss-trained model); the verifier and the gate judge by it, and each verification records it.",
    )
    seeds: list[int] = Field(
        default=[0, 1, 2], min_length=2, description="Distinct seeds: the noise floor needs repeats that differ."
    )
    max_seeds: int | None = Field(
        None, ge=2, description="Inconclusive results get more seeds, up to this many (sequential test); None: no more."
    )
    rule: Literal["noise_floor", "welch", "paired", "bootstrap"] = Field(
        "noise_floor", description="Acceptance rule: see docs/target-contract.md."
    )
    noise_k: float = Field(2.0, ge=0, description="noise_floor rule: floor = noise_k x stdev of baseline repeats.")
    min_floor: float | None = Field(
        None, ge=0, description="noise_floor rule only (required there): lower bound on the floor, in metric units."
    )
    alpha: float = Field(0.05, gt=0, lt=0.5, description="Test rules: one-sided false-accept rate, fraction.")
    min_delta: float = Field(0.0, ge=0, description="Test rules only: the improvement must exceed this, in metric units.")
    compute: Compute = Compute()
    guards: dict[str, Guard] = Field(default_factory=dict, description="Secondary metrics the score command prints.")

    @model_validator(mode="after")
    def _coherent(self) -> "Holdout":
        if "{artifact}" not in self.command:
            raise ValueError("holdout.command must contain {artifact}: it scores the artifact the train step wrote")
        if "{holdout}" not in self.command:
            raise ValueError("holdout.command must contain {holdout}: the sealed holdout's directory is passed only there")
        if self.sample is not None and not ("{artifact}" in self.sample and "{holdout}" in self.sample):
            raise ValueError("holdout.sample must contain {artifact} and {holdout}: it writes the sample there")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"holdout.seeds must be distinct, got {self.seeds}")
        if self.max_seeds is not None and self.max_seeds < len(self.seeds):
            raise ValueError(f"holdout.max_seeds ({self.max_seeds}) is below the {len(self.seeds)} declared seeds")
        if self.rule == "noise_floor" and self.min_floor is None:
            raise ValueError("holdout.min_floor is required with rule noise_floor (a floor of 0 merges noise)")
        if self.rule == "noise_floor" and self.min_delta != 0:
            raise ValueError(
                "holdout.min_delta applies to the test rules (welch, paired, bootstrap); with noise_floor use min_floor"
            )
        if self.rule != "noise_floor" and self.min_floor is not None:
            raise ValueError(f"holdout.min_floor applies to the noise_floor rule only; with {self.rule} use min_delta")
        if self.metric in self.guards:
            raise ValueError(f"holdout.guards must not name the primary metric {self.metric!r}")
        return self

    def all_seeds(self) -> list[int]:
        """The declared seeds, then further ones up to `max_seeds` (sequential test)."""
        extra = (self.max_seeds or len(self.seeds)) - len(self.seeds)
        more = [s for s in range(max(self.seeds) + 1, max(self.seeds) + 1 + extra)]
        return [*self.seeds, *more]


class Budget(_Strict):
    """What one experiment may spend."""

    wall_seconds: int = Field(
        600, gt=0, description="Wall time of one training run, seconds: a student job gets it once per arm, a verifier step once."
    )
    attempts: int = Field(2, ge=1, description="Student attempts before the PR goes to review as failed.")


class Approval(_Strict):
    """Which merges wait for a trusted human's `/senpai approve <fingerprint>` (any rule that matches).

    The gate's other checks still run; an approval only adds a condition (`senpai.ledger.gate`)."""

    always: bool = Field(False, description="Every merge needs an approval.")
    outside_params: bool = Field(False, description="A merge whose diff changes any file other than `params.file`.")
    improvement_over: float | None = Field(
        None, ge=0, description="A merge whose verified improvement (in the metric's units, better direction) exceeds this."
    )
    paths: list[str] = Field(default_factory=list, description="Globs (fnmatch, repo-relative): a merge changing a match.")


class TargetConfig(_Strict):
    """Schema of `senpai.yaml` at the root of the target repository (schema_version 1)."""

    schema_version: Literal[1] = 1
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    program: RepoPath = Field("program.md", description="Research context for agents, relative path.")
    train: str = Field(description="Shell command that trains and reports the primary metric.")
    metric: Metric
    params: Params
    holdout: Holdout
    protected: list[RepoPath] = Field(default_factory=list, description="Paths (files or directories) a merge may never touch.")
    scope: list[str] = Field(
        default_factory=list,
        description="Globs (fnmatch, repo-relative) of the paths an experiment may add or change; empty: the params file only.",
    )
    test: str | None = Field(None, description="Optional shell command that must pass on the candidate before a merge.")
    budget: Budget = Budget()
    approval: Approval = Approval()

    @property
    def holdout_direction(self) -> Literal["maximize", "minimize"]:
        """Which way the holdout metric is better: `holdout.direction`, else `metric.direction`."""
        return self.holdout.direction or self.metric.direction

    def in_scope(self, path: str) -> bool:
        """True if repo-relative `path` may be changed by an experiment (`scope`, else the params file)."""
        return any(fnmatch.fnmatchcase(path, g) for g in self.scope or [self.params.file])

    def is_protected(self, path: str) -> bool:
        """True if repo-relative `path` is a protected file or lies under a protected directory."""
        for p in [*self.protected, CONFIG_FILE]:
            p = p.rstrip("/")
            if path == p or path.startswith(p + "/"):
                return True
        return False


# Words that say which way a metric is better; a name holding a word of one list and none of the
# other says it plainly (`holdout_accuracy`, `val_log_loss`; not `neg_mse`, `score_loss`).
LOWER_WORDS = {"loss", "error", "err", "rmse", "mse", "mae", "mape", "perplexity", "ppl", "bpb", "bpc", "nll", "wer", "cer"}
LOWER_WORDS |= {"logloss", "xent", "crossentropy"}
HIGHER_WORDS = {"acc", "accuracy", "f1", "auc", "r2", "precision", "recall", "score", "bleu", "rouge", "iou", "dice"}
_NEGATING = {"neg", "negative", "inv", "inverse", "minus"}


def named_direction(name: str) -> Literal["maximize", "minimize"] | None:
    """The direction metric `name` states by its words (`minimize` for losses and errors, `maximize`
    for accuracies and scores: scikit-learn's `score` is higher-is-better); None if it states
    neither, both, or negates (`neg_log_loss`)."""
    words = {w for w in re.split(r"[^a-z0-9]+", name.lower()) if w}
    lower = any(w in LOWER_WORDS or w.endswith("loss") for w in words)
    higher = any(w in HIGHER_WORDS or w.endswith("accuracy") for w in words)
    if words & _NEGATING or lower == higher:
        return None
    return "minimize" if lower else "maximize"


def direction_problems(target: TargetConfig) -> list[str]:
    """What `senpai validate` refuses about directions, one sentence each (empty: fine): a holdout
    metric or guard whose name states one direction (`named_direction`) while senpai.yaml judges it
    by the other, as when an evaluator prints accuracy and the holdout takes a loss's `minimize`."""
    h = target.holdout
    source = "holdout.direction" if h.direction else "metric.direction (holdout.direction is not set, so the metric's holds)"
    named = [("holdout.metric", h.metric, target.holdout_direction, source, "set holdout.direction to")]
    named += [(f"holdout.guards.{n}", n, g.direction, f"holdout.guards.{n}.direction", "set it to") for n, g in h.guards.items()]
    out = []
    for field, name, direction, where, fix in named:
        said = named_direction(name)
        if said and said != direction:
            better = "higher" if said == "maximize" else "lower"
            out.append(
                f"{field} {name!r} reads as {better} is better, but {where} is {direction}, so the verifier would merge "
                f"candidates that do worse on it; {fix} {said}, or rename the metric if its name misleads"
            )
    return out


def budget_problems(target: TargetConfig) -> list[str]:
    """What `senpai validate` refuses about the compute budget, one sentence each (empty: fine): a
    `compute.param` that is not a number of the search space, or whose range reaches past `budget`
    (the search would propose points the gate must refuse)."""
    c = target.holdout.compute
    if c.param is None:
        return []
    spec = target.params.space.get(c.param)
    if spec is None or spec.type not in ("int", "float"):
        return [f"holdout.compute.param {c.param!r} is not an int or float param of params.space"]
    if spec.high > c.budget:
        return [
            f"params.space.{c.param} reaches {spec.high:g}, over holdout.compute.budget {c.budget:g}: the search would "
            f"propose points the gate refuses; set its high to at most {c.budget:g}"
        ]
    return []


def scope_problems(target: TargetConfig) -> list[str]:
    """What `senpai validate` refuses about `scope`, one sentence each (empty: fine): a non-empty
    scope whose globs do not match `params.file`, which every search-runtime experiment changes, so
    that no experiment could merge."""
    if target.in_scope(target.params.file):
        return []
    globs, file = ", ".join(target.scope), target.params.file
    why = "so the gate refuses every experiment that sets params (all of the search runtime's)"
    return [f"scope: [{globs}] does not match the params file {file}, {why}; add {file} to scope"]


def load_target(repo_dir: Path | str) -> TargetConfig:
    """Load `<repo_dir>/senpai.yaml` (a regular file: it lives in a checkout, so a symlink is refused).
    Raises ConfigError (exit 2) naming the file and the field on bad input."""
    return load_yaml_model(Path(repo_dir) / CONFIG_FILE, TargetConfig, follow=False)
