"""The wall of each command a job runs for a PR (`senpai.fleet.wall`), worked out from the harness config.

Hidden from the command: senpai's state dir (the wrapper's cache, the ledger snapshot, the base
mirror, agent conversations), the tracker's dir (every job's W&B runs), the local fleet's jobs (the
other jobs' folders; this job's own spec, status and log), the sealed holdout, the home folder of the
user senpai runs as (~/.netrc, ~/.git-credentials, ~/.config/gh...), and `wall.hidden`. Readable all
the same: the interpreter senpai runs on (its prefixes and site-packages: a target's `python` is
senpai's), and `wall.readable`. Writable: only the folders the job makes for the command (its
checkout, a fresh HOME and TMPDIR, its W&B dir, a verifier step's artifact dir) and `wall.writable`.

As root the command runs as `wall.uid`; `auto` is 65534 (nobody) where that user can run the
interpreter (every folder above it searchable by others), else root with no capability, which only
Landlock keeps from root's files: without Landlock that is refused.
"""

import functools
import logging
import os
import site
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from senpai.config.harness import HarnessConfig, LocalFleetSettings, WallSettings
from senpai.errors import PermanentError
from senpai.fleet.wall import Wall, landlock_abi

log = logging.getLogger(__name__)
NOBODY = 65534


@functools.cache
def _landlock() -> int:
    abi = landlock_abi()
    if not abi:
        log.warning("this kernel offers no Landlock: code from a PR runs without the file wall (docs/target-contract.md)")
    return abi


def interpreter_paths() -> list[str]:
    """What running senpai's interpreter reads: its executable's folder, its prefixes and site-packages."""
    paths = {os.path.dirname(os.path.realpath(sys.executable)), sys.prefix, sys.base_prefix, sys.exec_prefix}
    paths |= {p for p in site.getsitepackages() if os.path.isdir(p)}
    return sorted(paths)


def _open_to_others(path: str) -> bool:
    """Can a user who owns nothing here read and search `path` and every folder above it?"""
    real = Path(os.path.realpath(path))
    try:
        if any(not os.stat(p).st_mode & stat.S_IXOTH for p in real.parents):
            return False
        return os.stat(real).st_mode & (stat.S_IROTH | stat.S_IXOTH) == stat.S_IROTH | stat.S_IXOTH
    except OSError:
        return False


def candidate_uid(settings: WallSettings) -> int | None:
    """The uid commands from a PR run as: None unless senpai runs as root; then `wall.uid`, or for
    `auto` NOBODY if it can run the interpreter, else None (root without capabilities)."""
    if os.geteuid() != 0:
        return None
    if settings.uid != "auto":
        return settings.uid
    return NOBODY if all(_open_to_others(p) for p in interpreter_paths()) else None


Walls = Callable[[Sequence[Path], Sequence[Path]], Wall]  # (writable, readable) -> the wall: `walls_of`


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
    settings: WallSettings, hidden: Sequence[str], writable: Sequence[Path], readable: Sequence[Path] = ()
) -> Wall:
    """The wall of a command that may write only `writable` (and `settings.writable`), may not read
    `hidden` (senpai's folders, `senpai_paths`), the home folder or `settings.hidden`, and may read
    `readable` all the same (the sealed holdout, for the evaluator); see the module docstring.
    Raises PermanentError if the wall cannot be what `settings` asks: `landlock: required` on a
    kernel without Landlock, or root with neither Landlock nor another uid."""
    abi = _landlock()
    uid = candidate_uid(settings)
    if not abi and settings.landlock == "required":
        raise PermanentError("wall.landlock is required, but this kernel offers no Landlock: code from a PR is not run")
    if not abi and os.geteuid() == 0 and uid is None:
        raise PermanentError(
            "senpai runs as root on a kernel without Landlock, and no other user can run its interpreter: code from a PR "
            "would run as root. Run senpai as another user, or set wall.uid to a user that can run "
            f"{os.path.realpath(sys.executable)}"
        )
    hidden = [*hidden, *settings.hidden]
    home = os.path.realpath(os.path.expanduser("~"))
    if home != "/":
        hidden.append(home)
    granted = [os.path.realpath(p) for p in readable]
    hidden = [h for h in map(os.path.realpath, hidden) if not any(_within(h, g) for g in granted)]
    return Wall(
        writable=tuple(str(Path(p).absolute()) for p in [*writable, *settings.writable]),
        hidden=tuple(hidden),
        readable=tuple([*interpreter_paths(), *granted, *settings.readable]),
        uid=uid,
        gid=uid,
        landlock=bool(abi),
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
