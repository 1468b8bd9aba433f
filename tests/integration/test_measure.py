"""The train command: output streamed with a bounded tail, an allow-listed environment, nothing left behind."""

import os
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
from forge_fixtures import hypothesis, run_git
from log_flood import flood
from walled import harness_at
from walled import wall_around as W

from senpai.agents import student_steps as steps
from senpai.agents.attempt import Attempt
from senpai.config.target import TargetConfig
from senpai.config.time_limits import StudentLimits
from senpai.errors import NotFound
from senpai.fleet.logcap import HEAD_BYTES
from senpai.fleet.logcap import TAIL_BYTES as LOG_TAIL_BYTES
from senpai.job.measure import TAIL_BYTES, run_command
from senpai.job.walls import walls_of
from senpai.tracker.wandb import WandbTracker

LEAKY = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret-0123456789abcdef",
    "API_KEY": "plain-api-key-0123456789",
    "PGPASSWORD": "pg-password-0123456789",
    "KAGGLE_KEY": "kaggle-key-0123456789",
    "DATABASE_URL": "postgres://ada:db-pass-0123456789@db.internal/runs",
}


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_a_hundred_mb_of_output_streams_to_a_capped_log_with_bounded_memory(tmp_path: Path) -> None:
    result = flood(tmp_path, 100)  # bench/log_stream.py streams 400 MiB
    assert result["rc"] == 0 and result["acc"] == 0.75  # parsed from the stream, past 100 MiB of noise
    assert result["log_bytes"] < HEAD_BYTES + 2 * LOG_TAIL_BYTES + 4096  # capped on disk: its head and tail
    assert (tmp_path / "train.log").read_bytes().endswith(b"x" * 1023 + b"\nacc: 0.75\n")
    assert result["tail"] <= TAIL_BYTES
    assert result["peak_mb"] < 100, result  # the old run_command held it all: > 2 x 100 MiB


def test_key_value_lines_split_across_reads_and_the_last_one_wins(tmp_path: Path) -> None:
    printed = "printf 'loss: 1\\nacc: 0.'; sleep 0.2; printf '5\\nacc: 0.6\\r\\nnote: a b\\nacc:nan'"
    out = run_command(printed, tmp_path, {}, 60, wall=W(tmp_path))
    assert out.returncode == 0
    assert out.value("loss") == 1.0 and out.value("note") is None
    assert out.value("acc") != out.value("acc")  # nan, the last line without a newline
    assert run_command("printf 'acc: 0.5\\nacc: 0.6\\n'", tmp_path, {}, 60, wall=W(tmp_path)).value("acc") == 0.6


def test_values_inside_longer_lines_and_json_lines_are_read_as_senpai_init_names_them(tmp_path: Path) -> None:
    (tmp_path / "third_party.py").write_text(
        "import json\n"
        "print('step 300 | train loss: 2.1000 | test loss: 2.2700 | 3.2s/it')\n"
        "print('epoch 3 val_acc=0.912, lr=1e-3')\n"
        "print(json.dumps({'step': 4, 'val_auc': 0.91, 'done': True, 'nested': {'a': 1}}))\n"
        "print('elapsed: 12.5s, acc: 91.2%')\n"
    )
    out = run_command(f"{sys.executable} third_party.py", tmp_path, {}, 60, wall=W(tmp_path))
    assert out.returncode == 0
    assert (out.value("test_loss"), out.value("train_loss"), out.value("loss")) == (2.27, 2.1, 2.27)  # last printed
    assert (out.value("val_acc"), out.value("lr"), out.value("val_auc"), out.value("step")) == (0.912, 1e-3, 0.91, 4.0)
    assert out.value("done") is None and out.value("nested") is None  # a JSON line's numbers only
    assert out.value("elapsed") is None and out.value("acc") == 91.2  # a number with a unit is not one


def test_the_command_gets_no_secret_whatever_its_name(tmp_path: Path, monkeypatch) -> None:
    for name, value in LEAKY.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    out = run_command("env", tmp_path, {"SEED": "3"}, 60, tmp_path / "env.log", wall=W(tmp_path))
    seen = dict(line.split("=", 1) for line in (tmp_path / "env.log").read_text().splitlines() if "=" in line)
    assert not set(LEAKY) & set(seen), sorted(set(LEAKY) & set(seen))
    assert not any(v in out.output for v in LEAKY.values())
    assert seen["SEED"] == "3" and seen["LC_ALL"] == "C.UTF-8" and seen["HOME"] == os.environ["HOME"]


def _daemons(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if marker in " ".join(p.info["cmdline"] or []) and p.status() != psutil.STATUS_ZOMBIE:
            found.append(p)
    return found


@pytest.mark.parametrize(
    "launch",
    [
        "setsid",  # its own session: no longer in the command's process group
        "env -i setsid",  # and no tag in its environment: only being our descendant (we reap orphans) finds it
    ],
)
def test_a_daemon_that_leaves_the_group_dies_with_the_command(tmp_path: Path, launch: str) -> None:
    marker = f"{1000 + os.getpid() % 1000}.{time.monotonic_ns() % 1000}"
    cmd = f"{launch} sleep {marker} > /dev/null 2>&1 < /dev/null & sleep 0.3; echo 'acc: 1'"
    out = run_command(cmd, tmp_path, {}, 60, wall=W(tmp_path))
    assert out.returncode == 0 and out.value("acc") == 1.0
    assert _daemons(f"sleep {marker}") == []


def test_the_timeout_kills_the_whole_tree_even_a_daemon_holding_the_pipe(tmp_path: Path) -> None:
    marker = f"{2000 + os.getpid() % 1000}.{time.monotonic_ns() % 1000}"
    out = run_command(f"setsid sleep {marker} & echo 'acc: 2'; sleep {marker}", tmp_path, {}, 1, wall=W(tmp_path))
    assert out.returncode is None and out.value("acc") == 2.0
    assert _daemons(f"sleep {marker}") == []


def test_the_train_timeout_ends_before_the_jobs_deadline(monkeypatch) -> None:
    from senpai.agents.evidence import train_timeout
    from senpai.config.time_limits import StudentLimits
    from senpai.fleet.base import ENV_DEADLINE

    limits = StudentLimits(deadline=100, run=100, train=90, post=10, turn=None, attempts=1)  # a budget of 100 s
    monkeypatch.delenv(ENV_DEADLINE, raising=False)
    assert train_timeout(limits.train, limits.post, now=0) == 90  # no fleet deadline: 0.9 x the budget
    monkeypatch.setenv(ENV_DEADLINE, "1000")
    assert train_timeout(limits.train, limits.post, now=500) == 90  # the job has time: the budget rules
    assert train_timeout(limits.train, limits.post, now=950) == 40  # clone, checkout, a turn spent 350 s: 10 s left
    assert train_timeout(limits.train, limits.post, now=995) == 1.0
    monkeypatch.setenv(ENV_DEADLINE, "soon")
    assert train_timeout(limits.train, limits.post, now=995) == 90


# The target's program: logs `val` (its argument) as the summary of its own bare wandb run.
TRAIN = "import sys, wandb\nrun = wandb.init()\nrun.summary['val'] = float(sys.argv[1])\nrun.finish()\n"
# ... and hides its newest run folder under the name it is given (`{id}`: the run id, `{later}`: the
# local time ten minutes from now, as wandb stamps a folder)
PLANT = """import datetime, os, pathlib, sys
runs = pathlib.Path(os.environ["WANDB_DIR"]) / "wandb"
newest = sorted(runs.glob("offline-run-*"), key=lambda p: p.stat().st_mtime)[-1]
later = (datetime.datetime.now() + datetime.timedelta(minutes=10)).strftime("%Y%m%d_%H%M%S")
newest.rename(runs / sys.argv[1].format(id=os.environ["WANDB_RUN_ID"], later=later))
"""


def _turn(tmp_path: Path, train: str) -> SimpleNamespace:
    """The parts of a TurnContext `measure` uses: a real offline tracker, a real git work copy."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)
    (repo / "plant.py").write_text(PLANT)
    run_git(repo, "init", "-q", "-b", "main")
    run_git(repo, "add", ".")
    run_git(repo, "commit", "-q", "-m", "seed")
    target = TargetConfig.model_validate(
        {
            "name": "t", "train": train, "metric": {"name": "val", "direction": "maximize"},
            "holdout": {"command": "python score.py {artifact} {holdout}", "files": ["score.py"], "metric": "val",
                        "rule": "welch"},
            "params": {"file": "params.json", "space": {"w": {"type": "float", "low": 0.0, "high": 1.0}}},
            "protected": ["score.py"], "scope": ["params.json"],
        }
    )  # fmt: skip
    harness = harness_at(tmp_path / "senpai", repo="ada/digits")
    (tmp_path / "job").mkdir()
    return SimpleNamespace(
        harness=harness,
        forge=SimpleNamespace(clone_url="http://127.0.0.1:1/ada/digits.git"),
        ledger=SimpleNamespace(pulls=[SimpleNamespace(number=5, html_url="http://127.0.0.1:1/ada/digits/pulls/5")]),
        tracker=WandbTracker(harness.tracker),
        target=target,
        repo=SimpleNamespace(path=repo),
        head=run_git(repo, "rev-parse", "HEAD"),
        workdir=tmp_path / "job",
        time_limits=SimpleNamespace(student=StudentLimits(deadline=300, run=300, train=120, post=10, turn=None, attempts=2)),
    )


def _train(ctx: SimpleNamespace) -> tuple[str, Path, tuple[datetime, datetime]]:
    """prepare's plan and the train step for attempt 1 of PR 5 at the repo's head: (the run id, the
    arm's W&B dir, the step's time)."""
    a = Attempt(pr=5, attempt=1, hypothesis=hypothesis("b" * 40), branch="b", head=ctx.head, arms=[(None, {}, True)])
    planned = steps.plan(ctx, a, ctx.workdir)
    steps.train(ctx.workdir / steps.TRAIN, walls_of(ctx.harness))
    (arm,) = steps.TrainJob.model_validate_json((ctx.workdir / "train" / "job.json").read_text()).arms
    return arm.run_id, ctx.workdir / "train" / "arm-0" / "wandb", (planned.planned_at, datetime.now(UTC))


@pytest.mark.parametrize(
    "name",
    [
        "offline-run-99991231_235959-{id}",  # stamped in the future: the newest stamp wins an unwindowed read
        "offline-run-{later}-{id}-99",  # a collision index above any real one, stamped after the run
    ],
)
def test_the_student_takes_the_run_its_command_logged_not_one_it_planted_ahead(tmp_path: Path, name: str) -> None:
    ctx = _turn(tmp_path, f"python train.py 0.99 && python plant.py '{name}' && python train.py 0.5")
    run_id, folder, window = _train(ctx)
    assert run_id == "digits-pr5-a1-" + ctx.tracker.installation  # senpai.job.runs.run_id: predictable
    rec = ctx.tracker.collect_run(run_id, folder, window)
    assert (rec.summary["val"], rec.state) == (0.5, "finished")  # the command's own run, not the planted 0.99
    (taken,) = (ctx.tracker.dir / "wandb").glob(f"offline-run-*-{run_id}*")  # only that run came into the tracker
    assert rec.path == str(taken) and ctx.tracker.get_run(run_id).path == str(taken)


def test_a_run_already_in_the_tracker_is_not_the_commands(tmp_path: Path) -> None:
    ctx = _turn(tmp_path, "python train.py 0.99")
    run_id, folder, window = _train(ctx)
    ctx.tracker.collect_run(run_id, folder, window)  # a finished run of this id, in the tracker now
    ctx.target = ctx.target.model_copy(update={"train": "true"})  # the next try logs nothing
    shutil.rmtree(ctx.workdir / "train")
    run_id, folder, window = _train(ctx)
    with pytest.raises(NotFound):
        ctx.tracker.collect_run(run_id, folder, window)  # read back as no run: "no val reported (no W&B run found)"
    assert ctx.tracker.get_run(run_id).summary["val"] == 0.99
