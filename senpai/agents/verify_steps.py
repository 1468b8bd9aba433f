"""The verifier job's steps: `all` in one process (local fleet), or checkout / train / score as
three containers of one Kubernetes Job sharing the work dir (see `senpai job verify --step`).

Work dir layout: `repo/` (clone of the base branch), `candidate/` and `baseline/` (worktrees of
the two heads), `artifacts/<side>-<seed>/`, `plan.json` (checkout), `train.json` (train).
What the train container leaves there is untrusted: the score step re-reads the PR and the base
from the forge (a fresh clone, a fresh plan) and takes only numbers and artifacts from the work dir.
"""

import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from senpai.agents.context import TurnContext
from senpai.agents.evaluate import SCRUBBED, EvaluatorFiles, Trained, reset_checkout, train_step
from senpai.agents.measure import run_command
from senpai.agents.verifier import (
    SIDES,
    BaselineFailed,
    CandidateFailed,
    Plan,
    make_plan,
    measure,
    record,
    refusal,
    scorer,
    verification_block,
)
from senpai.config.target import TargetConfig
from senpai.ledger.blocks import Verification

MAX_TRAIN_JSON = 16 * 1024**2


class TrainLog(BaseModel):
    """`train.json`: the test command's result and every train step, both sides, all seeds."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    test_passed: bool | None
    runs: list[Trained]


class LocalTrainer:
    """Runs train steps on demand (each once) in the work dir's checkouts."""

    def __init__(self, target: TargetConfig, plan: Plan, work: Path) -> None:
        self.target, self.work = target, work
        self.shas = {"candidate": plan.candidate, "baseline": plan.baseline}
        self.done: dict[tuple[str, int], Trained] = {}

    def __call__(self, side: str, seed: int) -> Trained:
        if (side, seed) not in self.done:
            t = self.target
            self.done[side, seed] = train_step(
                t.train, self.work / side, self.shas[side], side, seed, self.work / "artifacts",
                float(t.budget.wall_seconds), t.holdout.compute.key,
            )  # fmt: skip
        return self.done[side, seed]

    def test(self) -> bool | None:
        """The target's test command on the candidate: passed, or None if none is declared."""
        if self.target.test is None:
            return None
        checkout = self.work / "candidate"
        reset_checkout(checkout, self.shas["candidate"])
        home = tempfile.mkdtemp(prefix="home-", dir=self.work)
        env, timeout = {"WANDB_MODE": "disabled", "HOME": home}, float(self.target.budget.wall_seconds)
        out = run_command(self.target.test, checkout, env, timeout, self.work / "test.log", drop=SCRUBBED)
        return out.returncode == 0


def fetch(ctx: TurnContext, plan: Plan) -> None:
    """Both heads into the turn's clone (the base may have moved since it was cloned)."""
    refs = [f"+{plan.candidate}:refs/senpai/candidate", f"+{plan.baseline}:refs/senpai/baseline"]
    ctx.repo.git("fetch", "--quiet", "origin", *refs, network=True)


def checkout(ctx: TurnContext, plan: Plan, work: Path) -> None:
    """Worktrees of the candidate and base heads at `work/candidate` and `work/baseline`."""
    fetch(ctx, plan)
    for side in SIDES:
        ctx.repo.worktree(plan.candidate if side == "candidate" else plan.baseline, work / side)


def verify_all(ctx: TurnContext, number: int, holdout_dir: Path) -> Verification:
    """`--step all`: plan, check scope, snapshot the evaluator, then train and score both sides;
    records the block. Raises BaselineFailed if the base head fails its own steps."""
    plan = make_plan(ctx, number)
    v = refusal(ctx.target, plan)
    if v is None:
        hold = ctx.target.holdout
        checkout(ctx, plan, ctx.workdir)  # fetches the base too: it may have moved since the clone
        evaluator = EvaluatorFiles(ctx.repo.path, plan.baseline, hold.files)  # before any train step runs
        trainer = LocalTrainer(ctx.target, plan, ctx.workdir)
        score = scorer(hold, evaluator, holdout_dir, ctx.workdir / "score", float(ctx.target.budget.wall_seconds))
        v = measure(ctx.target, plan, trainer, score, trainer.test())
    record(ctx, v)
    return v


def checkout_step(ctx: TurnContext, number: int, work: Path) -> Plan:
    """`--step checkout`: write `work/plan.json` and the two worktrees."""
    plan = make_plan(ctx, number)
    checkout(ctx, plan, work)
    (work / "plan.json").write_text(plan.model_dump_json())
    return plan


def train_all(target: TargetConfig, work: Path) -> TrainLog:
    """`--step train` (no secret, no forge): the test command, then every seed up to max_seeds for
    both sides; writes `work/train.json`. Nothing runs for a plan that `refusal` refuses."""
    plan = Plan.model_validate_json((work / "plan.json").read_text())
    log = TrainLog(test_passed=None, runs=[])
    if refusal(target, plan) is None:
        trainer = LocalTrainer(target, plan, work)
        passed = trainer.test()
        runs = [] if passed is False else [trainer(side, seed) for seed in target.holdout.all_seeds() for side in SIDES]
        log = TrainLog(test_passed=passed, runs=runs)
    (work / "train.json").write_text(log.model_dump_json())
    return log


def _recorded(work: Path):
    """(train(side, seed) reading train.json, test_passed); artifacts must lie under work/artifacts."""
    path = work / "train.json"
    try:
        if path.stat().st_size > MAX_TRAIN_JSON:
            raise ValueError(f"over {MAX_TRAIN_JSON} bytes")
        log = TrainLog.model_validate_json(path.read_bytes())
    except (OSError, ValueError, ValidationError) as e:
        raise CandidateFailed(f"train.json of the train step is unreadable: {str(e)[:300]}") from None
    root = (work / "artifacts").resolve()
    runs = {(r.side, r.seed): r for r in log.runs if Path(r.artifact).resolve().is_relative_to(root)}

    def train(side: str, seed: int) -> Trained:
        if (side, seed) not in runs:
            raise (BaselineFailed if side == "baseline" else CandidateFailed)(f"no train step recorded for {side} seed {seed}")
        return runs[side, seed]

    return train, log.test_passed


def score_from_work(ctx: TurnContext, number: int, work: Path, holdout_dir: Path) -> Verification:
    """`--step score`: re-read the PR and base (fresh clone in `ctx`), compare with plan.json, score
    what the train step left, and record. A moved head or base records a failed, stale verification
    of the planned pair (the wrapper then verifies the new pair)."""
    plan = make_plan(ctx, number)
    try:
        planned = Plan.model_validate_json((work / "plan.json").read_text())
    except (OSError, ValueError, ValidationError):
        planned = None
    if planned is None or (planned.candidate, planned.baseline) != (plan.candidate, plan.baseline):
        v = refusal(ctx.target, plan) or _stale(ctx.target, plan, planned)
    else:
        v = refusal(ctx.target, plan) or _score_recorded(ctx, plan, work, holdout_dir)
    record(ctx, v)
    return v


def _score_recorded(ctx: TurnContext, plan: Plan, work: Path, holdout_dir: Path) -> Verification:
    hold = ctx.target.holdout
    fetch(ctx, plan)
    evaluator = EvaluatorFiles(ctx.repo.path, plan.baseline, hold.files)  # from the score step's own clone
    score = scorer(hold, evaluator, holdout_dir, ctx.workdir / "score", float(ctx.target.budget.wall_seconds))
    try:
        train, test_passed = _recorded(work)
    except CandidateFailed as e:
        return measure(ctx.target, plan, _raise(e), score, None)
    return measure(ctx.target, plan, train, score, test_passed)


def _raise(e: Exception):
    def train(side: str, seed: int) -> Trained:
        raise e

    return train


def _stale(target: TargetConfig, plan: Plan, planned: Plan | None) -> Verification:
    pair = planned or plan
    what = "no readable plan.json" if planned is None else f"it checked out {planned.candidate[:8]} vs {planned.baseline[:8]}"
    reason = f"stale: {what}, the PR is now {plan.candidate[:8]} vs {plan.baseline[:8]}; verify again"
    return verification_block(target, pair, [], passed=False, reason=reason)


def empty_dir(root: Path) -> Path:
    """A new empty directory under `root`: the `{holdout}` of a harness without a sealed holdout."""
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="no-holdout-", dir=root))
