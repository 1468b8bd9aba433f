"""`senpai init` on training scripts it has never seen (issue 27, item 2): a third-party script not
named train.py with argparse flags and its loss printed mid-line, a metric printed as JSON, a
search space of hyper-parameters only, re-runs that ask nothing twice, and failures that say
what to do. The real CLI (click's runner) on real files in tmp folders; the scripts are read, never run."""

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from third_party import repo, ridge_json, ridge_numpy
from torch_absent import initialised
from walled import wall_around

from senpai.cli.main import cli
from senpai.cli.scaffold import Answers, advice, detect
from senpai.cli.space import left_out, range_for
from senpai.config.target import load_target
from senpai.errors import ConfigError
from senpai.job.measure import run_command

# A character-level language model as found on GitHub: torch, argparse, not named train.py, the
# loss printed inside a longer line; its -1 max_steps means "train forever".
CHAR_MODEL = '''"""A character-level language model."""
import argparse

import torch
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser(description="char model")
    parser.add_argument("--input-file", "-i", type=str, default="input.txt", help="training text")
    parser.add_argument("-o", "--work-dir", type=str, default="out", help="output folder")
    parser.add_argument("--seed", type=int, default=3407)
    parser.add_argument("--device", type=str, default="cpu")
    parser.add_argument("--num-workers", "-n", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=-1, help="-1: train forever")
    parser.add_argument("--top-k", type=int, default=-1, help="top-k when sampling")
    parser.add_argument("--eval-interval", type=int, default=500)
    parser.add_argument("--n-layer", type=int, default=4)
    parser.add_argument("--n-embd", type=int, default=64)
    parser.add_argument("--batch-size", "-b", type=int, default=32)
    parser.add_argument("--learning-rate", "-l", type=float, default=3e-4)
    parser.add_argument("--weight-decay", "-w", type=float, default=0.01)
    parser.add_argument("--dropout", type=float, default=0.1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Linear(args.n_embd, args.n_embd)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)
    step = 0
    while args.max_steps < 0 or step < args.max_steps:
        loss = model(torch.randn(args.batch_size, args.n_embd)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % args.eval_interval == 0:
            test_loss = loss.item()
            print(f"step {step} | train loss: {loss.item():.4f} | test loss: {test_loss:.4f}")
        step += 1


if __name__ == "__main__":
    main()
'''
NOT_KNOBS = {"input_file", "work_dir", "seed", "device", "num_workers", "max_steps", "top_k", "eval_interval"}
KNOBS = {"n_layer", "n_embd", "batch_size", "learning_rate", "weight_decay", "dropout"}

# The same script once it fits the contract: it reads params.json and SEED, saves safetensors, and
# prints its metric on a line of its own.
CHAR_MODEL_FITTED = (
    CHAR_MODEL.replace("import argparse\n", "import argparse\nimport json\nimport os\n")
    .replace(
        "    args = parser.parse_args()\n",
        '    with open("params.json") as f:\n        parser.set_defaults(**json.load(f))\n    args = parser.parse_args()\n'
        '    seed = int(os.environ.get("SEED", "0"))\n',
    )
    .replace(
        "        step += 1\n",
        '        step += 1\n    print(f"test_loss: {test_loss}")\n'
        '    if os.environ.get("SENPAI_ARTIFACT_DIR"):\n'
        "        from safetensors.torch import save_file\n"
        '        save_file(model.state_dict(), os.path.join(os.environ["SENPAI_ARTIFACT_DIR"], "model.safetensors"))\n',
    )
)

RIDGE_JSON = ridge_json()  # a scikit-learn script whose metric, a loss, is printed as one JSON line
# its numpy twin, for the re-run tests: what they check is init's own, and its validate imports no scikit-learn
RIDGE_NUMPY = ridge_numpy()

NOT_TRAINING = 'def tokens(text):\n    return list(text)\n\n\nif __name__ == "__main__":\n    print(tokens("abc"))\n'


def init(root: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["init", str(root), *args], input=input)


def answers(t) -> Answers:
    """The answers init wrote into target `t`."""
    return Answers(t.train, t.metric.name, t.metric.direction, t.params.file, t.holdout.metric.removeprefix("holdout_"))


def snapshot(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_third_party_script_gets_its_command_metric_and_a_space_of_hyper_parameters_only(tmp_path):
    root = repo(tmp_path, {"char_model.py": CHAR_MODEL, "tokenize.py": NOT_TRAINING, "tests/test_model.py": CHAR_MODEL})
    result = init(root, "--yes", "--holdout-metric", "log_loss")
    initialised(result)
    t = load_target(root)
    assert (t.train, t.metric.name, t.metric.direction) == ("python char_model.py", "test_loss", "minimize")
    assert t.metric.source == "stdout"
    space = t.params.space
    assert set(space) == KNOBS and not NOT_KNOBS & set(space)
    assert set(json.loads((root / "params.json").read_text())) == KNOBS  # the file the search changes: knobs only
    lr = space["learning_rate"]
    assert (lr.type, lr.log, lr.low, lr.high) == ("float", True, 3e-5, 3e-3)  # around 3e-4, on a log scale
    assert space["weight_decay"].log and not space["dropout"].log and space["dropout"].high < 1
    assert (space["n_layer"].low, space["n_layer"].high) == (2, 4)  # what one run costs: no higher than today's
    assert (space["batch_size"].low, space["batch_size"].high) == (16, 32)
    written = (root / "senpai.yaml").read_text()
    assert "#   max_steps: -1 reads as a sentinel" in written and "#   seed: the seed is senpai's to set" in written
    # the loss is printed mid-line, which senpai reads as it is (senpai.job.measure): no line to add
    tips = " ".join(f"{a.why} {a.snippet}" for a in advice(answers(t), detect(root)))
    assert "test_loss: {" not in tips and "line of its own" not in tips
    assert "safetensors" in tips and "skops" not in tips  # a torch script's advice


def test_train_cmd_with_another_interpreter_reads_the_script_it_runs(tmp_path):
    root = repo(tmp_path, {"char_model.py": CHAR_MODEL_FITTED})
    (root / "params.json").write_text(json.dumps({"learning_rate": 3e-4, "seed": 1, "n_layer": 4}))
    result = init(root, "--yes", "--train-cmd", "/other/venv/bin/python -u char_model.py", "--holdout-metric", "log_loss")
    # its files are written, then init's check stops on the interpreter every training would need
    assert isinstance(result.exception, ConfigError), result.output
    assert "train: /other/venv/bin/python does not exist on this machine" in str(result.exception)
    assert load_target(root).train == "/other/venv/bin/python -u char_model.py"
    # the script does all four already; only its network, defined in it, must move where the evaluator builds it
    (network,) = advice(answers(load_target(root)), detect(root, "/other/venv/bin/python -u char_model.py"))
    assert "defines its network itself" in network.why
    assert set(load_target(root).params.space) == {"learning_rate", "n_layer"}  # params.json's knobs; its seed left out
    found = detect(root, "/other/venv/bin/python -u char_model.py")
    assert found.script == "char_model.py" and found.framework == "torch" and found.argparse_defaults["learning_rate"] == 3e-4


def test_a_metric_printed_as_json_is_detected_and_the_evaluator_agrees_with_it(tmp_path):
    root = repo(tmp_path, {"fit_ridge.py": RIDGE_JSON})
    result = init(root, "--yes")
    assert result.exit_code == 0, result.output
    t = load_target(root)
    assert (t.train, t.metric.name, t.metric.direction) == ("python fit_ridge.py", "val_loss", "minimize")
    assert (t.holdout.metric, t.holdout_direction) == ("holdout_mse", "minimize")  # a regressor's loss: the same kind
    assert set(t.params.space) == {"alpha"} and t.params.space["alpha"].log  # random_state and out_dir left out
    assert "line of its own" not in result.output  # its JSON line is read as it is (senpai.job.measure)


@pytest.mark.parametrize(
    ("line", "name", "how"),
    [
        ('print("step", i, "| val loss:", v)', "val_loss", "inline"),
        ('print("epoch %d val_acc=%.3f" % (e, acc))', "val_acc", "inline"),
        ('print("val_f1: {:.3f}".format(f1))', "val_f1", "stdout"),
        ('print(f"val_accuracy={acc}")', "val_accuracy", "equals"),
        ("print(json.dumps(dict(step=i, val_auc=auc)))", "val_auc", "json"),
        ("wandb.log(stats)", "val_bpb", "wandb"),
    ],
)
def test_a_metric_printed_anywhere_in_a_line_is_found_and_read_under_that_name(tmp_path, line, name, how):
    script = f'import json, wandb\nstats = {{"val_bpb": 1.2}}\nfor i in range(3):\n    loss.backward()\n    {line}\n'
    found = detect(repo(tmp_path, {"fit.py": script}), "python fit.py")
    assert (found.metric, found.how(name)) == (name, how)
    if how == "wandb":
        return
    # the same line printed for real: the train step's reader finds the value under init's name
    run = f"import json\ni = e = 1\nv = acc = f1 = auc = 0.75\n{line}\n"
    (tmp_path / "run.py").write_text(run)
    out = run_command(f"{sys.executable} run.py", tmp_path, {}, 60, wall=wall_around(tmp_path))
    assert out.returncode == 0 and out.value(name) == 0.75, out.output


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("lr", 0.001, {"type": "float", "low": 0.0001, "high": 0.01, "log": True}),
        ("momentum", 0.9, {"type": "float", "low": 0.45, "high": 0.95}),
        ("weight_decay", 0.0, {"type": "float", "low": 0.0, "high": 1.0}),
        ("n_estimators", 100, {"type": "int", "low": 50, "high": 100}),
        ("n_head", 4, {"type": "int", "low": 2, "high": 8}),
        ("use_bias", True, {"type": "categorical", "choices": [True, False]}),
    ],
)
def test_ranges_are_built_around_the_default(key, value, expected):
    assert left_out(key, value) is None and range_for(key, value) == expected


@pytest.mark.parametrize(
    ("key", "value"),
    [("random_state", 0), ("data_root", "x"), ("vocab", "data/vocab.txt"), ("log_every", 10), ("warmup_steps", 0)],
)
def test_what_is_not_a_hyper_parameter_is_left_out(key, value):
    assert left_out(key, value)


def test_a_re_run_asks_nothing_twice_and_force_shows_a_diff_before_replacing_an_edited_file(tmp_path):
    root = repo(tmp_path, {"fit_ridge.py": RIDGE_NUMPY})
    assert init(root, input="\n\n\n\n\n").exit_code == 0  # the five questions, defaults taken
    first = snapshot(root)
    again = init(root, input="")  # one more question would read EOF and abort
    assert again.exit_code == 0, again.output
    assert "Reusing the answers" in again.output and "Train command" not in again.output and snapshot(root) == first

    # an edit alone is kept: init would write what it wrote before
    (root / "program.md").write_text(first["program.md"] + "\nNever change the tokenizer.\n")
    kept = init(root, "--yes")
    assert kept.exit_code == 0 and "program.md with your edits" in kept.output
    assert "Never change the tokenizer." in (root / "program.md").read_text()
    # an edit in the very line a changed answer rewrites does not merge: refused, then a diff and a question
    edited = first["program.md"].replace("reports **val_loss**", "reports **val_loss** (an MSE)")
    (root / "program.md").write_text(edited)
    change = ["--metric", "n_train", "--direction", "minimize"]
    refused = init(root, "--yes", *change)
    assert isinstance(refused.exception, ConfigError) and "program.md already exist" in str(refused.exception)
    assert "--force" in str(refused.exception) and "senpai.yaml" not in str(refused.exception)
    assert (root / "program.md").read_text() == edited and load_target(root).metric.name == "val_loss"  # nothing written
    twin = shutil.copytree(root, tmp_path / "twin" / root.name)
    replaced = init(twin, "--force", "--yes", *change)
    assert (
        replaced.exit_code == 0
        and "-`python fit_ridge.py` reads `params.json`, trains, and reports **val_loss** (an MSE)" in (replaced.output)
    )
    assert "**n_train**" in (twin / "program.md").read_text()
    asked = init(root, "--force", *change, input="n\n")
    assert "(an MSE)" in asked.output and "Replace program.md?" in asked.output
    assert (root / "program.md").read_text() == edited and load_target(root).metric.name == "n_train"  # only yours kept


def test_force_replaces_what_init_wrote_before_without_asking(tmp_path):
    root = repo(tmp_path, {"fit_ridge.py": RIDGE_NUMPY})
    assert init(root, "--yes").exit_code == 0
    result = init(root, "--force", "--direction", "maximize", "--metric", "n_train", "--holdout-metric", "r2", input="")
    assert result.exit_code == 0, result.output
    assert "Replace" not in result.output and load_target(root).metric.name == "n_train"


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ("import random\nfor epoch in range(3):\n    print(f'epoch {epoch} val loss: {random.random()}')\n", "hold no params"),
        (
            "import argparse\np = argparse.ArgumentParser()\np.add_argument('--seed', type=int, default=0)\n"
            "p.add_argument('--device', default='cuda')\nfor step in range(3):\n    print(f'val_loss: {step}')\n",
            "seed: the seed is senpai's to set",
        ),
    ],
)
def test_nothing_to_search_is_one_sentence_naming_the_fix_and_writes_nothing(tmp_path, script, said):
    root = repo(tmp_path, {"script.py": script})
    args = ["--yes", "--train-cmd", "python script.py", "--metric", "val_loss", "--params-file", "params.json"]
    result = init(root, *args, "--holdout-metric", "mse")
    message = str(result.exception)
    assert isinstance(result.exception, ConfigError) and "\n" not in message
    assert "found nothing to search" in message and said in message and "write params.json yourself" in message
    assert "valid dictionary" not in message + result.output and sorted(snapshot(root)) == ["script.py"]


def test_scripts_that_train_equally_well_are_asked_about(tmp_path):
    twin = CHAR_MODEL.replace('"""A character-level language model."""', '"""Its twin."""')
    root = repo(tmp_path, {"gpt.py": CHAR_MODEL, "rnn.py": twin})
    refused = init(root, "--yes", "--holdout-metric", "log_loss")
    assert isinstance(refused.exception, ConfigError)
    assert "--train-cmd): gpt.py, rnn.py all look like training scripts" in str(refused.exception)
    asked = init(root, "--holdout-metric", "log_loss", input="python rnn.py\n\n\n\n")
    assert "Several scripts look like training: gpt.py, rnn.py." in asked.output
    initialised(asked)
    assert load_target(root).train == "python rnn.py" and load_target(root).scope[-1] == "rnn.py"  # the script answered


def test_a_scanned_script_that_links_out_of_the_repository_is_not_read(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text(CHAR_MODEL.replace("test loss", "secret loss"))
    root = repo(tmp_path, {"README.md": "a model\n"})
    (root / "lm.py").symlink_to(outside)
    found = detect(root)
    assert (found.train_cmd, found.script, found.metric) == (None, None, None)


def test_a_validation_metric_printed_mid_line_beats_a_training_loss_printed_alone(tmp_path):
    script = (
        "for epoch in range(3):\n    loss.backward()\n    print(f'train_loss: {loss}')\n"
        "    print(f'epoch {epoch} | val loss: {val}')\n"
    )
    found = detect(repo(tmp_path, {"fit.py": script}), "python fit.py")
    assert (found.metric, found.how("val_loss"), found.how("train_loss")) == ("val_loss", "inline", "stdout")
