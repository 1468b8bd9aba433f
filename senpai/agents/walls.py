"""The wall of each command a job runs for a PR (`senpai.fleet.wall`), worked out from the harness config.

Hidden from the command: senpai's state dir (the wrapper's cache, the ledger snapshot, the base
mirror, agent conversations), the tracker's dir (every job's W&B runs), the local fleet's jobs (the
other jobs' folders; this job's own spec, status and log), the sealed holdout, the home folder of the
user senpai runs as (~/.netrc, ~/.git-credentials, ~/.config/gh...), and `wall.hidden`. Readable all
the same: the interpreter senpai runs on (its prefixes and site-packages: a target's `python` is
senpai's), the evaluator's own interpreter where senpai.yaml declares one (`holdout.python`), and
`wall.readable`. Writable: only the folders the job makes for the command (its
checkout, a fresh HOME and TMPDIR, its W&B dir, a verifier step's artifact dir) and `wall.writable`.

Where the machine allows it (root, or unprivileged user namespaces: `isolation`, tried once per
process), the command also runs in a view of its own (`senpai.fleet.wall_ns`): the hidden folders and
/run empty, /tmp fresh, everything but its writable folders read-only, and nothing it started left
running after it. As root the command runs as `wall.uid`; `auto` is 65534 (nobody) where that user
can run the interpreter (every folder above it searchable by others, or covered by the view), else
root with no capability, which only Landlock keeps from root's files: without Landlock that is refused.
"""

import functools
import json
import logging
import os
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
def python_paths(python: str) -> tuple[str, ...]:
    """What running interpreter `python` (an absolute path: `holdout.python`) reads: the folder of
    its path and of its real executable, its prefixes and its site-packages, as it reports them.
    It is asked once per process, outside any wall, with PATH alone in its environment, from /: it
    is as trusted as senpai's own, since only the base's protected senpai.yaml names it. Raises
    ConfigError naming it if it does not run, does not answer as Python 3 within QUERY_SECONDS, or
    is older than MIN_PYTHON."""
    argv, env = [python, "-I", "-c", _WHERE], {"PATH": os.environ.get("PATH", os.defpath)}  # as the score step has it
    try:
        run = subprocess.run(argv, cwd="/", env=env, capture_output=True, text=True, timeout=QUERY_SECONDS)
    except (OSError, ValueError) as e:
        raise ConfigError(f"holdout.python {python} does not run ({e}); fix or unset it") from None
    except subprocess.TimeoutExpired:
        raise ConfigError(f"holdout.python {python} did not answer within {QUERY_SECONDS:g} s; fix or unset it") from None
    try:
        said = json.loads((run.stdout.strip().splitlines() or [""])[-1]) if run.returncode == 0 else None
    except ValueError:
        said = None
    if not (isinstance(said, list) and len(said) > 1 and all(isinstance(p, str) for p in said)):
        printed = (run.stderr or run.stdout).strip()[-300:]
        raise ConfigError(
            f"holdout.python {python} does not run as a Python 3 interpreter (it exited {run.returncode}: {printed}); "
            "fix or unset it"
        )
    version, executable, *where = said
    if [int(n) if n.isdigit() else 0 for n in version.split(".")] < list(MIN_PYTHON):
        need = "%d.%d" % MIN_PYTHON
        raise ConfigError(f"holdout.python {python} is Python {version}: the score step runs it with -P, which needs {need}+")
    paths = {os.path.dirname(python), os.path.dirname(executable), *where}
    return tuple(sorted(p for p in paths if os.path.isdir(p)))


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
    for `auto` NOBODY, if that user can run the interpreter (and the one of `python_paths`
    `python`), read `readable` and reach `writable` (which it is handed), the view covering
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
    """(writable, readable, python) -> the wall: `candidate_wall` with the harness's settings (`walls_of`)."""

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
    `python` (`holdout.python`, the evaluator's interpreter) it may run that one too
    (`python_paths`; those paths un-hide nothing beneath them, as senpai's own do not).
    Raises PermanentError if the wall cannot be what `settings` asks: `landlock: required` on a
    kernel without Landlock, `namespaces: required` where no view can be made, or root with neither
    Landlock nor another uid; ConfigError as `python_paths`."""
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
    runs = list(python_paths(python)) if python else []
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
