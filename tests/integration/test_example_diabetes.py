"""The diabetes example target (the minimised metric): its senpai.yaml loads and passes `validate`'s
checks, the repository holds the fixed train and validation splits but never the holdout, train.py
writes a safe skops artifact that the protected evaluator scores alone (`python -I -P`) on a sealed
holdout, and the checked-in params are worse than a good point by more than the noise floor."""

import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from senpai.cli.example_split import DIABETES, HOLDOUT_FILE, REPO_FILES
from senpai.config.evaluator import evaluator_problems
from senpai.config.target import FloatParam, IntParam, budget_problems, load_target

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "diabetes"
GOOD = {"n_estimators": 200, "learning_rate": 0.05, "max_depth": 1, "subsample": 0.7, "min_samples_leaf": 10, "max_features": 0.5}


@pytest.fixture(scope="module")
def target():
    return load_target(EXAMPLE)


@pytest.fixture(scope="module")
def holdout(tmp_path_factory):
    return DIABETES.seal(tmp_path_factory.mktemp("sealed") / "holdout")


@pytest.fixture(scope="module")
def evaluator():
    """The protected evaluator, imported in process from its file (it imports no repository module)."""
    spec = importlib.util.spec_from_file_location("diabetes_evaluate", EXAMPLE / "eval" / "evaluate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_senpai_yaml_matches_the_repo(target):
    assert (target.metric.name, target.metric.direction) == ("val_mse", "minimize")
    h = target.holdout
    assert (h.metric, h.direction, h.files, h.rule) == ("holdout_mse", "minimize", ["eval/evaluate.py"], "noise_floor")
    assert all(target.is_protected(f) for f in [*h.files, *REPO_FILES.values()])
    assert target.in_scope("train.py") and not target.is_protected("params.json")
    assert evaluator_problems(EXAMPLE, target) == [] and budget_problems(target) == []
    params = json.loads((EXAMPLE / target.params.file).read_text())
    assert set(params) == set(target.params.space) == set(GOOD)
    for key, spec in target.params.space.items():  # the baseline is a point of the space
        assert isinstance(spec, (IntParam, FloatParam)) and spec.low <= params[key] <= spec.high, key
    assert "holdout" not in (EXAMPLE / target.program).read_text().lower()


def test_repo_holds_train_and_val_but_never_the_holdout(holdout):
    split = DIABETES.split()
    for name, rel in REPO_FILES.items():
        assert (EXAMPLE / rel).read_text() == DIABETES.to_csv(*split[name]), rel
    assert {name: len(y) for name, (_, y) in split.items()} == {"train": 264, "val": 89, "holdout": 89}
    rows = (holdout / HOLDOUT_FILE).read_text().splitlines()[1:]
    repo_text = "\n".join(p.read_text(errors="replace") for p in EXAMPLE.rglob("*") if p.is_file())
    assert len(rows) == 89 and not any(row in repo_text for row in rows)
    assert oct(holdout.stat().st_mode & 0o777) == "0o700"


def test_train_writes_an_artifact_the_evaluator_scores_alone(target, holdout, tmp_path):
    repo, artifact, work = tmp_path / "repo", tmp_path / "artifact", tmp_path / "score"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", "wandb"))
    artifact.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "SENPAI_", "PYTHON"))}
    train = subprocess.run(
        [sys.executable, "train.py"], cwd=repo, capture_output=True, text=True, timeout=180,
        env={**env, "SEED": "0", "SENPAI_ARTIFACT_DIR": str(artifact), "WANDB_MODE": "disabled"},
    )  # fmt: skip
    assert train.returncode == 0, train.stderr
    out = dict(line.split(": ", 1) for line in train.stdout.split("---\n")[-1].splitlines())
    assert out["trees"] == "30" and 2500 < float(out["val_mse"]) < 5000
    assert [p.name for p in artifact.iterdir()] == ["model.skops"]
    (work / "eval").mkdir(parents=True)
    shutil.copy(EXAMPLE / "eval" / "evaluate.py", work / "eval")
    command = target.holdout.command.format(artifact=artifact, holdout=holdout, seed=0).split()
    scored = subprocess.run([sys.executable, "-I", "-P", *command[1:]], cwd=work, env=env, capture_output=True, text=True)
    assert scored.returncode == 0, scored.stderr
    assert 3000 < float(scored.stdout.removeprefix("holdout_mse: ")) < 5000


def test_evaluator_refuses_a_missing_or_foreign_model(evaluator, tmp_path):
    import skops.io
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(ValueError, match="no model.skops"):
        evaluator.load_model(tmp_path)
    skops.io.dump(LogisticRegression().fit([[0.0], [1.0]], [0, 1]), tmp_path / "model.skops")
    with pytest.raises(ValueError, match="not a regressor of the 10 features"):
        evaluator.load_model(tmp_path)


def test_baseline_params_are_weak_by_more_than_the_noise_floor(target, evaluator, holdout):
    spec = importlib.util.spec_from_file_location("diabetes_train", EXAMPLE / "train.py")
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    data, h = train.load_split("train"), target.holdout

    def scores(params: dict) -> list[float]:
        models = [train.build_model(params, seed).fit(*data) for seed in h.seeds]
        return [evaluator.score(m, *evaluator.load_holdout(holdout))["holdout_mse"] for m in models]

    base, good = scores(json.loads((EXAMPLE / "params.json").read_text())), scores(GOOD)
    floor = max(h.min_floor, h.noise_k * statistics.stdev(base))
    assert statistics.mean(base) - statistics.mean(good) > floor  # lower is better
