"""The verifier job's steps: `all` in one process (local fleet), or checkout / train-baseline /
train-candidate / score as four containers of one Kubernetes Job (see `senpai job verify --step`).
What runs a side's code and scores it lives here; the judge (`senpai.verifier.judge`) runs `all`
and `score`, asking these steps for each seed's train step (`SideTrainer`, or what `recorded`
read back) and its score (`scorer`). The steps never call the judge.

Work dir layout, the same for both: `repo/` (the turn's clone of the base branch), `plan.json`
(checkout), and per side `<side>/checkout/` (a standalone clone of that side's commit: nothing in
it points at `repo/`), `<side>/artifacts/<side>-<seed>/`, `<side>/job.json` (checkout: the plan and
the target config from the base, all a train step reads) and `<side>/train.json` (that side's
train step). On Kubernetes each train step mounts only its own `<side>/`, so the candidate's code
never sees the baseline's artifacts or numbers. What a side dir holds is untrusted: the score step
re-reads the PR and the base from the forge (a fresh clone, a fresh plan) and takes only numbers
and artifacts from it, each run only from its own side's dir.
"""

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from senpai.config.credentials import set_not_dumpable
from senpai.config.load import read_bounded
from senpai.config.target import Holdout, TargetConfig
from senpai.config.time_limits import VerifierSteps
from senpai.errors import ConfigError, PermanentError, TransientError
from senpai.job.context import TurnContext
from senpai.job.measure import Outcome, clear, run_command
from senpai.job.walls import Walls, train_python
from senpai.job.workcopy import standalone_clone
from senpai.verifier.evaluate import (
    SCRUBBED,
    EvaluatorFiles,
    Trained,
    python_problem,
    reset_checkout,
    score_step,
    step_env,
    train_step,
)
from senpai.verifier.plan import SIDES, Known, Plan, make_plan, refusals
from senpai.verifier.reuse import measurement_key, reusable

MAX_JSON = 16 * 1024**2  # job.json, train.json
Side = Literal["candidate", "baseline"]
Train = Callable[[str, int], Trained]  # (side, seed) -> its train step, run now or read from train.json
Score = Callable[[Trained], tuple[Outcome | None, str | None]]  # -> (score step's outcome, or why refused)


class BaselineFailed(TransientError):
    """The base head failed its own train or score step: senpai's or the target's problem, never the PR's."""


class CandidateFailed(Exception):
    """The candidate failed a step; the message is the verification's reason."""


class SideJob(BaseModel):
    """`<side>/job.json`, written by checkout: what the side's train step runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    side: Side
    plan: Plan
    target: TargetConfig  # senpai.yaml of the base, as the checkout step loaded it
    known: list[int] = []  # seeds an earlier verification measured for this side's tree (`reuse`): not trained


class TrainLog(BaseModel):
    """`<side>/train.json`: one side's train steps, all seeds, and (candidate) the test command's result."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    side: Side
    test_passed: bool | None
    runs: list[Trained]


class SideTrainer:
    """Runs one side's train steps on demand (each seed once) in `side_dir`'s checkout, each within
    its timeout (`VerifierSteps`)."""

    def __init__(self, target: TargetConfig, side: str, sha: str, side_dir: Path, walls: Walls) -> None:
        self.target, self.side, self.sha, self.dir, self.walls = target, side, sha, side_dir, walls
        self.steps = VerifierSteps.of(target)
        self.done: dict[int, Trained] = {}

    def __call__(self, seed: int) -> Trained:
        if seed not in self.done:
            t = self.target
            self.done[seed] = train_step(
                t.train, self.dir / "checkout", self.sha, self.side, seed, self.dir / "artifacts",
                self.steps.train, t.holdout.compute.key, self.walls,
            )  # fmt: skip
        return self.done[seed]

    def test(self) -> bool | None:
        """The target's test command in this side's checkout: passed, or None if none is declared."""
        if self.target.test is None or self.steps.test is None:  # both or neither: `VerifierSteps.of`
            return None
        checkout, timeout = self.dir / "checkout", self.steps.test
        reset_checkout(checkout, self.sha, self.walls, timeout)  # the fresh clone: no step of the side ran in it yet
        own, env = step_env(self.dir)
        wall = self.walls([checkout, *own], [])
        out = run_command(self.target.test, checkout, env, timeout, self.dir / "test.log", drop=SCRUBBED, wall=wall)
        return out.returncode == 0


def checkout(ctx: TurnContext, plan: Plan, work: Path) -> None:
    """Clones of the candidate and base heads (`make_plan` fetched both) at `work/<side>/checkout`."""
    for side in SIDES:
        standalone_clone(ctx.repo.path, plan.sha(side), work / side / "checkout")


def known(ctx: TurnContext, plan: Plan, holdout_dir: Path, sources: tuple[int, ...]) -> Known:
    """This verification's key per side (its tree's: `reuse.measurement_key`) and the seeds earlier
    verifications measured for a tree with that key, read from the PR and `sources`
    (`reuse.reusable`); a sample that lacks one of the target's guards is measured again."""
    keys = {side: measurement_key(ctx.target, plan.trees.get(side), holdout_dir) for side in SIDES}
    guards = set(ctx.target.holdout.guards)
    found = reusable(ctx, plan.pr, keys, sources)
    return Known(keys, {side: {seed: s for seed, s in got.items() if guards <= set(s.guards)} for side, got in found.items()})


def checkout_step(ctx: TurnContext, number: int, work: Path, holdout_dir: Path, sources: tuple[int, ...] = ()) -> Plan:
    """`--step checkout`: write `work/plan.json`, and per side its clone and `work/<side>/job.json`
    (each names the seeds earlier verifications measured for its tree: its train step skips them).
    Raises ConfigError, before anything is trained, if `holdout.python` or the train command's
    interpreter (`walls.train_python`) cannot run here (the train and score steps run in the same image)."""
    if why := python_problem(ctx.target.holdout):
        raise ConfigError(why)
    train_python(ctx.target.train)
    plan = make_plan(ctx, number)
    checkout(ctx, plan, work)
    _write(work / "plan.json", plan)
    past = {} if refusals(plan) else known(ctx, plan, holdout_dir, sources).samples
    for side in SIDES:
        skip = sorted(past.get(side, {}))
        _write(work / side / "job.json", SideJob(side=side, plan=plan, target=ctx.target, known=skip))
    return plan


def _read(path: Path, model: type[BaseModel]):
    """`model` from the JSON file at `path`; raises ValueError if unreadable, not a regular file (a
    side's code may leave a FIFO or a symlink to /dev/zero there), over MAX_JSON bytes or invalid."""
    try:
        return model.model_validate_json(read_bounded(path, MAX_JSON))
    except (ConfigError, ValidationError) as e:
        raise ValueError(f"{path.parent.name}/{path.name} is unreadable: {str(e)[:300]}") from None


def read_plan(work: Path) -> Plan | None:
    """`work/plan.json` as the checkout step wrote it; None if it cannot be read (`_read`)."""
    try:
        return _read(work / "plan.json", Plan)
    except ValueError:
        return None


def _write(path: Path, model: BaseModel) -> None:
    """`model` as JSON at `path`, a new regular file whatever a side's code left there (`clear`)."""
    clear(path).write_text(model.model_dump_json())


def train_side(work: Path, side: str, walls: Walls) -> TrainLog:
    """`--step train --side SIDE` (no secret, no forge, nothing outside `work/SIDE`): the test
    command (candidate), then every seed up to max_seeds, each behind its wall (`walls`); writes
    `work/SIDE/train.json`. Nothing
    runs for a plan that `refusals` refuses, nor after a failed test. Raises PermanentError if
    `work/SIDE/job.json` is unreadable or names another side (the checkout step failed). The
    process makes itself non-dumpable first: the side's code, its child, must not ptrace it or
    write its memory (/proc/<pid>/mem) to change the numbers it writes into train.json."""
    set_not_dumpable()
    try:
        job: SideJob = _read(work / side / "job.json", SideJob)
    except ValueError as e:
        raise PermanentError(str(e)) from None
    if job.side != side:
        raise PermanentError(f"{side}/job.json is the {job.side} side's")
    log = TrainLog(side=job.side, test_passed=None, runs=[])
    if not refusals(job.plan):
        trainer = SideTrainer(job.target, side, job.plan.sha(side), work / side, walls)
        passed = trainer.test() if side == "candidate" else None
        seeds = [seed for seed in job.target.holdout.all_seeds() if seed not in job.known]
        runs = [] if passed is False else [trainer(seed) for seed in seeds]
        log = TrainLog(side=job.side, test_passed=passed, runs=runs)
    _write(work / side / "train.json", log)
    return log


def _side_log(work: Path, side: str) -> TrainLog:
    """`work/<side>/train.json`, checked: every run is that side's and its artifact lies under
    `work/<side>/artifacts` (symlinks resolved). Raises BaselineFailed or CandidateFailed naming why."""
    fail = BaselineFailed if side == "baseline" else CandidateFailed
    try:
        log: TrainLog = _read(work / side / "train.json", TrainLog)
    except ValueError as e:
        raise fail(f"the {side} train step's {e}") from None
    root = (work / side / "artifacts").resolve()
    for r in [log, *log.runs]:
        if r.side != side:
            raise fail(f"{side}/train.json claims a {r.side} run: refused (each side's runs come only from its own dir)")
    for r in log.runs:
        if not Path(r.artifact).resolve().is_relative_to(root):
            raise fail(f"the artifact of {side} seed {r.seed} lies outside {side}/artifacts: refused")
    return log


def recorded(work: Path) -> tuple[Train, bool | None]:
    """(train(side, seed) reading each side's train.json, the candidate's test_passed). A seed a
    valid train.json lacks was skipped as measured before, on the ledger the checkout step read,
    and is not found on the ledger the score step reads (a comment deleted or edited between the
    two): senpai's failure on either side (TransientError, the wrapper's retry), never the PR's."""
    logs = {side: _side_log(work, side) for side in SIDES}
    runs = {(r.side, r.seed): r for log in logs.values() for r in log.runs}

    def train(side: str, seed: int) -> Trained:
        if (side, seed) not in runs:  # skipped as measured before (checkout's ledger), and not found there now
            why = f"no train step recorded for {side} seed {seed}, and no earlier measurement of it found: verify again"
            raise TransientError(why)
        return runs[side, seed]

    return train, logs["candidate"].test_passed


def empty_dir(root: Path) -> Path:
    """A new empty directory under `root`: the `{holdout}` of a harness without a sealed holdout."""
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="no-holdout-", dir=root))


def scorer(hold: Holdout, evaluator: EvaluatorFiles, holdout_dir: Path, root: Path, timeout: float, walls: Walls) -> Score:
    """The score step as the judge calls it: Trained -> (Outcome | None, refusal | None). Raises
    ConfigError now, before any step runs, if `holdout.python` cannot run here (`python_problem`):
    a fault of the base's senpai.yaml or of the machine, never the PR's."""
    if why := python_problem(hold):
        raise ConfigError(why)
    return lambda trained: score_step(hold, evaluator, trained, holdout_dir, root, timeout, walls)
