"""The verifier (no LLM): re-measure the candidate head against the base head before any merge.

Per seed and side (base head first, then the PR head), a train step runs that side's own code and
a score step runs the trusted evaluator from the base revision on the sealed holdout
(`senpai.verifier.evaluate`). `senpai.ledger.stats.judge` decides; while it says inconclusive and
`holdout.max_seeds` allows, both sides get the next seed (a sequential test: look k of n). The
numbers, seconds, GPU seconds, compute figure, guard metrics and the target's test result go into one
`senpai-verification` block.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from senpai.config.target import Holdout, TargetConfig
from senpai.errors import ConfigError, PermanentError, TransientError
from senpai.job.context import TurnContext
from senpai.job.measure import Outcome
from senpai.job.runs import log_verification
from senpai.job.walls import Walls
from senpai.ledger import gate, ladder, stats, transitions
from senpai.ledger.blocks import Verification
from senpai.ledger.consistency import reverify
from senpai.ledger.experiment import read_experiment
from senpai.ledger.gate import out_of_scope, protected_touched
from senpai.verifier.evaluate import EvaluatorFiles, Trained, python_problem, score_step

SIDES = ("baseline", "candidate")
# A verification block names every changed path and must fit one GitHub comment (65,536 characters).
MAX_FILES = 300
MAX_PATH_CHARS = 10_000  # all paths together
NAMED_CHARS = 1_000  # of the paths a reason names


class BaselineFailed(TransientError):
    """The base head failed its own train or score step: senpai's or the target's problem, never the PR's."""


class Plan(BaseModel):
    """What one verification measures (`plan.json` between the Kubernetes steps)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pr: int
    candidate: str = Field(pattern=r"^[0-9a-f]{40}$")
    baseline: str = Field(pattern=r"^[0-9a-f]{40}$")
    holdout: str | None = None  # `reuse.holdout_id` of the sealed holdout it is scored on (set where that is mounted)
    files: list[str]
    protected_touched: list[str]
    out_of_scope: list[str]
    unlisted: str | None = None  # why the files are not listed (too many to record): refused
    # what the candidate side trains: the tree a merge into the baseline would have (the head
    # itself unless the PR is behind its base); None with `unmergeable` saying why (refused)
    merged: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")
    unmergeable: str | None = None
    conflict: bool = False  # `unmergeable` because the trees conflict (re-applied on the base, it may merge)
    # side -> the git tree it trains (the candidate's: `merged`'s); what its numbers are keyed by (`senpai.verifier.reuse`)
    trees: dict[str, str] = Field(default_factory=dict)
    arms: int = Field(1, ge=1)  # variants the hypothesis ran: the rule is corrected for them (`stats.for_arms`)


def pair(ctx: TurnContext, number: int) -> tuple[str, str]:
    """(candidate, baseline) to measure: an open PR's head as the wrapper handed it
    (`LedgerReader.handed`: a head pushed since is verified on the wrapper's next look) against the
    base head as the forge says now; a merged PR's merge commit against the base it landed on, when
    the merge landed on a base that moved after its verification (`consistency.reverify`). Raises
    PermanentError for a merged PR that owes no verification."""
    pr = ctx.ledger.handed(number)
    if not pr.merged:
        return pr.head_sha, ctx.forge.branch_sha(ctx.base)
    owed = reverify(ctx.ledger.experiment(pr))
    if owed is None:
        raise PermanentError(f"PR #{number} is merged and owes no verification")
    return owed


def make_plan(ctx: TurnContext, number: int) -> Plan:
    """The pair to measure (`pair`), both fetched into the turn's clone by sha, and the files the
    candidate changes since its merge base with the baseline, as git lists them for exactly this
    pair (never truncated; the forge's list may already be a later head's, and costs a request).
    The candidate side trains `merged`: the tree the merge would land (a PR behind its base
    measured on its old tree would count the base's later changes, reverted, as its own). Raises
    TransientError if the fetch fails."""
    candidate, baseline = pair(ctx, number)
    pull = ctx.ledger.handed(number)
    h = read_experiment(pull, ctx.ledger.comments(pull), ctx.forge.login).hypothesis  # its arms: no tracker read
    refs = [f"+{candidate}:refs/senpai/candidate", f"+{baseline}:refs/senpai/baseline"]
    ctx.repo.git("fetch", "--quiet", "origin", *refs, network=True)
    merged, unmergeable, conflict = ctx.repo.merged(baseline, candidate)
    # no merge base (unrelated histories): nothing to diff against, and it is refused as unmergeable
    files, unlisted = (sorted(ctx.repo.changed_paths(baseline, candidate)) if merged or conflict else []), None
    commits = {side: sha for side, sha in {"baseline": baseline, "candidate": merged}.items() if sha}
    shas = ctx.repo.git("rev-parse", *(f"{sha}^{{tree}}" for sha in commits.values())).split()
    trees = dict(zip(commits, shas, strict=True))  # one git for both sides
    chars = sum(len(f) for f in files)
    if len(files) > MAX_FILES or chars > MAX_PATH_CHARS:
        unlisted = f"PR #{number} changes {len(files)} files ({chars} characters of paths)"
        unlisted += f", over the {MAX_FILES} files and {MAX_PATH_CHARS} characters a verification records"
        files = []
    return Plan(
        pr=number, candidate=candidate, baseline=baseline, files=files, unlisted=unlisted, merged=merged,
        unmergeable=unmergeable, conflict=conflict, trees=trees, arms=h.arm_count() if h else 1,
        protected_touched=protected_touched(ctx.target, files), out_of_scope=out_of_scope(ctx.target, files),
    )  # fmt: skip


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


def named(paths: list[str]) -> str:
    """`paths` joined with ", ", cut after NAMED_CHARS characters with "and N more"."""
    out, size = [], 0
    for i, path in enumerate(paths):
        if out and size + len(path) > NAMED_CHARS:
            return f"{', '.join(out)} and {len(paths) - i} more"
        out.append(path[:NAMED_CHARS])
        size += len(path) + 2
    return ", ".join(out)


def refusal(target: TargetConfig, plan: Plan) -> Verification | None:
    """A failed verification if the diff may not merge whatever it measures; None otherwise."""
    why = []
    if plan.protected_touched:
        why.append(f"the diff touches protected paths {named(plan.protected_touched)}")
    if plan.out_of_scope:
        why.append(f"the diff changes paths outside the experiment's scope {named(plan.out_of_scope)}")
    if plan.unlisted:
        why.append(f"{plan.unlisted}: split it")
    if plan.unmergeable:
        why.append(f"{plan.unmergeable}: the forge could not merge it as measured")
    if not why:
        return None
    conflict = plan.conflict and len(why) == 1  # nothing else wrong: re-applied on the new base, it may pass
    return verification_block(
        target, plan, [], passed=False, conflict=conflict, reason="refused without running: " + "; ".join(why)
    )


@dataclass(frozen=True)
class Sample:
    """One side's figures for one seed; `source`: the PR whose verification measured it, None if this one did."""

    value: float
    seconds: float
    gpu_seconds: float
    compute: float | None
    guards: dict[str, float]
    source: int | None = None


@dataclass(frozen=True)
class Known:
    """Per side: the key this verification records for its numbers (None: not offered for reuse),
    and the seeds measured before for a tree with that key, by seed (`senpai.verifier.reuse`)."""

    keys: dict[str, str | None] = field(default_factory=lambda: dict.fromkeys(SIDES))
    samples: dict[str, dict[int, Sample]] = field(default_factory=lambda: {s: {} for s in SIDES})


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


def scorer(hold: Holdout, evaluator: EvaluatorFiles, holdout_dir: Path, root: Path, timeout: float, walls: Walls) -> Score:
    """The score step as `measure` calls it: Trained -> (Outcome | None, refusal | None). Raises
    ConfigError now, before any step runs, if `holdout.python` cannot run here (`python_problem`):
    a fault of the base's senpai.yaml or of the machine, never the PR's."""
    if why := python_problem(hold):
        raise ConfigError(why)
    return lambda trained: score_step(hold, evaluator, trained, holdout_dir, root, timeout, walls)
