"""What senpai's tools of one turn act on: the turn context, the events, and the spend so far."""

from collections.abc import Callable
from dataclasses import dataclass, field

from senpai.agents.context import TurnContext
from senpai.config.roles import Role
from senpai.ledger.blocks import Evidence, Hypothesis, TurnUsage
from senpai.ledger.events import Event


@dataclass
class Session:
    ctx: TurnContext
    role: Role
    usage: Callable[[], TurnUsage]
    events: list[Event] = field(default_factory=list)
    pr: int | None = None  # student: the assigned PR
    attempt: int | None = None
    hypothesis: Hypothesis | None = None
    branch: str | None = None
    train_env: dict[str, str] = field(default_factory=dict)  # secrets only the train command gets
    evidence: Evidence | None = None  # posted by this turn
    opened: list[int] = field(default_factory=list)  # PRs this turn opened, in order (its spend is recorded on the first)
    actions: list[str] = field(default_factory=list)  # one line per ledger effect, for the job's stdout
    clones: int = 0  # harness-owned clones made so far (tools.harness_context)
