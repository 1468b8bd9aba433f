"""The wall of each command a job runs for a PR (`senpai.fleet.wall`), worked out from the harness config.

Hidden from the command: senpai's state dir (the wrapper's cache, the ledger snapshot, the base
mirror, agent conversations), the tracker's dir (every job's W&B runs), the local fleet's jobs (the
other jobs' folders; this job's own spec, status and log), the sealed holdout, the home folder of the
user senpai runs as (~/.netrc, ~/.git-credentials, ~/.config/gh...), and `wall.hidden`. Readable all
the same: the interpreter senpai runs on (its prefixes and site-packages: a target's `python` is
senpai's), the evaluator's own interpreter where senpai.yaml declares one (`holdout.python`), the
train command's where it starts one by its absolute path (`train_python`: a venv of the target's),
and `wall.readable`. Writable: only the folders the job makes for the command (its
checkout, a fresh HOME and TMPDIR, its W&B dir, a verifier step's artifact dir) and `wall.writable`.

Where the machine allows it (root, or unprivileged user namespaces: `isolation`, tried once per
process), the command also runs in a view of its own (`senpai.fleet.wall_ns`): the hidden folders and
/run empty, /tmp fresh, everything but its writable folders read-only, and nothing it started left
running after it. As root the command runs as `wall.uid`; `auto` is 65534 (nobody) where that user
can run the interpreter (every folder above it searchable by others, or covered by the view), else
root with no capability, which only Landlock keeps from root's files: without Landlock that is refused.
"""

import functools
import itertools
import json
import logging
import os
import re
import shlex
import site
import stat
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import senpai
from senpai.config.harness import HarnessConfig, LocalFleetSettings, WallSettings
from senpai.errors import ConfigError, PermanentError
from senpai.fleet.wall import SCRATCH, Wall, landlock_abi

log = logging.getLogger(__name__)
NOBODY = 65534
QUERY_SECONDS = 60.0  # for another interpreter to say where it lives
_WHERE = (
    "import json, os, site, sys; print(json.dumps(['%d.%d' % sys.version_info[:2], os.path.realpath(sys.executable), "
    "sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages()]))"
)
MIN_PYTHON = (3, 11)  # the score step runs it with -P
_PYTHON_NAME = re.compile(r"python(\d+(\.\d+)?)?")  # python, python3, python3.12: a train command's interpreter
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")  # `CUDA_VISIBLE_DEVICES=0 /venv/bin/python ...`


@functools.cache
def _landlock() -> int:
    abi = landlock_abi()
    if not abi:
        log.warning("this kernel offers no Landlock: code from a PR runs without the file wall (docs/target-contract.md)")
    return abi


@functools.cache
def isolation() -> bool:
    """Can this process give a command a view of its own (`senpai.fleet.wall_ns`)? Tried once: the
    launcher runs /bin/true in one."""
    try:
        argv = Wall(landlock=False, isolate=True).argv(["/bin/true"])
        trial = subprocess.run(argv, cwd="/", capture_output=True, timeout=60)
        ok, why = trial.returncode == 0, trial.stderr.decode(errors="replace").strip()[-300:]
    except (OSError, subprocess.TimeoutExpired) as e:
        ok, why = False, str(e)
    if not ok:
        log.warning("code from a PR runs without a view of its own (no namespaces here: %s; docs/target-contract.md)", why)
    return ok


def interpreter_paths() -> list[str]:
    """What running senpai's interpreter reads: its executable's folder, its prefixes and
    site-packages, and senpai's own package folder (an editable install's lies outside them, in a
    clone that may be under /tmp or HOME, which the view empties: the walled editor imports it)."""
    package = os.path.dirname(os.path.realpath(senpai.__file__))
    paths = {os.path.dirname(os.path.realpath(sys.executable)), sys.prefix, sys.base_prefix, sys.exec_prefix, package}
    paths |= {p for p in site.getsitepackages() if os.path.isdir(p)}
    return sorted(paths)


@functools.cache
def ask_python(python: str) -> tuple[str, tuple[str, ...]]:
    """(its version, "3.12"; the folders running it reads) as interpreter `python` (an absolute
    path a senpai.yaml field names) reports them: the folder of its path and of its real executable,
    its prefixes and its site-packages. It is asked once per process, outside any wall, with PATH
    alone in its environment, from /: it is as trusted as senpai's own, since only the base's
    protected senpai.yaml names it. Raises ConfigError (a clause that starts with `python`: the
    caller names the field) if it does not run, or does not answer as Python within QUERY_SECONDS."""
    argv, env = [python, "-I", "-c", _WHERE], {"PATH": os.environ.get("PATH", os.defpath)}  # as the score step has it
    try:
        run = subprocess.run(argv, cwd="/", env=env, capture_output=True, text=True, timeout=QUERY_SECONDS)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{python} does not run ({e})") from None
    except subprocess.TimeoutExpired:
        raise ConfigError(f"{python} did not answer within {QUERY_SECONDS:g} s") from None
    try:
        said = json.loads((run.stdout.strip().splitlines() or [""])[-1]) if run.returncode == 0 else None
    except ValueError:
        said = None
    if not (isinstance(said, list) and len(said) > 1 and all(isinstance(p, str) for p in said)):
        printed = (run.stderr or run.stdout).strip()[-300:]
        raise ConfigError(f"{python} does not run as a Python 3 interpreter (it exited {run.returncode}: {printed})")
    version, executable, *where = said
    paths = {os.path.dirname(python), os.path.dirname(executable), *where}
    return version, tuple(sorted(p for p in paths if os.path.isabs(p) and os.path.isdir(p)))  # '.' is senpai's cwd


def _older(version: str, need: tuple[int, int]) -> bool:
    return [int(n) if n.isdigit() else 0 for n in version.split(".")] < list(need)


def python_paths(python: str) -> tuple[str, ...]:
    """What running interpreter `python` (`holdout.python`, an absolute path) reads (`ask_python`).
    Raises ConfigError naming holdout.python if it does not run, does not answer as Python 3
    within QUERY_SECONDS, or is older than MIN_PYTHON."""
    try:
        version, paths = ask_python(python)
    except ConfigError as e:
        raise ConfigError(f"holdout.python {e}; fix or unset it") from None
    if _older(version, MIN_PYTHON):
        need = "%d.%d" % MIN_PYTHON
        raise ConfigError(f"holdout.python {python} is Python {version}: the score step runs it with -P, which needs {need}+")
    return paths


def train_program(command: str) -> str | None:
    """The program shell command `command` (senpai.yaml's `train`) starts, if it names it by an
    absolute path (`/tmp/venv/bin/python train.py`; leading `VAR=value` assignments skipped); None
    for a program found on PATH (`python train.py`: senpai's own interpreter comes first there,
    `measure.run_command`) or a command shlex cannot split."""
    start = train_start(command)
    return start[1] if start and os.path.isabs(start[1]) else None


def train_start(command: str) -> tuple[dict[str, str], str] | None:
    """The leading `VAR=value` assignments of shell command `command` and the program it then
    starts, as written (`PYTHONPATH=src python -m pkg.train`: `({"PYTHONPATH": "src"}, "python")`);
    None if shlex cannot split it or it assigns only."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    assigned = list(itertools.takewhile(_ASSIGNMENT.match, words))
    program = words[len(assigned)] if len(words) > len(assigned) else None
    return (dict(w.split("=", 1) for w in assigned), program) if program else None


def is_python_name(program: str) -> bool:
    """Does `program`'s file name say Python (`python`, `python3`, `python3.12`)?"""
    return bool(_PYTHON_NAME.fullmatch(os.path.basename(program)))


def train_python(command: str) -> str | None:
    """The interpreter the train command (senpai.yaml's `train`) starts by its absolute path, if
    its name says Python (`python`, `python3`, `python3.11`: `train_program`), for the wall of
    every step that runs the train command to grant as it grants `holdout.python` (`candidate_wall`
    `python`); None for any other command (a program on PATH, a shell script, a binary: the wall
    grants those nothing; `wall.readable` may). Raises ConfigError naming `train` and the fix if
    that interpreter does not run here as Python 3 (`ask_python`): every training would fail."""
    program = train_program(command)
    if program is None or not is_python_name(program):
        return None
    fix = (
        "every training would fail; point train in senpai.yaml at a Python 3 interpreter that exists on this machine "
        "(your venv's bin/python; on Kubernetes, one in the job image)"
    )
    if not os.path.isfile(program) or not os.access(program, os.X_OK):
        what = "is not an executable file" if os.path.exists(program) else "does not exist"
        raise ConfigError(f"train: {program} {what} on this machine: {fix}")
    try:
        version, _ = ask_python(program)
    except ConfigError as e:
        raise ConfigError(f"train: {e}: {fix}") from None
    if _older(version, (3, 0)):
        raise ConfigError(f"train: {program} is Python {version}: {fix}")
    return program


def _reachable(path: str, uid: int, covered: Sequence[str] = (), itself: bool = True) -> bool:
    """Can `uid` (by owner or other bits; groups aside) search every folder above `path` and, with
    `itself`, read and search `path`? A folder in `covered` (a mask of the view: a tmpfs senpai
    makes searchable) or below one counts as searchable."""

    def may(p: Path, bits: int) -> bool:
        st = os.stat(p)
        return st.st_mode & bits == bits or (st.st_uid == uid and st.st_mode & (bits << 6) == bits << 6)

    real = Path(os.path.realpath(path))
    try:
        if not all(may(p, stat.S_IXOTH) for p in real.parents if not any(_within(str(p), c) for c in covered)):
            return False
        return not itself or may(real, stat.S_IROTH | stat.S_IXOTH)
    except OSError:
        return False


def candidate_uid(
    settings: WallSettings,
    covered: Sequence[str] = (),
    readable: Sequence[str] = (),
    writable: Sequence[str] = (),
    python: Sequence[str] = (),
) -> int | None:
    """The uid a command from a PR runs as: None unless senpai runs as root; then `wall.uid`, or
    for `auto` NOBODY, if that user can run the interpreter (and the folders of the one
    senpai.yaml names, `python`), read `readable` and reach `writable` (which it is handed), the view covering
    `covered`; else None for `auto` (root without capabilities). Raises PermanentError if a set
    `wall.uid` cannot: its commands could not run."""
    if os.geteuid() != 0:
        return None
    uid = NOBODY if settings.uid == "auto" else settings.uid
    needs = [(p, True) for p in [*interpreter_paths(), *python, *readable]] + [(p, False) for p in writable]
    blocked = [p for p, itself in needs if not _reachable(p, uid, covered, itself)]
    if not blocked:
        return uid
    if settings.uid == "auto":
        return None
    raise PermanentError(f"wall.uid {uid} cannot reach {blocked[0]}: a command from a PR could not run as it")


class Walls(Protocol):
    """(writable, readable, python) -> the wall: `candidate_wall` with the harness's settings (`walls_of`).
    `python`: the interpreter senpai.yaml names for the command (`holdout.python` for the evaluator,
    `train_python` for the train command), checked there first."""

    def __call__(self, writable: Sequence[Path], readable: Sequence[Path] = (), python: str | None = None) -> Wall: ...


def senpai_paths(cfg: HarnessConfig) -> list[str]:
    """The folders of senpai's that code from a PR may not read: the state and cache dirs, the
    tracker's dir, and on the local fleet its jobs and the sealed holdout."""
    paths = [cfg.state_dir, cfg.tracker.dir, *([cfg.cache_dir] if cfg.cache_dir else [])]
    if isinstance(cfg.fleet, LocalFleetSettings):
        paths += [cfg.fleet.dir, *([cfg.fleet.holdout_dir] if cfg.fleet.holdout_dir else [])]
    return paths


def walls_of(cfg: HarnessConfig) -> Walls:
    """`candidate_wall` for `cfg`: what a job hands the steps it runs."""
    return functools.partial(candidate_wall, cfg.wall, senpai_paths(cfg))


def bare_walls() -> Walls:
    """The walls of a command run with no harness config (`senpai validate`): senpai's defaults, only
    the home folder hidden."""
    return functools.partial(candidate_wall, WallSettings(), [])


def candidate_wall(
    settings: WallSettings,
    hidden: Sequence[str],
    writable: Sequence[Path],
    readable: Sequence[Path] = (),
    python: str | None = None,
) -> Wall:
    """The wall of a command that may write only `writable` (and `settings.writable`), may not read
    `hidden` (senpai's folders, `senpai_paths`), the home folder or `settings.hidden`, and may read
    `readable` all the same (the sealed holdout, for the evaluator); see the module docstring. With
    `python` (`holdout.python`, the evaluator's interpreter, or the train command's, `train_python`:
    each checked where it is named) it may run that one too (the folders it reports, `ask_python`;
    one that holds a folder the wall hides or empties is refused: `_grantable`).
    Raises PermanentError if the wall cannot be what `settings` asks: `landlock: required` on a
    kernel without Landlock, `namespaces: required` where no view can be made, or root with neither
    Landlock nor another uid; ConfigError if `python` does not answer as Python, or reports such a folder."""
    abi, view = _landlock(), isolation()
    if not abi and settings.landlock == "required":
        raise PermanentError("wall.landlock is required, but this kernel offers no Landlock: code from a PR is not run")
    if not view and settings.namespaces == "required":
        raise PermanentError("wall.namespaces is required, but no namespace can be made here: code from a PR is not run")
    hidden = [*hidden, *settings.hidden]
    home = os.path.realpath(os.path.expanduser("~"))
    if home != "/":
        hidden.append(home)
    granted = [os.path.realpath(p) for p in readable]
    hidden = [h for h in map(os.path.realpath, hidden) if not any(_within(h, g) for g in granted)]
    write = [str(Path(p).absolute()) for p in [*writable, *settings.writable]]
    try:
        runs = list(ask_python(python)[1]) if python else []  # its own checks ran where senpai.yaml named it
    except ConfigError as e:
        raise ConfigError(f"the interpreter a command runs, {e}: fix senpai.yaml") from None
    _grantable(python, runs, [*hidden, *map(os.path.realpath, [*SCRATCH, "/run"])])
    covered = [*hidden, *SCRATCH, "/run"] if view else []
    uid = candidate_uid(settings, covered, [*granted, *settings.readable], write, runs)
    if not abi and os.geteuid() == 0 and uid is None:
        raise PermanentError(
            "senpai runs as root on a kernel without Landlock, and no other user can run its interpreter: code from a PR "
            "would run as root. Run senpai as another user, or set wall.uid to a user that can run "
            f"{os.path.realpath(sys.executable)}"
        )
    return Wall(
        writable=tuple(write),
        hidden=tuple(hidden),
        readable=tuple([*interpreter_paths(), *runs, *granted, *settings.readable]),
        uid=uid,
        gid=uid,
        landlock=bool(abi),
        isolate=view,
    )


def _grantable(python: str | None, runs: Sequence[str], covered: Sequence[str]) -> None:
    """Raise ConfigError if a folder interpreter `python` reports (`runs`) holds one the wall hides
    or empties (`covered`): granted, it would un-hide all of it (the view keeps it whole, and Landlock
    cannot take a hidden folder back from a readable one above it). `~/python3`, a link to a venv's
    python, reports the home folder; an interpreter whose prefix is / reports everything."""
    for folder in map(os.path.realpath, runs):
        if held := next((c for c in covered if _within(c, folder)), None):
            raise ConfigError(
                f"the interpreter a command runs, {python} reads {folder}, which holds {held}: the wall hides or empties "
                "that, and will not grant it whole; fix senpai.yaml: name the interpreter by its path in its own folder "
                "(a venv's bin/python)"
            )


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def sandbox(root: Path) -> tuple[list[Path], dict[str, str]]:
    """A fresh, empty HOME and TMPDIR for one command, under `root`: (the two folders, to make
    writable; the env that points the command at them). Nothing an earlier command left in either is
    seen by the next."""
    root.mkdir(parents=True, exist_ok=True)
    home, tmp = Path(tempfile.mkdtemp(prefix="home-", dir=root)), Path(tempfile.mkdtemp(prefix="tmp-", dir=root))
    return [home, tmp], {"HOME": str(home), "TMPDIR": str(tmp)}


def trial(cfg: HarnessConfig) -> str:
    """Run senpai's interpreter behind the wall code from a PR gets under `cfg`, in a fresh folder,
    and say what that wall is (Landlock, the view, the uid). Raises PermanentError if it cannot be
    built or the interpreter cannot run behind it (the message says why)."""
    with tempfile.TemporaryDirectory(prefix="senpai-wall-trial-") as scratch:
        folder = Path(scratch) / "job"
        folder.mkdir()
        own, env = sandbox(Path(scratch) / "own")
        wall = walls_of(cfg)([folder, *own], [])
        run = subprocess.run(
            wall.argv([sys.executable, "-c", "print('ok')"]), cwd=folder, env={**env, "PATH": os.environ.get("PATH", "")},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if run.returncode != 0 or run.stdout.strip() != "ok":
            why = (run.stderr or run.stdout).strip()[-300:]
            raise PermanentError(f"senpai's interpreter does not run behind the wall: {why}")
    who = f"uid {wall.uid}" if wall.uid is not None else ("root without capabilities" if os.geteuid() == 0 else "senpai's user")
    fence = f"Landlock ABI {_landlock()}" if wall.landlock else "no Landlock"
    view = "a view of its own (mount and PID namespaces)" if wall.isolate else "no view of its own (no namespaces)"
    return f"{fence}; {view}; as {who}"
