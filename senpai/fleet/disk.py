"""Is a volume full? How senpai tells a full disk from every other failure, wherever it writes.

A write of senpai's own that fails with ENOSPC or EDQUOT names its volume at once (`from_os_error`).
A command senpai runs (the train step, the evaluator) fails in its own words, which are hostile
text (a target could print "No space left on device" to dodge a failure), so after a failed command
senpai looks at the volumes it writes to instead: statvfs(2) on each (`full_volume`). Either way the
result is `DiskFull` (exit 6): senpai's failure, never the hypothesis's.
"""

import os
from collections.abc import Iterable
from pathlib import Path

from senpai.errors import NO_SPACE, DiskFull

MIN_FREE_BYTES = 1 << 20  # less than this left for an unprivileged writer: full (a failed write frees a few blocks)


def _existing(path: Path) -> Path | None:
    """`path`, or its nearest existing parent (a folder not created yet lives on its parent's volume)."""
    for p in (path, *path.parents):
        if p.exists():
            return p
    return None


def full_volume(paths: Iterable[str | Path], what: str, floor: int = MIN_FREE_BYTES) -> DiskFull | None:
    """DiskFull ("<what>: <how full>") for the first of `paths` whose volume has under `floor` bytes
    left for an unprivileged writer (statvfs f_bavail) or no free inode; None if every volume has
    room, or cannot be looked at."""
    for raw in paths:
        path = _existing(Path(raw))
        if path is None:
            continue
        try:
            st = os.statvfs(path)
        except OSError:
            continue
        free = st.f_bavail * st.f_frsize
        if free < floor:
            return DiskFull(str(raw), f"{what}: {_size(free)} left of {_size(st.f_blocks * st.f_frsize)}")
        if st.f_files > 0 and st.f_favail == 0:  # f_files 0: the file system does not count inodes
            return DiskFull(str(raw), f"{what}: no free inode left of {st.f_files}")
    return None


def check_room(paths: Iterable[str | Path], what: str) -> None:
    """Raise `full_volume(paths, what)` if a volume of `paths` is full."""
    if (full := full_volume(paths, what)) is not None:
        raise full


def from_os_error(e: OSError, path: str | Path | None = None) -> DiskFull | None:
    """DiskFull for an OSError of a full volume (ENOSPC, EDQUOT) at `path` (default: the error's
    own file name); None for any other error."""
    if e.errno not in NO_SPACE:
        return None
    where = path if path is not None else (e.filename or "an unnamed file")
    return DiskFull(str(where), e.strerror or str(e))


def _size(n: float) -> str:
    units = ("bytes", "KiB", "MiB", "GiB", "TiB")
    i = 0
    while n >= 1024 and i < len(units) - 1:
        n, i = n / 1024, i + 1
    return f"{n:.0f} {units[i]}" if i == 0 else f"{n:.1f} {units[i]}"
