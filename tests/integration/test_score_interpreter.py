"""`holdout.python`: the interpreter that runs the score step. `senpai validate` imports what the
evaluator imports under it (or senpai's own when unset) and names a module it cannot import; the
path is checked at load (absolute) and where the score step runs (it exists and runs)."""

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from second_python import venv_with

from senpai.cli.main import cli
from senpai.config import safe_yaml
from senpai.config.evaluator import required_imports
from senpai.config.target import load_target
from senpai.errors import ConfigError

EVALUATOR = """import json, sys
from pathlib import Path
import interp_probe

art, hold = Path(sys.argv[-2]), Path(sys.argv[-1])
if sys.argv[1] == "--sample":
    (art / "model.json").write_text('{"w": 1}')
    (hold / "y.txt").write_text("1")
else:
    print("holdout_score:", json.loads((art / "model.json").read_text())["w"] * interp_probe.SCALE)
    print("interpreter:", sys.executable)
"""


def target(root: Path, evaluator: str = EVALUATOR, **holdout) -> Path:
    """A target at `root` whose evaluator (eval/evaluate.py, with a sample) is `evaluator`."""
    (root / "eval").mkdir(parents=True)
    (root / "eval" / "evaluate.py").write_text(evaluator)
    (root / "params.json").write_text('{"w": 0.5}\n')
    (root / "program.md").write_text("# probe\n")
    config = {
        "name": "probe",
        "train": "python train.py",
        "metric": {"name": "val_score", "direction": "maximize", "source": "stdout"},
        "params": {"file": "params.json", "space": {"w": {"type": "float", "low": 0.0, "high": 1.0}}},
        "holdout": {
            "command": "python eval/evaluate.py {artifact} {holdout}",
            "sample": "python eval/evaluate.py --sample {artifact} {holdout}",
            "files": ["eval/evaluate.py"],
            "metric": "holdout_score",
            "min_floor": 0.01,
            **holdout,
        },
        "protected": ["eval/"],
    }
    (root / "senpai.yaml").write_text(safe_yaml.dump(config))
    return root


def validate(repo: Path) -> tuple[int, str]:
    """`senpai validate repo`: (exit code, what it printed or the ConfigError's message)."""
    result = CliRunner().invoke(cli, ["validate", str(repo)])
    if isinstance(result.exception, ConfigError):
        return ConfigError.exit_code, str(result.exception)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A venv whose site-packages alone hold `interp_probe`."""
    return venv_with(tmp_path_factory.mktemp("venv") / "env", {"interp_probe": "SCALE = 0.75\n"})


def test_validate_names_a_module_the_score_interpreter_cannot_import_and_passes_under_holdout_python(tmp_path, venv):
    repo = target(tmp_path / "repo")
    code, output = validate(repo)
    assert code == 2
    assert (
        f"eval/evaluate.py imports interp_probe, which senpai's interpreter {sys.executable} cannot import "
        "(ModuleNotFoundError: No module named 'interp_probe'): install it there or set holdout.python"
    ) in output
    assert "holdout.sample" not in output  # the sample is not run past a failed import

    repo = target(tmp_path / "declared", python=str(venv))
    code, output = validate(repo)
    assert code == 0, output
    assert f"score interpreter: {venv} (holdout.python)" in output
    assert "it printed holdout_score 0.75" in output  # the sample scored under the venv, behind the wall


def test_an_import_that_fails_otherwise_is_named_with_its_error(tmp_path):
    bad = venv_with(tmp_path / "bad", {"interp_probe": "raise RuntimeError('needs a GPU driver')\n"})
    repo = target(tmp_path / "repo", python=str(bad))
    code, output = validate(repo)
    assert code == 2
    assert f"which holdout.python {bad} cannot import (RuntimeError: needs a GPU driver): install it there" in output


def test_only_module_level_imports_that_are_not_optional_are_required(tmp_path):
    evaluator = """import os.path
from safetensors.numpy import load_file
try:
    import onnxruntime
except ImportError:
    onnxruntime = None
if __name__ == "__main__":
    import skops.io as sio
class Loader:
    import torch
def load():
    import jax
from . import sibling
"""
    repo = target(tmp_path / "repo", evaluator)
    (repo / "eval" / "helpers.py").write_text("X = 1\n")
    (repo / "eval" / "evaluate.py").write_text(evaluator + "import helpers\n")  # a repository module: not installed
    needed = required_imports(repo, load_target(repo))
    assert needed == {name: "eval/evaluate.py" for name in ("os.path", "safetensors.numpy", "skops.io", "torch")}


@pytest.mark.parametrize("path", ["bin/python", ".venv/bin/python", "/opt/x/../bin/python", "/usr/bin/python\n"])
def test_a_holdout_python_that_is_not_a_normalised_absolute_path_is_refused_at_load(tmp_path, path):
    repo = target(tmp_path / "repo", python=path)
    with pytest.raises(ConfigError, match=r"holdout\.python: must be a(n| normalised) absolute path"):
        load_target(repo)


def test_a_holdout_python_that_is_missing_or_not_executable_is_a_sentence_not_a_crash(tmp_path):
    missing = tmp_path / "nowhere" / "python"
    code, output = validate(target(tmp_path / "a", python=str(missing)))
    assert code == 2
    assert f"holdout.python {missing} does not exist on this machine: the score step would not run" in output
    plain = tmp_path / "plain"
    plain.write_text("#!/bin/sh\n")
    code, output = validate(target(tmp_path / "b", python=str(plain)))
    assert f"holdout.python {plain} is not an executable file on this machine" in output
    shell = tmp_path / "shell"
    shell.write_text("#!/bin/sh\necho not python\n")
    os.chmod(shell, 0o755)
    code, output = validate(target(tmp_path / "c", python=str(shell)))
    assert code == 2
    assert f"holdout.python {shell} does not run as a Python 3 interpreter (it exited 0: not python)" in output
    old = tmp_path / "python3.10"  # answers as a Python without -P would
    old.write_text('#!/bin/sh\necho \'["3.10", "/usr/bin/python3.10", "/usr", "/usr", "/usr"]\'\n')
    os.chmod(old, 0o755)
    code, output = validate(target(tmp_path / "d", python=str(old)))
    assert code == 2
    assert f"holdout.python {old} is Python 3.10: the score step runs it with -P, which needs 3.11+" in output
