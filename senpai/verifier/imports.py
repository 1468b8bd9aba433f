"""`senpai validate`'s check that the score step's interpreter can import what the evaluator imports.

The evaluator's module-level imports (`senpai.config.evaluator.required_imports`, read with `ast`)
are imported one by one by the score interpreter (`holdout.python`, else senpai's own) exactly as the
score step starts it (`evaluate.run_evaluator`): through the `python -I -P` shim, in a fresh
directory, with the scrubbed environment, behind the same wall. So a package installed only in
senpai's environment, or one the wall keeps the interpreter from reading, fails here and not at the
first verification. The evaluator's own code never runs (the installed packages' does, as at every
score step), and the check is bounded by IMPORT_SECONDS.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from senpai.config.evaluator import module_imports, required_imports
from senpai.config.target import TargetConfig
from senpai.job.environ import allowed_env
from senpai.job.measure import command_path
from senpai.job.walls import Walls, is_python_name, train_python, train_start
from senpai.verifier.evaluate import EvaluatorFiles, run_evaluator

IMPORT_SECONDS = 120.0  # torch takes seconds to import; a hang is a problem, not a wait
MARKER = "senpai-imports:"
CHECK = f"""
import importlib, json, sys
failed = {{}}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as e:  # SystemExit too: a package's import must not end the check
        failed[name] = f"{{type(e).__name__}}: {{e}}"[:300]
print()
print({MARKER!r}, json.dumps(failed))
"""


def import_problems(repo: Path, target: TargetConfig, evaluator: EvaluatorFiles, root: Path, walls: Walls) -> list[str]:
    """One sentence per module an evaluator file in checkout `repo` imports at module level that the
    score interpreter cannot import, naming the file, the module, the interpreter and the error;
    or one saying the check itself timed out or ended without reporting. Runs in the empty folder
    `root`; `evaluator` is laid out as the score step lays it out. Raises ConfigError if
    `holdout.python` does not run (`walls.python_paths`)."""
    needed = required_imports(repo, target)
    if not needed:
        return []
    python = target.holdout.python
    who = f"holdout.python {python}" if python else f"senpai's interpreter {sys.executable}"
    fix = "install it there" if python else "install it there or set holdout.python to an interpreter that has it"
    empty = [root / "artifact", root / "holdout"]
    for folder in empty:
        folder.mkdir(parents=True)
    command = shlex.join(["python", "-c", CHECK, *needed])
    out = run_evaluator(
        command, evaluator, *empty, target.holdout.seeds[0], root / "run", IMPORT_SECONDS, root / "imports.log", walls,
        python=python,
    )  # fmt: skip
    failed = _reported(out.returncode, out.output)
    if failed is None:
        ended = f"took over {IMPORT_SECONDS:g} s" if out.returncode is None else f"exited {out.returncode} before reporting"
        return [f"importing the evaluator's modules ({', '.join(needed)}) under {who} {ended}: {out.tail(10)[-500:]}"]
    return [f"{needed[m]} imports {m}, which {who} cannot import ({why}): {fix}" for m, why in failed.items() if m in needed]


def train_import_problems(repo: Path, target: TargetConfig, script: str | None) -> list[str]:
    """One sentence per module the train script `script` (repo-relative, `scripts.script_of`; None:
    not a Python file, nothing checked) imports at module level that the interpreter the train step
    starts cannot import: the train command's own (`walls.train_python`), else the one its `python`
    names on the train step's PATH (`measure.command_path`: senpai's first). A command that starts
    another program (`torchrun`, `uv run`, `make`) is not checked: that program picks the
    interpreter. Asked outside the wall (that grants the interpreter's folders), from an empty folder
    as HOME and cwd, with the train step's allow-listed environment and the command's leading
    assignments (`PYTHONPATH=src`, resolved from `repo` as the train step's checkout root), bounded
    by IMPORT_SECONDS; the script itself never runs. So a torch script whose `holdout.python` has
    torch but whose train command names senpai's `python` fails here, not at every training."""
    needed = module_imports(repo, [script]) if script else {}
    start = train_start(target.train)
    if not needed or start is None or not is_python_name(start[1]):
        return []
    assigned, program = start
    python = train_python(target.train) or shutil.which(program, path=command_path())
    if python is None:
        return [f"the train command starts {program}, which is not on the train step's PATH {command_path()}"]
    senpais = Path(python).parent == Path(sys.executable).parent
    who = f"senpai's interpreter {python}" if senpais else f"the train command's interpreter {python}"
    fix = "install it there, or start train with your venv's bin/python" if senpais else "install it there"
    with tempfile.TemporaryDirectory(prefix="senpai-imports-") as empty:
        env = {**allowed_env(os.environ), "PATH": command_path(), "HOME": empty, **assigned}
        if env.get("PYTHONPATH"):  # relative to the train step's cwd, the checkout root
            env["PYTHONPATH"] = os.pathsep.join(str(repo / p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
        try:
            run = subprocess.run(
                [python, "-s", "-c", CHECK, *needed], cwd=empty, env=env, capture_output=True, text=True, timeout=IMPORT_SECONDS
            )
        except subprocess.TimeoutExpired:
            return [f"importing the train script's modules ({', '.join(needed)}) under {who} took over {IMPORT_SECONDS:g} s"]
    failed = _reported(run.returncode, run.stdout)
    if failed is None:
        tail = (run.stderr or run.stdout).strip()[-300:]
        return [f"importing the train script's modules ({', '.join(needed)}) under {who} exited {run.returncode}: {tail}"]
    return [f"{needed[m]} imports {m}, which {who} cannot import ({why}): {fix}" for m, why in failed.items() if m in needed]


def _reported(returncode: int | None, output: str) -> dict[str, str] | None:
    """The check's report (module -> its error) from the last MARKER line of its `output`; None if it
    printed none or did not exit 0."""
    lines = [line for line in output.splitlines() if line.startswith(MARKER)]
    if returncode != 0 or not lines:
        return None
    try:
        said = json.loads(lines[-1].removeprefix(MARKER))
    except ValueError:
        return None
    return {str(k): str(v) for k, v in said.items()} if isinstance(said, dict) else None
