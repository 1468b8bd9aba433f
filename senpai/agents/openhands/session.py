"""What senpai's tools of one turn act on: the turn context, the events, and the spend so far."""

from collections.abc import Callable
from dataclasses import dataclass, field

from senpai.agents.attempt import Attempt
from senpai.config.roles import Role
from senpai.job.context import TurnContext
from senpai.ledger.blocks import Hypothesis, TurnUsage
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
    submitted: Attempt | None = None  # pushed by this turn, to be trained after it (student_steps)
    opened: list[int] = field(default_factory=list)  # PRs this turn opened, in order (its spend is recorded on the first)
    actions: list[str] = field(default_factory=list)  # one line per ledger effect, for the job's stdout
    clones: int = 0  # harness-owned clones made so far (tools.harness_context)
