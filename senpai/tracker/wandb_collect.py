"""Take the W&B run a train command logged into the tracker, from a folder the command could write.

A train command runs behind the wall (`senpai.fleet.wall`) with no W&B key and writes its run offline
into a folder of its own (its WANDB_DIR), never into the tracker's dir, which holds every job's runs.
After it ends, the job (which holds the key) copies that one run in (`take`) and, online, uploads it
with `wandb sync` (`senpai.tracker.wandb.WandbTracker.collect_run`).

Everything in the folder is the command's: a run folder of another run id, a symlink to a file the
job can read and the command cannot (a key file, the sealed holdout), a FIFO, a device, a tree of a
million files. So only the folders `offline-run-<stamp>-<run id>[-<n>]` of the expected run id,
stamped in the command's own time (`in_window`), are taken (the newest), and of them only regular
files and folders, opened without following a link, at most MAX_FILES files and MAX_BYTES bytes
(the run's log first: that is what senpai reads). The copy lands under a temporary name and is
renamed into place, so a reader never sees half of it.
"""

import logging
import os
import shutil
import stat
import uuid
from datetime import datetime
from pathlib import Path

from senpai.errors import NO_SPACE, DiskFull, NotFound, TransientError
from senpai.tracker.wandb import OFFLINE_DIR, in_window, offline_run_id

log = logging.getLogger(__name__)

MAX_FILES = 10_000
MAX_BYTES = 2 * 1024**3
CHUNK = 1024 * 1024


def take(run_id: str, source: Path, dest: Path, window: tuple[datetime, datetime]) -> Path:
    """Copy the newest offline folder of run `run_id` stamped in `window` from `source/wandb/`
    into `dest/wandb/` (see the module docstring); returns the copy's path. A folder of the same
    name there (an earlier try of the same second) is replaced. Raises NotFound if `source` holds
    no such folder, DiskFull if the tracker's volume is full, TransientError if the copy fails otherwise."""
    found = []
    for entry in _entries(source / "wandb"):
        run = offline_run_id(entry.path)
        if run and run[1] == run_id and entry.is_dir(follow_symlinks=False):
            found.append((run[0], run[2], Path(entry.path)))
    dirs = in_window(run_id, [p for *_, p in sorted(found)], window)
    if not dirs:
        raise NotFound(f"the train command logged no W&B run {run_id!r} under {source} in its time")
    src = dirs[-1]
    assert OFFLINE_DIR.match(src.name)
    target = dest / "wandb" / src.name
    staging = dest / "wandb" / f".taking-{uuid.uuid4().hex[:8]}-{src.name}"
    try:
        staging.parent.mkdir(parents=True, exist_ok=True)
        _copy(src, staging, first=f"run-{run_id}.wandb")
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        os.rename(staging, target)
    except OSError as e:
        shutil.rmtree(staging, ignore_errors=True)
        if e.errno in NO_SPACE:  # senpai's failure, named by its folder: the job exits DiskFull's status
            raise DiskFull(str(dest), f"copying W&B run {run_id} into the tracker's folder: {e.strerror}") from e
        raise TransientError(f"W&B run {run_id}: cannot copy it into {dest}: {e}") from e
    return target


def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return list(it)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _copy(src: Path, dst: Path, first: str) -> None:
    """Copy the regular files and folders of `src` to a new `dst` (links, FIFOs, devices and sockets
    left out), `first` before the rest, within MAX_FILES files and MAX_BYTES bytes."""
    dst.mkdir()
    files, size, skipped = 0, 0, 0
    todo = [(src, dst)]
    while todo:
        here, there = todo.pop()
        entries = sorted(_entries(here), key=lambda e: (e.name != first, e.name))
        for entry in entries:
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                (there / entry.name).mkdir()
                todo.append((Path(entry.path), there / entry.name))
                continue
            if not stat.S_ISREG(mode) or files >= MAX_FILES:
                skipped += 1
                continue
            copied = _copy_file(Path(entry.path), there / entry.name, MAX_BYTES - size)
            if copied is None:
                skipped += 1
                continue
            files, size = files + 1, size + copied
    if skipped:
        log.warning("W&B run folder %s: %d entr(ies) not copied (links, special files, or past %d files / %d bytes)",
                    src.name, skipped, MAX_FILES, MAX_BYTES)  # fmt: skip


def _copy_file(src: Path, dst: Path, room: int) -> int | None:
    """Copy regular file `src` (opened without following a link, never blocking) to a new `dst`;
    its size, or None (nothing written) if it is not a regular file or holds more than `room` bytes."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > room:
            return None
        written = 0
        with open(dst, "xb") as out:
            while (chunk := f.read(CHUNK)) and written + len(chunk) <= room:
                out.write(chunk)
                written += len(chunk)
    return written
