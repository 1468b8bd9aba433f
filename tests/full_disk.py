"""A real full disk for tests: a small tmpfs mounted on a test's folder, and `fill` to use it up.

Mounting needs root. Not root: the test is skipped. Root (as CI runs): the mount must work, so a
machine that should run these tests never skips them quietly.
"""

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_volume(path: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of `size` (mount's syntax: "1m", "4m") mounted on `path` (created), unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (a real full disk) needs root")
    path.mkdir(parents=True, exist_ok=True)
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True)
    assert mount.returncode == 0, f"root, but cannot mount a tmpfs on {path}: {mount.stderr.strip()}"
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(path: Path) -> Path:
    """Use up the volume of folder `path`: a file of zeros until ENOSPC, then tiny files until no
    inode is left. Returns the big file (delete it to free the space)."""
    filler = path / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)
    for i in range(10_000):  # the last inodes' worth of tiny files too
        try:
            (path / f"f{i}").touch()
        except OSError:
            break
    return filler
