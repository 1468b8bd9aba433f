"""The digits example target: its senpai.yaml loads, train.py really trains and logs a W&B run that
WandbTracker reads back, holdout_eval.py is deterministic, and the baseline is beatable by more
than the noise floor it declares."""

import importlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from senpai.config.harness import TrackerSettings
from senpai.config.target import FloatParam, IntParam, load_target
from senpai.tracker.base import RunIdentity
from senpai.tracker.wandb import WandbTracker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "digits"
GOOD = {
    "hidden_layers": 1,
    "hidden_width": 64,
    "activation": "relu",
    "alpha": 0.001,
    "learning_rate_init": 0.003,
    "batch_size": 64,
    "max_iter": 30,
}
# Makes every epoch's loss NaN without touching the repo: the FAIL path of train.py.
DIVERGE = """
import math, runpy, sklearn.neural_network as nn
fit = nn.MLPClassifier.partial_fit
def diverge(self, *a, **k):
    fit(self, *a, **k)
    self.loss_ = math.nan
    return self
nn.MLPClassifier.partial_fit = diverge
runpy.run_path("train.py", run_name="__main__")
"""


@pytest.fixture(scope="module")
def target():
    return load_target(EXAMPLE)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    dest = tmp_path_factory.mktemp("digits") / "repo"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", "wandb"))
    return dest


@pytest.fixture(scope="module")
def tracker(tmp_path_factory):
    return WandbTracker(TrackerSettings(dir=str(tmp_path_factory.mktemp("wb")), mode="offline"))


@pytest.fixture(scope="module")
def holdout_eval():
    """The protected evaluator, imported in process (it imports its sibling `data`)."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        yield importlib.import_module("holdout_eval")
    finally:
        sys.path.remove(str(EXAMPLE))
        for name in ("holdout_eval", "data"):
            sys.modules.pop(name, None)


def key_values(stdout: str) -> dict[str, str]:
    """The `key: value` lines after the last `---`."""
    lines = stdout.splitlines()
    block = lines[len(lines) - lines[::-1].index("---") :]
    return dict(line.split(": ", 1) for line in block if ": " in line)


def run_train(repo, tracker, run: RunIdentity, argv: list[str]) -> subprocess.CompletedProcess:
    home = Path(tracker.settings.dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(WANDB_CONFIG_DIR=str(home / "cfg"), WANDB_CACHE_DIR=str(home / "cache"))
    env.update(tracker.env_for(run), SEED="0")
    return subprocess.run([sys.executable, *argv], cwd=repo, env=env, capture_output=True, text=True, timeout=120)


def identity(run_id: str) -> RunIdentity:
    return RunIdentity(id=run_id, group="pr-1", name="bob/pr-1/1", tags=["senpai", "pr-1"], config={"pr": 1})


def test_senpai_yaml_matches_the_repo(target):
    assert target.name == "digits-mlp"
    assert (target.metric.name, target.metric.direction, target.metric.source) == (
        "val_accuracy",
        "maximize",
        "wandb",
    )
    assert target.holdout and target.holdout.metric == "holdout_accuracy"
    for path in [target.program, target.params.file, *target.protected]:
        assert (EXAMPLE / path).is_file(), path
    assert not target.is_protected("params.json") and not target.is_protected("train.py")
    params = json.loads((EXAMPLE / target.params.file).read_text())
    assert set(params) == set(target.params.space)
    for key, spec in target.params.space.items():  # the baseline is a point of the space
        if isinstance(spec, (IntParam, FloatParam)):
            assert spec.low <= params[key] <= spec.high, key
        else:
            assert params[key] in spec.choices, key
    program = (EXAMPLE / target.program).read_text()
    assert "holdout" not in program.lower()


def test_train_reports_and_logs_its_run(repo, tracker):
    proc = run_train(repo, tracker, identity("digits-ok"), ["train.py"])
    assert proc.returncode == 0, proc.stderr
    out = key_values(proc.stdout)
    val = float(out["val_accuracy"])
    assert 0.5 < val < 0.9  # the deliberately weak baseline
    assert float(out["train_seconds"]) > 0 and out["epochs"] == "20"

    rec = tracker.get_run("digits-ok")
    assert rec.state == "finished"
    assert (rec.group, rec.name, rec.tags) == ("pr-1", "bob/pr-1/1", ["senpai", "pr-1"])
    assert rec.config["pr"] == 1
    assert rec.config["hidden_width"] == 8 and rec.config["activation"] == "logistic"
    assert rec.summary["val_accuracy"] == pytest.approx(val, abs=1e-6)
    assert rec.summary["epochs"] == 20 and math.isfinite(rec.summary["final_loss"])


def test_diverged_training_fails_but_is_logged(repo, tracker):
    proc = run_train(repo, tracker, identity("digits-nan"), ["-c", DIVERGE])
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.rstrip().endswith("FAIL")
    assert key_values(proc.stdout)["val_accuracy"] == "nan"
    rec = tracker.get_run("digits-nan")
    assert rec.state == "crashed"
    assert math.isnan(rec.summary["val_accuracy"])


def test_holdout_cli_is_deterministic_per_seed(repo, holdout_eval):
    procs = [
        subprocess.Popen(
            [sys.executable, "holdout_eval.py", "--seed", "0"],
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    values = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.startswith("holdout_accuracy: ") and len(out.splitlines()) == 1
        values.append(float(out.split(": ")[1]))
    assert 0.0 <= values[0] <= 1.0
    assert values[0] == values[1]
    baseline = json.loads((repo / "params.json").read_text())
    assert holdout_eval.holdout_accuracy(baseline, 0) == pytest.approx(values[0], abs=1e-6)
    assert holdout_eval.holdout_accuracy(baseline, 1) != pytest.approx(values[0], abs=1e-6)


def test_baseline_is_weak_by_more_than_the_noise_floor(target, holdout_eval):
    holdout = target.holdout
    baseline = json.loads((EXAMPLE / "params.json").read_text())

    def scores(params):
        return [holdout_eval.holdout_accuracy(params, seed) for seed in holdout.seeds]

    base, good = scores(baseline), scores(GOOD)
    floor = max(holdout.min_floor, holdout.noise_k * statistics.stdev(base))
    assert statistics.mean(good) - statistics.mean(base) > floor
    assert statistics.mean(good) >= 0.95
    # A change that should not matter (alpha 5% higher) stays inside the floor around GOOD.
    same = scores({**GOOD, "alpha": GOOD["alpha"] * 1.05})
    good_floor = max(holdout.min_floor, holdout.noise_k * statistics.stdev(good))
    assert abs(statistics.mean(same) - statistics.mean(good)) < good_floor
