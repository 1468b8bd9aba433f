"""Folder trees that code from a PR wrote, copied or removed by senpai: by folder handle, never
through a link, bounded in entries, bytes and depth.

senpai copies such trees (a model to score, a W&B run to take in, an agent's work to commit) and
removes them (a job's folder). A path-based walk can be led anywhere: a folder swapped for a link
between the listing and the open is then read with senpai's reach, not the code's. So `copy` walks
with `os.fwalk` (each folder opened by handle, a folder that became a link not entered) and opens
each file relative to its folder's handle with O_NOFOLLOW, checking what it opened. A tree deeper
than Python's recursion (shutil.rmtree's too) is refused by `copy` and removed by `remove` with
`rm -rf`.
"""

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

CHUNK = 1024 * 1024
MAX_DEPTH = 64  # folders below the top; far more than any model, run or repository needs
OVER = "holds more than the bytes left"


@dataclass(frozen=True)
class Limits:
    """What one `copy` takes at most: entries (files, folders and links), bytes of file data, folder depth."""

    entries: int
    bytes: int
    depth: int = MAX_DEPTH


def copy(
    src: Path,
    dst: Path,
    limits: Limits,
    links: Literal["keep", "skip", "refuse"] = "refuse",
    others: Literal["skip", "refuse"] = "refuse",
    first: str | None = None,
    exclude: frozenset[str] = frozenset(),
) -> tuple[str | None, int]:
    """Copy the tree at `src` into the new folder `dst` (its parent must be one no code from a PR can
    write): folders, regular files (mode bits kept, owner's read and write added), and symlinks as
    `links` says (`keep`: the link itself, its target never read). Anything else (a FIFO, a device, a
    socket) is skipped or refuses the copy, as `others` says. `first`: a file name copied before its
    folder's other files (what must fit in the bytes). Names in `exclude` are left out wherever they
    are, and not entered (`.git`). Returns (why the copy was refused, naming the
    path; None if it was not) and how many entries were skipped. A refused copy leaves a partial
    `dst` for the caller to `remove`. Raises OSError if `dst` cannot be written."""
    dst.mkdir(mode=0o700)
    seen = size = skipped = 0
    for root, dirs, names, fd in os.fwalk(src, follow_symlinks=False):
        dirs[:] = [d for d in dirs if d not in exclude]
        names = [n for n in names if n not in exclude]
        rel = os.path.relpath(root, src)
        if rel != "." and rel.count(os.sep) + 1 > limits.depth:
            return f"{rel} is more than {limits.depth} folders deep", skipped
        seen += len(dirs) + len(names)
        if seen > limits.entries:
            return f"the tree holds more than {limits.entries} entries", skipped
        here = dst / rel
        for name in sorted([*dirs, *names], key=lambda n: (n != first, n)):
            where = os.path.normpath(os.path.join(rel, name))
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            why = None
            if stat.S_ISDIR(st.st_mode):
                (here / name).mkdir(mode=0o700)  # fwalk enters it unless it became a link meanwhile
            elif stat.S_ISLNK(st.st_mode):
                if links == "refuse":
                    return f"{where} is a symlink (refused: it may point anywhere)", skipped
                try:
                    target = os.readlink(name, dir_fd=fd) if links == "keep" else None
                except OSError:  # no longer a link: changed under the copy
                    target = None
                if target is None:
                    skipped += 1
                else:
                    os.symlink(target, here / name)
            elif stat.S_ISREG(st.st_mode):
                copied = _copy_file(fd, name, here / name, limits.bytes - size)
                if isinstance(copied, int):
                    size += copied
                else:
                    why = copied if copied != OVER else f"is past the {limits.bytes} bytes a copy takes in all"
            else:
                why = "is not a regular file"
            if why is not None:
                if others == "refuse":
                    return f"{where} {why}", skipped
                skipped += 1
    return None, skipped


def _copy_file(fd: int, name: str, dst: Path, room: int) -> int | str:
    """Copy the regular file `name` in the folder open as `fd` to a new `dst`: its size, or why not
    (OVER if it holds more than `room` bytes: nothing is left at `dst` then)."""
    try:
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return "is not a regular file"  # it became a link, or is gone
    with os.fdopen(src, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return "is not a regular file"
        if st.st_size > room:
            return OVER
        written = 0
        with open(dst, "xb") as out:
            while chunk := f.read(CHUNK):
                written += len(chunk)
                if written > room:  # it grew while copied
                    break
                out.write(chunk)
        if written > room:
            dst.unlink()
            return OVER
        os.chmod(dst, (st.st_mode & 0o777) | 0o600)
    return written


def remove(path: Path) -> None:
    """Remove `path`: a tree (never following a link out of it), a file or a link. A tree too deep
    for shutil.rmtree (its recursion), or holding a folder made read-only (code from a PR may chmod
    its own folders; `go mod download` leaves read-only ones), goes with `chmod -R u+rwx` (links in
    the tree are not followed) and `rm -rf`. Raises OSError if something is left."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
        return
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        pass
    if path.exists():
        subprocess.run(["chmod", "-R", "u+rwx", "--", str(path)], capture_output=True, timeout=3600)
        subprocess.run(["rm", "-rf", "--", str(path)], capture_output=True, timeout=3600)
    if path.exists():
        raise OSError(f"cannot remove {path}")
