"""Reviewing an experiment: the verdict steps every advisor runtime shares.

A review-ready PR goes to the verifier before any merge; a verified PR is merged through the
merge gate in `transitions.decide`: a merge the gate refuses is closed, one that conflicts with a
base that moved is sent back for changes, and one the base's protection refuses is blocked for
humans.  The `search` advisor picks verdicts from the numbers, the LLM advisor picks them itself;
both apply them here.
"""

import math
import statistics

from senpai.agents.reapply import params_onto_base
from senpai.config.time_limits import HEAD_MOVES
from senpai.errors import ApprovalRequired, MergeBlocked, MergeConflict, MergeRefused, PermanentError
from senpai.forge.base import PullRequest
from senpai.job.context import TurnContext
from senpai.job.runs import tag_verdict
from senpai.ledger import escalation, ladder, stats, transitions
from senpai.ledger.baseline import Baseline
from senpai.ledger.blocks import ApprovalRequest, Decision, Verification
from senpai.ledger.experiment import Experiment
from senpai.ledger.gate import rival_p_values
from senpai.ledger.labels import ExperimentState, status_of
from senpai.ledger.ladder import for_proposer


def decision(exp: Experiment, verdict: str, reason: str, **numbers) -> Decision:
    """A decision on `exp`'s head; `numbers` name the metric they are in (default: the hypothesis's)."""
    numbers.setdefault("metric", exp.hypothesis.metric.name if exp.hypothesis else None)
    numbers.setdefault("findings", findings(exp))
    return Decision(pr=exp.pr, head=exp.head, verdict=verdict, reason=reason, **numbers)


def findings(exp: Experiment) -> list[str]:
    """Multi-arm: one line per arm of the head's evidence that is not the winner (it does not merge:
    it is recorded as a finding), with its params and validation value; empty for a single arm."""
    ev = exp.evidence_for(exp.head)
    if ev is None or not ev.arms:
        return []
    shown = lambda r: r.failure or f"{ev.primary.name} = {r.value}"  # noqa: E731
    return [
        f"arm {r.name}{' (control)' if r.control else ''} {r.params}: {shown(r)}; not chosen (winner: {ev.arm})"
        for r in ev.arms
        if r.name != ev.arm
    ]


def apply(ctx: TurnContext, pr: PullRequest, exp: Experiment, baseline: Baseline, d: Decision) -> None:
    """`transitions.decide` for the current base (the merge gate applies to merges, with the trusted
    associations whose `/senpai allow compute` counts and the p-values of competing verifications),
    then the PR's W&B runs are tagged with the verdict (`runs.tag_verdict`)."""
    if d.verdict != "merge":
        transitions.decide(ctx.forge, pr, exp, d, ctx.target, baseline.commit)
    else:
        rivals = rival_p_values(ctx.target, ctx.ledger.experiments(), exp.pr, baseline.commit)
        trusted = ctx.harness.forge.trusted
        transitions.decide(ctx.forge, pr, exp, d, ctx.target, baseline.commit, trusted=trusted, rivals=rivals)
    tag_verdict(ctx, d)


def verified_numbers(v: Verification) -> dict[str, float | str | None]:
    """The verification's holdout numbers for a Decision, named by the holdout metric."""
    numbers = dict(
        candidate=v.candidate_mean, baseline=v.baseline_mean, improvement=v.improvement, noise_floor=v.noise_floor,
        resolution=v.resolution,
    )  # fmt: skip
    return {"metric": v.metric} | {k: x for k, x in numbers.items() if x is None or math.isfinite(x)}


def send_to_verifier(ctx: TurnContext, pr: PullRequest, exp: Experiment) -> str:
    """review → verifying (the wrapper then launches the verifier for this head and base)."""
    transitions.request_verification(ctx.forge, pr)
    ev = exp.evidence_for(pr.head_sha)
    shown = f" ({ev.primary.name} = {ev.primary.value})" if ev else ""
    return f"#{exp.pr}: verification requested{shown}"


def merge_verified(ctx: TurnContext, pr: PullRequest, exp: Experiment, baseline: Baseline, v: Verification, reason: str) -> str:
    """Merge a PR whose verification for (head, base) passed; the gate re-checks everything.

    A refused merge closes the PR with the gate's reason; a conflict asks for changes (`reapply`).
    A merge that waits for a human (ApprovalRequired) stays as it is, and the approval request is
    posted (once per fingerprint): the wrapper wakes the advisor again when the approval arrives.
    A base whose protection refuses the merge (MergeBlocked) blocks the PR (`base_refuses`).
    """
    numbers = verified_numbers(v)
    try:
        apply(ctx, pr, exp, baseline, decision(exp, "merge", reason, **numbers))
        return f"#{exp.pr}: merged ({for_proposer(v).reason})"  # an LLM advisor reads this line: the Ladder's numbers
    except ApprovalRequired as e:
        r = ApprovalRequest(pr=exp.pr, head=pr.head_sha, base=baseline.commit, fingerprint=e.fingerprint, reasons=e.reasons)
        transitions.request_approval(ctx.forge, pr, r)
        return f"#{exp.pr}: waiting for a human's `/senpai approve {e.fingerprint}`"
    except MergeRefused as e:
        apply(ctx, pr, exp, baseline, decision(exp, "close", f"merge gate refused: {e}", **numbers))
        return f"#{exp.pr}: closed, merge gate refused: {e.shown}"  # an LLM advisor reads it: no exact p-value or mean
    except MergeConflict:
        return reapply(ctx, pr, exp, baseline, numbers)
    except MergeBlocked as e:
        return base_refuses(ctx, pr, exp, baseline, e)


def reapply_round(ctx: TurnContext, merged: int, old: Baseline, exps: list[Experiment]) -> list[str]:
    """Right after PR `merged` merged onto `old`, the round's other passes (verifying PRs whose head
    passed against `old`, from `exps`, the turn's read of the ledger) are settled from the numbers
    the round already has. The new base's tree is the one the pick's verification measured as its
    candidate, on the same seeds: a pass that would train on the new base the very tree it measured
    (`_measured_tree`: not a change that composes with the pick's) and that the rule does not find
    better than the pick there (`beaten`) is closed now, with no verification against the new base.
    A pass a human blocked since the turn read it is left alone. Of the others, one whose
    head conflicts with the new base is re-applied at once (`reapply`: a params-only PR by senpai,
    any other by its student), instead of first costing a verification refused unrun for the
    conflict and an advisor turn; the rest need nothing: the wrapper launches their verification
    against the new base. One line per PR closed or re-applied; none if the base did not move to a
    merge of this turn. Asks the forge nothing when the round has no other pass."""
    passes = [
        (e, v)
        for e in exps
        if e.state == ExperimentState.VERIFYING and e.pr != merged and not e.error
        if (v := e.verification_for(e.head, old.commit)) is not None and v.passed
    ]
    if not passes or (new := ctx.forge.branch_sha(ctx.base)) == old.commit:
        return []
    ctx.repo.git("fetch", "--quiet", "origin", ctx.base, network=True)
    base = Baseline(commit=new, pr=merged, run_id=None, value=None, params=None)
    current = {p.number: p for p in ctx.ledger.list_pulls()}  # one listing for them all: the merge changed it
    pick = next((e.verification_for(e.head, old.commit) for e in exps if e.pr == merged), None)
    if pick is not None and ctx.repo.git("rev-parse", f"{new}^@").split() != [old.commit, pick.candidate]:
        pick = None  # the base is not exactly the pick merged onto `old` (another push landed): verify as usual
    out = []
    for e, v in passes:
        if (pr := current.get(e.pr)) is None or pr.state != "open" or pr.head_sha != e.head:
            continue  # moved on since the turn read it: its next event decides
        if status_of(pr.labels) != ExperimentState.VERIFYING:
            continue  # blocked by a human (or its label taken off) since the turn read it: not the round's to settle
        ctx.repo.git("fetch", "--quiet", "origin", f"+{pr.head_sha}:refs/senpai/round", network=True)
        onto, _, conflict = ctx.repo.merged(new, pr.head_sha)
        if pick is not None and (why := beaten(ctx, v, pick)) is not None and _measured_tree(ctx, pr, e, old.commit, new, onto):
            d = decision(e, "close", why[0], **why[1])
            apply(ctx, pr, e, base, d)
            # an LLM advisor reads this line: the Ladder's numbers, or none where the verdict has no resolution
            shown = for_proposer(d).reason if ladder.step(d.resolution) else why[0].split(":", 1)[0]
            out.append(f"#{e.pr}: closed, {shown}")
            continue
        if conflict:
            out.append(reapply(ctx, pr, e, base, {}))
    return out


def _measured_tree(ctx: TurnContext, pr: PullRequest, exp: Experiment, old: str, new: str, onto: str | None) -> bool:
    """Whether `pr` on the new base `new` would train the very tree its verification against `old`
    trained (the merge of its head into `old`): its merge into `new` (`onto`), or, where that
    conflicts, its params re-applied onto `new` (`params_onto_base`). Only then do its candidate
    values stand for it against the new base; a change that composes with the pick's (a code change
    on top of the pick's params) trains a tree nobody measured, which the verifier measures."""
    measured, _, _ = ctx.repo.merged(old, pr.head_sha)
    if onto is None:
        r = params_onto_base(ctx, pr, exp, new)
        tree = r.tree if r is not None else None
    else:
        tree = ctx.repo.git("rev-parse", f"{onto}^{{tree}}").strip()
    return measured is not None and tree is not None and tree == ctx.repo.git("rev-parse", f"{measured}^{{tree}}").strip()


def beaten(ctx: TurnContext, v: Verification, pick: Verification) -> tuple[str, dict] | None:
    """Why the pass `v` cannot beat the merged `pick` of its round, and the numbers of that
    judgement for the decision; None if it may (then it is verified against the new base as usual).
    Judged by the target's rule (`stats.judge`, one look) with `v`'s candidate values as the
    candidate and the pick's as the baseline, on the seeds both measured (at least 2, same metric
    and direction): the new base's tree is the one the pick's candidate side trained. A gain that
    more seeds might confirm (`holdout.max_seeds`) is left to the verifier."""
    hold = ctx.target.holdout
    if (v.metric, v.direction, v.holdout) != (pick.metric, pick.direction, pick.holdout) or v.metric != hold.metric:
        return None  # another metric, direction or sealed holdout: their values are not comparable
    mine, theirs = (
        dict(zip(v.seeds, v.candidate_values, strict=False)),
        dict(zip(pick.seeds, pick.candidate_values, strict=False)),
    )
    seeds = [s for s in v.seeds if s in theirs and math.isfinite(mine.get(s, math.nan)) and math.isfinite(theirs[s])]
    if len(seeds) < 2:
        return None
    cand, base = [mine[s] for s in seeds], [theirs[s] for s in seeds]
    j = stats.judge(hold, v.direction, cand, base)
    if j.passed or j.improvement is None or (stats.looks(hold) > 1 and j.improvement > 0):
        return None  # passes, or more seeds (`max_seeds`) might: the verifier decides
    numbers = dict(
        metric=hold.metric, candidate=statistics.fmean(cand), baseline=statistics.fmean(base), improvement=j.improvement,
        noise_floor=j.noise_floor, resolution=ladder.resolution(hold.rule, j.noise_floor, hold.min_delta, cand, base),
    )  # fmt: skip
    return f"cannot beat the new base (#{pick.pr} merged), judged on the round's seeds {seeds}: {j.reason}", numbers


def base_refuses(ctx: TurnContext, pr: PullRequest, exp: Experiment, baseline: Baseline, e: MergeBlocked) -> str:
    """The base branch refuses the merge of a verified PR (branch protection: a required review or
    status check). Not the hypothesis's failure and not a conflict: re-applying or retraining cannot
    help, so nothing runs again. One issue for humans (by the PR), then the PR is blocked with a
    comment naming it; both idempotent (`escalation.open_issue`, `transitions.block`)."""
    what = (
        f"The base branch `{ctx.base}` refuses to merge #{exp.pr}, which passed verification at {pr.head_sha[:8]} "
        f"on {baseline.commit[:8]}. The forge says: {e}"
    )
    todo = (
        "This is the base's protection (a required review or status check), not a conflict and not the "
        "hypothesis's failure, so senpai neither retrains nor re-applies it. A human must satisfy the rule "
        "(e.g. approve the PR) and merge it by hand (`senpai ledger --check` then lists it as merged by hand), "
        "change the rule, or close the PR."
    )
    number = escalation.open_issue(
        ctx.forge, f"merge-refused:pr{exp.pr}", f"senpai: the base refuses to merge #{exp.pr}", f"{what}\n\n{todo}"
    )
    transitions.block(ctx.forge, pr, f"the base refuses the merge (see #{number}): {e}")
    return f"#{exp.pr}: blocked, the base refuses the merge (issue #{number})"


REAPPLY = "the base moved and the merge conflicts; re-apply on the new base"


def reapply(ctx: TurnContext, pr: PullRequest, exp: Experiment, baseline: Baseline, numbers: dict) -> str:
    """The base moved and the PR conflicts with it (at the merge, or the verifier's `conflict`):
    not the hypothesis's failure. A params-only PR is re-applied by senpai itself: its params
    written onto the new base as a commit on its branch (`senpai.agents.reapply`), recorded
    (`transitions.record_reapply`) before it is pushed, so a retry pushes the same commit; it stays
    verifying, and no student attempt is spent. Any other PR goes back to its student (`changes`).
    Either way at most the hypothesis's `budget.attempts` times; a PR that conflicts again after
    that is closed (a base that keeps moving must not cost without end)."""
    r = params_onto_base(ctx, pr, exp, baseline.commit)
    # a record of this very commit is this re-apply, recorded and not yet pushed (a crash between the two): not another
    done = {x.head for x in exp.reapplies} - ({r.head} if r is not None else set())
    sent_back = sum(d.verdict == "changes" and d.reason == REAPPLY for d in exp.decisions) + len(done)
    limit = exp.hypothesis.budget.attempts if exp.hypothesis else 1
    if sent_back >= limit:
        why = f"the merge conflicts with the base again after {sent_back} re-applies (budget.attempts {limit})"
        apply(ctx, pr, exp, baseline, decision(exp, "close", why, **numbers))
        return f"#{exp.pr}: closed, {why}"
    if r is not None:
        transitions.record_reapply(ctx.forge, pr, r)
        try:
            ctx.repo.git("push", "--quiet", "origin", f"{r.head}:refs/heads/{pr.head_ref}", network=True)
        except PermanentError as e:  # the branch moved under this turn (not a fast-forward): its next event decides
            return f"#{exp.pr}: not re-applied, its branch moved meanwhile ({e})"
        reused = f", the tree {r.measured[:8]} trained" if r.measured else ""
        return f"#{exp.pr}: params re-applied onto {baseline.commit[:8]} as {r.head[:8]}{reused} (no student attempt)"
    apply(ctx, pr, exp, baseline, decision(exp, "changes", REAPPLY, **numbers))
    return f"#{exp.pr}: changes requested (merge conflict)"


HEAD_MOVED = "the head moved under senpai's job: re-run on the new head"


def head_moved(ctx: TurnContext, pr: PullRequest, exp: Experiment, baseline: Baseline) -> str:
    """The PR is in review at a head no student measured: someone other than senpai pushed to its
    branch while (or after) a job measured an earlier head. Not the hypothesis's failure, so its
    student runs again on the new head (`changes`, which says so on the PR), at most HEAD_MOVES
    times; a head that moves again after that blocks the PR, saying it keeps moving."""
    last = exp.evidence[-1]
    moved = sum(d.verdict == "changes" and d.reason.startswith(HEAD_MOVED) for d in exp.decisions)
    if moved >= HEAD_MOVES:
        why = (
            f"the head keeps moving: someone other than senpai pushed to `{exp.branch}` under senpai's jobs "
            f"{moved + 1} times (now {pr.head_sha[:8]}; attempt {last.attempt} measured {last.head[:8]}). senpai "
            f"re-ran it {moved} times and stops here: stop pushing to the branch, or close the PR"
        )
        transitions.block(ctx.forge, pr, why)
        return f"#{exp.pr}: blocked, the head keeps moving"
    why = (
        f"{HEAD_MOVED} ({moved + 1} of {HEAD_MOVES}): {pr.head_sha[:8]} was pushed by someone other than senpai "
        f"while attempt {last.attempt} measured {last.head[:8]}; not the hypothesis's failure"
    )
    apply(ctx, pr, exp, baseline, decision(exp, "changes", why))
    return f"#{exp.pr}: changes requested (the head moved)"


def reapply_failed(ctx: TurnContext, pr: PullRequest, exp: Experiment, why: str) -> str:
    """A PR that passed verification failed its re-apply on a moved base (`reapply`): a hang, a
    timeout or a crash there is more likely senpai's or the new base's than the hypothesis's, which
    its verification measured, so the PR is blocked for a human, never closed as a failure."""
    reason = (
        f"its re-apply on the moved base failed ({why}), after it passed verification; senpai does not close a "
        "verified PR for that: a human must look (re-apply it by hand, or close it)"
    )
    transitions.block(ctx.forge, pr, reason)
    return f"#{exp.pr}: blocked, the re-apply of a verified PR failed"
