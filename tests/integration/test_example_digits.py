"""The digits example target: its senpai.yaml loads and passes `validate`, train.py trains, logs a
W&B run that WandbTracker reads back and writes a safe skops artifact, the protected evaluator
scores that artifact on a sealed holdout directory (alone, `python -I -P`), a code-only change to
train.py moves the holdout, and the holdout is nowhere in the repository."""

import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from senpai.cli.demo import write_config
from senpai.cli.example_split import DIGITS, HOLDOUT_FILE, REPO_FILES
from senpai.config.evaluator import evaluator_problems
from senpai.config.harness import TrackerSettings, load_harness
from senpai.config.target import FloatParam, IntParam, budget_problems, load_target
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
# Makes the final loss NaN without touching the repo: the FAIL path of train.py.
DIVERGE = """
import math, runpy, sklearn.neural_network as nn
fit = nn.MLPClassifier.fit
def diverge(self, *a, **k):
    fit(self, *a, **k)
    self.loss_ = math.nan
    return self
nn.MLPClassifier.fit = diverge
runpy.run_path("train.py", run_name="__main__")
"""
# The code-only change the openhands cycle test's scripted student makes too.
ADAM, LBFGS = "        random_state=seed,\n", '        random_state=seed,\n        solver="lbfgs",\n'


@pytest.fixture(scope="module")
def target():
    return load_target(EXAMPLE)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    dest = tmp_path_factory.mktemp("digits") / "repo"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", "wandb"))
    return dest


@pytest.fixture(scope="module")
def holdout(tmp_path_factory):
    return DIGITS.seal(tmp_path_factory.mktemp("sealed") / "holdout")


@pytest.fixture(scope="module")
def tracker(tmp_path_factory):
    return WandbTracker(TrackerSettings(dir=str(tmp_path_factory.mktemp("wb")), mode="offline"))


@pytest.fixture(scope="module")
def evaluator():
    """The protected evaluator, imported in process from its file (it imports no repository module)."""
    spec = importlib.util.spec_from_file_location("digits_evaluate", EXAMPLE / "eval" / "evaluate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def key_values(stdout: str) -> dict[str, str]:
    """The `key: value` lines after the last `---`."""
    lines = stdout.splitlines()
    block = lines[len(lines) - lines[::-1].index("---") :]
    return dict(line.split(": ", 1) for line in block if ": " in line)


def run_train(repo, tracker, run: RunIdentity, argv: list[str], artifact: Path | None = None) -> subprocess.CompletedProcess:
    home = Path(tracker.settings.dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "SENPAI_"))}
    env.update(WANDB_CONFIG_DIR=str(home / "cfg"), WANDB_CACHE_DIR=str(home / "cache"))
    job = tracker.env_for(run, tracker.dir)  # logged straight where `collect_run` leaves a run
    env.update(job, SEED="0", **({"SENPAI_ARTIFACT_DIR": str(artifact)} if artifact else {}))
    return subprocess.run([sys.executable, *argv], cwd=repo, env=env, capture_output=True, text=True, timeout=180)


def train_step(repo: Path, seed: int, artifact: Path) -> subprocess.Popen:
    """The verifier's train step, roughly: SEED, an empty artifact dir, W&B disabled."""
    artifact.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "SENPAI_"))}
    env.update(SEED=str(seed), SENPAI_ARTIFACT_DIR=str(artifact), WANDB_MODE="disabled")
    return subprocess.Popen(
        [sys.executable, "train.py"], cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def score_step(artifact: Path, holdout: Path, work: Path) -> subprocess.CompletedProcess:
    """The verifier's score step, roughly: only eval/evaluate.py in a fresh dir, `python -I -P`, no PYTHON* env."""
    (work / "eval").mkdir(parents=True)
    shutil.copy(EXAMPLE / "eval" / "evaluate.py", work / "eval" / "evaluate.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SENPAI_", "WANDB_"))}
    command = load_target(EXAMPLE).holdout.command.format(artifact=artifact, holdout=holdout, seed=0).split()
    assert command[0] == "python"
    return subprocess.run(
        [sys.executable, "-I", "-P", *command[1:]], cwd=work, env=env, capture_output=True, text=True, timeout=180
    )


class Payload:
    """Stands for any type a model file might smuggle in: skops records it, the evaluator refuses it."""

    def __init__(self) -> None:
        self.code = "print('pwned')"


def identity(run_id: str) -> RunIdentity:
    return RunIdentity(id=run_id, group="pr-1", name="bob/pr-1/1", tags=["senpai", "pr-1"], config={"pr": 1})


def test_senpai_yaml_matches_the_repo(target):
    assert target.name == "digits-mlp"
    assert (target.metric.name, target.metric.direction, target.metric.source) == ("val_accuracy", "maximize", "wandb")
    h = target.holdout
    assert h.metric == "holdout_accuracy" and h.files == ["eval/evaluate.py"] and h.rule == "noise_floor" and h.min_floor > 0
    assert "{artifact}" in h.command and "{holdout}" in h.command and h.compute.key == "epochs"
    assert all(target.is_protected(f) for f in [*h.files, *REPO_FILES.values()])
    for path in [target.program, target.params.file, *h.files, *REPO_FILES.values()]:
        assert (EXAMPLE / path).is_file(), path
    assert target.in_scope("train.py") and target.in_scope("params.json") and not target.in_scope("scratch.py")
    assert not target.is_protected("params.json") and not target.is_protected("train.py")
    assert evaluator_problems(EXAMPLE, target) == []
    params = json.loads((EXAMPLE / target.params.file).read_text())
    assert set(params) == set(target.params.space)
    for key, spec in target.params.space.items():  # the baseline is a point of the space
        if isinstance(spec, (IntParam, FloatParam)):
            assert spec.low <= params[key] <= spec.high, key
        else:
            assert params[key] in spec.choices, key
    assert "holdout" not in (EXAMPLE / target.program).read_text().lower()
    # every point of the space trains within the fixed compute budget (epochs = max_iter)
    assert h.compute.param == "max_iter" and target.params.space["max_iter"].high <= h.compute.budget
    assert budget_problems(target) == []


def test_repo_holds_train_and_val_but_never_the_holdout():
    split = DIGITS.split()
    for name, rel in REPO_FILES.items():
        assert (EXAMPLE / rel).read_text() == DIGITS.to_csv(*split[name]), rel  # the fixed split, checked in once
    sizes = {name: len(y) for name, (_, y) in split.items()}
    assert sizes == {"train": 1077, "val": 360, "holdout": 360}
    holdout_rows = DIGITS.to_csv(*split["holdout"]).splitlines()[1:]
    repo_text = "\n".join(p.read_text(errors="replace") for p in EXAMPLE.rglob("*") if p.is_file())
    assert sum(row in repo_text for row in holdout_rows[:50]) < 5  # identical images may occur; the split does not
    assert not any("holdout" in p.name for p in EXAMPLE.rglob("*") if p.suffix in (".csv", ".npz", ".npy"))


def test_demo_config_seals_the_holdout_outside_the_work_copies(tmp_path):
    config = write_config(tmp_path / "run", "http://127.0.0.1:1", 2, 6)
    fleet = load_harness(config).fleet
    sealed = Path(fleet.holdout_dir)
    assert (sealed / HOLDOUT_FILE).read_text() == DIGITS.to_csv(*DIGITS.split()["holdout"])
    assert oct(sealed.stat().st_mode & 0o777) == "0o700"
    assert not sealed.is_relative_to(Path(fleet.dir)) and not Path(fleet.dir).is_relative_to(sealed)
    assert yaml.safe_load(config.read_text())["fleet"]["holdout_dir"] == str(sealed)


def test_the_demo_refuses_an_example_whose_holdout_it_cannot_seal(tmp_path):
    """A target that is not bundled gets no digits holdout sealed for it (its evaluator would fail
    late, in the verifier): the demo asks for --holdout before it starts anything."""
    mine = tmp_path / "mine"
    shutil.copytree(EXAMPLE, mine)
    out = tmp_path / "out"
    args = [sys.executable, "-m", "senpai", "demo", "--example", str(mine), "--out", str(out)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "not a bundled example" in proc.stderr and "--holdout" in proc.stderr, proc.stderr
    assert not out.exists()


def test_the_demo_refuses_a_train_interpreter_that_does_not_run_before_it_starts_anything(tmp_path):
    """Every training would fail (exit 127 under the wall), and the loop would wait on PRs blocked
    for humans until the stall timeout: the demo says so at once, naming train."""
    mine = tmp_path / "mine"
    shutil.copytree(EXAMPLE, mine)
    config = mine / "senpai.yaml"
    config.write_text(config.read_text().replace("train: python train.py", f"train: {tmp_path}/gone/bin/python train.py"))
    out = tmp_path / "out"
    args = [sys.executable, "-m", "senpai", "demo", "--example", str(mine), "--holdout", str(tmp_path), "--out", str(out)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"train: {tmp_path}/gone/bin/python does not exist on this machine: every training would fail" in proc.stderr
    assert not out.exists()


def test_train_reports_logs_its_run_and_writes_a_safe_artifact(repo, tracker, tmp_path, evaluator):
    import skops.io  # scikit-learn and scipy (seconds): when run, not when the suite is collected

    artifact = tmp_path / "artifact"
    artifact.mkdir()
    proc = run_train(repo, tracker, identity("digits-ok"), ["train.py"], artifact)
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

    model = artifact / "model.skops"
    assert [p.name for p in artifact.iterdir()] == ["model.skops"]
    assert zipfile.is_zipfile(model) and "schema.json" in zipfile.ZipFile(model).namelist()  # skops, not a pickle
    assert set(skops.io.get_untrusted_types(file=model)) <= set(evaluator.TRUSTED)
    # without SENPAI_ARTIFACT_DIR (a student's own run) nothing is written
    assert run_train(repo, tracker, identity("digits-noart"), ["train.py"]).returncode == 0
    assert not list(repo.glob("*.skops"))


def test_diverged_training_fails_but_is_logged(repo, tracker, tmp_path):
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    proc = run_train(repo, tracker, identity("digits-nan"), ["-c", DIVERGE], artifact)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.rstrip().endswith("FAIL")
    assert key_values(proc.stdout)["val_accuracy"] == "nan"
    assert not list(artifact.iterdir())  # a diverged model is not offered for scoring
    rec = tracker.get_run("digits-nan")
    assert rec.state == "crashed"
    assert math.isnan(rec.summary["val_accuracy"])


def test_evaluator_scores_the_artifact_alone_and_deterministically(repo, holdout, tmp_path):
    proc = train_step(repo, 0, tmp_path / "art")
    assert proc.wait(timeout=180) == 0, proc.stderr.read()
    scores = []
    for i in range(2):
        done = score_step(tmp_path / "art", holdout, tmp_path / f"score{i}")
        assert done.returncode == 0, done.stderr
        lines = dict(line.split(": ") for line in done.stdout.splitlines())
        assert set(lines) == {"holdout_accuracy", "holdout_log_loss"}
        scores.append(lines)
    assert scores[0] == scores[1]
    assert 0.5 < float(scores[0]["holdout_accuracy"]) < 0.95 and float(scores[0]["holdout_log_loss"]) > 0


def test_evaluator_refuses_untrusted_artifacts(holdout, tmp_path, evaluator):
    import skops.io

    untrusted = tmp_path / "untrusted"
    untrusted.mkdir()
    skops.io.dump({"model": Payload()}, untrusted / "model.skops")  # a type skops does not trust
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "model.pkl").write_bytes(b"\x80\x04K\x01.")
    for artifact, reason in [(untrusted, f"does not trust: {__name__}.Payload"), (pickled, "no model.skops")]:
        done = score_step(artifact, holdout, tmp_path / f"score-{artifact.name}")
        assert done.returncode == 2 and not done.stdout, done.stdout
        assert reason in done.stderr, done.stderr


def fit_and_score(train_py: Path, evaluator, holdout: Path, params: dict, seed: int) -> float:
    """Holdout accuracy of the model `train_py`'s build_model makes (fitted on the train split), in process."""
    spec = importlib.util.spec_from_file_location(f"digits_train_{abs(hash(str(train_py)))}", train_py)
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    model = train.build_model(params, seed).fit(*train.load_split("train"))
    return evaluator.score(model, *evaluator.load_holdout(holdout))["holdout_accuracy"]


@pytest.fixture(scope="module")
def base_scores(target, evaluator, holdout) -> list[float]:
    """The example's base params on each holdout seed (train.py as it is), in process."""
    baseline = json.loads((EXAMPLE / "params.json").read_text())
    return [fit_and_score(EXAMPLE / "train.py", evaluator, holdout, baseline, seed) for seed in target.holdout.seeds]


def test_baseline_params_are_weak_by_more_than_the_noise_floor(target, evaluator, holdout, base_scores):
    h = target.holdout

    def scores(params):
        return [fit_and_score(EXAMPLE / "train.py", evaluator, holdout, params, seed) for seed in h.seeds]

    good = scores(GOOD)
    floor = max(h.min_floor, h.noise_k * statistics.stdev(base_scores))
    assert statistics.mean(good) - statistics.mean(base_scores) > floor
    assert statistics.mean(good) >= 0.95
    # A change that should not matter (alpha 5% higher) stays inside the floor around GOOD.
    same = scores({**GOOD, "alpha": GOOD["alpha"] * 1.05})
    good_floor = max(h.min_floor, h.noise_k * statistics.stdev(good))
    assert abs(statistics.mean(same) - statistics.mean(good)) < good_floor


def test_a_code_only_change_moves_the_holdout(target, repo, evaluator, holdout, base_scores, tmp_path):
    """train.py with solver="lbfgs" (params.json untouched) beats the baseline by more than its noise
    floor. In process: the train and score steps as subprocesses are the tests above, and the
    openhands cycle test has the verifier pass this very change end to end."""
    changed = tmp_path / "changed"
    shutil.copytree(repo, changed)
    text = (changed / "train.py").read_text()
    assert text.count(ADAM) == 1
    (changed / "train.py").write_text(text.replace(ADAM, LBFGS))
    h, params = target.holdout, json.loads((changed / "params.json").read_text())
    code = [fit_and_score(changed / "train.py", evaluator, holdout, params, seed) for seed in h.seeds]
    floor = max(h.min_floor, h.noise_k * statistics.stdev(base_scores))
    assert statistics.mean(code) - statistics.mean(base_scores) > floor, (base_scores, code)
