"""The `search` student turn: apply the hypothesis params on the PR branch, train, post evidence.

The measuring and posting is `senpai.agents.evidence.measure_and_post`, shared with the LLM runtime.
"""

import json
import logging
import os

from senpai.agents.context import TurnContext
from senpai.agents.evidence import measure_and_post
from senpai.errors import PermanentError
from senpai.ledger import transitions
from senpai.ledger.blocks import Evidence, Hypothesis
from senpai.ledger.redact import Redactor

log = logging.getLogger(__name__)


def checkout_for_attempt(ctx: TurnContext, number: int) -> tuple[Hypothesis, str]:
    """Read PR `number`'s hypothesis, move it to wip, and check its branch out with the research base
    merged in (ours wins).  Returns (hypothesis, branch).  Raises PermanentError without a hypothesis."""
    pr = ctx.forge.get_pull(number)
    exp = ctx.ledger.experiment(pr)
    if exp.hypothesis is None:
        raise PermanentError(f"PR #{number} has no readable senpai-hypothesis block: {exp.error}")
    transitions.start_work(ctx.forge, pr)
    ctx.repo.checkout_remote_branch(pr.head_ref)
    ctx.repo.git("merge", "--quiet", "--no-edit", "-X", "ours", f"origin/{ctx.base}")
    return exp.hypothesis, pr.head_ref


def student_turn(ctx: TurnContext, number: int, attempt: int) -> Evidence:
    """One attempt on PR `number`: raises PermanentError if the PR has no hypothesis."""
    h, branch = checkout_for_attempt(ctx, number)
    params_file = ctx.repo.path / ctx.target.params.file
    params = {**json.loads(params_file.read_text()), **h.params}
    params_file.write_text(json.dumps(params, indent=2, sort_keys=True) + "\n")
    head = ctx.repo.commit_all(f"{h.id}: apply params (attempt {attempt})")
    ctx.repo.push(branch)
    redact = Redactor.from_env(os.environ, [ctx.harness.forge.token_env])
    return measure_and_post(ctx, number, attempt, h, head, h.params, redact=redact)
