"""The openhands runtime behind the `Runtime` port (`senpai.agents.base`)."""

from senpai.agents.attempt import Attempt
from senpai.errors import needs_extra
from senpai.job.context import TurnContext
from senpai.ledger.blocks import Evidence
from senpai.ledger.events import Event


class OpenHandsRuntime:
    """The OpenHands SDK and LiteLLM (the `agents` extra) are imported when a turn starts, not when
    the runtime is picked; MissingExtra (exit 2) if they are not installed."""

    def advisor_turn(self, ctx: TurnContext, events: list[Event]) -> list[str]:
        with needs_extra("agents", "the openhands runtime"):
            from senpai.agents.openhands.advisor import advisor_turn

        return advisor_turn(ctx, events)

    def student_turn(self, ctx: TurnContext, pr: int, attempt: int, events: list[Event]) -> Attempt | Evidence:
        with needs_extra("agents", "the openhands runtime"):
            from senpai.agents.openhands.student import student_turn

        return student_turn(ctx, pr, attempt, events)
