"""Where code from a PR runs: a standalone clone that shares no file with the repository it came from."""

import os
import subprocess
from pathlib import Path

from senpai.job.workcopy import standalone_clone


def test_a_standalone_clone_shares_no_object_file_with_its_source(tmp_path: Path) -> None:
    """A local clone hard-links the objects by default: a pack the candidate rewrites in place
    (it owns it once handed its folder) would change the source's, and so the baseline's checkout."""
    src = tmp_path / "src"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", str(src)], check=True)
    (src / "train.py").write_text("print('honest')\n")
    subprocess.run([*git, "-C", str(src), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(src), "commit", "-qm", "base"], check=True)
    subprocess.run(["git", "-C", str(src), "gc", "-q"], check=True)  # a pack, as a clone from a forge has
    sha = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()

    dest = standalone_clone(src, sha, tmp_path / "checkout")

    objects = [p for p in (dest / ".git" / "objects").rglob("*") if p.is_file()]
    assert objects and all(os.stat(p).st_nlink == 1 for p in objects)
    assert (dest / "train.py").read_text() == "print('honest')\n"
