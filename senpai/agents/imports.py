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
import shlex
import sys
from pathlib import Path

from senpai.agents.evaluate import EvaluatorFiles, run_evaluator
from senpai.agents.measure import Outcome
from senpai.agents.walls import Walls
from senpai.config.evaluator import required_imports
from senpai.config.target import TargetConfig

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
    failed = _reported(out)
    if failed is None:
        ended = f"took over {IMPORT_SECONDS:g} s" if out.returncode is None else f"exited {out.returncode} before reporting"
        return [f"importing the evaluator's modules ({', '.join(needed)}) under {who} {ended}: {out.tail(10)[-500:]}"]
    return [f"{needed[m]} imports {m}, which {who} cannot import ({why}): {fix}" for m, why in failed.items() if m in needed]


def _reported(out: Outcome) -> dict[str, str] | None:
    """The check's report (module -> its error) from its last MARKER line; None if it printed none."""
    lines = [line for line in out.output.splitlines() if line.startswith(MARKER)]
    if out.returncode != 0 or not lines:
        return None
    try:
        said = json.loads(lines[-1].removeprefix(MARKER))
    except ValueError:
        return None
    return {str(k): str(v) for k, v in said.items()} if isinstance(said, dict) else None
