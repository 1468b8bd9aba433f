"""The agent runtime port: how a role takes one bounded turn.

Two runtimes implement it: `search` (`senpai.agents.search`, no LLM) and `openhands`
(`senpai.agents.openhands`, an LLM agent). `senpai.cli.wiring.RUNTIMES` registers them and picks
one per role from `runtime.<role>.kind`; nothing else tells them apart. Both write the ledger
through `senpai.ledger.transitions`. A runtime imports its heavy packages (Optuna, the OpenHands
SDK, LiteLLM) only once a turn starts, so a job loads what its own role's runtime needs, no more.
"""

from typing import Protocol

from senpai.agents.attempt import Attempt
from senpai.job.context import TurnContext
from senpai.ledger.blocks import Evidence
from senpai.ledger.events import Event


class Runtime(Protocol):
    def advisor_turn(self, ctx: TurnContext, events: list[Event]) -> list[str]:
        """One advisor turn over `events` (reviews, verifications, idle students, stale work and
        human messages); returns one line per ledger effect, for the job's stdout."""
        ...

    def student_turn(self, ctx: TurnContext, pr: int, attempt: int, events: list[Event]) -> Attempt | Evidence:
        """The runtime's part of attempt `attempt` on PR `pr` (`events`: the humans' messages routed
        to it): the attempt, committed and pushed, for `senpai.agents.student_steps` to train and
        report; or the failed evidence it posted instead (nothing to train). Raises PermanentError if
        the PR has no hypothesis."""
        ...
