"""The `search` student turn: apply the hypothesis params on the PR branch, train, post evidence.

The measuring and posting is `senpai.agents.evidence.measure_and_post`, shared with the LLM runtime.
"""

import logging
from collections.abc import Sequence

from senpai.agents.attempt import checkout_for_attempt
from senpai.agents.context import TurnContext
from senpai.agents.evidence import measure_and_post
from senpai.agents.params import apply_params
from senpai.agents.search.advisor import answer_free_text
from senpai.ledger.blocks import Evidence
from senpai.ledger.events import Event

log = logging.getLogger(__name__)


def student_turn(ctx: TurnContext, number: int, attempt: int, events: Sequence[Event] = ()) -> Evidence:
    """One attempt on PR `number`; `events` are the humans' messages routed to it (answered first,
    the search runtime cannot act on them).  Raises PermanentError if the PR has no hypothesis."""
    for ev in events:
        if ev.kind == "message" and ev.message:
            log.info(answer_free_text(ctx.forge, ev.message))
    h, branch = checkout_for_attempt(ctx, number)
    apply_params(ctx.repo.path / ctx.target.params.file, h.params)
    head = ctx.repo.commit_all(f"{h.id}: apply params (attempt {attempt})")
    ctx.repo.push(branch)
    return measure_and_post(ctx, number, attempt, h, head, h.params)
