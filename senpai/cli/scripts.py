"""Which command of a repository trains, for `senpai init`: read statically, never run.

In order: a script with a conventional name (`SCRIPTS`), a Makefile `train` target, a
`[project.scripts]` entry with `train` in its name, else any `.py` with a `__main__` block (or
top-level code) that shows training: an optimiser step, `.backward()`, `.fit(`, argparse, a loop
over epochs or steps. Those are ranked by `trains`; a tie at the top is ambiguous (`Found.others`),
and init asks. With `--train-cmd`, `script_of` finds the script the command runs, whatever
interpreter path comes first (`/other/venv/bin/python -u script.py`, `python -m pkg.mod`).
"""

import ast
import os
import re
import shlex
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from senpai.job.walls import is_python_name, train_program

SCRIPTS = ["train.py", "main.py", "run.py", "src/train.py", "scripts/train.py"]
MAX_SCANNED = 400  # .py files looked at, at most (a vendored library is not a train script)
MAX_ENTRIES = 20_000  # folder entries walked, at most (a data folder of a million files is not read through)
_SKIP_DIRS = {"node_modules", "site-packages", "tests", "test", "docs", "build", "dist", "eval", "venv", "env"}
_SKIP_DIRS |= {"data", "datasets", "wandb", "runs", "out", "outputs", "checkpoints", "__pycache__"}
_SKIP_FILES = {"setup.py", "conftest.py", "__init__.py", "noxfile.py", "__main__.py"}
# (pattern over the source, weight): what a script that trains does
_SIGNALS = [
    (re.compile(r"\.backward\("), 3),
    (re.compile(r"\.fit\("), 3),
    (re.compile(r"\boptim(izer)?\b|\boptim\.|Adam|SGD"), 2),
    (re.compile(r"\.step\(\)"), 1),
    (re.compile(r"ArgumentParser\("), 1),
    (re.compile(r"for \w*(epoch|step|iter)\w* in"), 2),
    (re.compile(r"\bloss\b"), 1),
]
TRAINS = 4  # the least score of a script init offers as the train script


@dataclass(frozen=True)
class Found:
    """The train command, the repo-relative script it runs (None if unknown), and the other
    scripts that ranked as high (non-empty: init cannot tell, and asks)."""

    command: str | None = None
    script: str | None = None
    others: list[str] = field(default_factory=list)


def trains(rel: str, source: str) -> int:
    """How much `source` (the text of repo-relative `rel`) looks like a training script: 0 without
    a `__main__` block or top-level call, else the weights of the signals it shows, +2 for `train` in its name."""
    score = sum(w for pattern, w in _SIGNALS if pattern.search(source)) + (2 if "train" in Path(rel).stem.lower() else 0)
    if score < TRAINS:  # not worth parsing
        return score
    tree = _parse(source)
    return score if tree is not None and _runs(tree) else 0


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source) if source else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _runs(tree: ast.Module) -> bool:
    """Whether running the module does something: an `if __name__ == "__main__":` block, or a top-level call."""
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            return True
    return False


def find(repo: Path, regular: Callable[[str], bool], read: Callable[[str], str]) -> Found:
    """The train command of `repo`, in the order of the module; `regular(rel)` says whether a
    repo-relative path is a regular file init may read, `read(rel)` its text ("" if not)."""
    for script in SCRIPTS:
        if regular(script):
            return Found(f"python {script}", script)
    makefile = read("Makefile")
    if target := re.search(r"^train\s*:", makefile, re.MULTILINE):
        ran = re.search(r"python[0-9.]*\s+(?:-u\s+)?([\w./-]+\.py)", makefile[target.end() :])
        return Found("make train", ran.group(1) if ran and regular(ran.group(1)) else None)
    try:  # a hostile pyproject: `project = 1`, `scripts = "x"`, arrays nested 200,000 deep
        project = tomllib.loads(read("pyproject.toml")).get("project")
        entries = project.get("scripts") if isinstance(project, dict) else None
    except (tomllib.TOMLDecodeError, RecursionError):
        entries = None
    for command, target in (entries if isinstance(entries, dict) else {}).items():
        if "train" in command and isinstance(target, str):
            return Found(command, _module(target.split(":")[0], regular))
    ranked = sorted(((trains(rel, read(rel)), rel) for rel in _python_files(repo)), key=lambda sr: (-sr[0], sr[1]))
    ranked = [(s, rel) for s, rel in ranked if s >= TRAINS]
    if not ranked:
        return Found()
    best, script = ranked[0]
    return Found(f"python {script}", script, [rel for s, rel in ranked[1:] if s == best])


def _python_files(repo: Path) -> list[str]:
    """Repo-relative `.py` files, hidden folders, virtual envs and tests skipped, symlinks never followed."""
    out: list[str] = []
    seen = 0
    for top, dirs, files in os.walk(repo):  # os.walk does not follow links to folders
        seen += len(dirs) + len(files)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        for f in sorted(files):
            if f.endswith(".py") and f not in _SKIP_FILES and not f.startswith("test_"):
                out.append(Path(top, f).relative_to(repo).as_posix())
        if len(out) >= MAX_SCANNED or seen >= MAX_ENTRIES:
            return out[:MAX_SCANNED]
    return out


def _module(name: str, regular: Callable[[str], bool]) -> str | None:
    """The repo-relative file of dotted module `name` (at the root or under src/), None if there is none."""
    rel = name.replace(".", "/")
    return next((f"{d}{rel}{e}" for d in ("", "src/") for e in (".py", "/__main__.py") if regular(f"{d}{rel}{e}")), None)


def interpreter_of(command: str) -> str | None:
    """The absolute interpreter shell `command` starts with, leading `VAR=value` words skipped
    (`CUDA_VISIBLE_DEVICES=0 /other/venv/bin/python -u lm.py`: /other/venv/bin/python,
    normalised), if its name is `python`, `python3` or `python3.12` (`walls.train_program`, the
    program the wall grants); None otherwise (`python lm.py`, `make train`, `/usr/bin/env python`).
    Read, never run."""
    program = train_program(command)
    if program is None or not is_python_name(program) or any(c < " " for c in program):
        return None
    return os.path.normpath(program)


def script_of(command: str, regular: Callable[[str], bool]) -> str | None:
    """The repo-relative Python file that shell `command` runs: its first `.py` word that is a
    regular file of the repository, or the module of `-m`; None if neither (`make train`, a console script)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for i, word in enumerate(words):
        if word == "-m" and i + 1 < len(words):
            return _module(words[i + 1], regular)
        if word.endswith(".py"):
            rel = word.removeprefix("./")
            if regular(rel):
                return rel
    return None
