"""The `search` student turn: apply the hypothesis params on the PR branch, train, post evidence.

The measuring and posting is `senpai.agents.evidence`, shared with the LLM runtime.  A multi-arm
hypothesis (`Hypothesis.arms`) trains every arm from the same clean tree under the same seed, then
commits the winning arm's params only, so the PR head is the winner and what may merge.
"""

import logging
from collections.abc import Sequence

from senpai.agents.attempt import checkout_for_attempt
from senpai.agents.context import TurnContext
from senpai.agents.evidence import Measured, measure, measure_and_post, post
from senpai.agents.params import apply_params
from senpai.agents.search.advisor import answer_free_text
from senpai.config.target import Metric
from senpai.ledger.blocks import Arm, ArmResult, Cost, Evidence, Hypothesis
from senpai.ledger.events import Event

log = logging.getLogger(__name__)


def student_turn(ctx: TurnContext, number: int, attempt: int, events: Sequence[Event] = ()) -> Evidence:
    """One attempt on PR `number`; `events` are the humans' messages routed to it (answered first,
    the search runtime cannot act on them).  Raises PermanentError if the PR has no hypothesis."""
    for ev in events:
        if ev.kind == "message" and ev.message:
            log.info(answer_free_text(ctx.forge, ev.message))
    h, branch = checkout_for_attempt(ctx, number)
    if h.arms:
        return _arms_turn(ctx, number, attempt, h, branch)
    apply_params(ctx.repo.path / ctx.target.params.file, h.params)
    head = ctx.repo.commit_all(f"{h.id}: apply params (attempt {attempt})")
    ctx.repo.push(branch)
    return measure_and_post(ctx, number, attempt, h, head, h.params)


def _arms_turn(ctx: TurnContext, number: int, attempt: int, h: Hypothesis, branch: str) -> Evidence:
    """Train each arm on the clean tree (its params applied, uncommitted), commit the winner's
    params, push, and post one evidence with a row per arm (the winner's run first)."""
    path = ctx.repo.path / ctx.target.params.file
    start = ctx.repo.head()
    results: list[tuple[Arm, Measured]] = []
    for arm in h.arms or []:
        _clean(ctx)
        apply_params(path, h.arm_params(arm))
        results.append((arm, measure(ctx, number, attempt, h, start, h.arm_params(arm), arm=arm.name)))
        log.info("arm %s: %s = %s", arm.name, ctx.target.metric.name, results[-1][1].value)
    winner, m = best_arm(results, ctx.target.metric)
    _clean(ctx)
    apply_params(path, h.arm_params(winner))
    head = ctx.repo.commit_all(f"{h.id}: apply params of arm {winner.name} (attempt {attempt})")
    ctx.repo.push(branch)
    rows = [
        ArmResult(name=a.name, control=a.control, params=h.arm_params(a), value=r.value, run=r.run, failure=r.failure)
        for a, r in results
    ]
    runs = [m.run, *(r.run for a, r in results if a is not winner)]
    spent = Cost(wall_seconds=sum(r.seconds for _, r in results))
    return post(ctx, number, attempt, h, head, m, spent, runs=runs, arms=rows, arm=winner.name)


def best_arm(results: list[tuple[Arm, Measured]], metric: Metric) -> tuple[Arm, Measured]:
    """The arm with the best validation value among those that did not fail (the control wins a
    tie); the control if every arm failed (its failure is then the evidence's)."""
    control = next(r for r in results if r[0].control)
    ok = [r for r in results if r[1].failure is None and r[1].value is not None]
    if not ok:
        return control
    ranked = sorted(ok, key=lambda r: not r[0].control)  # stable: the control first among equals
    return max(ranked, key=lambda r: metric.better(r[1].value, ranked[0][1].value))


def _clean(ctx: TurnContext) -> None:
    """Back to the attempt's commit: what an arm's training wrote is neither committed nor seen by the next arm."""
    ctx.repo.git("reset", "--quiet", "--hard")
    ctx.repo.git("clean", "--quiet", "-fd")
