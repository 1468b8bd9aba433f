"""The search runtime behind the `Runtime` port (`senpai.agents.base`)."""

from senpai.agents.attempt import Attempt
from senpai.job.context import TurnContext
from senpai.ledger.blocks import Evidence
from senpai.ledger.events import Event


class SearchRuntime:
    """Each turn imports its own module: a student job never loads the advisor's Optuna."""

    def advisor_turn(self, ctx: TurnContext, events: list[Event]) -> list[str]:
        from senpai.agents.search.advisor import advisor_turn

        return advisor_turn(ctx, events)

    def student_turn(self, ctx: TurnContext, pr: int, attempt: int, events: list[Event]) -> Attempt | Evidence:
        from senpai.agents.search.student import student_turn

        return student_turn(ctx, pr, attempt, events)
