"""The verifier's judge (no LLM): re-measure the candidate head against the base head before any
merge, and record the verdict.

Per seed and side (base head first, then the PR head), a train step runs that side's own code and
a score step runs the trusted evaluator from the base revision on the sealed holdout
(`senpai.verifier.steps`, over `senpai.verifier.evaluate`). `senpai.ledger.stats.judge` decides;
while it says inconclusive and `holdout.max_seeds` allows, both sides get the next seed (a
sequential test: look k of n). The numbers, seconds, GPU seconds, compute figure, guard metrics
and the target's test result go into one `senpai-verification` block.

The judge calls the steps (it asks them for a seed's train step and its score) and the steps never
call back: what they need of the plan is in `senpai.verifier.plan`, below both.

Refused without running: a diff touching protected paths or paths outside `target.scope`, or one
whose file list cannot be checked whole (the forge truncated it, or it is over MAX_FILES paths).
The files checked are the forge's list joined with git's for exactly the measured pair.
A failed verification (the hypothesis's fault): the candidate's test, train or score step failed,
an artifact was refused, or a metric is NaN, infinite or missing. The baseline failing is not the
hypothesis's fault: `BaselineFailed` (a TransientError, exit 3) makes the wrapper relaunch the job
and, after its infrastructure retries, escalate to a human, without recording a verdict.
"""

import math
import statistics
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from senpai.config.target import Holdout, TargetConfig
from senpai.job.context import TurnContext
from senpai.job.runs import log_verification
from senpai.job.walls import train_python, walls_of
from senpai.ledger import gate, ladder, stats, transitions
from senpai.ledger.blocks import Verification
from senpai.verifier import steps
from senpai.verifier.evaluate import EvaluatorFiles, Trained
from senpai.verifier.plan import SIDES, Known, Plan, Sample, make_plan, refusals
from senpai.verifier.reuse import holdout_id
from senpai.verifier.steps import BaselineFailed, CandidateFailed, Score, Train


def verification_block(target: TargetConfig, plan: Plan, seeds: list[int], **fields) -> Verification:
    """A verification of `plan`'s pair with no numbers yet; `fields` fill in the rest (passed, reason...)."""
    common = dict(
        pr=plan.pr, candidate=plan.candidate, baseline=plan.baseline, metric=target.holdout.metric,
        direction=target.holdout_direction, rule=target.holdout.rule, protected_touched=plan.protected_touched,
        out_of_scope=plan.out_of_scope, files=plan.files, seeds=seeds, candidate_values=[], baseline_values=[],
        candidate_mean=None, baseline_mean=None, improvement=None, noise_floor=None, arms=plan.arms, holdout=plan.holdout,
        at=datetime.now(UTC).replace(microsecond=0),
    )  # fmt: skip
    return Verification(**{**common, **fields})


def refusal(target: TargetConfig, plan: Plan) -> Verification | None:
    """A failed verification if the diff may not merge whatever it measures (`refusals`); None otherwise."""
    why = refusals(plan)
    if not why:
        return None
    conflict = plan.conflict and len(why) == 1  # nothing else wrong: re-applied on the new base, it may pass
    return verification_block(
        target, plan, [], passed=False, conflict=conflict, reason="refused without running: " + "; ".join(why)
    )


@dataclass
class Measurement:
    """Both sides' samples so far, in seed order."""

    samples: dict[str, list[Sample]] = field(default_factory=lambda: {s: [] for s in SIDES})
    seeds: list[int] = field(default_factory=list)

    def values(self, side: str) -> list[float]:
        return [s.value for s in self.samples[side]]


def sample(hold: Holdout, trained: Trained, score: Score) -> Sample:
    """Train then score one (side, seed); raises BaselineFailed or CandidateFailed naming the step."""
    fail = BaselineFailed if trained.side == "baseline" else CandidateFailed
    where = f"{trained.side} seed {trained.seed}"
    if trained.returncode != 0:
        what = "timed out" if trained.returncode is None else f"exited {trained.returncode}"
        raise fail(f"the train step of {where} {what}: {trained.tail[-500:]}")
    out, refused = score(trained)
    if refused:
        raise fail(f"{where}: {refused}")
    value = out.value(hold.metric) if out.returncode == 0 else None
    if value is None or not math.isfinite(value):
        got = "the score step failed" if out.returncode != 0 else f"{hold.metric} is {value if value is not None else 'missing'}"
        raise fail(f"{where}: {got} (a NaN, infinite or missing metric is a failure): {out.tail(10)[-500:]}")
    guards = {}
    for name in hold.guards:
        g = out.value(name)
        if g is None or not math.isfinite(g):
            raise fail(f"{where}: guard metric {name} is {g if g is not None else 'missing'}")
        guards[name] = g
    return Sample(value, trained.seconds, trained.gpu_seconds, trained.compute, guards)


def measure(
    target: TargetConfig, plan: Plan, train: Train, score: Score, test_passed: bool | None, known: Known = Known()
) -> Verification:
    """Train and score both sides over the seeds, adding seeds while `judge` is inconclusive; a
    seed of a side in `known.samples` is taken from there, not run. A candidate that fails a step
    gives a failed block; raises BaselineFailed if the baseline fails one, and PermanentError if a
    checkout cannot be reset (`reset_checkout`). The rule is corrected for the plan's arms."""
    hold = stats.for_arms(target.holdout, plan.arms)
    if test_passed is False:
        reason = "the target's test command failed on the candidate"
        return verification_block(target, plan, [], test_passed=False, passed=False, reason=reason)
    seeds, m = hold.all_seeds(), Measurement()
    plan_of_looks = stats.schedule(hold)  # seeds per side at each look, as the gate re-judges them
    looks = len(plan_of_looks)
    for look, upto in enumerate(plan_of_looks, 1):
        for seed in seeds[len(m.seeds) : upto]:
            try:
                for side in SIDES:  # the baseline first: a base that fails is not the candidate's failure
                    m.samples[side].append(known.samples[side].get(seed) or sample(hold, train(side, seed), score))
            except CandidateFailed as e:
                m.seeds.append(seed)
                return _failed(target, plan, m, test_passed, str(e), known)
            m.seeds.append(seed)
        j = stats.judge(hold, target.holdout_direction, m.values("candidate"), m.values("baseline"), look, looks)
        if not j.inconclusive:
            break
    return _judged(target, plan, m, j, test_passed, known)


def _side_fields(target: TargetConfig, m: Measurement, known: Known, side: str) -> dict:
    """A side's figures per seed, all a later verification needs to reuse them (`reuse.samples`)."""
    got = m.samples[side]
    return {
        f"{side}_values": [s.value for s in got], f"{side}_seconds": [s.seconds for s in got],
        f"{side}_gpu_seconds": [s.gpu_seconds for s in got],
        f"{side}_compute": [s.compute for s in got if s.compute is not None],
        f"{side}_guards": {name: [s.guards[name] for s in got] for name in target.holdout.guards},
        f"{side}_key": known.keys.get(side),
        f"{side}_reused": {seed: s.source for seed, s in zip(m.seeds, got, strict=False) if s.source is not None},
    }  # fmt: skip


def _failed(
    target: TargetConfig, plan: Plan, m: Measurement, test_passed: bool | None, reason: str, known: Known
) -> Verification:
    cand = [*m.values("candidate"), math.nan]  # the seed that failed
    return verification_block(
        target, plan, m.seeds, candidate_values=cand, **_side_fields(target, m, known, "baseline"),
        candidate_key=known.keys.get("candidate"), test_passed=test_passed, passed=False, reason=f"failed: {reason}",
    )  # fmt: skip


def _judged(target: TargetConfig, plan: Plan, m: Measurement, j, test_passed: bool | None, known: Known) -> Verification:
    """The block of a measurement `judge` decided; the gate's own compute and guard checks give
    the notes, so the verifier and the gate cannot disagree on them."""
    hold, cand, base = target.holdout, m.values("candidate"), m.values("baseline")
    means = {x: {name: statistics.fmean(s.guards[name] for s in m.samples[x]) for name in hold.guards} for x in SIDES}
    v = verification_block(
        target, plan, m.seeds, candidate_mean=statistics.fmean(cand),
        baseline_mean=statistics.fmean(base), improvement=j.improvement, noise_floor=j.noise_floor,
        statistic=j.statistic, p_value=j.p_value,
        resolution=ladder.resolution(hold.rule, j.noise_floor, hold.min_delta, cand, base),
        guards={name: [means["candidate"][name], means["baseline"][name]] for name in hold.guards},
        test_passed=test_passed, passed=j.passed, reason=j.reason,
        **_side_fields(target, m, known, "baseline"), **_side_fields(target, m, known, "candidate"),
    )  # fmt: skip
    regressed, compute = gate.guard_problems(hold, v), gate.compute_problem(hold, v, None)
    notes = [j.reason, *regressed, *([compute] if compute else [])]
    update = {"compute_ratio": gate.compute_ratio(hold, v), "passed": j.passed and not regressed, "reason": "; ".join(notes)}
    return v.model_copy(update=update)


def record(ctx: TurnContext, v: Verification) -> Verification:
    """Log `v`'s holdout numbers as a W&B run (`runs.log_verification`; a verification that
    measured nothing logs none), then post `v`, naming that run, on its PR once
    (`transitions.record_verification`; raises TransitionError if the PR may not take it,
    TransientError on forge faults that outlast retries). Returns the block posted."""
    if (run := log_verification(ctx, v)) is not None:
        v = v.model_copy(update={"runs": [run]})
    # the PR as handed: a comment is no label write, and a block names the pair it measured
    transitions.record_verification(ctx.forge, ctx.ledger.handed(v.pr), v)
    return v


def verify_all(ctx: TurnContext, number: int, holdout_dir: Path, sources: tuple[int, ...] = ()) -> Verification:
    """`--step all`: plan, check scope, snapshot the evaluator, then train and score both sides
    (a seed an earlier verification measured for a side's tree is reused: `steps.known`); records the block.
    Raises BaselineFailed if the base head fails its own steps, TransientError if a fetch or the
    forge fails past its retries, ConfigError if `holdout.files` are not in the base or, before
    anything trains, if `holdout.python` or the train command's interpreter (`walls.train_python`)
    cannot run here, PermanentError for a merged PR that owes no verification."""
    plan = make_plan(ctx, number).model_copy(update={"holdout": holdout_id(holdout_dir)})
    v = refusal(ctx.target, plan)
    if v is None:
        hold = ctx.target.holdout
        train_python(ctx.target.train)  # as `steps.scorer` checks holdout.python: the base's fault, never the PR's
        steps.checkout(ctx, plan, ctx.workdir)
        evaluator = EvaluatorFiles(ctx.repo.path, plan.baseline, hold.files)  # before any train step runs
        walls = walls_of(ctx.harness)
        trainers = {side: steps.SideTrainer(ctx.target, side, plan.sha(side), ctx.workdir / side, walls) for side in SIDES}
        score = steps.scorer(hold, evaluator, holdout_dir, ctx.workdir / "score", ctx.time_limits.verifier.steps.score, walls)
        past = steps.known(ctx, plan, holdout_dir, sources)
        v = measure(ctx.target, plan, lambda side, seed: trainers[side](seed), score, trainers["candidate"].test(), past)
    return record(ctx, v)


def score_from_work(ctx: TurnContext, number: int, work: Path, holdout_dir: Path, sources: tuple[int, ...] = ()) -> Verification:
    """`--step score`: plan again (the PR as this step's snapshot hands it, the base as the forge
    says now, a fresh clone in `ctx`), compare with plan.json, score what the train steps left (the
    seeds earlier verifications measured, of either side, come from the ledger, read again here:
    `steps.known`; never from job.json, which a side's code can write), and record. A moved head or
    base records a failed, stale verification of the planned pair (the wrapper then verifies the new
    pair); a head that moved after the snapshot is verified on the wrapper's next look."""
    plan = make_plan(ctx, number).model_copy(update={"holdout": holdout_id(holdout_dir)})
    planned = steps.read_plan(work)
    if planned is None or (planned.candidate, planned.baseline, planned.merged) != (plan.candidate, plan.baseline, plan.merged):
        v = refusal(ctx.target, plan) or _stale(ctx.target, plan, planned)
    else:
        v = refusal(ctx.target, plan) or _score_recorded(ctx, plan, work, holdout_dir, sources)
    return record(ctx, v)


def _score_recorded(ctx: TurnContext, plan: Plan, work: Path, holdout_dir: Path, sources: tuple[int, ...]) -> Verification:
    hold = ctx.target.holdout
    evaluator = EvaluatorFiles(ctx.repo.path, plan.baseline, hold.files)  # from the score step's own clone
    score = steps.scorer(
        hold, evaluator, holdout_dir, ctx.workdir / "score", ctx.time_limits.verifier.steps.score, walls_of(ctx.harness)
    )
    past = steps.known(ctx, plan, holdout_dir, sources)
    try:
        train, test_passed = steps.recorded(work)
    except CandidateFailed as e:
        return measure(ctx.target, plan, _raise(e), score, None, past)
    return measure(ctx.target, plan, train, score, test_passed, past)


def _raise(e: Exception) -> Train:
    def train(side: str, seed: int) -> Trained:
        raise e

    return train


def _stale(target: TargetConfig, plan: Plan, planned: Plan | None) -> Verification:
    pair = planned or plan
    what = "no readable plan.json" if planned is None else f"it checked out {planned.candidate[:8]} vs {planned.baseline[:8]}"
    reason = f"stale: {what}, the PR is now {plan.candidate[:8]} vs {plan.baseline[:8]}; verify again"
    return verification_block(target, pair, [], passed=False, reason=reason)
