"""A student attempt in three steps, so the target's code never runs where a secret is.

- **prepare** (holds the forge token): the runtime's own work on the PR branch (the search student
  writes the hypothesis params; an LLM agent edits the code), committed and pushed
  (`senpai.agents.base.Runtime.student_turn`); then `plan` writes what the train step runs.
- **train** (no secret, no forge, its own folder alone): the target's train command once per arm,
  each in a standalone clone of the head with the arm's params written, behind its wall
  (`senpai.job.walls`), logging its W&B run offline into its own folder (`train`).
- **report** (holds the forge token): the runs taken into the tracker (`Tracker.collect_run`), the
  winning arm's params committed and pushed (multi-arm), and the evidence posted (`report`).

The local fleet runs the three in one process (`senpai job student`, `--step all`); the Kubernetes
fleet runs them as three containers of one Job, the train step's mounting only `train/`.

Work dir: `plan.json` (prepare, for report; the train step never sees it) and `train/`, the train
step's own: `train/job.json` (what to train), `train/<arm>/checkout/` (its clone), its HOME, TMPDIR
and W&B dir, and `train/train.json` (what it ran). report reads `train/` as untrusted input: bounded,
validated, a run only from its arm's W&B dir and stamped while the step ran.
"""

from datetime import UTC, datetime
from pathlib import Path, PurePath

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from senpai.agents.attempt import Attempt
from senpai.agents.evidence import Measured, failure, numbers, post, summary_value, train_timeout
from senpai.agents.params import apply_params
from senpai.config.credentials import set_not_dumpable
from senpai.config.load import read_bounded
from senpai.config.target import Metric
from senpai.errors import ConfigError, NotFound, PermanentError, TransientError
from senpai.job.context import TurnContext
from senpai.job.measure import TAIL_BYTES, clear, run_command
from senpai.job.runs import run_identity
from senpai.job.walls import Walls, sandbox, train_python
from senpai.job.workcopy import standalone_clone
from senpai.ledger.blocks import ArmResult, Cost, Evidence, RunRef
from senpai.tracker.base import RunRecord

MAX_JSON = 16 * 1024**2  # train/job.json, train/train.json
MAX_VALUES = 1_000  # `key: value` lines kept per arm (the metric and the numbers evidence shows)
TRAIN = "train"


class TrainPythonFailed(TransientError):
    """The train command's interpreter does not run here (`walls.train_python`): a fault of the
    base's senpai.yaml or of the machine, never the hypothesis's. Exit 3, as the verifier's
    `BaselineFailed`: the job is relaunched, then escalated with its log, which names `train` and
    the fix; no attempt is spent."""


def train_interpreter(command: str, walls: Walls) -> str | None:
    """`walls.train_python(command)` (the interpreter the train step's wall grants, or None), once
    `walls` would grant it (its folders hold nothing they hide). Raises TrainPythonFailed for either
    ConfigError. The student job asks it before its turn (the train step runs in the same image),
    so no LLM dollar is spent on an attempt that cannot train."""
    try:
        python = train_python(command)
        if python:
            walls([], [], python)
        return python
    except ConfigError as e:
        raise TrainPythonFailed(str(e)) from None


class ArmJob(BaseModel):
    """One arm to train: its name (None: the hypothesis alone), params, W&B run and env."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str | None
    control: bool = False
    params: dict
    run_id: str
    env: dict[str, str] = Field(description="The run's W&B identity (offline, into its own folder) and SEED.")


class TrainJob(BaseModel):
    """`train/job.json`, written by prepare: what the train step runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    command: str
    train_seconds: float = Field(description="Each arm's time: the train share of the compute budget, cut to the job's deadline.")
    post_seconds: float = Field(description="Left before the job's deadline, to report.")
    params_file: str
    arms: list[ArmJob]


class StudentPlan(BaseModel):
    """`plan.json`, written by prepare for report: the attempt (None: the runtime posted its evidence
    itself, nothing trains) and when its training could start."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    attempt: Attempt | None
    planned_at: datetime


class ArmRan(BaseModel):
    """One arm as the train step ran it (untrusted: its code ran beside this record's writer)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str | None
    returncode: int | None = Field(description="None: killed at its timeout.")
    seconds: float = Field(ge=0)
    values: dict[str, str] = Field(description="The last value of each `key: value` line it printed (MAX_VALUES).")
    tail: str = Field(max_length=TAIL_BYTES, description="The last lines of its output.")
    timeout: float = Field(ge=0, description="Seconds it was given.")


class TrainLog(BaseModel):
    """`train/train.json`: what the train step ran, one entry per arm of train/job.json, in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    arms: list[ArmRan]


def _arm_dir(train: Path, index: int) -> Path:
    return train / f"arm-{index}"


def plan(ctx: TurnContext, a: Attempt | None, work: Path) -> StudentPlan:
    """prepare's last part: a clone of `a.head` per arm under `work/train/` with the arm's params
    written, `work/train/job.json` and `work/plan.json` (no arm for no attempt). Raises
    PermanentError if a clone fails, ConfigError if the params file cannot be written."""
    train = work / TRAIN
    arms = []
    for i, (name, params, control) in enumerate(a.arms if a else []):
        checkout = standalone_clone(Path(a.clone or ctx.repo.path), a.head, _arm_dir(train, i) / "checkout")
        if name is not None:
            apply_params(checkout / ctx.target.params.file, params)
        identity = run_identity(ctx, a.pr, a.attempt, a.hypothesis.student, a.head, a.hypothesis.id, params)
        if name is not None:
            config = {**identity.config, "senpai_arm": name}
            update = {"id": f"{identity.id}-{name}", "name": f"{identity.name}/{name}", "config": config}
            identity = identity.model_copy(update=update)
        env = {**ctx.tracker.env_for(identity, _arm_dir(train, i) / "wandb"), "SEED": "0"}
        arms.append(ArmJob(name=name, control=control, params=params, run_id=identity.id, env=env))
    limits = ctx.time_limits.student
    job = TrainJob(
        command=ctx.target.train, train_seconds=limits.train, post_seconds=limits.post,
        params_file=ctx.target.params.file, arms=arms,
    )  # fmt: skip
    _write(train / "job.json", job)
    planned = StudentPlan(attempt=a, planned_at=datetime.now(UTC))
    _write(work / "plan.json", planned)
    return planned


def train(train_dir: Path, walls: Walls) -> TrainLog:
    """The train step: every arm of `train_dir/job.json` in turn, in its own clone, behind its wall
    (it may write its clone and a fresh HOME, TMPDIR and W&B dir under its arm's folder alone, and
    run the interpreter the train command names, `train_interpreter`), each within `train_timeout`;
    writes `train_dir/train.json`, and says on stdout (the job's log) how each arm ended, with the
    end of its output if it failed. The process is non-dumpable first:
    the arms' code, its children, must not change what it writes. Raises PermanentError if
    job.json is unreadable (prepare failed), TrainPythonFailed before any arm runs."""
    set_not_dumpable()
    job = _read(train_dir / "job.json", TrainJob, PermanentError)
    python = train_interpreter(job.command, walls)
    ran = []
    for i, arm in enumerate(job.arms):
        root = _arm_dir(train_dir, i)
        checkout, runs = root / "checkout", root / "wandb"
        own, env = sandbox(root)
        runs.mkdir(parents=True, exist_ok=True)
        timeout = train_timeout(job.train_seconds, job.post_seconds)
        env = {**arm.env, **env, **_wandb_paths(arm.env, runs)}
        wall = walls([checkout, *own, runs], [], python)
        out = run_command(job.command, checkout, env, timeout, log=root / "train.log", wall=wall)
        values = dict(list(out.values.items())[-MAX_VALUES:])
        tail = out.tail(20)[-TAIL_BYTES:]
        ran.append(
            ArmRan(name=arm.name, returncode=out.returncode, seconds=out.seconds, values=values, tail=tail, timeout=timeout)
        )
        ended = "timed out" if out.returncode is None else f"exited {out.returncode}"
        print(f"arm {i} ({arm.name}): the train command {ended} after {out.seconds:.1f} s; output in {root / 'train.log'}")
        if out.returncode != 0:  # the job's log (`senpai logs`) shows why, as the failed evidence does
            print(tail, flush=True)
    log = TrainLog(arms=ran)
    _write(train_dir / "train.json", log)
    return log


def _wandb_paths(env: dict[str, str], runs: Path) -> dict[str, str]:
    """The arm's W&B folder and run config file as this step sees them: prepare named them as it
    mounts the train folder, which this step's container may mount elsewhere (Kubernetes)."""
    out = {"WANDB_DIR": str(runs)}
    if config := env.get("WANDB_SWEEP_PARAM_PATH"):
        out["WANDB_SWEEP_PARAM_PATH"] = str(runs / PurePath(config).name)
    return out


def report(ctx: TurnContext, planned: StudentPlan, work: Path) -> Evidence | None:
    """Read what the train step ran, take each arm's W&B run into the tracker, commit and push the
    winning arm's params (a multi-arm attempt, on the PR branch fetched again), and post the
    evidence; None for a plan with no attempt. A train step that left no readable record fails
    every arm (its own doing); the attempt is charged like any failed run."""
    a, train_dir = planned.attempt, work / TRAIN
    if a is None:
        return None
    job = _read(train_dir / "job.json", TrainJob, PermanentError)
    try:
        log: TrainLog | None = _read(train_dir / "train.json", TrainLog, ValueError)
    except ValueError:
        log = None
    if log is not None and [r.name for r in log.arms] != [arm.name for arm in job.arms]:
        log = None
    window = (planned.planned_at, datetime.now(UTC))
    results = [
        (arm, _measured(ctx, arm, ran, train_dir, i, window))
        for i, (arm, ran) in enumerate(zip(job.arms, log.arms if log else [None] * len(job.arms), strict=True))
    ]
    spent = Cost(tokens=a.tokens, dollars=a.dollars)
    if len(results) == 1:
        return post(ctx, a.pr, a.attempt, a.hypothesis, a.head, results[0][1], spent, a.interpretation)
    winner, m = best_arm(results, ctx.target.metric)
    ctx.repo.checkout_remote_branch(a.branch)  # at `a.head`: prepare pushed it (a container before, on Kubernetes)
    apply_params(ctx.repo.path / ctx.target.params.file, winner.params)
    head = ctx.repo.commit_all(f"{a.hypothesis.id}: apply params of arm {winner.name} (attempt {a.attempt})")
    ctx.repo.push(a.branch)
    rows = [
        ArmResult(name=arm.name or "", control=arm.control, params=arm.params, value=r.value, run=r.run, failure=r.failure)
        for arm, r in results
    ]
    runs = [m.run, *(r.run for arm, r in results if arm is not winner)]
    spent = spent.model_copy(update={"wall_seconds": sum(r.seconds for _, r in results)})
    return post(ctx, a.pr, a.attempt, a.hypothesis, head, m, spent, runs=runs, arms=rows, arm=winner.name)


def _measured(ctx: TurnContext, arm: ArmJob, ran: ArmRan | None, train_dir: Path, index: int, window) -> Measured:
    """An arm's measurement: its run taken from its own W&B dir (`collect_run`; only one stamped in
    `window` counts), its metric from that run or what it printed, and why it failed, if it did."""
    record = _collect(ctx, arm.run_id, _arm_dir(train_dir, index) / "wandb", window)
    metric = ctx.target.metric
    if ran is None:
        value, why = None, "the train step left no readable record of this run (train.json)"
    else:
        value = _printed(ran, metric.name) if metric.source == "stdout" else summary_value(record, metric.name)
        why = failure(ran.returncode, ran.timeout, value, metric.name, record)
    run = RunRef(id=arm.run_id, url=record.url if record else None, state=record.state if record else "missing")
    seconds, tail = (ran.seconds, ran.tail) if ran else (0.0, "")
    return Measured(value, why, run, numbers(record), seconds, tail)


def _printed(ran: ArmRan, key: str) -> float | None:
    raw = ran.values.get(key)
    try:
        return None if raw is None else float(raw)
    except ValueError:
        return None


def _collect(ctx: TurnContext, run_id: str, folder: Path, window) -> RunRecord | None:
    try:
        return ctx.tracker.collect_run(run_id, folder, window)
    except NotFound:
        return None


def best_arm(results: list[tuple[ArmJob, Measured]], metric: Metric) -> tuple[ArmJob, Measured]:
    """The arm with the best validation value among those that did not fail (the control wins a
    tie); the control if every arm failed (its failure is then the evidence's)."""
    control = next(r for r in results if r[0].control)
    ok = [r for r in results if r[1].failure is None and r[1].value is not None]
    if not ok:
        return control
    ranked = sorted(ok, key=lambda r: not r[0].control)  # stable: the control first among equals
    return max(ranked, key=lambda r: metric.better(r[1].value, ranked[0][1].value))


def read_plan(work: Path) -> StudentPlan:
    """`work/plan.json` (prepare's, in the report container). Raises PermanentError if unreadable."""
    return _read(work / "plan.json", StudentPlan, PermanentError)


def _read(path: Path, model: type[BaseModel], error: type[Exception]):
    """`model` from the JSON file at `path`; raises `error` if it is unreadable, not a regular file,
    over MAX_JSON bytes or invalid."""
    try:
        return model.model_validate_json(read_bounded(path, MAX_JSON))
    except (ConfigError, ValidationError) as e:
        raise error(f"{path.parent.name}/{path.name} is unreadable: {str(e)[:300]}") from None


def _write(path: Path, model: BaseModel) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    clear(path).write_text(model.model_dump_json())


def run_attempt(ctx: TurnContext, a: Attempt, walls: Walls) -> Evidence:
    """The three steps in this process (`--step all`): plan, train, report, in `ctx.workdir`."""
    planned = plan(ctx, a, ctx.workdir)
    train(ctx.workdir / TRAIN, walls)
    ev = report(ctx, planned, ctx.workdir)
    assert ev is not None  # a plan of an attempt reports one
    return ev
