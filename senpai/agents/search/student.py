"""The `search` student's part of an attempt: write the hypothesis params on the PR branch, commit
and push. Training and the evidence are `senpai.agents.student_steps`, shared with the LLM runtime.
A multi-arm hypothesis (`Hypothesis.arms`) is pushed as the base merged in: every arm then trains
from that commit under the same seed, and the winner's params alone are committed after (report).
"""

import logging
from collections.abc import Sequence

from senpai.agents.attempt import Attempt, arms_of, checkout_for_attempt
from senpai.agents.params import apply_params
from senpai.agents.search.advisor import answer_free_text
from senpai.job.context import TurnContext
from senpai.ledger.events import Event

log = logging.getLogger(__name__)


def student_turn(ctx: TurnContext, number: int, attempt: int, events: Sequence[Event] = ()) -> Attempt:
    """Attempt `attempt` on PR `number`, ready to train; `events` are the humans' messages routed to
    it (answered first, the search runtime cannot act on them). Raises PermanentError if the PR has
    no hypothesis."""
    for ev in events:
        if ev.kind == "message" and ev.message:
            log.info(answer_free_text(ctx.forge, ev.message))
    h, branch = checkout_for_attempt(ctx, number)
    if not h.arms:
        apply_params(ctx.repo.path / ctx.target.params.file, h.params)
    head = ctx.repo.commit_all(f"{h.id}: apply params (attempt {attempt})")
    ctx.repo.push(branch)
    return Attempt(pr=number, attempt=attempt, hypothesis=h, branch=branch, head=head, arms=arms_of(h), clone=str(ctx.repo.path))
