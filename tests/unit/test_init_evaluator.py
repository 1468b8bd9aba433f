"""The evaluator `senpai init` writes prints the same kind of quantity as the train metric, with its
own direction, and `senpai validate` runs it on a sample and holds what it prints against
senpai.yaml (issue 24, finding 4: a loss-trained classifier got `direction: minimize` and an
evaluator printing accuracy, so the verifier would have merged candidates that classify worse).

scikit-learn and skops (scipy: seconds) are imported by the tests and helpers that fit or save a model,
so collecting the suite does not import them."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from third_party import repo
from walled import walls_at

from senpai.cli.confine import write_inside
from senpai.cli.main import cli
from senpai.cli.quantities import QUANTITIES, guess
from senpai.cli.scaffold import EVALUATOR, Answers, detect, render
from senpai.config.target import load_target, named_direction
from senpai.errors import ConfigError
from senpai.ledger import stats
from senpai.verifier.artifacts import digest
from senpai.verifier.evaluate import EvaluatorFiles, Trained, score_step

LOSS_CLASSIFIER = '''"""A classifier trained and reported on its validation log loss."""
import argparse

from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split

parser = argparse.ArgumentParser()
parser.add_argument("--C", type=float, default=0.5)
args = parser.parse_args()
x, y = load_breast_cancer(return_X_y=True)
x_train, x_val, y_train, y_val = train_test_split(x, y, random_state=0)
model = LogisticRegression(C=args.C, max_iter=500).fit(x_train, y_train)
print(f"val_loss: {log_loss(y_val, model.predict_proba(x_val)):.4f}")
'''

# a loss of a model init cannot classify (no scikit-learn estimator it knows); a numpy network's, so
# init's check imports numpy and safetensors, not scikit-learn (what the test asks is the quantity)
UNKNOWN_LOSS = (
    'import json\nfrom safetensors.numpy import save_file\nparams = json.load(open("params.json"))\nprint(f"val_loss: {0.5}")\n'
)


def run(*args: str) -> tuple[int, str]:
    """(exit status, output) of a senpai command, as the console script exits (ConfigError: 2)."""
    result = CliRunner().invoke(cli, list(args))
    if isinstance(result.exception, ConfigError):
        return 2, result.output + str(result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def edit(root: Path, **holdout) -> None:
    """Set keys of senpai.yaml's holdout section (None deletes one)."""
    cfg = yaml.safe_load((root / "senpai.yaml").read_text())
    cfg["holdout"].update(holdout)
    cfg["holdout"] = {k: v for k, v in cfg["holdout"].items() if v is not None}
    (root / "senpai.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def holdout_csv(folder: Path, x: np.ndarray, y: np.ndarray) -> Path:
    folder.mkdir(parents=True)
    header = ",".join([*(f"f{i}" for i in range(x.shape[1])), "label"])
    np.savetxt(folder / "holdout.csv", np.column_stack([x, y]), delimiter=",", header=header, comments="")
    return folder


def score(root: Path, model, holdout: Path, work: Path) -> float:
    """What the verifier's score step gets from init's evaluator for `model` (saved with skops)."""
    import skops.io

    artifact = work / "artifact"
    artifact.mkdir(parents=True)
    skops.io.dump(model, artifact / "model.skops")
    target = load_target(root)
    trained = Trained(
        side="candidate", seed=0, returncode=0, seconds=1.0, compute=None, artifact=str(artifact), digest=digest(artifact),
        tail="",
    )  # fmt: skip
    evaluator = EvaluatorFiles.from_tree(root, target.holdout.files)
    walls = walls_at(work.with_name(work.name + "-senpai"))
    out, refused = score_step(target.holdout, evaluator, trained, holdout, work, 120, walls)
    assert refused is None and out.returncode == 0, refused or out.output
    return out.value(target.holdout.metric)


@pytest.mark.long
def test_a_loss_trained_classifier_gets_a_loss_evaluator_and_the_verifier_prefers_the_better_model(tmp_path):
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    root = repo(tmp_path, {"train.py": LOSS_CLASSIFIER})
    code, said = run("init", str(root), "--yes")
    assert code == 0, said
    t = load_target(root)
    assert (t.metric.name, t.metric.direction) == ("val_loss", "minimize")
    assert (t.holdout.metric, t.holdout.direction, t.holdout_direction) == ("holdout_log_loss", "minimize", "minimize")
    # init's check is `senpai validate`'s (`validate.check_target`): it ran the evaluator on its sample
    assert "evaluator run: on the sample holdout.sample wrote, it printed holdout_log_loss 0." in said
    assert "holdout metric: holdout_log_loss (minimize)" in said, said

    # the evaluator prints the holdout log loss: a better classifier scores lower, and the verifier's
    # rule, judged in the holdout's direction, prefers it
    x, y = load_breast_cancer(return_X_y=True)
    holdout = holdout_csv(tmp_path / "holdout", x[400:], y[400:])
    good = make_pipeline(StandardScaler(), LogisticRegression(C=1.0)).fit(x[:400], y[:400])
    poor = make_pipeline(StandardScaler(), LogisticRegression(C=1e-4)).fit(x[:400], y[:400])
    values = {name: score(root, m, holdout, tmp_path / name) for name, m in (("good", good), ("poor", poor))}
    assert values["good"] == pytest.approx(log_loss(y[400:], good.predict_proba(x[400:])), abs=1e-6)
    assert values["good"] < values["poor"]
    assert good.score(x[400:], y[400:]) > poor.score(x[400:], y[400:])  # and it is the better classifier
    j = stats.judge(t.holdout, t.holdout_direction, [values["good"]] * 3, [values["poor"] + d for d in (0, 1e-3, 2e-3)])
    assert j.passed and j.improvement > 0


def test_init_asks_what_the_evaluator_prints_when_it_cannot_tell(tmp_path):
    root = repo(tmp_path, {"train.py": UNKNOWN_LOSS, "params.json": '{"lr": 0.1}'})
    code, said = run("init", str(root), "--yes")
    assert code == 2 and "the holdout metric (--holdout-metric): val_loss could be a classifier's or a regressor's" in said
    assert sorted(p.name for p in root.iterdir()) == ["params.json", "train.py"]  # nothing written
    result = CliRunner().invoke(cli, ["init", str(root)], input="\n\n\n\nmse\n")
    assert result.exit_code == 0, result.output
    assert "Holdout metric the evaluator prints (accuracy, log_loss, f1, auc, mse, rmse, mae, r2):" in result.output
    assert (load_target(root).holdout.metric, load_target(root).holdout_direction) == ("holdout_mse", "minimize")


# LOSS_CLASSIFIER's shape in the standard library, for the tests of validate's run of the evaluator:
# init renders it the same scikit-learn evaluator, and validate's check of what the train script
# imports then imports no scikit-learn
STDLIB_CLASSIFIER = '''"""A classifier's validation log loss, as a formula of its one param."""
import argparse
import math

parser = argparse.ArgumentParser()
parser.add_argument("--C", type=float, default=0.5)
args = parser.parse_args()
print(f"val_loss: {-math.log(1 / (1 + math.exp(-args.C))):.4f}")
'''


def scaffolded(tmp_path: Path) -> Path:
    """A repository with the files `senpai init --yes` writes for LOSS_CLASSIFIER (not validated),
    its train.py STDLIB_CLASSIFIER."""
    answers = Answers("python train.py", "val_loss", "minimize", "params.json", "log_loss")
    root = repo(tmp_path, {"train.py": STDLIB_CLASSIFIER})
    files = render(root, answers, detect(root))
    real = repo(tmp_path / "sklearn", {"train.py": LOSS_CLASSIFIER})
    assert files[EVALUATOR] == render(real, answers, detect(real))[EVALUATOR]  # the evaluator LOSS_CLASSIFIER gets
    write_inside(root, files)
    return root


# STDLIB_CLASSIFIER saving numpy weights with safetensors: init renders it the numpy weights
# evaluator (its own model, eval/model.py, a stub; the sample needs none), whose validate imports
# numpy and safetensors where the skops one imports scikit-learn and skops in each interpreter
NUMPY_CLASSIFIER = STDLIB_CLASSIFIER.replace("import math\n", "import math\n\nfrom safetensors.numpy import save_file\n")


def test_validate_runs_the_evaluator_and_names_a_metric_it_does_not_print(tmp_path):
    # what is tested is validate's run of an evaluator and its reading of what that prints, whichever
    # evaluator: the numpy weights one (the skops one's run on its sample: the loss-trained classifier's test)
    answers = Answers("python train.py", "val_loss", "minimize", "params.json", "log_loss")
    root = repo(tmp_path, {"train.py": NUMPY_CLASSIFIER})
    files = render(root, answers, detect(root))
    assert "from safetensors.numpy import load_file" in files[EVALUATOR] and "import skops" not in files[EVALUATOR]
    write_inside(root, files)
    # senpai.yaml now says accuracy (maximize): coherent on paper, but the evaluator prints a log loss
    edit(root, metric="holdout_accuracy", direction="maximize")
    code, said = run("validate", str(root))
    assert code == 2, said
    assert (
        "holdout.command printed holdout_log_loss on the sample, but holdout.metric is 'holdout_accuracy': "
        "the verifier would find no holdout_accuracy"
    ) in said
    edit(root, metric="holdout_log_loss", direction="minimize", guards={"holdout_accuracy": {"direction": "maximize"}})
    code, said = run("validate", str(root))
    assert code == 2 and "but holdout.guards.holdout_accuracy is 'holdout_accuracy'" in said
    edit(root, guards=None, sample="python eval/evaluate.py --artifact {artifact} --holdout {holdout}")
    code, said = run("validate", str(root))  # "sample" that scores an empty folder instead of writing one
    assert code == 2 and "holdout.sample exited 2: error: no model.safetensors in the artifact directory" in said


def test_validate_refuses_the_evaluator_and_direction_init_wrote_before(tmp_path):
    # what init wrote on b5ce738 for a loss: the model's own score() as holdout_score, judged as minimize
    root = scaffolded(tmp_path)
    edit(root, metric="holdout_score", direction=None, sample=None)
    code, said = run("validate", str(root))
    assert code == 2, said
    assert (
        "holdout.metric 'holdout_score' reads as higher is better, but metric.direction (holdout.direction is not set, "
        "so the metric's holds) is minimize, so the verifier would merge candidates that do worse on it; "
        "set holdout.direction to maximize"
    ) in said
    edit(root, direction="maximize")  # declared: fine, and without a sample nothing is run
    code, said = run("validate", str(root))
    assert code == 0 and "evaluator run: no (no holdout.sample" in said, said


def test_a_sample_command_must_name_where_it_writes(tmp_path):
    root = scaffolded(tmp_path)
    edit(root, sample="python eval/evaluate.py --sample")
    code, said = run("validate", str(root))
    assert code == 2 and "holdout.sample must contain {artifact} and {holdout}" in said


def test_validate_refuses_evaluator_files_holding_a_link_out(tmp_path):
    root = scaffolded(tmp_path)
    (root / "eval" / "notes.txt").symlink_to("/etc/hostname")
    edit(root, files=["eval/"])
    code, said = run("validate", str(root))
    assert code == 2 and "holdout.files cannot be laid out as the score step lays them out: 'eval/notes.txt' is a link" in said


@pytest.fixture(scope="module")
def datasets() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(x, y) of a classifier's data set (breast cancer) and of a regressor's (diabetes), from scikit-learn."""
    from sklearn.datasets import load_breast_cancer, load_diabetes

    return load_breast_cancer(return_X_y=True), load_diabetes(return_X_y=True)


def unfitted(model: str | None):
    """An unfitted scikit-learn estimator for `model`: a scaled logistic regression for a "classifier", else a linear one."""
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression()) if model == "classifier" else LinearRegression()


def direct(name: str, m, x: np.ndarray, y: np.ndarray) -> float:
    """The quantity QUANTITIES[name] of model `m` on (x, y), computed by scikit-learn itself."""
    from sklearn.metrics import (
        accuracy_score,
        f1_score,
        log_loss,
        mean_absolute_error,
        mean_squared_error,
        r2_score,
        roc_auc_score,
    )

    return {
        "accuracy": lambda: accuracy_score(y, m.predict(x)),
        "log_loss": lambda: log_loss(y, m.predict_proba(x)),
        "f1": lambda: f1_score(y, m.predict(x), average="macro"),
        "auc": lambda: roc_auc_score(y, m.predict_proba(x)[:, 1]),
        "mse": lambda: mean_squared_error(y, m.predict(x)),
        "rmse": lambda: math.sqrt(mean_squared_error(y, m.predict(x))),
        "mae": lambda: mean_absolute_error(y, m.predict(x)),
        "r2": lambda: r2_score(y, m.predict(x)),
    }[name]()


@pytest.mark.parametrize("name", list(QUANTITIES))
def test_each_evaluator_init_writes_computes_its_quantity_on_a_real_model(tmp_path, name, datasets):
    import skops.io

    q = QUANTITIES[name]
    root = repo(tmp_path, {"train.py": LOSS_CLASSIFIER})
    text = render(root, Answers("python train.py", "val_loss", "minimize", "params.json", name), detect(root))[EVALUATOR]
    (tmp_path / "evaluate.py").write_text(text)
    spec = importlib.util.spec_from_file_location("evaluate", tmp_path / "evaluate.py")
    evaluator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(evaluator)
    assert evaluator.METRIC == f"holdout_{name}" and f"{q.metric}: <{q.what}; " in text
    x, y = datasets[0] if q.model == "classifier" else datasets[1]
    model = unfitted(q.model).fit(x[:300], y[:300])
    (tmp_path / "model").mkdir()
    skops.io.dump(model, tmp_path / "model" / "model.skops")
    got = evaluator.score(evaluator.load_model(tmp_path / "model"), x[300:], y[300:].astype(float))
    assert got == pytest.approx(direct(name, model, x[300:], y[300:]), rel=1e-9)
    with pytest.raises(ValueError, match="no model.skops in the artifact directory"):
        evaluator.load_model(tmp_path)  # what validate says of a sample that wrote none
    (tmp_path / "a").mkdir(), (tmp_path / "h").mkdir()
    evaluator.write_sample(tmp_path / "a", tmp_path / "h")  # the sample: a model of the right kind it can score
    rows = np.loadtxt(tmp_path / "h" / "holdout.csv", delimiter=",", skiprows=1, ndmin=2)
    assert math.isfinite(evaluator.score(evaluator.load_model(tmp_path / "a"), rows[:, :-1], rows[:, -1]))


@pytest.mark.parametrize(
    ("metric", "model", "expected"),
    [
        ("val_loss", "classifier", "log_loss"),
        ("val_loss", "regressor", "mse"),
        ("val_loss", None, None),
        ("val_accuracy", None, "accuracy"),
        ("val_accuracy", "regressor", None),
        ("valid_rmse", "regressor", "rmse"),
        ("val_log_loss", None, "log_loss"),
        ("nll", "classifier", "log_loss"),
        ("val_score", "regressor", "r2"),
        ("val_perplexity", "classifier", None),
    ],
)
def test_the_quantity_init_picks(metric, model, expected):
    assert guess(metric, model) == expected


@pytest.mark.parametrize(
    ("name", "direction"),
    [
        ("holdout_accuracy", "maximize"),
        ("holdout_score", "maximize"),
        ("holdout_log_loss", "minimize"),
        ("val_rmse", "minimize"),
        ("neg_log_loss", None),
        ("score_loss", None),
        ("holdout_value", None),
    ],
)
def test_the_direction_a_name_states(name, direction):
    assert named_direction(name) == direction


def test_init_tells_a_classifier_from_a_regressor():
    assert detect_model("from sklearn.ensemble import RandomForestClassifier\n") == "classifier"
    assert detect_model("import sklearn.linear_model as lm\nm = lm.Ridge()\n") == "regressor"
    assert detect_model("import torch\n") is None


def detect_model(source: str) -> str | None:
    import ast

    from senpai.cli.quantities import estimator

    return estimator(ast.parse(source))


# A network saved as safetensors (numpy arrays), built by the module its train script imports.
NET = """import numpy as np


class Net:
    def load_state_dict(self, weights):
        self.weight, self.bias = weights["weight"], weights["bias"]

    def __call__(self, x):
        return x @ self.weight.T + self.bias


def build(**params):
    return Net()
"""
FIT_NET = "import json\nfrom safetensors.numpy import save_file\n\nfrom net import Net\n\nprint(f'val_loss: {0.5}')\n"


@pytest.mark.parametrize("name", list(QUANTITIES))
def test_each_weights_evaluator_computes_its_quantity_with_numpy_alone(tmp_path, name, datasets):
    q = QUANTITIES[name]
    root = repo(tmp_path, {"fit.py": FIT_NET, "net.py": NET, "params.json": '{"lr": 0.1}'})
    found = detect(root, "python fit.py")
    assert (found.framework, found.model_file) == ("numpy", "net.py")
    write_inside(root, render(root, Answers("python fit.py", "val_loss", "minimize", "params.json", name), found), False)
    assert load_target(root).holdout.files == [EVALUATOR, "net.py"] and load_target(root).is_protected("net.py")
    spec = importlib.util.spec_from_file_location("evaluate", root / EVALUATOR)
    evaluator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(evaluator)
    assert evaluator.METRIC == f"holdout_{name}" and "import sklearn" not in (root / EVALUATOR).read_text()
    x, y = datasets[0] if q.model == "classifier" else datasets[1]
    model = unfitted(q.model).fit(x[:300], y[:300])
    # what a network outputs: logits (their softmax is the classifier's probabilities), or predictions
    out = np.log(model.predict_proba(x[300:])) if q.model == "classifier" else model.predict(x[300:])
    assert evaluator.score(out, y[300:].astype(float)) == pytest.approx(direct(name, model, x[300:], y[300:]), rel=1e-9)
    (tmp_path / "a").mkdir(), (tmp_path / "h").mkdir()
    evaluator.write_sample(tmp_path / "a", tmp_path / "h")  # the sample: weights of the right kind it can score
    rows = np.loadtxt(tmp_path / "h" / "holdout.csv", delimiter=",", skiprows=1, ndmin=2)
    sample = evaluator.load_model(tmp_path / "a")
    assert math.isfinite(evaluator.score(evaluator.outputs(sample, rows[:, :-1]), rows[:, -1]))
    # the weights of a trained network load into the module net.py builds; weights that do not fit are named
    weights = {"weight": np.ones((2, 3), np.float32), "bias": np.zeros(2, np.float32)}
    from safetensors.numpy import save_file

    save_file(weights, str(tmp_path / "a" / "model.safetensors"), metadata={"params": '{"lr": 0.1}'})
    assert type(evaluator.load_model(tmp_path / "a")).__name__ == "Net"
    save_file({"bias": weights["bias"]}, str(tmp_path / "a" / "model.safetensors"))
    with pytest.raises(ValueError, match="does not fit the module net.py builds"):
        evaluator.load_model(tmp_path / "a")


def test_a_pytorch_script_gets_a_safetensors_evaluator_building_the_module_its_model_file_defines(tmp_path):
    model = "import torch.nn as nn\n\n\nclass GPT(nn.Module):\n    pass\n"
    fit = "import torch\n\nfrom model import GPT\n\nprint(f'val_loss: {0.5}')\n"
    root = repo(tmp_path, {"fit.py": fit, "model.py": model, "params.json": '{"lr": 0.1}'})
    found = detect(root, "python fit.py")
    assert (found.framework, found.model_file) == ("torch", "model.py")
    files = render(root, Answers("python fit.py", "val_loss", "minimize", "params.json", "log_loss"), found)
    text = files[EVALUATOR]
    compile(text, EVALUATOR, "exec")  # torch is not installed here: the torch variant is read, not run
    assert "from safetensors.torch import load_file" in text and "torch.load(" not in text and 'MODEL_FILE = "model.py"' in text
    assert "files: [eval/evaluate.py, model.py]" in files["senpai.yaml"] and "eval/model.py" not in files
    # a script that defines its network itself: the evaluator builds it from eval/model.py, a stub to fill in
    (root / "model.py").unlink()
    found = detect(root, "python fit.py")
    files = render(root, Answers("python fit.py", "val_loss", "minimize", "params.json", "log_loss"), found)
    assert found.model_file is None and "def build(**params)" in files["eval/model.py"]
    assert (
        'MODEL_FILE = "eval/model.py"' in files[EVALUATOR] and "files: [eval/evaluate.py, eval/model.py]" in files["senpai.yaml"]
    )
