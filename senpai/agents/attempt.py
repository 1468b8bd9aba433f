"""Starting a student attempt, and what its runtime hands on to be trained (`senpai.agents.student_steps`)."""

from pydantic import BaseModel, ConfigDict, Field

from senpai.errors import PermanentError
from senpai.job.context import TurnContext
from senpai.ledger import transitions
from senpai.ledger.blocks import Hypothesis
from senpai.ledger.labels import ExperimentState, status_of


class Attempt(BaseModel):
    """An attempt ready to train: its head pushed to `branch`, and the arms to train on it (name, params,
    control; one unnamed arm for a hypothesis without arms). `interpretation`, `tokens` and `dollars`
    are an LLM student's reading and spend so far; none for the search runtime."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pr: int
    attempt: int
    hypothesis: Hypothesis
    branch: str
    head: str = Field(pattern=r"^[0-9a-f]{40}$")
    arms: list[tuple[str | None, dict, bool]] = Field(min_length=1)
    interpretation: str | None = None
    tokens: int = 0
    dollars: float = 0.0
    clone: str | None = Field(
        None, exclude=True, description="A clone of senpai's own holding `head`, where no code from the PR ran (prepare's)."
    )


def checkout_for_attempt(ctx: TurnContext, number: int) -> tuple[Hypothesis, str]:
    """Read PR `number`'s hypothesis, move it to wip, and check its branch out with the research base
    merged in (ours wins).  Returns (hypothesis, branch).  Raises PermanentError without a hypothesis."""
    pr = ctx.ledger.handed(number)
    exp = ctx.ledger.experiment(pr)
    if exp.hypothesis is None:
        raise PermanentError(f"PR #{number} has no readable senpai-hypothesis block: {exp.error}")
    if status_of(pr.labels) != ExperimentState.WIP:  # a label write acts on the labels as they are now
        pr = ctx.forge.get_pull(number)
    transitions.start_work(ctx.forge, pr)
    ctx.repo.checkout_remote_branch(pr.head_ref)
    ctx.repo.merge_base_in(ctx.base)
    return exp.hypothesis, pr.head_ref


def arms_of(h: Hypothesis) -> list[tuple[str | None, dict, bool]]:
    """The arms an attempt at `h` trains: each of `h.arms` with its params, or `h` itself alone."""
    if not h.arms:
        return [(None, h.params, True)]
    return [(arm.name, h.arm_params(arm), arm.control) for arm in h.arms]
