"""WandbTracker against real offline wandb runs: child processes call a bare `wandb.init()` under
the env from `env_for`, and the tracker reads their `.wandb` logs back."""

import logging
import math
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml
from forge_fixtures import commit_and_push, hypothesis

import senpai.ledger.table as table
from senpai.config.harness import TrackerSettings
from senpai.errors import ConfigError, NotFound
from senpai.ledger.blocks import Evidence, PrimaryResult, RunRef
from senpai.ledger.labels import SENPAI
from senpai.ledger.records import record_text
from senpai.ledger.transitions import hypothesis_body
from senpai.tracker.base import RunIdentity
from senpai.tracker.wandb import WandbTracker, in_window
from senpai.tracker.wandb_log import Malformed, decode, log_payloads, records

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
    """The program's env, logging straight into the tracker's dir (as `collect_run` leaves a run there)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(WANDB_CONFIG_DIR=str(home / "config"), WANDB_CACHE_DIR=str(home / "cache"))
    env.update(WANDB_DATA_DIR=str(home / "data"))
    return env | tracker.env_for(run, tracker.dir)


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
    env = tracker.env_for(run, tracker.dir.parent / "job")
    assert env["WANDB_RUN_ID"] == "run-env"
    assert env["WANDB_RUN_GROUP"] == "pr-3"
    assert env["WANDB_NAME"] == "alice/pr-3/1"
    assert env["WANDB_TAGS"] == "senpai,student:alice,pr-3"
    assert env["WANDB_PROJECT"] == "senpai"
    assert env["WANDB_MODE"] == "offline"
    assert env["WANDB_DIR"] == str(tracker.dir.parent / "job")  # the command's own folder, never the tracker's
    assert env["WANDB_SILENT"] == "true"
    assert "WANDB_ENTITY" not in env
    assert env["WANDB_JOB_TYPE"] == "train"
    assert "WANDB_CONFIG_PATHS" not in env  # breaks wandb.init() in 0.31, see the canary below
    doc = yaml.safe_load(open(env["WANDB_SWEEP_PARAM_PATH"]))
    assert doc == {
        "wandb_version": 1,
        "pr": {"value": 3},
        "head": {"value": "abc123"},
        "hypothesis": {"value": "h-1"},
        "senpai_installation": {"value": tracker.installation},
    }
    config = Path(env["WANDB_SWEEP_PARAM_PATH"])
    assert config.parent == tracker.dir.parent / "job" and config.name.startswith("senpai-config-run-env-")


def test_env_for_entity_and_bad_tags(tmp_path):
    tracker = WandbTracker(TrackerSettings(dir=str(tmp_path), mode="offline", entity="lab"))
    bare = RunIdentity(id="r1", group="pr-1", name="a/pr-1/1", tags=[])
    env = tracker.env_for(bare, tmp_path / "job")
    assert env["WANDB_ENTITY"] == "lab"
    assert not {"WANDB_TAGS", "WANDB_NOTES", "WANDB_GIT_COMMIT", "WANDB_GIT_REMOTE_URL"} & set(env)
    assert yaml.safe_load(open(env["WANDB_SWEEP_PARAM_PATH"])) == {
        "wandb_version": 1,
        "senpai_installation": {"value": tracker.installation},
    }
    with pytest.raises(ConfigError, match="comma"):
        tracker.env_for(RunIdentity(id="r2", group="g", name="n", tags=["a,b"]), tmp_path / "job")


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


def test_a_retry_in_the_same_second_is_the_same_run_and_an_id_ending_in_a_number_is_its_own(tracker, runs, tmp_path):
    """wandb names a second folder of one id in the same second `offline-run-<stamp>-<id>-1`."""
    src = tracker.get_run("run-ok").path
    base = WandbTracker(TrackerSettings(dir=str(tmp_path), mode="offline"))
    first = copy_run(src, tmp_path, "run-x", stamp="20261203_112944", cut=40000)
    retry = tmp_path / "wandb" / "offline-run-20261203_112944-run-x-1"
    shutil.copytree(first.parent, retry)
    (retry / "run-run-x.wandb").write_bytes((Path(src) / "run-run-ok.wandb").read_bytes())
    os.utime(retry, (0, 0))  # the index orders the two, not the folder's mtime
    assert [r.id for r in base.list_runs()] == ["run-x"]
    assert (base.get_run("run-x").path, base.get_run("run-x").state) == (str(retry), "finished")
    own = copy_run(src, tmp_path, "run-x-2", stamp="20261203_112944")  # an id that really ends in -2
    assert base.get_run("run-x-2").path == str(own.parent)
    assert [r.id for r in base.list_runs()] == ["run-x", "run-x-2"]


def test_a_window_keeps_only_the_folders_stamped_in_it(tracker, runs, tmp_path, caplog):
    """A PR's code can plant a folder of another PR's run id, stamped in the future or suffixed `-99`:
    read with the train command's window, only the folder stamped in it counts."""
    base = WandbTracker(TrackerSettings(dir=str(tmp_path), mode="offline"))
    start = datetime(2026, 12, 3, 11, 29, 44).astimezone()  # local time, as wandb stamps
    window = (start, start + timedelta(seconds=60))
    real = copy_run(tracker.get_run("run-ok").path, tmp_path, "run-w", stamp="20261203_112943")  # truncated second
    future = copy_run(tracker.get_run("run-crash").path, tmp_path, "run-w", stamp="99991231_235959")
    suffixed = tmp_path / "wandb" / "offline-run-20261203_112940-run-w-99"  # 4 s before the start
    copy_run(tracker.get_run("run-nan").path, tmp_path, "run-w", stamp="20261203_112940").parent.rename(suffixed)
    copy_run(tracker.get_run("run-nan").path, tmp_path, "run-w", stamp="20261399_000000")  # no such date
    assert base.get_run("run-w").path == str(future.parent)  # without a window the newest stamp wins

    with caplog.at_level(logging.WARNING, logger="senpai.tracker.wandb"):
        rec = base.get_run("run-w", window)
    assert (rec.path, rec.state, rec.summary["best"]) == (str(real.parent), "finished", 0.7)
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "ignored 3 offline folder(s)" in warning and future.parent.name in warning and suffixed.name in warning
    shutil.rmtree(real.parent)
    with pytest.raises(NotFound, match="in the window"):  # the job then has no run, as when none was logged
        base.get_run("run-w", window)


def test_a_stamp_repeated_by_the_end_of_summer_time_counts_in_either_reading(monkeypatch):
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        # 02:30 local happens twice on 2026-10-25: a window in the second one keeps that stamp
        start = datetime(2026, 10, 25, 2, 30, 0, fold=1).astimezone()
        folder = Path("offline-run-20261025_023010-r")
        assert in_window("r", [folder], (start, start + timedelta(seconds=20))) == [folder]
        assert in_window("r", [folder], (start + timedelta(seconds=20), start + timedelta(seconds=40))) == []
    finally:
        monkeypatch.undo()
        time.tzset()


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


def copy_run(src: str, root, run_id: str, stamp: str = "20261201_000000", cut: int | None = None):
    """A copy of the real offline run folder `src` as run `run_id` under `root/wandb`; `cut`: keep
    only the log's first bytes (a run still writing). Returns the copy's log file."""
    dest = root / "wandb" / f"offline-run-{stamp}-{run_id}"
    shutil.copytree(src, dest)
    (old,) = dest.glob("run-*.wandb")
    data = old.read_bytes()
    old.unlink()
    log_file = dest / f"run-{run_id}.wandb"
    log_file.write_bytes(data[:cut] if cut else data)
    return log_file


def count_scandir(monkeypatch) -> list[str]:
    calls: list[str] = []
    real = os.scandir

    def counting(path="."):
        calls.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", counting)
    return calls


def test_wandb_writes_nothing_after_the_exit_record(tracker, runs):
    """Why a finished or crashed run is read once: its log ends with the exit record."""
    for run_id in ("run-ok", "run-crash"):
        path = tracker.get_run(run_id).path
        (log_file,) = (p for p in os.scandir(path) if p.name.endswith(".wandb"))
        kinds = [r.kind for r in records(open(log_file.path, "rb").read())]
        assert kinds[-1] == "exit" and kinds.count("exit") == 1


def _items(items) -> list[tuple]:
    return [(i.key, list(i.nested_key), i.value_json) for i in items]


def test_the_log_decoder_reads_what_wandbs_own_record_reads(tracker, runs):
    """senpai decodes the fields it folds without importing wandb; wandb's protobuf `Record` agrees
    on every record of real logs (a record over three blocks, NaN, a crash)."""
    from wandb.proto import wandb_internal_pb2

    for run_id in ("run-ok", "run-nan", "run-crash"):
        path = tracker.get_run(run_id).path
        (log_file,) = (p for p in os.scandir(path) if p.name.endswith(".wandb"))
        payloads = list(log_payloads(open(log_file.path, "rb").read()))
        assert len(payloads) > 10
        for payload in payloads:
            theirs, ours = wandb_internal_pb2.Record(), decode(payload)
            theirs.ParseFromString(payload)
            kind = theirs.WhichOneof("record_type")
            assert ours.kind == (kind if kind in ("run", "config", "summary", "exit") else None)
            if kind == "run":
                r = theirs.run
                assert (ours.display_name, ours.run_group, ours.tags) == (r.display_name, r.run_group, list(r.tags))
                assert (ours.job_type, ours.notes, ours.entity, ours.project) == (r.job_type, r.notes, r.entity, r.project)
                assert (ours.git_commit, ours.git_remote) == (r.git.commit, r.git.remote_url)
                assert _items(ours.config.update) == _items(r.config.update)
                assert _items(ours.summary.update) == _items(r.summary.update)
            elif kind in ("config", "summary"):
                theirs_changes, ours_changes = getattr(theirs, kind), getattr(ours, kind)
                assert _items(ours_changes.update) == _items(theirs_changes.update)
                assert _items(ours_changes.remove) == _items(theirs_changes.remove)
            elif kind == "exit":
                assert ours.exit_code == theirs.exit.exit_code
    assert [r.kind for r in records(b"")] == []


def test_the_log_decoder_refuses_what_is_not_protobuf():
    from wandb.proto import wandb_internal_pb2

    exit_record = wandb_internal_pb2.Record()
    exit_record.exit.exit_code = -9  # an int32 sign-extended to a 10-byte varint
    assert decode(exit_record.SerializeToString()).exit_code == -9
    for bad in (b"\x80", b"\x8a\x01\x05abc", b"\x03", b"\x00\x01", b"\x8a\x01\x03\x42\x01\xff"):
        with pytest.raises(Malformed):
            decode(bad)


def test_many_runs_one_folder_scan_and_one_parse_each(tracker, runs, tmp_path, monkeypatch):
    src = tracker.get_run("run-ok").path
    ids = [f"run-{i}" for i in range(40)]
    for run_id in ids:
        copy_run(src, tmp_path, run_id)
    many = WandbTracker(TrackerSettings(dir=str(tmp_path), mode="offline"))
    scans = count_scandir(monkeypatch)
    got = many.get_runs([*ids, "run-missing", ids[0]])
    assert sorted(got) == sorted(ids) and {r.state for r in got.values()} == {"finished"}
    assert got["run-7"].summary["best"] == 0.7 and got["run-7"].path.endswith("-run-7")
    assert len(scans) == 2  # one per root (wandb/, .wandb/), not one per run
    assert many.parses == 40
    again = many.get_runs(ids)
    assert len(scans) == 4 and many.parses == 40  # finished runs are not read again
    assert again == got and many.get_run("run-3") == got["run-3"] and many.parses == 40
    assert [r.id for r in many.list_runs()] == sorted(ids) and many.parses == 40


def test_a_running_run_is_read_again_when_its_log_changes(tracker, runs, tmp_path):
    src = tracker.get_run("run-ok").path
    full = open(next(p.path for p in os.scandir(src) if p.name.endswith(".wandb")), "rb").read()
    log_file = copy_run(src, tmp_path, "run-live", cut=40000)
    live = WandbTracker(TrackerSettings(dir=str(tmp_path), mode="offline"))
    assert live.get_run("run-live").state == "running" and live.parses == 1
    assert live.get_run("run-live").state == "running" and live.parses == 1  # unchanged log: not read again
    stale = time.time() - 3600
    os.utime(log_file, (stale, stale))
    assert live.get_run("run-live").state == "unknown" and live.parses == 2  # mtime moved: read again
    log_file.write_bytes(full)  # the run went on and finished
    rec = live.get_run("run-live")
    assert rec.state == "finished" and rec.summary["best"] == 0.7 and live.parses == 3
    assert live.get_run("run-live") == rec and live.parses == 3
    retry = copy_run(src, tmp_path, "run-live", stamp="20261202_000000", cut=40000)  # a newer folder of the id
    assert live.get_run("run-live").state == "running" and live.parses == 4
    assert live.get_run("run-live").path == str(retry.parent)
    empty = tmp_path / "wandb" / "offline-run-20261201_000000-run-new"
    empty.mkdir()  # wandb made the folder, its log is not there yet
    assert live.get_run("run-new").state == "unknown" and live.parses == 5
    (empty / "run-run-new.wandb").write_bytes(full[:40000])
    assert live.get_run("run-new").state == "running" and live.parses == 6


def test_ledger_reads_all_runs_in_one_scan_and_parses_only_changed_prs(tracker, runs, forge_repo, tmp_path, monkeypatch):
    """`LedgerReader.experiments()` looks at the run folder once, whatever the number of runs, and
    parses a PR again only when the PR or its comments changed."""
    forge, _ = forge_repo
    src = tracker.get_run("run-ok").path
    head = commit_and_push(forge, tmp_path / "seed", "senpai/ada/h", {"README.md": "wider\n"}, start="advisor")
    base = forge.branch_sha("advisor")
    numbers = []
    for i in range(6):  # one branch, so all but the last PR are closed (one open PR per head and base)
        body = hypothesis_body(hypothesis(base, f"h-{i}", metric="best"))
        pr = forge.create_pull(f"h-{i}", body, "senpai/ada/h", "advisor", [SENPAI])
        ids = [f"run-{i}-a", f"run-{i}-b"]
        for run_id in ids:
            copy_run(src, tmp_path / "runs", run_id)
        ev = Evidence(
            pr=pr.number, attempt=1, student="ada", head=head, command="train", outcome="ok", interpretation="ok",
            runs=[RunRef(id=r, url=None, state="finished") for r in [*ids, "run-gone"]],
            primary=PrimaryResult(name="best", value=0.7, baseline=0.5, delta=0.2),
        )  # fmt: skip
        forge.create_comment(pr.number, record_text(ev, "evidence"))
        if i < 5:
            forge.update_pull(pr.number, state="closed")
        numbers.append(pr.number)
    parsed: list[int] = []
    real_read = table.read_experiment
    monkeypatch.setattr(table, "read_experiment", lambda pr, *a: parsed.append(pr.number) or real_read(pr, *a))
    led = table.LedgerReader(forge, WandbTracker(TrackerSettings(dir=str(tmp_path / "runs"), mode="offline")))
    scans = count_scandir(monkeypatch)
    exps = led.experiments()
    assert [e.pr for e in exps] == numbers and sorted(parsed) == numbers
    assert [(r.id, r.state, r.metric) for r in exps[2].runs] == [
        ("run-2-a", "finished", 0.7),
        ("run-2-b", "finished", 0.7),
        ("run-gone", "missing", None),
    ]
    assert len(scans) == 2 and led.tracker.parses == 12  # one look at each root for 12 runs
    time.sleep(table.SETTLE + 1)  # comments listed within SETTLE of a change (whole seconds) are listed again
    led.experiments()
    parsed.clear()
    assert led.experiments() == exps and parsed == [] and led.tracker.parses == 12
    forge.create_comment(numbers[3], "a human's note")
    again = led.experiments()
    assert parsed == [numbers[3]] and len(scans) == 8 and led.tracker.parses == 12
    assert again[:3] + again[4:] == exps[:3] + exps[4:] and again[3].updated_at != exps[3].updated_at


def test_reading_offline_runs_does_not_import_wandb(tracker, runs):
    """A job reading a run back (the student's evidence, the advisor's ledger) pays no `wandb` import."""
    code = (
        "import sys; from senpai.config.harness import TrackerSettings; from senpai.tracker.wandb import WandbTracker\n"
        f"t = WandbTracker(TrackerSettings(dir={str(tracker.dir)!r}, mode='offline'))\n"
        "print(t.get_run('run-ok').summary['best'], sorted(m for m in ('wandb', 'google.protobuf') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "0.7 []", proc.stdout + proc.stderr
