"""Starting a student attempt: the checkout every runtime's student turn begins with."""

from senpai.agents.context import TurnContext
from senpai.errors import PermanentError
from senpai.ledger import transitions
from senpai.ledger.blocks import Hypothesis


def checkout_for_attempt(ctx: TurnContext, number: int) -> tuple[Hypothesis, str]:
    """Read PR `number`'s hypothesis, move it to wip, and check its branch out with the research base
    merged in (ours wins).  Returns (hypothesis, branch).  Raises PermanentError without a hypothesis."""
    pr = ctx.ledger.pull(number)
    exp = ctx.ledger.experiment(pr)
    if exp.hypothesis is None:
        raise PermanentError(f"PR #{number} has no readable senpai-hypothesis block: {exp.error}")
    transitions.start_work(ctx.forge, pr)
    ctx.repo.checkout_remote_branch(pr.head_ref)
    ctx.repo.git("merge", "--quiet", "--no-edit", "-X", "ours", f"origin/{ctx.base}")
    return exp.hypothesis, pr.head_ref
