"""A second interpreter for tests of `holdout.python`: a real venv (no pip, seconds to make) whose
site-packages hold modules that senpai's own interpreter cannot import."""

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def venv_with(root: Path, modules: dict[str, str], paths: Sequence[str] = ()) -> Path:
    """A new venv at `root` made from senpai's interpreter, with `modules` (name -> source) written
    into its site-packages as `<name>.py`, and `paths` (folders) on its sys.path through a `.pth`
    file there; returns the path of its `bin/python`."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, capture_output=True)
    python = root / "bin" / "python"
    where = subprocess.run([python, "-I", "-c", "import site; print(site.getsitepackages()[0])"], check=True, capture_output=True)
    site = Path(where.stdout.decode().strip())
    for name, text in modules.items():
        (site / f"{name}.py").write_text(text)
    if paths:
        (site / "extra_paths.pth").write_text("".join(f"{p}\n" for p in paths))
    return python
