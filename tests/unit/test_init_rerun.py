"""`senpai init` as a new user met it on karpathy/makemore (issue 27, findings 3, 4, 5 and 7): a
train command behind the target's own interpreter gets `holdout.python`, a re-run after a failed
check keeps the user's fixes and says what is true, `--force` never drops a field of the user's
unasked, a run that never ends or reports its metric only every N steps is named, and the next
steps name the file the evaluator reads. The real CLI (click's runner) on real files, with real
interpreters: senpai's and a second venv."""

import shutil
import site
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from second_python import venv_with
from test_init_unseen import CHAR_MODEL, CHAR_MODEL_FITTED
from third_party import repo, ridge_numpy
from torch_absent import initialised

from senpai.cli.main import cli
from senpai.cli.rerun import merge3
from senpai.cli.run_length import unbounded
from senpai.cli.scaffold import Answers, advice, detect
from senpai.cli.scripts import interpreter_of
from senpai.config.target import load_target
from senpai.errors import ConfigError
from senpai.job.measure import command_path

# what these tests check is init's own (holdout.python, merges, --force, next steps), whatever the
# framework: a script whose validate imports no scikit-learn (tests/third_party.py)
RIDGE = ridge_numpy()


def init(root: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["init", str(root), *args], input=input)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A second venv that sees senpai's packages (numpy, scikit-learn, skops) through a .pth file, no torch."""
    return venv_with(tmp_path_factory.mktemp("venv") / "env", {}, site.getsitepackages())


# --- holdout.python from the train command (finding 3) -------------------------------------------


@pytest.mark.parametrize(
    ("command", "python"),
    [
        ("/opt/venv/bin/python -u lm.py", "/opt/venv/bin/python"),
        ("CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=1 /opt/venv/bin/python3.12 lm.py", "/opt/venv/bin/python3.12"),
        ("/opt//venv/bin/python lm.py", "/opt/venv/bin/python"),
        ("python lm.py", None),
        ("make train", None),
        ("/usr/bin/env python lm.py", None),
        ("/opt/venv/bin/torchrun lm.py", None),
    ],
)
def test_the_interpreter_a_train_command_starts_with(command, python):
    assert interpreter_of(command) == python


def test_a_train_command_behind_another_interpreter_writes_it_as_holdout_python(tmp_path, venv):
    root = repo(tmp_path, {"fit_ridge.py": RIDGE})
    result = init(root, "--yes", "--train-cmd", f"{venv} fit_ridge.py")
    assert result.exit_code == 0, result.output
    assert f"holdout.python: {venv}, the train command's interpreter" in result.output
    assert load_target(root).holdout.python == str(venv)
    validated = CliRunner().invoke(cli, ["validate", str(root)])
    assert f"score interpreter: {venv} (holdout.python)" in validated.output  # the sample ran there


def test_a_train_interpreter_that_is_not_python_leaves_holdout_python_unset_and_says_so(tmp_path):
    fake = tmp_path / "fake" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    root = repo(tmp_path, {"fit_ridge.py": RIDGE})
    result = init(root, "--yes", "--train-cmd", f"{fake} fit_ridge.py")
    assert f"note: the train command's {fake} does not answer as Python 3.11 or later, so holdout.python is left unset" in (
        result.output
    )
    assert load_target(root).holdout.python is None
    # init's check then stops on what every training would meet (senpai.job.walls.train_python)
    assert isinstance(result.exception, ConfigError), result.output
    assert f"train: {fake} does not run as a Python 3 interpreter" in str(result.exception)


def test_a_script_whose_torch_lives_in_the_module_it_imports_is_advised_safetensors_not_skops(tmp_path):
    net = "import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n"
    script = "from net import Net\n\nmodel = Net()\nfor step in range(3):\n    loss = model()\n    loss.backward()\n"
    script += '    print(f"val_loss: {loss}")\n'
    found = detect(repo(tmp_path, {"fit.py": script, "net.py": net}), "python fit.py")
    assert (found.framework, found.model_file) == ("torch", "net.py")
    tips = " ".join(a.snippet for a in advice(Answers("python fit.py", "val_loss", "minimize", "params.json", "log_loss"), found))
    assert "safetensors.torch" in tips and "skops" not in tips


# --- a re-run keeps the user's edits (finding 4) -------------------------------------------------


def test_a_re_run_after_a_failed_check_keeps_the_holdout_python_the_user_added_and_says_what_is_true(tmp_path, venv):
    root = repo(tmp_path, {"char_model.py": CHAR_MODEL_FITTED})
    first = init(root, "--yes", "--holdout-metric", "log_loss")
    initialised(first)  # without torch here: "Fix that, then run `senpai init` again"
    yaml_text = (root / "senpai.yaml").read_text()
    # the fix docs/init.md names: holdout.python, by hand, where the user puts it
    (root / "senpai.yaml").write_text(yaml_text.replace("  seeds: [0, 1, 2]\n", f"  seeds: [0, 1, 2]\n  python: {venv}\n"))
    again = init(root, input="")
    assert "already exist" not in again.output + str(again.exception)
    assert f"kept {root / 'senpai.yaml'} with your edits" in again.output
    assert f"  python: {venv}\n" in (root / "senpai.yaml").read_text() and load_target(root).holdout.python == str(venv)
    # train is still `python char_model.py`, senpai's interpreter, which has no torch: a warning says so
    assert (
        f"warning: char_model.py imports torch, which senpai's interpreter {shutil.which('python', path=command_path())} "
        "cannot import "
        "(ModuleNotFoundError: No module named 'torch'): install it there, or start train with your venv's bin/python"
    ) in again.output
    # the check ran under the user's interpreter, which has no torch: it says so, and the advice is still true
    assert isinstance(again.exception, ConfigError)
    assert f"which holdout.python {venv} cannot import (ModuleNotFoundError: No module named 'torch')" in str(again.exception)
    assert "run `senpai init` again: it reuses the answers in senpai.yaml and keeps your edits" in str(again.exception)


def test_a_re_run_with_a_changed_answer_merges_it_into_the_users_senpai_yaml(tmp_path):
    root = repo(tmp_path, {"fit_ridge.py": RIDGE})
    assert init(root, "--yes").exit_code == 0
    text = (root / "senpai.yaml").read_text()
    mine = text.replace("wall_seconds: 600", "wall_seconds: 120").replace("protected:", "  max_seeds: 5\nprotected:")
    (root / "senpai.yaml").write_text(mine)
    result = init(root, "--yes", "--holdout-metric", "rmse")
    assert result.exit_code == 0, result.output
    assert "+  metric: holdout_rmse" in result.output and "wrote" in result.output and "your edits kept" in result.output
    t = load_target(root)
    assert (t.holdout.metric, t.budget.wall_seconds, t.holdout.max_seeds) == ("holdout_rmse", 120, 5)


def test_force_shows_the_diff_and_never_drops_a_field_of_the_users_unasked(tmp_path):
    root = repo(tmp_path, {"fit_ridge.py": RIDGE})
    assert init(root, "--yes").exit_code == 0
    text = (root / "senpai.yaml").read_text()
    line = next(x for x in text.splitlines() if x.startswith("  metric: holdout_mse"))
    # an edit in the line a changed answer rewrites, and a field added right below it: no merge
    mine = text.replace(line, "  metric: holdout_mse  # what our paper reports\n  max_seeds: 5")
    (root / "senpai.yaml").write_text(mine)
    refused = init(root, "--yes", "--holdout-metric", "rmse")
    assert isinstance(refused.exception, ConfigError) and "senpai.yaml already exist" in str(refused.exception)
    assert "pass --force to see the diff" in str(refused.exception) and (root / "senpai.yaml").read_text() == mine
    forced = init(root, "--force", "--yes", "--holdout-metric", "rmse")
    assert "-  max_seeds: 5" in forced.output and "That drops or changes your holdout.max_seeds." in forced.output
    assert "as you have it: replacing it would drop or change your holdout.max_seeds; edit it by hand" in forced.output
    assert (root / "senpai.yaml").read_text() == mine
    asked = init(root, "--force", "--holdout-metric", "rmse", input="y\n")
    assert "Replace senpai.yaml?" in asked.output and load_target(root).holdout.max_seeds is None  # the user said yes


def test_a_holdout_python_the_user_got_wrong_is_one_sentence_naming_it_never_a_pydantic_message(tmp_path):
    root = repo(tmp_path, {"fit_ridge.py": RIDGE})
    assert init(root, "--yes").exit_code == 0
    text = (root / "senpai.yaml").read_text()
    (root / "senpai.yaml").write_text(text.replace("  seeds: [0, 1, 2]\n", "  seeds: [0, 1, 2]\n  python: venv/bin/python\n"))
    result = init(root, "--yes")
    message = str(result.exception)
    assert isinstance(result.exception, ConfigError) and "\n" not in message
    assert "(holdout.python are not valid)" in message and "or holdout.python in the senpai.yaml there" in message
    assert "validation error" not in message + result.output


def test_merge3_applies_changes_apart_and_refuses_changes_that_meet():
    base = "a\nb\nc\nd\n"
    assert merge3(base, "A\nb\nc\nd\n", "a\nb\nc\nD\n") == "A\nb\nc\nD\n"
    assert merge3(base, "a\nb\nx\nc\nd\n", "a\nb\nx\nc\nd\n") == "a\nb\nx\nc\nd\n"  # the same change on both sides
    assert merge3(base, "a\nB\nc\nd\n", "a\nb2\nc\nd\n") is None
    assert merge3(base, "a\nb\nmine\nc\nd\n", "a\nb\ntheirs\nc\nd\n") is None  # two insertions at one place


# --- a run that never ends, a metric printed every N steps (finding 5) ---------------------------


def test_a_length_flag_that_defaults_to_no_limit_is_named_unless_the_train_command_sets_it(tmp_path):
    root = repo(tmp_path, {"char_model.py": CHAR_MODEL})
    result = init(root, "--yes", "--holdout-metric", "log_loss")
    initialised(result)
    assert (
        "warning: char_model.py defaults --max-steps to -1 (no limit) and the train command does not set it, so a run may "
        "never end before budget.wall_seconds kills it: add `--max-steps N` to the train command, or `max_steps: N` "
        "to params.json"
    ) in result.output
    assert "prints test_loss only every args.eval_interval steps" in result.output

    bounded = repo(tmp_path / "bounded", {"char_model.py": CHAR_MODEL_FITTED})
    result = init(bounded, "--yes", "--holdout-metric", "log_loss", "--train-cmd", "python char_model.py --max-steps 200")
    initialised(result)
    assert "--max-steps to -1" not in result.output and "only every" not in result.output  # it prints once after the loop


@pytest.mark.parametrize(
    ("key", "value", "endless"),
    [
        ("max_steps", -1, True),
        ("num_epochs", None, True),
        ("max_iters", -1.0, True),
        ("max_steps", 5000, False),
        ("warmup_steps", -1, False),
        ("top_k", -1, False),
    ],
)
def test_which_defaults_read_as_training_forever(key, value, endless):
    assert unbounded(key, value) is endless


# --- the next steps name the file the evaluator reads (finding 7) ---------------------------------


def test_the_next_steps_name_the_file_the_evaluator_reads(tmp_path):
    root = repo(tmp_path, {"fit_ridge.py": RIDGE})
    result = init(root, "--yes")
    assert "# put holdout.csv there, as eval/evaluate.py reads it" in result.output
    evaluator = root / "eval" / "evaluate.py"
    evaluator.write_text(evaluator.read_text().replace('HOLDOUT = "holdout.csv"', 'HOLDOUT = "names.txt"'))
    again = init(root, "--yes")
    assert again.exit_code == 0, again.output
    assert "# put names.txt there, as eval/evaluate.py reads it" in again.output and "holdout.csv there" not in again.output
