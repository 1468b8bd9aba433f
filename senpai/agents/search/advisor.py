"""The `search` advisor turn: open hypothesis PRs for idle students, review evidence, decide.

Every effect goes through `senpai.ledger.transitions`; each event is re-checked against the
ledger first, so a stale or replayed event does nothing.  Non-idle events go first:

- `stale` on a PR still in wip: closed ("stale: ...").
- `review` on a PR in review (`_review_evidence`): a head no student measured (someone else
  pushed) goes back for changes, blocked after HEAD_MOVES such moves (`review.head_moved`); no
  evidence or a failed one is closed as a useful failure, unless the PR holds a passing
  verification (its re-apply failed: blocked for a human, `review.reapply_failed`); the measured
  start is closed with its value (taken only from a head with the base's git tree), never
  verified; a validation value no better than the baseline's is closed with the numbers; anything
  else goes to the verifier.
- `verified` on a PR in verifying (`_decide_verified`), on its verification of (head, base): a
  conflict is re-applied on the new base (`review.reapply`, at most `budget.attempts` times, then
  closed), a failure is closed, a base that moved during this turn (another pass of the round
  merged) leaves the PR to be verified again, and a pass is merged through the gate
  (`review.merge_verified`: closed on MergeRefused, blocked with one issue on MergeBlocked), after
  which the round's other passes are settled from the numbers (`review.reapply_round`).
- `idle` students with nothing in wip or changes (`_assign`): while the base has no value, the
  first is given the base itself to measure (`_measure_base`, the measured start, once per base;
  it counts as an experiment, not in the patience streak; issue 25 measured starting blind on
  digits: all of the first 11 PRs went to the verifier, some 17 and 40 points worse than the
  base); the others get one point each from `propose` over every point tried (validation values
  only), under the diversity alarm's `avoid` when it is raised.  The full params are the
  baseline's overlaid with the point; the branch `senpai/<student>/<id>` is cut from the baseline
  commit (`open_hypothesis`).  While the base does not train (`senpai.ledger.basefails.blocking`),
  nothing is opened and the turn's line says why.
"""

import logging

from senpai import phases
from senpai.agents import review
from senpai.agents.hypothesis import open_hypothesis, reported
from senpai.agents.params import read_params
from senpai.errors import TransitionError
from senpai.forge.base import PullRequest
from senpai.forge.read import ForgeReader
from senpai.job.context import TurnContext
from senpai.ledger import basefails, diversity, escalation
from senpai.ledger.baseline import Baseline, current_baseline, measuring_base
from senpai.ledger.blocks import Arm
from senpai.ledger.commands import SYNTAX
from senpai.ledger.events import Event, Message
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ASSIGNED, SENPAI, ExperimentState, status_of
from senpai.ledger.records import neutral, quote, unmention
from senpai.ledger.replies import reply_to_human

log = logging.getLogger(__name__)
_decision = review.decision
FAILURE_TAIL = 12  # log lines of a failed measurement of the base quoted in its issue


def advisor_turn(ctx: TurnContext, events: list[Event]) -> list[str]:
    """Handle `events` in order (messages, then reviews, then new work); one line per action taken."""
    actions = [answer_free_text(ctx.forge, ev.message) for ev in events if ev.kind == "message" and ev.message]
    base_sha = ctx.forge.branch_sha(ctx.base)
    exps = ctx.ledger.experiments()
    baseline = current_baseline(exps, base_sha)
    # each PR is read as listed above (a listing per event would be charged for every decision made
    # before it) and acted on once; after a verified PR's turn (a merge re-applies other PRs) afresh
    acted: set[int] = set()
    fresh = False
    for ev in [e for e in events if e.kind not in ("idle", "message")]:
        exp = next((x for x in exps if x.pr == ev.pr), None)
        if exp is None or exp.pr in acted:
            continue
        pr = ctx.ledger.pull(exp.pr) if fresh else ctx.ledger.handed(exp.pr)
        if lines := _review(ctx, ev, pr, exp, baseline, exps):
            actions += lines
            acted.add(exp.pr)
            fresh = fresh or ev.kind == "verified"
    idle = [e.student for e in events if e.kind == "idle" and e.student]
    if idle:
        exps = ctx.ledger.experiments()
        actions += _assign(ctx, idle, exps, current_baseline(exps, ctx.forge.branch_sha(ctx.base)))
    return actions


NO_FREE_TEXT = (
    "This senpai runs the `search` runtime (no LLM), so it cannot act on free text. "
    "Slash commands work with every runtime:\n\n" + SYNTAX
)


def answer_free_text(forge: ForgeReader, m: Message) -> str:
    """The search runtime's answer to a human's free text: what it can do instead (once per version)."""
    posted = reply_to_human(forge, m, NO_FREE_TEXT)
    return f"#{m.number}: answered @{m.author}" + ("" if posted else " (already answered)")


def _review(
    ctx: TurnContext, ev: Event, pr: PullRequest, exp: Experiment, baseline: Baseline, exps: list[Experiment]
) -> list[str]:
    status = status_of(pr.labels)
    if pr.state != "open" or pr.head_sha != ev.head:
        return []  # moved on since the wrapper looked
    decide = lambda d: review.apply(ctx, pr, exp, baseline, d)  # noqa: E731
    if ev.kind == "stale" and status == ExperimentState.WIP:
        decide(_decision(exp, "close", f"stale: no live job and no progress; {exp.attempts} attempt(s) made"))
        return [f"#{exp.pr}: closed as stale"]
    if ev.kind == "review" and status == ExperimentState.REVIEW:
        return _review_evidence(ctx, pr, exp, baseline, decide)
    if ev.kind == "verified" and status == ExperimentState.VERIFYING:
        return _decide_verified(ctx, pr, exp, baseline, exps)
    return []


def _review_evidence(ctx, pr, exp: Experiment, baseline: Baseline, decide) -> list[str]:
    """Close a failed attempt as a useful failure, or a value no better than the baseline's; else
    verify. Not the hypothesis's failures: a head no student measured (someone else pushed to the
    branch: `review.head_moved`), and a failed re-apply of a PR that passed verification
    (`review.reapply_failed`)."""
    evidence = exp.evidence_for(pr.head_sha)
    if evidence is None and exp.evidence:
        return [review.head_moved(ctx, pr, exp, baseline)]
    if evidence is None or evidence.outcome == "failed":
        why = evidence.failure if evidence else "no evidence for the current head"
        if any(v.passed for v in exp.verifications):
            return [review.reapply_failed(ctx, pr, exp, why)]
        if evidence is not None and exp.hypothesis and exp.hypothesis.measures_base:
            return [_measurement_failed(ctx, exp, evidence, baseline, decide)]
        decide(_decision(exp, "close", f"useful failure: {why}"))
        return [f"#{exp.pr}: closed, {why}"]
    value, base = evidence.primary.value, baseline.value
    if exp.hypothesis and exp.hypothesis.measures_base:
        return [_close_measurement(ctx, exp, evidence, baseline, decide)]
    if base is not None and value is not None and ctx.target.metric.better(value, base) <= 0:
        reason = f"no improvement on validation: {value:.4f} vs baseline {base:.4f}"
        decide(_decision(exp, "close", reason, candidate=value, baseline=base, improvement=ctx.target.metric.better(value, base)))
        return [f"#{exp.pr}: closed, {reason}"]
    return [review.send_to_verifier(ctx, pr, exp)]


def _close_measurement(ctx: TurnContext, exp: Experiment, evidence, baseline: Baseline, decide) -> str:
    """Close the measurement of the base: with its value (the decision's `candidate`, which
    `current_baseline` reads) only if the head it trained has the base's tree; a student or a push
    that changed anything measured something else, which must not become the base's value."""
    name, value = evidence.primary.name, evidence.primary.value
    if not _base_tree(ctx, evidence.head, exp.hypothesis.baseline.commit):
        reason = f"the measurement of the base trained {evidence.head[:8]}, whose tree is not the base's: no value taken"
        decide(_decision(exp, "close", reason))
        return f"#{exp.pr}: closed, {reason}"
    reason = f"the base measured on validation: {name} = {value:.4g}"
    decide(_decision(exp, "close", reason, candidate=value))
    return f"#{exp.pr}: closed, {reason}"


def _base_tree(ctx: TurnContext, head: str, base: str) -> bool:
    """True if commit `head` (fetched from the forge) has the git tree of commit `base`."""
    ctx.repo.git("fetch", "--quiet", "origin", f"+{head}:refs/senpai/measured", network=True)
    return len(set(ctx.repo.git("rev-parse", f"{head}^{{tree}}", f"{base}^{{tree}}").split())) == 1


def _measurement_failed(ctx: TurnContext, exp: Experiment, evidence, baseline: Baseline, decide) -> str:
    """The measurement of the base failed (senpai's evidence for its head says so): the base does
    not train, which is no hypothesis's failure. For the current base, trained with the base's own
    tree: one issue for humans first (`basefails.issue_key`; a crash after it closes the PR on the
    next turn), then the PR is closed naming it, and `_assign` opens nothing on the base while the
    issue is open. A measurement of a base that has moved since, or of a head with another tree,
    says nothing about the base: closed, no issue."""
    commit, failure = exp.hypothesis.baseline.commit, evidence.failure or "the training failed"
    if commit != baseline.commit:
        reason = f"the measurement of the base {commit[:8]} failed, and the base has moved since: {failure}"
    elif not _base_tree(ctx, evidence.head, commit):
        reason = f"the measurement of the base trained {evidence.head[:8]}, whose tree is not the base's, and failed: {failure}"
    else:
        number = _base_fails_issue(ctx, exp, evidence)
        reason = f"the base does not train (issue #{number}): {failure}"
    decide(_decision(exp, "close", reason))
    return f"#{exp.pr}: closed, {reason}"


def _base_fails_issue(ctx: TurnContext, exp: Experiment, evidence) -> int:
    """Open (once: `escalation.open_issue`) the humans' issue saying the base does not train; its number."""
    commit = exp.hypothesis.baseline.commit
    tail = "\n".join((evidence.log_tail or "").strip().splitlines()[-FAILURE_TAIL:])
    body = (
        f"The base branch `{ctx.base}` at {commit[:8]} does not train: its measurement #{exp.pr} (the measured "
        f"start: `{quote(ctx.target.train)}` on the base as it is) failed at {evidence.head[:8]}. senpai's "
        f"evidence says: {quote(evidence.failure or 'the training failed', 500)}\n\n"
        "A base that cannot train is no hypothesis's failure: while this issue is open senpai opens no proposal "
        "and no new measurement on this base (a `/senpai try` you ask for still opens), so no further experiment "
        "is spent on it.\n\n"
        "To go on, fix the target so the base trains (what the failure names: the `train` command or "
        "`holdout.python` in senpai.yaml, a package missing from the environment, a path the wall hides: "
        "`wall.readable` in the harness config; `senpai validate` runs the same checks), then either:\n"
        f"- push the fix to `{ctx.base}`: the new commit is a new base, which senpai measures by itself; or\n"
        "- if the fix was outside the repository (the environment, the harness config), close this issue: "
        "senpai then measures the same base again."
        + (f"\n\nLast lines of the training's log:\n\n{unmention(neutral(tail))}" if tail else "")
    )
    title = f"senpai: the base {commit[:8]} does not train (#{exp.pr})"
    return escalation.open_issue(ctx.forge, basefails.issue_key(exp.pr), title, body)


def _decide_verified(ctx: TurnContext, pr, exp: Experiment, baseline: Baseline, exps: list[Experiment]) -> list[str]:
    v = exp.verification_for(exp.head, baseline.commit)
    if v is None:
        return []
    if v.conflict:
        return [review.reapply(ctx, pr, exp, baseline, review.verified_numbers(v))]
    if not v.passed:
        review.apply(ctx, pr, exp, baseline, _decision(exp, "close", f"verifier: {v.reason}", **review.verified_numbers(v)))
        return [f"#{exp.pr}: closed, verifier: {v.reason}"]
    if (now := ctx.forge.branch_sha(ctx.base)) != baseline.commit:  # e.g. another pass of this round merged this turn
        return [f"#{exp.pr}: not merged, the base moved to {now[:8]} since {baseline.commit[:8]} was verified: verify again"]
    line = review.merge_verified(ctx, pr, exp, baseline, v, f"verified improvement: {v.reason}")
    return [line, *review.reapply_round(ctx, exp.pr, baseline, exps)]


def _history(exps: list[Experiment]) -> list[tuple[dict, float | None]]:
    """(params, validation value) of every point tried: each single-arm hypothesis, and each arm of
    a multi-arm evidence (the arms' rows; a hypothesis's arms not yet run count by their params)."""
    out = []
    for e in exps:
        if not (e.hypothesis and e.hypothesis.params):
            continue
        rows = next((ev.arms for ev in reversed(e.evidence) if ev.arms), [])
        if rows:
            out += [(r.params, r.value) for r in rows]
        elif e.hypothesis.arms:
            out += [(e.hypothesis.arm_params(a), None) for a in e.hypothesis.arms]
        else:
            out.append((e.hypothesis.params, e.primary_value()))
    return out


def _assign(ctx: TurnContext, students: list[str], exps: list[Experiment], baseline: Baseline) -> list[str]:
    busy = {e.student for e in exps if e.state in ASSIGNED}
    students = [s for s in students if s not in busy]
    if not students:
        return []
    resolved: frozenset[int] = frozenset()
    if any(basefails.failed(e) for e in basefails.measurements(exps, baseline.commit)):
        issues, bot = ctx.forge.list_issues(SENPAI, "all"), ctx.forge.login
        if blocked := basefails.blocking(exps, baseline.commit, issues, bot):
            return [
                f"{', '.join(students)}: nothing opened: the base {baseline.commit[:8]} does not train (its measurement "
                f"#{blocked.pr} failed); waiting for a fix on {ctx.base} or for its issue to be closed"
            ]
        resolved = basefails.resolved(exps, baseline.commit, issues, bot)
    current = baseline.params or read_params(ctx.repo.path / ctx.target.params.file)
    out = []
    if baseline.pr is None and baseline.value is None and not measuring_base(exps, baseline.commit, resolved):
        again = max(resolved, default=None)
        out.append(_measure_base(ctx, students[0], current, baseline, again))  # the measured start
        students = students[1:]
        if not students:
            return out
    history = _history(exps) + [(current, baseline.value)]
    settings, space = ctx.harness.runtime.diversity, ctx.target.params.space
    alarm = diversity.read(exps, space, settings)
    avoid = diversity.recent_points(exps, settings) if alarm.collapsed else []
    if alarm.collapsed:
        log.warning("%s: sampling at random away from %d recent and rejected points", alarm.reason, len(avoid))
    with phases.phase("propose"):
        from senpai.agents.search.propose import propose  # optuna (0.8 s to import) only for a turn that proposes

        points = propose(
            space, ctx.target.metric, history, len(students), ctx.harness.runtime.seed, avoid=avoid, radius=settings.min_spread
        )
    exploration = alarm.reason if alarm.collapsed else None
    tried = [p for p, _ in history]
    return out + [
        _open(ctx, s, {**current, **p}, p, baseline, len(exps), exploration, _arms(ctx, p, tried))
        for s, p in zip(students, points, strict=True)
    ]


def _measure_base(ctx: TurnContext, student: str, current: dict, baseline: Baseline, again: int | None = None) -> str:
    """Open the experiment that measures the base itself on validation, by the student's own path
    (its params are the base's): until it reports, proposals go to the verifier unscreened; once
    it has, a point no better than the base on validation is closed without a verification
    (`_review_evidence`). Its holdout side is measured once by the first verification of the base,
    and reused by the others (`senpai.verifier.reuse`). `again`: the failed measurement of this base
    whose issue a human closed (`basefails.resolved`), which this one repeats on a fresh branch."""
    t = ctx.target
    try:
        pr = open_hypothesis(
            ctx,
            student,
            hypothesis=f"measure the base on validation ({t.metric.name}) before the first proposal is judged",
            rationale="the measured start: no value of the base is known on validation",
            plan=f"run `{t.train}` on the base as it is, report {reported(t.metric)}",
            params=current,
            baseline=baseline,
            measures_base=True,
            remeasures=again,
        )
    except TransitionError as e:
        return f"{student}: not assigned: {e}"
    return f"#{pr.number}: opened the measurement of the base for {student}"


def _arms(ctx: TurnContext, point: dict, tried: list[dict]) -> list[Arm] | None:
    """`runtime.arms` arms around `point`: the point itself as the control, and its neighbours
    (`propose.neighbours`); None for a single arm or when the space has no neighbour left."""
    k = ctx.harness.runtime.arms
    if k <= 1:
        return None
    from senpai.agents.search.propose import neighbours

    near = neighbours(ctx.target.params.space, point, k - 1, tried)
    if not near:
        return None
    return [Arm(name="control", control=True), *(Arm(name=f"arm-{i}", params=p) for i, p in enumerate(near, 1))]


def _open(
    ctx: TurnContext,
    student: str,
    full: dict,
    point: dict,
    baseline: Baseline,
    prior: int,
    exploration: str | None,
    arms: list[Arm] | None = None,
) -> str:
    changed = {k: v for k, v in full.items() if (baseline.params or {}).get(k) != v} if baseline.params else point
    t = ctx.target
    shown = "; arms: " + ", ".join(f"{a.name} {a.params}" for a in arms) if arms else ""
    try:
        pr = open_hypothesis(
            ctx,
            student,
            hypothesis=f"setting {', '.join(f'{k}={v}' for k, v in changed.items())} improves {t.metric.name}{shown}",
            rationale=(
                f"random proposal away from the recent points (diversity alarm: {exploration})"
                if exploration
                else f"TPE proposal (seeded) from {prior} prior experiments and the baseline"
            ),
            plan=f"write the params into {t.params.file}, run `{t.train}`, report {reported(t.metric)}"
            + (" for each arm under the same seed; commit the best arm's params" if arms else ""),
            params=full,
            baseline=baseline,
            exploration=exploration,
            arms=arms,
        )
    except TransitionError as e:
        return f"{student}: not assigned: {e}"
    return f"#{pr.number}: opened {pr.head_ref.rsplit('/', 1)[-1]} for {student}"
