"""The two steps of the verifier on a real git repository: what each step can see and run."""

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from forge_fixtures import run_git
from tiny_target import SNOOPED, files, sealed_holdout
from walled import walls_at

from senpai.config.target import Holdout
from senpai.errors import ConfigError
from senpai.job.workcopy import standalone_clone
from senpai.verifier.evaluate import EvaluatorFiles, python_shim, score_step, train_step

HOLD = Holdout.model_validate(
    {"command": "python score.py {artifact} {holdout}", "files": ["score.py"], "metric": "acc", "min_floor": 0.01}
)


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A git repo holding the tiny target; (path, head sha)."""
    path = tmp_path / "repo"
    path.mkdir()
    run_git(path, "init", "-q", "-b", "main")
    for name, text in files().items():
        (path / name).write_text(text)
    run_git(path, "add", ".")
    run_git(path, "commit", "-q", "-m", "seed")
    return path, run_git(path, "rev-parse", "HEAD")


@pytest.fixture
def hostile_env(monkeypatch, tmp_path):
    """Secrets and Python variables in senpai's own environment, as a real job has them."""
    for name in SNOOPED:
        monkeypatch.setenv(name, "secret-value-123456")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "repo"))
    monkeypatch.setenv("PYTHONSTARTUP", str(tmp_path / "repo" / "train.py"))


def _checkout(repo: Path, sha: str, tmp_path: Path) -> Path:
    """Where the train steps run, as the verifier's do: a clone of `repo`, one for every seed."""
    checkout = tmp_path / "checkout"
    return checkout if checkout.exists() else standalone_clone(repo, sha, checkout)


def _train(repo: Path, sha: str, tmp_path: Path, seed: int = 0):
    checkout = _checkout(repo, sha, tmp_path)
    walls = walls_at(tmp_path)
    return train_step("python train.py", checkout, sha, "candidate", seed, tmp_path / "artifacts", 60, "steps", walls)


def _score(evaluator: EvaluatorFiles, trained, tmp_path: Path):
    return score_step(HOLD, evaluator, trained, sealed_holdout(tmp_path / "holdout"), tmp_path / "score", 60, walls_at(tmp_path))


def test_train_then_score_sees_no_secret_no_python_variable_and_no_candidate_tree(repo, tmp_path, hostile_env):
    path, sha = repo
    trained = _train(path, sha, tmp_path)
    assert trained.returncode == 0 and trained.compute == 100.0
    assert "train_leak: 0" in (tmp_path / "artifacts" / "candidate-0-train.log").read_text()
    evaluator = EvaluatorFiles(path, sha, ["score.py"])
    out, refused = _score(evaluator, trained, tmp_path)
    assert refused is None and out.returncode == 0, out.output
    assert out.value("acc") == pytest.approx(0.7) and out.value("leak") == 0.0


def test_the_evaluator_directory_holds_only_its_files_from_the_commit(repo, tmp_path):
    path, sha = repo
    evaluator = EvaluatorFiles(path, sha, ["score.py"])
    (path / "score.py").write_text("print('acc: 1.0')\n")  # the working tree changed after the snapshot
    run_git(path, "commit", "-qam", "later")
    a, b = evaluator.extract(tmp_path), evaluator.extract(tmp_path)
    assert a != b and sorted(p.name for p in a.iterdir()) == ["score.py"]
    assert (a / "score.py").read_text() == files()["score.py"]
    with pytest.raises(ConfigError, match="missing.py"):
        EvaluatorFiles(path, sha, ["missing.py"])


def test_the_python_shim_keeps_cwd_and_pythonpath_off_the_import_path(tmp_path, monkeypatch):
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "json.py").write_text("print('shadow imported')\n")
    probe = ["-c", "import json; print('real' if hasattr(json, 'dumps') else 'shadow')"]
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    plain = subprocess.run([sys.executable, *probe], cwd=shadow, env=env, capture_output=True, text=True)
    assert "shadow" in plain.stdout  # what the evaluator would get without the shim
    shim = python_shim(tmp_path / "bin") / "python"
    shimmed = subprocess.run([str(shim), *probe], cwd=shadow, env=env, capture_output=True, text=True)
    assert shimmed.stdout.strip() == "real", shimmed.stderr


def test_a_pickle_artifact_is_refused_before_the_evaluator_runs(repo, tmp_path):
    path, sha = repo
    (path / "train.py").write_text(
        "import os, pickle\n"
        "open(os.path.join(os.environ['SENPAI_ARTIFACT_DIR'], 'model.json'), 'wb').write(pickle.dumps({'w': 1}))\n"
    )
    run_git(path, "commit", "-qam", "pickle")
    trained = _train(path, run_git(path, "rev-parse", "HEAD"), tmp_path)
    assert trained.digest == ""  # a refused directory is never read whole
    evaluator = EvaluatorFiles(path, sha, ["score.py"])
    out, refused = _score(evaluator, trained, tmp_path)
    assert out is None and "model.json is a pickle" in refused
    assert not (tmp_path / "score").exists() or not list((tmp_path / "score").glob("evaluator-*"))


def test_an_onnx_artifact_reading_the_holdout_is_refused_before_the_evaluator_runs(repo, tmp_path):
    # issue 24, finding 8: a tensor whose data lives at ../holdout/labels.csv (a real ONNX file,
    # tests/fixtures/onnx) would make the evaluator's loader read the holdout into the model
    path, sha = repo
    fixture = Path(__file__).parents[1] / "fixtures" / "onnx" / "external-initializer.onnx"
    (path / "model.bin").write_bytes(fixture.read_bytes())
    (path / "train.py").write_text(
        "import os, shutil\nshutil.copy('model.bin', os.path.join(os.environ['SENPAI_ARTIFACT_DIR'], 'model.onnx'))\n"
    )
    run_git(path, "add", ".")
    run_git(path, "commit", "-qm", "onnx")
    trained = _train(path, run_git(path, "rev-parse", "HEAD"), tmp_path)
    assert trained.returncode == 0 and trained.digest == ""
    evaluator = EvaluatorFiles(path, sha, ["score.py"])
    out, refused = _score(evaluator, trained, tmp_path)
    assert out is None and "model.onnx references external data" in refused
    assert not (tmp_path / "score").exists() or not list((tmp_path / "score").glob("evaluator-*"))


def test_an_artifact_changed_after_its_train_step_is_refused(repo, tmp_path):
    path, sha = repo
    trained = _train(path, sha, tmp_path)
    (Path(trained.artifact) / "model.json").write_text('{"w": 0.8, "noise": 0}')
    evaluator = EvaluatorFiles(path, sha, ["score.py"])
    out, refused = _score(evaluator, trained, tmp_path)
    assert out is None and "changed after its train step" in refused


def test_each_train_step_starts_from_a_clean_checkout(repo, tmp_path):
    path, sha = repo
    checkout = _checkout(path, sha, tmp_path)
    (checkout / "params.json").write_text('{"w": 0.9}')  # what an earlier step could have left
    (checkout / "stray.py").write_text("")
    trained = _train(path, sha, tmp_path)
    assert '"w": 0.5' in (Path(trained.artifact) / "model.json").read_text()
    assert not (checkout / "stray.py").exists()


def test_a_command_a_train_step_set_for_git_leaves_nothing_running(repo, tmp_path):
    # a train step can write .git/config; the next reset runs core.fsmonitor, which starts a daemon
    # with no run tag and its own session (it would outlive every later step and tamper with them)
    path, sha = repo
    marker = f"{4000 + os.getpid() % 1000}.{os.getpid() % 997}"
    run_git(
        _checkout(path, sha, tmp_path),
        "config",
        "core.fsmonitor",
        f"env -i setsid sleep {marker} >/dev/null 2>&1 </dev/null & true",
    )
    _train(path, sha, tmp_path)
    alive = [p for p in psutil.process_iter(["cmdline"]) if f"sleep {marker}" in " ".join(p.info["cmdline"] or [])]
    assert [p for p in alive if p.status() != psutil.STATUS_ZOMBIE] == []
