"""The verifier (no LLM): re-measure the candidate head against the base head before any merge.

Per seed and side (base head first, then the PR head), a train step runs that side's own code and
a score step runs the trusted evaluator from the base revision on the sealed holdout
(`senpai.agents.evaluate`). `senpai.ledger.stats.judge` decides; while it says inconclusive and
`holdout.max_seeds` allows, both sides get the next seed (a sequential test: look k of n). The
numbers, seconds, GPU seconds, compute figure, guard metrics and the target's test result go into one
`senpai-verification` block.

Refused without running: a diff touching protected paths or paths outside `target.scope`.
A failed verification (the hypothesis's fault): the candidate's test, train or score step failed,
an artifact was refused, or a metric is NaN, infinite or missing. The baseline failing is not the
hypothesis's fault: `BaselineFailed` (a TransientError, exit 3) makes the wrapper relaunch the job
and, after its infrastructure retries, escalate to a human, without recording a verdict.
"""

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from senpai.agents.context import TurnContext
from senpai.agents.evaluate import EvaluatorFiles, Trained, score_step
from senpai.agents.measure import Outcome
from senpai.config.target import Holdout, TargetConfig
from senpai.errors import TransientError
from senpai.ledger import stats, transitions
from senpai.ledger.blocks import Verification
from senpai.ledger.gate import protected_touched

SIDES = ("baseline", "candidate")


class BaselineFailed(TransientError):
    """The base head failed its own train or score step: senpai's or the target's problem, never the PR's."""


class Plan(BaseModel):
    """What one verification measures (`plan.json` between the Kubernetes steps)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pr: int
    candidate: str = Field(pattern=r"^[0-9a-f]{40}$")
    baseline: str = Field(pattern=r"^[0-9a-f]{40}$")
    files: list[str]
    protected_touched: list[str]
    out_of_scope: list[str]


def make_plan(ctx: TurnContext, number: int) -> Plan:
    """The PR's head, the base head and the changed files, as the forge says now."""
    files = ctx.forge.pull_files(number)
    return Plan(
        pr=number,
        candidate=ctx.forge.get_pull(number).head_sha,
        baseline=ctx.forge.branch_sha(ctx.base),
        files=files,
        protected_touched=protected_touched(ctx.target, files),
        out_of_scope=sorted(f for f in files if not ctx.target.in_scope(f) and not ctx.target.is_protected(f)),
    )


def verification_block(target: TargetConfig, plan: Plan, seeds: list[int], **fields) -> Verification:
    """A verification of `plan`'s pair with no numbers yet; `fields` fill in the rest (passed, reason...)."""
    common = dict(
        pr=plan.pr, candidate=plan.candidate, baseline=plan.baseline, metric=target.holdout.metric,
        direction=target.metric.direction, rule=target.holdout.rule, protected_touched=plan.protected_touched,
        out_of_scope=plan.out_of_scope, seeds=seeds, candidate_values=[], baseline_values=[], candidate_mean=None,
        baseline_mean=None, improvement=None, noise_floor=None,
    )  # fmt: skip
    return Verification(**{**common, **fields})


def refusal(target: TargetConfig, plan: Plan) -> Verification | None:
    """A failed verification if the diff may not merge whatever it measures; None otherwise."""
    why = []
    if plan.protected_touched:
        why.append(f"the diff touches protected paths {', '.join(plan.protected_touched)}")
    if plan.out_of_scope:
        why.append(f"the diff changes paths outside the experiment's scope {', '.join(plan.out_of_scope)}")
    if not why:
        return None
    return verification_block(target, plan, [], passed=False, reason="refused without running: " + "; ".join(why))


@dataclass
class Sample:
    value: float
    seconds: float
    gpu_seconds: float
    compute: float | None
    guards: dict[str, float]


class CandidateFailed(Exception):
    """The candidate failed a step; the message is the verification's reason."""


@dataclass
class Measurement:
    """Both sides' samples so far, in seed order."""

    samples: dict[str, list[Sample]] = field(default_factory=lambda: {s: [] for s in SIDES})
    seeds: list[int] = field(default_factory=list)

    def values(self, side: str) -> list[float]:
        return [s.value for s in self.samples[side]]


Train = Callable[[str, int], Trained]  # (side, seed) -> its train step, run now or read from train.json
Score = Callable[[Trained], tuple[Outcome | None, str | None]]  # -> (score step's outcome, or why refused)


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


def measure(target: TargetConfig, plan: Plan, train: Train, score: Score, test_passed: bool | None) -> Verification:
    """Train and score both sides over the seeds, adding seeds while `judge` is inconclusive."""
    hold = target.holdout
    if test_passed is False:
        reason = "the target's test command failed on the candidate"
        return verification_block(target, plan, [], test_passed=False, passed=False, reason=reason)
    seeds, m = hold.all_seeds(), Measurement()
    plan_of_looks = stats.schedule(hold)  # seeds per side at each look, as the gate re-judges them
    looks = len(plan_of_looks)
    for look, upto in enumerate(plan_of_looks, 1):
        for seed in seeds[len(m.seeds) : upto]:
            try:
                for side in SIDES:
                    m.samples[side].append(sample(hold, train(side, seed), score))
            except CandidateFailed as e:
                m.seeds.append(seed)
                return _failed(target, plan, m, test_passed, str(e))
            m.seeds.append(seed)
        j = stats.judge(hold, target.metric.direction, m.values("candidate"), m.values("baseline"), look, looks)
        if not j.inconclusive:
            break
    return _judged(target, plan, m, j, test_passed)


def _failed(target: TargetConfig, plan: Plan, m: Measurement, test_passed: bool | None, reason: str) -> Verification:
    cand = [*m.values("candidate"), math.nan]  # the seed that failed
    return verification_block(
        target, plan, m.seeds, candidate_values=cand, baseline_values=m.values("baseline"),
        test_passed=test_passed, passed=False, reason=f"failed: {reason}",
    )  # fmt: skip


def _mean(xs: list[float | None]) -> float | None:
    return statistics.fmean(xs) if xs and all(x is not None for x in xs) else None  # type: ignore[arg-type]


def compute_ratio(hold: Holdout, m: Measurement) -> float | None:
    """Candidate over baseline mean compute: the target's figure if declared, else seconds if compared."""
    if hold.compute.key:
        c, b = (_mean([s.compute for s in m.samples[x]]) for x in ("candidate", "baseline"))
    elif hold.compute.seconds:
        c, b = (_mean([s.seconds for s in m.samples[x]]) for x in ("candidate", "baseline"))
    else:
        return None
    return c / b if c is not None and b else None


def _guards(hold: Holdout, m: Measurement) -> tuple[dict[str, list[float]], list[str]]:
    means, regressed = {}, []
    for name, g in hold.guards.items():
        c, b = (statistics.fmean(s.guards[name] for s in m.samples[x]) for x in ("candidate", "baseline"))
        means[name] = [c, b]
        if (b - c if g.direction == "maximize" else c - b) > g.tolerance:
            regressed.append(f"guard {name} regressed {b:.4f} -> {c:.4f} (tolerance {g.tolerance})")
    return means, regressed


def _judged(target: TargetConfig, plan: Plan, m: Measurement, j, test_passed: bool | None) -> Verification:
    hold = target.holdout
    guards, regressed = _guards(hold, m)
    ratio = compute_ratio(hold, m)
    notes = list(regressed)
    if ratio is not None and ratio > 1 + hold.compute.tolerance:
        tol = hold.compute.tolerance
        notes.append(f"compute {ratio:.2f}x the baseline's is over the tolerance {tol} (a trusted human may allow it)")
    cand, base = m.values("candidate"), m.values("baseline")
    return verification_block(
        target, plan, m.seeds, candidate_values=cand, baseline_values=base, candidate_mean=statistics.fmean(cand),
        baseline_mean=statistics.fmean(base), improvement=j.improvement, noise_floor=j.noise_floor,
        statistic=j.statistic, p_value=j.p_value,
        candidate_seconds=[s.seconds for s in m.samples["candidate"]],
        baseline_seconds=[s.seconds for s in m.samples["baseline"]],
        candidate_gpu_seconds=[s.gpu_seconds for s in m.samples["candidate"]],
        baseline_gpu_seconds=[s.gpu_seconds for s in m.samples["baseline"]],
        candidate_compute=[s.compute for s in m.samples["candidate"] if s.compute is not None],
        baseline_compute=[s.compute for s in m.samples["baseline"] if s.compute is not None],
        compute_ratio=ratio, guards=guards, test_passed=test_passed,
        passed=j.passed and not regressed, reason="; ".join([j.reason, *notes]),
    )  # fmt: skip


def record(ctx: TurnContext, v: Verification) -> None:
    transitions.record_verification(ctx.forge, ctx.forge.get_pull(v.pr), v)


def scorer(hold: Holdout, evaluator: EvaluatorFiles, holdout_dir: Path, root: Path, timeout: float) -> Score:
    """The score step as `measure` calls it: Trained -> (Outcome | None, refusal | None)."""
    return lambda trained: score_step(hold, evaluator, trained, holdout_dir, root, timeout)
