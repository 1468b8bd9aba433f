"""WandbTracker against real offline wandb runs: child processes call a bare `wandb.init()` under
the env from `env_for`, and the tracker reads their `.wandb` logs back."""

import math
import os
import shutil
import subprocess
import sys
import time

import pytest
import yaml

from senpai.config.harness import TrackerSettings
from senpai.errors import ConfigError, NotFound
from senpai.tracker.base import RunIdentity
from senpai.tracker.wandb import WandbTracker

# The program's own code: it knows nothing about senpai.
PROGRAM = """
import math, sys, wandb
run = wandb.init(config={"lr": 0.01, "layers": [8, 8], "pr": -1})
run.config.update({"blob": "x" * 70000})  # one record spanning three 32 KiB log blocks
run.define_metric("score", summary="max")
for i in range(3):
    score = [0.5, 0.9, 0.7][i]
    run.log({"loss": 1 / (i + 1), "val_accuracy": 0.5 + 0.1 * i, "nested": {"depth": i}, "score": score})
mode = sys.argv[1]
if mode == "nan":
    run.log({"val_accuracy": math.nan, "grad_norm": math.inf})
if mode == "crash":
    raise RuntimeError("diverged")
run.summary["best"] = 0.7
run.summary["scratch"] = 1
del run.summary["scratch"]
"""


def identity(run_id: str, pr: int, attempt: int = 1) -> RunIdentity:
    return RunIdentity(
        id=run_id,
        group=f"pr-{pr}",
        name=f"alice/pr-{pr}/{attempt}",
        tags=["senpai", "student:alice", f"pr-{pr}"],
        config={"pr": pr, "head": "abc123", "hypothesis": "h-1"},
    )


def child_env(tracker: WandbTracker, run: RunIdentity, home) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(WANDB_CONFIG_DIR=str(home / "config"), WANDB_CACHE_DIR=str(home / "cache"))
    env.update(WANDB_DATA_DIR=str(home / "data"))
    return env | tracker.env_for(run)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("wandb-home")


@pytest.fixture(scope="module")
def tracker(home):
    return WandbTracker(TrackerSettings(dir=str(home / "runs"), mode="offline"))


@pytest.fixture(scope="module")
def runs(tracker, home):
    """Three programs run concurrently; returns {mode: (identity, CompletedProcess-like)}."""
    plan = {"ok": identity("run-ok", 7), "nan": identity("run-nan", 7, 2), "crash": identity("run-crash", 8)}
    procs = {
        mode: subprocess.Popen(
            [sys.executable, "-c", PROGRAM, mode],
            env=child_env(tracker, run, home),
            cwd=home,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for mode, run in plan.items()
    }
    done = {}
    for mode, proc in procs.items():
        out, err = proc.communicate(timeout=60)
        done[mode] = (plan[mode], proc.returncode, err)
    return done


def test_env_for_sets_wandb_identity_and_config_file(tracker):
    run = identity("run-env", 3)
    env = tracker.env_for(run)
    assert env["WANDB_RUN_ID"] == "run-env"
    assert env["WANDB_RUN_GROUP"] == "pr-3"
    assert env["WANDB_NAME"] == "alice/pr-3/1"
    assert env["WANDB_TAGS"] == "senpai,student:alice,pr-3"
    assert env["WANDB_PROJECT"] == "senpai"
    assert env["WANDB_MODE"] == "offline"
    assert env["WANDB_DIR"] == str(tracker.dir) and os.path.isabs(env["WANDB_DIR"])
    assert env["WANDB_SILENT"] == "true"
    assert "WANDB_ENTITY" not in env
    assert "WANDB_CONFIG_PATHS" not in env  # breaks wandb.init() in 0.31, see the canary below
    doc = yaml.safe_load(open(env["WANDB_SWEEP_PARAM_PATH"]))
    assert doc == {
        "wandb_version": 1,
        "pr": {"value": 3},
        "head": {"value": "abc123"},
        "hypothesis": {"value": "h-1"},
    }
    assert env["WANDB_SWEEP_PARAM_PATH"] == str(tracker.dir / "senpai-config" / "run-env.yaml")


def test_env_for_entity_and_bad_tags(tmp_path):
    tracker = WandbTracker(TrackerSettings(dir=str(tmp_path), mode="offline", entity="lab"))
    bare = RunIdentity(id="r1", group="pr-1", name="a/pr-1/1", tags=[])
    env = tracker.env_for(bare)
    assert env["WANDB_ENTITY"] == "lab"
    assert "WANDB_TAGS" not in env and "WANDB_SWEEP_PARAM_PATH" not in env
    with pytest.raises(ConfigError, match="comma"):
        tracker.env_for(RunIdentity(id="r2", group="g", name="n", tags=["a,b"]))


def test_finished_run_reads_back(tracker, runs):
    run, returncode, err = runs["ok"]
    assert returncode == 0, err
    rec = tracker.get_run("run-ok")
    assert (rec.id, rec.name, rec.group) == ("run-ok", "alice/pr-7/1", "pr-7")
    assert rec.tags == ["senpai", "student:alice", "pr-7"]
    assert rec.state == "finished"
    assert rec.url is None and rec.path and "offline-run-" in rec.path
    # senpai's keys and the program's own params; senpai's value wins the `pr` clash.
    assert {k: rec.config[k] for k in ("pr", "head", "hypothesis")} == {
        "pr": 7,
        "head": "abc123",
        "hypothesis": "h-1",
    }
    assert rec.config["lr"] == 0.01 and rec.config["layers"] == [8, 8]
    assert rec.config["blob"] == "x" * 70000
    assert "_wandb" not in rec.config
    assert rec.summary["loss"] == pytest.approx(1 / 3)
    assert rec.summary["val_accuracy"] == pytest.approx(0.7)
    assert rec.summary["nested"] == {"depth": 2}
    assert rec.summary["best"] == 0.7
    assert "scratch" not in rec.summary  # set, then deleted
    assert rec.summary["score"] == {"max": 0.9}  # wandb's own aggregate, not the last value
    assert rec.summary["_step"] == 2


def test_nan_and_inf_survive(tracker, runs):
    _, returncode, err = runs["nan"]
    assert returncode == 0, err
    rec = tracker.get_run("run-nan")
    assert rec.state == "finished"
    assert isinstance(rec.summary["val_accuracy"], float) and math.isnan(rec.summary["val_accuracy"])
    assert rec.summary["grad_norm"] == math.inf
    assert rec.summary["loss"] == pytest.approx(1 / 3)


def test_crashed_run(tracker, runs):
    _, returncode, err = runs["crash"]
    assert returncode != 0 and "diverged" in err
    rec = tracker.get_run("run-crash")
    assert rec.state == "crashed"
    assert rec.group == "pr-8"
    assert rec.summary["val_accuracy"] == pytest.approx(0.7)
    assert "best" not in rec.summary


def test_list_runs_sorted_and_by_group(tracker, runs):
    assert [r.id for r in tracker.list_runs()] == ["run-crash", "run-nan", "run-ok"]
    assert [r.id for r in tracker.list_runs("pr-7")] == ["run-nan", "run-ok"]
    assert tracker.list_runs("pr-99") == []


def test_missing_run_is_not_found(tracker, runs, tmp_path):
    with pytest.raises(NotFound, match="run-missing"):
        tracker.get_run("run-missing")
    with pytest.raises(NotFound):  # an id that only ends like a real one
        tracker.get_run("ok")
    empty = WandbTracker(TrackerSettings(dir=str(tmp_path / "nothing-here"), mode="offline"))
    with pytest.raises(NotFound):
        empty.get_run("run-ok")
    assert empty.list_runs() == []


def test_newest_directory_wins_and_partial_logs(tracker, runs, tmp_path):
    src = tracker.get_run("run-ok").path
    base = WandbTracker(TrackerSettings(dir=str(tmp_path), mode="offline"))
    wandb_dir = tmp_path / "wandb"
    wandb_dir.mkdir()
    # An older attempt of the same id, cut off mid-write (no exit record).
    old = wandb_dir / "offline-run-20000101_000000-run-ok"
    shutil.copytree(src, old)
    log_file = old / "run-run-ok.wandb"
    log_file.write_bytes(log_file.read_bytes()[:40000])
    newer = wandb_dir / "offline-run-29990101_000000-run-ok"
    shutil.copytree(src, newer)

    assert base.get_run("run-ok").path == str(newer)
    assert base.get_run("run-ok").state == "finished"

    shutil.rmtree(newer)
    partial = base.get_run("run-ok")
    assert partial.path == str(old)
    assert partial.state == "running"  # no exit record, written just now
    assert partial.name == "alice/pr-7/1" and partial.config["lr"] == 0.01
    stale = time.time() - 3600
    os.utime(log_file, (stale, stale))
    assert base.get_run("run-ok").state == "unknown"


def test_wandb_config_paths_is_broken_in_this_wandb(tracker, home):
    """Canary for the module docstring: WANDB_CONFIG_PATHS makes wandb.init() raise in 0.31.
    If this fails, wandb fixed it, and env_for may switch back to the documented variable."""
    env = child_env(tracker, identity("run-canary", 9), home)
    env["WANDB_CONFIG_PATHS"] = env.pop("WANDB_SWEEP_PARAM_PATH")
    proc = subprocess.run(
        [sys.executable, "-c", "import wandb; wandb.init().finish()"],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "config_paths" in proc.stderr
