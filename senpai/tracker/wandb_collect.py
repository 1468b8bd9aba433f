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

import contextlib
import logging
import os
import uuid
from datetime import datetime
from pathlib import Path

from senpai import trees
from senpai.errors import NO_SPACE, DiskFull, NotFound, TransientError
from senpai.tracker.wandb import OFFLINE_DIR, in_window, offline_run_id

log = logging.getLogger(__name__)

MAX_FILES = 10_000
MAX_BYTES = 2 * 1024**3


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
        if target.exists() or target.is_symlink():
            trees.remove(target)
        os.rename(staging, target)
    except OSError as e:
        with contextlib.suppress(OSError):
            trees.remove(staging)
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
    """Copy the regular files and folders of `src` to a new `dst` by folder handle (links, FIFOs,
    devices and sockets left out; `senpai.trees.copy`), `first` before the rest, within MAX_FILES
    entries, MAX_BYTES bytes and `trees.MAX_DEPTH` folders; past those, what was copied is kept."""
    limits = trees.Limits(entries=MAX_FILES, bytes=MAX_BYTES)
    why, skipped = trees.copy(src, dst, limits, links="skip", others="skip", first=first)
    if why is not None or skipped:
        log.warning("W&B run folder %s: %s; %d entr(ies) left out (links, special files, past %d bytes)",
                    src.name, why or "copied", skipped, MAX_BYTES)  # fmt: skip
