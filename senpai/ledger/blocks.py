"""The machine-readable records, as fenced YAML blocks in PR bodies and comments.

    ```senpai-evidence
    schema_version: 1
    ...
    ```

`render(block)` and `parse_blocks(text)` are a strict round trip: parse(render(b)) == b.  A block
that is not valid YAML, or does not match its schema, raises LedgerFormatError naming the block
kind and the field.
"""

import re
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from senpai.config.load import describe_validation_error
from senpai.errors import LedgerFormatError
from senpai.ledger.redact import redact_data

Scalar = str | int | float | bool | None
FENCE = re.compile(r"^```senpai-([a-z]+)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


class Block(BaseModel):
    """Base of every ledger block: strict, frozen, versioned."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    KIND: ClassVar[str]
    schema_version: Literal[1] = 1


class MetricRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    direction: Literal["maximize", "minimize"]
    target: float | None = None


class BaselineRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    commit: str = Field(description="Base branch head the hypothesis was cut from.")
    run_id: str | None = Field(description="W&B run that measured the baseline; None if not yet measured.")
    value: float | None = Field(description="Primary metric of the baseline run.")


class BudgetRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    wall_seconds: int
    attempts: int


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


class RunRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    url: str | None
    state: str


class PrimaryResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    value: float | None
    baseline: float | None
    delta: float | None = Field(description="value - baseline (raw, not direction-adjusted).")


class Cost(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    gpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    tokens: int = 0
    dollars: float = 0.0


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


class Verification(Block):
    """`senpai-verification`, written by the verifier: holdout numbers for candidate vs baseline."""

    KIND: ClassVar[str] = "verification"
    pr: int
    candidate: str = Field(description="PR head commit measured.")
    baseline: str = Field(description="Base branch commit measured.")
    metric: str
    direction: Literal["maximize", "minimize"]
    seeds: list[int]
    candidate_values: list[float]
    baseline_values: list[float]
    candidate_mean: float | None
    baseline_mean: float | None
    improvement: float | None = Field(description="Candidate over baseline in the metric's direction.")
    noise_floor: float | None = Field(description="noise_k x stdev of baseline repeats, at least min_floor.")
    protected_touched: list[str] = Field(default_factory=list)
    passed: bool
    reason: str


class Decision(Block):
    """`senpai-decision`, the advisor's verdict on one head of a PR."""

    KIND: ClassVar[str] = "decision"
    pr: int
    head: str
    verdict: Literal["merge", "close", "changes"]
    reason: str
    metric: str | None = None
    candidate: float | None = None
    baseline: float | None = None
    improvement: float | None = None
    noise_floor: float | None = None


class SteerCommand(BaseModel):
    """One slash command as the wrapper applied it (the fields its verb uses; the rest stay empty)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    verb: Literal["pause", "resume", "budget", "try", "stop"]
    experiments: int | None = Field(None, description="budget: the new experiment cap.")
    params: dict[str, Scalar] = Field(default_factory=dict, description="try: the human's params, typed by the space.")
    pr: int | None = Field(None, description="stop: the PR stopped.")
    decided: list[int] = Field(default_factory=list, description="resume: PRs decided before it (patience restarts).")


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
    """What an agent turn spent, or may spend (a TurnBudget's shape)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    llm_calls: int = 0
    tokens: int = Field(0, description="Prompt + completion tokens.")
    dollars: float = Field(0.0, description="LiteLLM's cost, dollars.")
    wall_seconds: float = 0.0


class BudgetReport(Block):
    """`senpai-budget`, posted when an agent turn runs out of its budget (design §3).

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
    needed: TurnUsage = Field(description="Budget to ask for to finish the work (a larger TurnBudget).")


KINDS: dict[str, type[Block]] = {m.KIND: m for m in (Hypothesis, Evidence, Verification, Decision, Steer, BudgetReport)}


def render(block: Block) -> str:
    """The fenced YAML block for `block` (no surrounding prose)."""
    data = redact_data(block.model_dump(mode="python"))
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
    return f"```senpai-{block.KIND}\n{text}```"


def _parse_one(kind: str, text: str) -> Block:
    model = KINDS.get(kind)
    if model is None:
        raise LedgerFormatError(f"unknown block kind senpai-{kind}; expected one of {sorted(KINDS)}")
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise LedgerFormatError(f"senpai-{kind} block is not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise LedgerFormatError(f"senpai-{kind} block must be a YAML mapping, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        problems = describe_validation_error(f"senpai-{kind} block is invalid", e, data).replace("\n", "; ")
        raise LedgerFormatError(problems) from e


def parse_blocks(text: str) -> list[Block]:
    """Every senpai block in a markdown text, in order. Raises LedgerFormatError on the first bad one."""
    return [_parse_one(m.group(1), m.group(2)) for m in FENCE.finditer(text or "")]


def find_block[B: Block](text: str, model: type[B]) -> B | None:
    """The first block of `model`'s kind in `text`, or None. Raises LedgerFormatError if invalid."""
    for m in FENCE.finditer(text or ""):
        if m.group(1) == model.KIND:
            block = _parse_one(m.group(1), m.group(2))
            assert isinstance(block, model)
            return block
    return None
