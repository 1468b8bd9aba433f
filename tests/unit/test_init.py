"""`senpai init`: what it detects in a training repository, what it asks, what it writes, and the
snippets it gives when the script does not fit the target contract."""

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from third_party import repo
from torch_absent import initialised

from senpai.cli.confine import write_inside
from senpai.cli.main import cli
from senpai.cli.scaffold import Answers, advice, detect, guess_direction
from senpai.config.target import load_target
from senpai.errors import ConfigError

SKLEARN_ARGPARSE = '''"""Logistic regression on the wine data."""
import argparse

from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

parser = argparse.ArgumentParser()
parser.add_argument("--C", type=float, default=0.5)
parser.add_argument("--max-iter", type=int, default=200)
parser.add_argument("--penalty", default="l2")
parser.add_argument("--data")
args = parser.parse_args()
x, y = load_wine(return_X_y=True)
x_train, x_val, y_train, y_val = train_test_split(x, y, random_state=0)
model = LogisticRegression(C=args.C, max_iter=args.max_iter, penalty=args.penalty).fit(x_train, y_train)
print(f"train_accuracy: {model.score(x_train, y_train)}")
print(f"val_accuracy: {model.score(x_val, y_val):.4f}")
'''

# SKLEARN_ARGPARSE's twin in numpy, its weights saved with safetensors, for the tests of what init
# writes and asks whatever the framework: init writes its numpy weights evaluator, whose validate
# imports no scikit-learn (test_yes_writes_a_target_that_validates keeps the scikit-learn path).
NUMPY_ARGPARSE = '''"""Logistic regression in numpy on synthetic two-class data."""
import argparse

import numpy as np
from safetensors.numpy import save_file

parser = argparse.ArgumentParser()
parser.add_argument("--C", type=float, default=0.5)
parser.add_argument("--max-iter", type=int, default=200)
parser.add_argument("--penalty", default="l2")
parser.add_argument("--data")
args = parser.parse_args()
x = np.random.default_rng(0).normal(size=(200, 4))
y = (x[:, 0] - x[:, 1] > 0).astype(float)
w = np.zeros(4)
for _ in range(args.max_iter):
    p = 1 / (1 + np.exp(-x[:150] @ w))
    w -= 0.1 * (x[:150].T @ (p - y[:150]) / 150 + w / args.C)
print(f"train_accuracy: {np.mean((x[:150] @ w > 0) == y[:150])}")
print(f"val_accuracy: {np.mean((x[150:] @ w > 0) == y[150:]):.4f}")
save_file({"weight": w}, "model.safetensors")
'''

# A PyTorch-style script: text only (torch is not installed); it reads params.yaml, logs to W&B.
TORCH_WANDB = """import os
import torch
import wandb
import yaml

params = yaml.safe_load(open("params.yaml"))
torch.manual_seed(int(os.environ.get("SEED", "0")))
run = wandb.init(config=params)
model = torch.nn.Linear(10, 1)
opt = torch.optim.AdamW(model.parameters(), lr=params["lr"])
for epoch in range(params["epochs"]):
    loss = model(torch.randn(32, 10)).pow(2).mean()
    loss.backward(); opt.step(); opt.zero_grad()
    wandb.log({"epoch": epoch, "train_loss": loss.item()})
wandb.log({"val_loss": 0.5, "val_perplexity": 1.6})
print(f"val_loss={0.5}")
"""

TORCH_JSON = """import json
import torch

def main():
    model = torch.nn.Linear(4, 2)
    metrics = {"val_f1": 0.8}
    print(json.dumps({"val_f1": 0.8, "epoch": 3}))
    json.dump({"val_f1": 0.8}, open("metrics.json", "w"))

if __name__ == "__main__":
    main()
"""


def detect_text(tmp_path: Path, files: dict[str, str]):
    return detect(repo(tmp_path, files))


def test_detects_an_argparse_sklearn_script(tmp_path):
    found = detect_text(tmp_path, {"train.py": SKLEARN_ARGPARSE})
    assert (found.train_cmd, found.script, found.framework) == ("python train.py", "train.py", "sklearn")
    assert found.metric == "val_accuracy" and found.how("val_accuracy") == "stdout"
    assert found.argparse_defaults == {"C": 0.5, "max_iter": 200, "penalty": "l2"}  # --data has no default
    assert found.params_file is None


def test_detects_a_pytorch_wandb_script_and_its_params_file(tmp_path):
    found = detect_text(tmp_path, {"main.py": TORCH_WANDB, "params.yaml": "lr: 0.001\nepochs: 5\n"})
    assert (found.train_cmd, found.framework, found.params_file) == ("python main.py", "torch", "params.yaml")
    # also printed as `val_loss=`, which senpai does not read
    assert found.metric == "val_loss" and found.how("val_loss") == "wandb"
    assert guess_direction(found.metric) == "minimize"
    a = Answers("python main.py", "val_loss", "minimize", "params.yaml", "log_loss")
    # it reads params.yaml and SEED, reports val_loss to W&B: the weights, and where the evaluator builds the network
    network, weights = advice(a, found)
    assert "defines its network itself" in network.why and "eval/model.py" in network.snippet
    assert "save_file(model.state_dict()" in weights.snippet and "torch.save" in weights.why


def test_a_metric_printed_as_json_is_read_as_it_is_and_one_only_in_a_file_gets_a_print_snippet(tmp_path):
    found = detect_text(tmp_path, {"Makefile": "train:\n\tpython -u src/fit.py --epochs 3\n", "src/fit.py": TORCH_JSON})
    assert (found.train_cmd, found.script) == ("make train", "src/fit.py")
    assert found.metric == "val_f1" and found.how("val_f1") == "json"
    tips = advice(Answers("make train", "val_f1", "maximize", "params.json", "f1"), found)
    assert not any("line of its own" in t.why for t in tips)  # senpai.job.measure reads a JSON line
    make = {"Makefile": "train:\n\tpython -u src/fit.py --epochs 3\n"}
    filed = detect_text(tmp_path / "filed", {**make, "src/fit.py": TORCH_JSON.replace("print(json.dumps(", "str((")})
    assert filed.how("val_f1") == "file"
    tips = advice(Answers("make train", "val_f1", "maximize", "params.json", "f1"), filed)
    assert tips[0].snippet == 'print(f"val_f1: {val_f1}")' and "writes it to a file" in tips[0].why
    assert any("params.json" in t.why and "json.load(f)" in t.snippet for t in tips)
    assert any("SEED" in t.why for t in tips) and any("safetensors" in t.snippet for t in tips)


def test_a_pyproject_train_script_is_found(tmp_path):
    pyproject = '[project]\nname = "p"\n[project.scripts]\nmy-train = "pkg.train:main"\n'
    found = detect_text(tmp_path, {"pyproject.toml": pyproject, "src/pkg/train.py": "print('loss:', 1.0)\n"})
    assert (found.train_cmd, found.script, found.metric) == ("my-train", "src/pkg/train.py", "loss")


@pytest.mark.parametrize(
    ("name", "direction"),
    [("val_loss", "minimize"), ("rmse", "minimize"), ("val_bpb", "minimize"), ("accuracy", "maximize"), ("val_auc", "maximize")],
)
def test_direction_from_the_name(name, direction):
    assert guess_direction(name) == direction


@pytest.mark.long
def test_yes_writes_a_target_that_validates(tmp_path):
    root = repo(tmp_path, {"train.py": SKLEARN_ARGPARSE, "data/README": "fixed splits\n"})
    result = CliRunner().invoke(cli, ["init", str(root), "--yes"])
    assert result.exit_code == 0, result.output
    t = load_target(root)
    assert (t.train, t.metric.name, t.metric.direction) == ("python train.py", "val_accuracy", "maximize")
    assert t.metric.source == "stdout"
    assert json.loads((root / "params.json").read_text()) == {"C": 0.5, "max_iter": 200, "penalty": "l2"}
    assert set(t.params.space) == {"C", "max_iter", "penalty"} and t.params.space["C"].log
    assert t.protected == ["data/", "eval/", "senpai.yaml"] and t.scope == ["params.json", "train.py"]
    assert "parser.set_defaults(**json.load(f))" in result.output  # what the script must add to read params.json
    assert f"validate {root.resolve()}" in result.output and f"demo --example {root.resolve()} --holdout" in result.output
    # init's check is `senpai validate`'s (`validate.check_target`) on the files it wrote, so a second
    # validate of them, unchanged, would run the same four interpreters (each importing scikit-learn) again
    assert "evaluator run: on the sample holdout.sample wrote, it printed holdout_accuracy " in result.output
    assert "holdout metric: holdout_accuracy (maximize)" in result.output
    assert "val_accuracy" in (root / "program.md").read_text()


def test_existing_files_are_kept_unless_force(tmp_path):
    root = repo(tmp_path, {"train.py": NUMPY_ARGPARSE, "program.md": "# mine\n"})
    result = CliRunner().invoke(cli, ["init", str(root), "--yes"])
    assert isinstance(result.exception, ConfigError) and "program.md already exist" in str(result.exception)
    assert (root / "program.md").read_text() == "# mine\n" and not (root / "senpai.yaml").exists()
    assert CliRunner().invoke(cli, ["init", str(root), "--yes", "--force"]).exit_code == 0
    assert (root / "program.md").read_text() != "# mine\n"


def test_yes_lists_everything_it_cannot_guess(tmp_path):
    root = repo(tmp_path, {"notes.txt": "nothing to train\n"})
    result = CliRunner().invoke(cli, ["init", str(root), "--no-input"])
    message = str(result.exception)
    assert isinstance(result.exception, ConfigError)
    assert "--train-cmd" in message and "--metric" in message and "--params-file" in message
    result = CliRunner().invoke(cli, ["init", str(root), "--no-input", "--train-cmd", "python fit.py", "--metric", "auc"])
    assert "--params-file" in str(result.exception) and "--train-cmd" not in str(result.exception)


def test_a_metric_name_senpai_cannot_read_from_stdout_is_refused(tmp_path):
    root = repo(tmp_path, {"train.py": SKLEARN_ARGPARSE})
    result = CliRunner().invoke(cli, ["init", str(root), "--yes", "--metric", "val accuracy"])
    assert isinstance(result.exception, ConfigError) and "A-Z a-z 0-9" in str(result.exception)
    assert not (root / "senpai.yaml").exists()


def test_prompts_offer_the_detected_defaults(tmp_path):
    root = repo(tmp_path, {"main.py": TORCH_WANDB, "params.yaml": "lr: 0.001\nepochs: 5\nopt: adamw\n"})
    # accept the command, pick another metric, accept its guessed direction, accept the params file,
    # and say what the evaluator prints: init cannot tell for a perplexity
    result = CliRunner().invoke(cli, ["init", str(root)], input="\nval_perplexity\n\n\nlog_loss\n")
    initialised(result)
    assert "Train command [python main.py]:" in result.output
    assert "Primary metric (a validation metric) [val_loss]:" in result.output
    assert "Direction (maximize, minimize) [minimize]:" in result.output and "Params file [params.yaml]:" in result.output
    assert "but val_perplexity names no quantity init knows; pick what the evaluator prints: accuracy" in result.output
    assert "Holdout metric the evaluator prints (accuracy, log_loss, f1, auc, mse, rmse, mae, r2):" in result.output
    t = load_target(root)
    assert (t.train, t.metric.name, t.metric.direction) == ("python main.py", "val_perplexity", "minimize")
    assert t.metric.source == "wandb"
    assert yaml.safe_load((root / "senpai.yaml").read_text())["params"]["space"] == {
        "lr": {"type": "float", "low": 0.0001, "high": 0.01, "log": True},
        "epochs": {"type": "int", "low": 2, "high": 5},  # what one run costs: never above today's
        "opt": {"type": "categorical", "choices": ["adamw"]},
    }
    # a PyTorch model's evaluator loads its safetensors weights into the network eval/model.py builds
    assert "from safetensors.torch import load_file" in (root / "eval/evaluate.py").read_text()
    assert "def build(**params)" in (root / "eval/model.py").read_text()


def test_a_flag_skips_its_prompt(tmp_path):
    root = repo(tmp_path, {"train.py": NUMPY_ARGPARSE})
    args = ["--metric", "train_accuracy", "--direction", "maximize", "--holdout-metric", "accuracy"]
    result = CliRunner().invoke(cli, ["init", str(root), *args], input="\n\n")
    assert result.exit_code == 0, result.output
    assert "Primary metric" not in result.output and "Direction" not in result.output and "Holdout metric" not in result.output
    assert load_target(root).metric.name == "train_accuracy"


@pytest.mark.parametrize(
    "files",
    [
        {"pyproject.toml": "project = 1\n"},
        {"pyproject.toml": "[project]\nscripts = 'x'\n"},
        {"pyproject.toml": "a = " + "[" * 200_000 + "]" * 200_000 + "\n"},
        {"train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--x', default={[]: 1})\n"},
    ],
)
def test_a_hostile_repository_is_detected_as_far_as_it_goes_never_a_crash(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    detect(tmp_path)


def test_a_train_script_behind_a_linked_folder_or_outside_the_repository_is_not_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "train.py").write_text("import wandb\nwandb.log({'secret_metric': 1})\n")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "src").symlink_to(outside, target_is_directory=True)  # src/train.py is one of the scripts init looks for
    assert (detect(root).script, detect(root).metric) == (None, None)
    (root / "Makefile").write_text("train:\n\tpython ../outside/train.py\n")
    assert (detect(root).train_cmd, detect(root).script, detect(root).source) == ("make train", None, "")


def test_a_train_script_that_links_out_of_the_repository_is_not_read(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("import wandb\nwandb.log({'secret_metric': 1})\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").symlink_to(outside)
    found = detect(repo)
    assert found.train_cmd is None and found.source == "" and found.metric is None


# --- init writes only inside the repository (issue 24, finding 3) -------------------------------


def init(root: Path, *args: str) -> tuple[int, str]:
    """(exit status, what init said) of `senpai init ROOT --yes ARGS`, run as the console script runs it."""
    result = CliRunner().invoke(cli, ["init", str(root), "--yes", *args])
    if isinstance(result.exception, ConfigError):
        return 2, result.output + str(result.exception)
    return result.exit_code, result.output


def written(root: Path) -> list[str]:
    """What init left in `root` besides the script: nothing, after a refusal."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.name != "train.py")


@pytest.mark.parametrize("name", ["program.md", "params.json", "senpai.yaml", "eval/evaluate.py"])
def test_a_dangling_symlink_where_init_writes_is_refused_and_nothing_is_written(tmp_path, name):
    root = repo(tmp_path, {"train.py": SKLEARN_ARGPARSE})
    outside = tmp_path / "outside" / "planted"
    outside.parent.mkdir()
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).symlink_to(outside)  # dangling: a write by path would create the file outside
    code, said = init(root)
    assert code == 2 and f"{root.resolve() / name}: a symlink (to {outside})" in said
    assert not outside.exists() and list(outside.parent.iterdir()) == []
    left = [p for p in written(root) if p not in (name, "eval")]
    assert left == []  # refused before anything was written


def test_an_eval_folder_that_links_out_of_the_repository_is_refused(tmp_path):
    root = repo(tmp_path, {"train.py": SKLEARN_ARGPARSE})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "eval").symlink_to(elsewhere, target_is_directory=True)
    code, said = init(root, "--force")
    assert code == 2 and f"{root.resolve() / 'eval'}: a symlink" in said
    assert list(elsewhere.iterdir()) == [] and written(root) == ["eval"]


def test_force_never_overwrites_a_file_outside_through_a_symlink(tmp_path):
    root = repo(tmp_path, {"train.py": SKLEARN_ARGPARSE})
    victim = tmp_path / "victim.yaml"
    victim.write_text("keep me\n")
    (root / "senpai.yaml").symlink_to(victim)
    code, said = init(root, "--force")
    assert code == 2 and "senpai.yaml: a symlink" in said
    assert victim.read_text() == "keep me\n" and (root / "senpai.yaml").is_symlink()
    assert not (root / "program.md").exists()


def test_force_replaces_a_hard_link_instead_of_writing_through_it(tmp_path):
    root = repo(tmp_path, {"train.py": NUMPY_ARGPARSE})
    victim = tmp_path / "victim.md"
    victim.write_text("keep me\n")
    (root / "program.md").hardlink_to(victim)
    assert init(root, "--force")[0] == 0
    assert victim.read_text() == "keep me\n" and "val_accuracy" in (root / "program.md").read_text()
    assert (root / "program.md").stat().st_ino != victim.stat().st_ino


@pytest.mark.parametrize("params_file", ["../params.json", "{tmp}/abs/params.json", "conf/../../params.json"])
def test_a_params_file_outside_the_repository_is_refused(tmp_path, params_file):
    root = repo(tmp_path, {"train.py": SKLEARN_ARGPARSE})
    (tmp_path / "abs").mkdir()
    code, said = init(root, "--params-file", params_file.format(tmp=tmp_path))
    assert code == 2 and "not a path inside the repository" in said
    assert not (tmp_path / "params.json").exists() and list((tmp_path / "abs").iterdir()) == []
    assert written(root) == []


def test_a_params_file_behind_a_linked_folder_is_neither_read_nor_written(tmp_path):
    root = repo(tmp_path, {"train.py": SKLEARN_ARGPARSE})
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "params.json").write_text('{"api_key": "hunter2"}')
    (root / "conf").symlink_to(secrets, target_is_directory=True)
    code, said = init(root, "--params-file", "conf/params.json")
    assert code == 2 and f"{root.resolve() / 'conf'}: a symlink" in said
    assert "hunter2" not in said and written(root) == ["conf"]


def test_a_failed_write_leaves_the_repository_as_it_was(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    # the second file's temporary name is over the 255 bytes a name may have: its write fails
    files = {"a.txt": "first\n", "new/" + "n" * 250: "second\n"}
    with pytest.raises(ConfigError, match="cannot write .*File name too long"):
        write_inside(root, files)
    assert list(root.iterdir()) == []  # no a.txt, no temporary, no new/


def test_write_inside_refuses_every_link_before_writing_anything(tmp_path):
    root = tmp_path / "repo"
    (root / "deep").mkdir(parents=True)
    (root / "deep" / "link").symlink_to(tmp_path)
    with pytest.raises(ConfigError) as e:
        write_inside(root, {"ok.txt": "x", "deep/link/x.txt": "y", "/abs": "z"})
    assert "deep/link: a symlink" in str(e.value) and "'/abs': not a path inside" in str(e.value)
    assert sorted(p.name for p in root.rglob("*")) == ["deep", "link"] and not (tmp_path / "x.txt").exists()
