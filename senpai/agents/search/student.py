"""The `search` student turn: apply the hypothesis params on the PR branch, train, post evidence.

The measuring and posting is `senpai.agents.evidence.measure_and_post`, shared with the LLM runtime.
"""

import json
import logging
import os

from senpai.agents.attempt import checkout_for_attempt
from senpai.agents.context import TurnContext
from senpai.agents.evidence import measure_and_post
from senpai.ledger.blocks import Evidence
from senpai.ledger.redact import Redactor

log = logging.getLogger(__name__)


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
