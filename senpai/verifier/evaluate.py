"""The verifier's two steps per seed: train (the side's own code) and score (the trusted evaluator).

Train step: the target's `train` command in a checkout of the side's commit, reset and cleaned
first (`git reset --hard; git clean -ffdx`, so no seed inherits what an earlier one left), with the
allow-listed environment minus every `PYTHON*` and `SENPAI_*` variable (SCRUBBED), plus `SEED`,
`SENPAI_ARTIFACT_DIR` (an empty directory it must write its model into), `WANDB_MODE=disabled`
and a fresh empty `HOME` and `TMPDIR`. Both steps, and git in a checkout a train step ran in, run
behind a wall (`senpai.job.walls`): each may write only its own folders.
Score step: `holdout.command` in a directory created fresh (random name) right before it runs,
holding only `holdout.files` as they were at the base commit, extracted from a snapshot taken
before any train step ran (`EvaluatorFiles`). `python`/`python3` on its PATH is a shim that execs
the score interpreter (`holdout.python` of the base's senpai.yaml, else this one) with `-I -P`
(no script dir or cwd on sys.path, no `PYTHON*` variable read), and the environment is the same
scrubbed one: no secret reaches either step.
"""

import io
import os
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from senpai import phases, trees
from senpai.config.target import Holdout
from senpai.errors import ConfigError, PermanentError
from senpai.fleet.base import job_gpus
from senpai.fleet.procs import become_subreaper, descendants, kill_new_descendants
from senpai.job.environ import allowed_env
from senpai.job.measure import GRACE_SECONDS, Outcome, clear, run_command
from senpai.job.walls import Walls, python_paths, sandbox, train_python
from senpai.verifier.artifacts import digest, refusal, set_read_only, snapshot

MAX_EVALUATOR_BYTES = 256 * 1024**2  # the tar of holdout.files at the base, held in memory
SHIM = '#!/bin/sh\nexec {python} -I -P "$@"\n'
# Inherited variables neither step gets: Python's own (PYTHONPATH, PYTHONSTARTUP...) and senpai's
# (SENPAI_CONFIG names the harness config, which names the sealed holdout).
SCRUBBED = ("PYTHON", "SENPAI_")


class Trained(BaseModel):
    """One train step's record (a line of `train.json` on Kubernetes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    side: Literal["candidate", "baseline"]
    seed: int
    returncode: int | None  # None: killed at the timeout
    seconds: float
    gpu_seconds: float = 0.0  # seconds x the GPUs the job holds (`senpai.fleet.base.job_gpus`)
    compute: float | None  # the `holdout.compute.key` value it printed last; None if none
    artifact: str  # the artifact directory
    digest: str  # of the artifact directory right after the step; "" if `artifacts.refusal` refused it
    tail: str  # last lines of its output


class EvaluatorFiles:
    """`holdout.files` at commit `sha` of the git repository at `repo`, read once into memory.

    Raises ConfigError if a file is not in the commit or the tar exceeds MAX_EVALUATOR_BYTES.
    `GIT_NO_REPLACE_OBJECTS` keeps `refs/replace` (which a checkout could add) out of the read.
    """

    def __init__(self, repo: Path, sha: str, files: list[str]) -> None:
        env = {**os.environ, "GIT_NO_REPLACE_OBJECTS": "1"}
        proc = subprocess.run(
            ["git", "-C", str(repo), "archive", "--format=tar", sha, "--", *files], env=env, capture_output=True
        )
        if proc.returncode != 0:
            raise ConfigError(f"holdout.files {files} at {sha[:8]}: {proc.stderr.decode(errors='replace').strip()[-300:]}")
        if len(proc.stdout) > MAX_EVALUATOR_BYTES:
            raise ConfigError(f"holdout.files at {sha[:8]} are over {MAX_EVALUATOR_BYTES} bytes")
        self.sha, self.tar = sha, proc.stdout

    @classmethod
    def from_tree(cls, repo: Path, files: list[str]) -> "EvaluatorFiles":
        """`files` as they are in the working tree at `repo` (`senpai validate` checks a target
        before anything is committed). A symlink is kept as a link, which `extract` refuses if it
        points outside. Raises ConfigError if the files are over MAX_EVALUATOR_BYTES."""
        size = sum(p.lstat().st_size for f in files for p in [repo / f, *_walk(repo / f)])
        if size > MAX_EVALUATOR_BYTES:
            raise ConfigError(f"holdout.files in {repo} are over {MAX_EVALUATOR_BYTES} bytes")
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w") as tar:
            for f in files:
                tar.add(repo / f, arcname=f)
        tree = cls.__new__(cls)  # no commit to archive: the tar is built here
        tree.sha, tree.tar = "working tree", out.getvalue()
        return tree

    def extract(self, root: Path) -> Path:
        """A new directory (random name) under `root` holding exactly the evaluator's files."""
        dest = Path(tempfile.mkdtemp(prefix="evaluator-", dir=root))
        with tarfile.open(fileobj=io.BytesIO(self.tar)) as tar:
            tar.extractall(dest, filter="data")
        return dest


def _walk(path: Path) -> list[Path]:
    """Everything under folder `path` (links not followed); [] for a file."""
    if path.is_symlink() or not path.is_dir():
        return []
    return [Path(root) / n for root, dirs, names in os.walk(path) for n in dirs + names]


def score_python(hold: Holdout) -> str:
    """The interpreter that runs the score step (and `holdout.sample`): `holdout.python`, else this one."""
    return hold.python or sys.executable


def python_problem(hold: Holdout) -> str | None:
    """Why `holdout.python` cannot run the score step here (a sentence), or None: it is not set, or it
    is an executable file that runs as Python 3 (`walls.python_paths`, asked once a process)."""
    python = hold.python
    if python is None:
        return None
    if not os.path.isfile(python) or not os.access(python, os.X_OK):
        what = "is not an executable file" if os.path.exists(python) else "does not exist"
        return (
            f"holdout.python {python} {what} on this machine: the score step would not run; point it at the "
            "interpreter that has the evaluator's packages (on Kubernetes, one in the verifier image), or unset it"
        )
    try:
        python_paths(python)
    except ConfigError as e:
        return str(e)
    return None


def python_shim(directory: Path, python: str = sys.executable) -> Path:
    """`directory` with `python` and `python3` scripts that exec `python` with `-I -P`."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)  # the evaluator's user may not be this one (`walls.candidate_uid`)
    for name in ("python", "python3"):
        shim = directory / name
        shim.write_text(SHIM.format(python=shlex.quote(python)))
        shim.chmod(0o755)
    return directory


def step_env(root: Path, **extra: str) -> tuple[list[Path], dict[str, str]]:
    """What a step adds to the scrubbed environment: W&B off, a fresh empty HOME and TMPDIR under
    `root` (nothing an earlier step left there is read; `walls.sandbox`), plus `extra`. Returns
    (those two folders, for the step's wall; the env)."""
    own, env = sandbox(root)
    return own, {"WANDB_MODE": "disabled", **env, **extra}


class ResetFailed(PermanentError):
    """`reset_checkout` failed (`timed_out`: it ran past its timeout); the message names git's error."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# `sh -c _RESET sh CHECKOUT SHA`: the checkout and sha are arguments, never parsed as shell
_CLEAN_FAILED = 4
_RESET = f'git -C "$1" reset -q --hard "$2" || exit 3; git -C "$1" clean -q -ffdx || exit {_CLEAN_FAILED}'


def reset_checkout(checkout: Path, sha: str, walls: Walls, timeout: float | None = None) -> None:
    """Put `checkout` back to exactly `sha`: tracked files restored, everything untracked removed.
    Raises ResetFailed with git's message if it cannot (an earlier step broke the checkout) or
    takes over `timeout` seconds. A train step can set a command git runs here (core.fsmonitor,
    a filter in .git/config), so git runs behind the step's wall (`walls`: it may write the checkout
    and a fresh HOME and TMPDIR alone), as the step's own code; what it leaves running is killed,
    as `run_command` kills what a train step leaves, and `train_step` counts the reset's seconds as
    the side's. Raises ValueError if `sha` is not a full commit sha (git would read `--quiet` as a flag)."""
    if not _FULL_SHA.fullmatch(sha):
        raise ValueError(f"reset_checkout takes a full commit sha, not {sha[:80]!r}")
    become_subreaper()
    before = descendants()
    own, env = step_env(checkout.parent)
    wall = walls([checkout, *own], [])
    env = {**allowed_env(os.environ), **env}
    try:
        with phases.phase("git local"):  # both gits in one walled launch: each launch starts an interpreter
            argv = wall.argv(["/bin/sh", "-c", _RESET, "sh", str(checkout), sha])
            proc = subprocess.run(argv, cwd=checkout, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        kill_new_descendants(before, GRACE_SECONDS)
        raise ResetFailed(f"git reset and clean of the {checkout.name} checkout took over {timeout:g} s", True) from None
    kill_new_descendants(before, GRACE_SECONDS)
    if proc.returncode != 0:
        what = "clean" if proc.returncode == _CLEAN_FAILED else "reset"
        raise ResetFailed(f"git {what} of the {checkout.name} checkout failed: {proc.stderr.strip()[-300:]}")


def train_step(
    command: str,
    checkout: Path,
    sha: str,
    side: str,
    seed: int,
    artifacts: Path,
    timeout: float,
    compute_key: str | None,
    walls: Walls,
) -> Trained:
    """Run the side's train command for `seed` in `checkout` (reset to `sha` first) behind its wall
    (`walls`: it may write the checkout, its artifact directory and a fresh HOME and TMPDIR alone,
    and run the interpreter the command names, `walls.train_python`, whose ConfigError it raises);
    its artifact directory is `artifacts/<side>-<seed>` (created empty). Seconds are wall seconds of the reset
    and the command, within `timeout` together: the reset runs what an earlier step of the side
    planted in its checkout (a git filter, core.fsmonitor), so that work is the side's, and a
    reset that fails or times out is the side's failed step. GPU seconds are those x the GPUs
    this job holds (the train command's own env has no SENPAI_*)."""
    artifact, start = artifacts / f"{side}-{seed}", time.monotonic()
    try:
        reset_checkout(checkout, sha, walls, timeout)
    except ResetFailed as e:
        seconds = time.monotonic() - start
        return Trained(
            side=side, seed=seed, returncode=None if e.timed_out else 128, seconds=seconds,
            gpu_seconds=seconds * job_gpus(), compute=None, artifact=str(artifact), digest="", tail=str(e),
        )  # fmt: skip
    clear(artifact).mkdir(parents=True)  # what an earlier step left there is never trusted
    own, env = step_env(artifacts, SEED=str(seed), SENPAI_ARTIFACT_DIR=str(artifact))
    log = artifacts / f"{side}-{seed}-train.log"
    left = max(timeout - (time.monotonic() - start), 0.0)
    wall = walls([checkout, artifact, *own], [], train_python(command))
    out = run_command(command.replace("{seed}", str(seed)), checkout, env, left, log, drop=SCRUBBED, wall=wall)
    compute = out.value(compute_key) if compute_key else None
    seconds = time.monotonic() - start
    return Trained(
        side=side, seed=seed, returncode=out.returncode, seconds=seconds, gpu_seconds=seconds * job_gpus(),
        compute=compute, artifact=str(artifact), digest="" if refusal(artifact) else digest(artifact), tail=out.tail(),
    )  # fmt: skip


def score_step(
    hold: Holdout, evaluator: EvaluatorFiles, trained: Trained, holdout_dir: Path, root: Path, timeout: float, walls: Walls
) -> tuple[Outcome | None, str | None]:
    """Score `trained`'s artifact: (outcome, None), or (None, why it was refused without scoring).

    Refused: an unsafe artifact (`artifacts.refusal`), or one changed since its train step. What
    is checked and scored is a copy under `root` (`artifacts.snapshot`), where no train step's code
    can write: a process it left behind cannot swap the model between the check and the load. The
    evaluator directory is created under `root` now, after the train step, so nothing a train step
    wrote can be in it. The evaluator loads what a side's code wrote, so it runs behind a wall too
    (`walls`): it may write its own directory and a fresh HOME and TMPDIR, and read the copy and the
    sealed holdout, and run `holdout.python`. Raises OSError if the copy cannot be written (senpai's
    failure), ConfigError if `holdout.python` does not run (`scorer` checks it first).
    """
    root.mkdir(parents=True, exist_ok=True)
    copy = root / f"scored-{trained.side}-{trained.seed}"
    _remove(copy)  # an earlier try's
    try:
        if reason := snapshot(Path(trained.artifact), copy) or refusal(copy):  # first: they bound what `digest` reads
            return None, reason
        if digest(copy) != trained.digest:
            return None, f"the artifact of {trained.side} seed {trained.seed} changed after its train step"
        set_read_only(copy)
        log = root / f"{trained.side}-{trained.seed}-score.log"
        seed, python = trained.seed, hold.python
        return run_evaluator(hold.command, evaluator, copy, holdout_dir, seed, root, timeout, log, walls, python=python), None
    finally:
        _remove(copy)


def _remove(copy: Path) -> None:
    if copy.is_dir() and not copy.is_symlink():
        set_read_only(copy, False)
        trees.remove(copy)


def run_evaluator(
    command: str,
    evaluator: EvaluatorFiles,
    artifact: Path,
    holdout_dir: Path,
    seed: int,
    root: Path,
    timeout: float,
    log: Path,
    walls: Walls,
    writes: bool = False,
    python: str | None = None,
) -> Outcome:
    """Run `command` ({artifact}, {holdout} and {seed} replaced) as the score step runs the
    evaluator: in a directory created fresh under `root` holding only the evaluator's files, with
    `python` a shim for interpreter `python` (`holdout.python`; None: this one) under `-I -P`, the
    scrubbed environment, and behind its wall (`walls`: it writes its directory, a fresh HOME and
    TMPDIR; it reads the artifact, the holdout and that interpreter, and with `writes` writes the
    first two: `holdout.sample` makes both); output to `log`. Raises ConfigError if `python` does
    not run (`walls.python_paths`)."""
    root.mkdir(parents=True, exist_ok=True)
    cwd = evaluator.extract(root)
    shims = python_shim(Path(tempfile.mkdtemp(prefix="shim-", dir=root)), python or sys.executable)
    path = os.pathsep.join([str(shims), os.environ.get("PATH", "")])
    subs = {"{artifact}": shlex.quote(str(artifact)), "{holdout}": shlex.quote(str(holdout_dir)), "{seed}": str(seed)}
    for key, value in subs.items():
        command = command.replace(key, value)
    own, env = step_env(root, PATH=path, SEED=str(seed))
    made = [artifact, holdout_dir] if writes else []
    wall = walls([cwd, *own, *made], [artifact, holdout_dir, shims], python)
    return run_command(command, cwd, env, timeout, log, drop=SCRUBBED, wall=wall)
