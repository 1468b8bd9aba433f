"""`holdout.python` for `senpai init`: the interpreter the train command runs, where the target's
packages are.

A train command that starts with another interpreter (`/home/me/lm/.venv/bin/python lm.py`,
leading `VAR=value` words skipped: `scripts.interpreter_of`) says where torch and the like are
installed; senpai's own interpreter may have none of them. The score step and init's own check
(`senpai validate`: the evaluator's imports, then its run on a sample) run under `holdout.python`,
so init writes that interpreter there, once it has answered as Python 3
(`senpai.job.walls.python_paths`, the check `senpai validate` makes of `holdout.python`).
"""

import os
import sys

import click

from senpai.cli.scripts import interpreter_of
from senpai.errors import ConfigError
from senpai.job.walls import python_paths


def score_python(before: dict[str, str], train_cmd: str) -> str | None:
    """The `holdout.python` init writes for `train_cmd`, given the answers of the senpai.yaml there
    (`rerun.previous`): the one it holds, if the user set it (not the interpreter of its own train
    command) or the train command is unchanged; else the interpreter `train_cmd` starts with, if that
    is not senpai's and answers as Python 3 (a line says so, or why not); else None (senpai's)."""
    kept = before.get("python")
    if kept and (train_cmd == before.get("train_cmd") or kept != interpreter_of(before.get("train_cmd", ""))):
        return kept
    python = interpreter_of(train_cmd)
    if python is None or python == os.path.normpath(sys.executable):
        return None
    try:
        python_paths(python)
    except ConfigError:
        click.echo(
            f"note: the train command's {python} does not answer as Python 3.11 or later, so holdout.python is left "
            "unset and the score step runs senpai's interpreter; set holdout.python in senpai.yaml if the evaluator needs another"
        )
        return None
    click.echo(f"holdout.python: {python}, the train command's interpreter (the score step and init's check run there)")
    return python
