"""W&B runs that fit W&B's model, against the real wandb library offline: job type, group, tags,
notes, the experiment's git commit and remote, run ids unique per installation, runs senpai logs
itself (a table included), what a PR's code can plant in the tracker dir, and `senpai sync` with
the ledger's verdicts.

Runs are read back with the tracker's reader and with wandb's own protobuf `Record`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from forge_fixtures import forge_folder_with_a_pr

from senpai.cli.main import cli
from senpai.cli.wiring import make_tracker
from senpai.config.harness import HarnessConfig, TrackerSettings, load_harness
from senpai.errors import ConfigError, TransientError
from senpai.job.runs import public_url, run_id
from senpai.tracker.base import RunIdentity, RunTable
from senpai.tracker.wandb import WandbTracker
from senpai.tracker.wandb_log import log_payloads
from senpai.tracker.wandb_sync import Destination, offline_runs, plan, sync_args, sync_offline, wandb_key_problem

EXPERIMENT = "e" * 40  # the PR head the run measured
REMOTE = "http://127.0.0.1:9/git/lab/digits.git"
PROGRAM = "import wandb\nrun = wandb.init()\nrun.log({'val_accuracy': 0.9})\nrun.finish()\n"


def git(cwd, *args) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    """A git repository whose HEAD is not the experiment's commit (as senpai's own checkout is not)."""
    repo = tmp_path / "senpai-checkout"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "x.txt").write_text("x\n")
    git(repo, "add", "x.txt")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "senpai's own")
    git(repo, "remote", "add", "origin", "https://github.com/someone/senpai.git")
    return repo


def tracker_at(path) -> WandbTracker:
    return WandbTracker(TrackerSettings(dir=str(path), mode="offline", project="runs"))


def train_identity(tracker: WandbTracker, pr: int = 4, **fields) -> RunIdentity:
    return RunIdentity(
        id=run_id("lab/digits", pr, "a1", tracker.installation),
        group=f"pr-{pr}",
        name=f"ada/pr-{pr}/1",
        tags=["senpai", "student:ada", f"pr-{pr}"],
        notes=f"http://127.0.0.1:9/lab/digits/pull/{pr}",
        git_commit=EXPERIMENT,
        git_remote=REMOTE,
        config={"senpai_pr": pr},
        **fields,
    )


def run_program(tracker: WandbTracker, run: RunIdentity | None, cwd, tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env |= {"WANDB_CONFIG_DIR": str(tmp_path / "cfg"), "WANDB_CACHE_DIR": str(tmp_path / "cache")}
    bare = {"WANDB_MODE": "offline", "WANDB_DIR": str(tracker.dir), "WANDB_SILENT": "true"}
    env |= tracker.env_for(run, tracker.dir) if run else bare  # logged straight where `collect_run` leaves it
    proc = subprocess.run([sys.executable, "-c", PROGRAM], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def plant(folder, run: str, group: str, installation: str, tmp_path) -> None:
    """A run a PR's code logs straight into the tracker dir, aimed at another team's project."""
    program = (
        "import sys, wandb\nrun = wandb.init(id=sys.argv[1], entity='victim-team', project='prod-models', "
        "group=sys.argv[2], mode='offline', config={'senpai_installation': sys.argv[3]})\nrun.finish()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env |= {"WANDB_DIR": str(folder), "WANDB_SILENT": "true", "WANDB_CONFIG_DIR": str(tmp_path / "cfg")}
    proc = subprocess.run([sys.executable, "-c", program, run, group, installation], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def wandb_run_record(run_dir):
    """The run's RunRecord as wandb's own protobuf classes read it from the log."""
    from wandb.proto import wandb_internal_pb2

    (log_file,) = (p for p in os.scandir(run_dir) if p.name.endswith(".wandb"))
    for payload in log_payloads(open(log_file.path, "rb").read()):
        rec = wandb_internal_pb2.Record()
        rec.ParseFromString(payload)
        if rec.WhichOneof("record_type") == "run":
            return rec.run
    raise AssertionError(f"no run record in {run_dir}")


def test_a_train_run_carries_job_type_notes_and_the_experiments_git_not_its_checkouts(tmp_path, checkout):
    tracker = tracker_at(tmp_path / "runs")
    run = train_identity(tracker)
    run_program(tracker, run, checkout, tmp_path)
    rec = tracker.get_run(run.id)
    assert (rec.state, rec.group, rec.job_type) == ("finished", "pr-4", "train")
    assert rec.tags == ["senpai", "student:ada", "pr-4"] and rec.notes == "http://127.0.0.1:9/lab/digits/pull/4"
    assert (rec.git_commit, rec.git_remote) == (EXPERIMENT, REMOTE)
    assert rec.config["senpai_installation"] == tracker.installation and rec.summary["val_accuracy"] == 0.9
    theirs = wandb_run_record(rec.path)
    assert (theirs.job_type, theirs.run_group, theirs.notes) == ("train", "pr-4", rec.notes)
    assert (theirs.git.commit, theirs.git.remote_url) == (EXPERIMENT, REMOTE)

    # the control: without senpai's identity wandb records the checkout it runs in
    bare = tracker_at(tmp_path / "bare")
    run_program(bare, None, checkout, tmp_path)
    (other,) = bare.list_runs()
    assert other.git_commit == git(checkout, "rev-parse", "HEAD") != EXPERIMENT
    assert other.job_type is None and other.notes is None


def test_two_installations_never_share_a_run_id_and_one_keeps_its_own(tmp_path):
    first, second = tracker_at(tmp_path / "demo-1" / "wandb"), tracker_at(tmp_path / "demo-2" / "wandb")
    assert first.installation != second.installation
    assert all(len(t.installation) == 8 and int(t.installation, 16) >= 0 for t in (first, second))
    assert run_id("lab/digits", 3, "a1", first.installation) != run_id("lab/digits", 3, "a1", second.installation)
    # a job retried later in the same installation computes the same id, and reads its run back by it
    assert tracker_at(tmp_path / "demo-1" / "wandb").installation == first.installation
    assert run_id("Lab/My Digits!", 12, "a2", "0badc0de") == "my-digits-pr12-a2-0badc0de"
    assert run_id("lab/" + "x" * 80, 99999, "v0123456789", "0badc0de").__len__() <= 64
    assert run_id("lab/digits", None, "t0123456789", "0badc0de") == "digits-advisor-t0123456789-0badc0de"


def harness(tmp_path, repo: str = "lab/digits", base_url: str = "http://127.0.0.1:9", **tracker) -> HarnessConfig:
    """A harness config whose tracker dir is tmp_path/wandb, written to tmp_path/harness.yaml and loaded."""
    config = {
        "forge": {"base_url": base_url, "repo": repo, "token_env": "SENPAI_WANDB_RUNS_TEST_TOKEN", "base_branch": "advisor"},
        "tracker": {"dir": str(tmp_path / "wandb"), "mode": "offline", "project": "runs", **tracker},
        "fleet": {"dir": str(tmp_path / "jobs")},
        "state_dir": str(tmp_path / "state"),
        "students": [{"name": "ada"}],
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "harness.yaml").write_text(yaml.safe_dump(config))
    return load_harness(tmp_path / "harness.yaml")


def test_the_installation_is_the_configs_in_every_process(tmp_path):
    cfg = harness(tmp_path)
    here = make_tracker(cfg).installation
    assert here == cfg.tracker.installation_id("lab/digits") and len(here) == 8 and int(here, 16) >= 0
    code = (
        "from senpai.cli.wiring import make_tracker; from senpai.config.harness import load_harness; "
        f"print(make_tracker(load_harness({str(tmp_path / 'harness.yaml')!r})).installation)"
    )
    other_process = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other_process == here  # the wrapper, each job and the CLI agree, with no file to agree through
    assert (
        make_tracker(harness(tmp_path / "b", repo="other/digits")).installation
        != make_tracker(harness(tmp_path / "b")).installation
    )
    assert make_tracker(harness(tmp_path / "c", installation="0badc0de")).installation == "0badc0de"
    with pytest.raises(ConfigError, match="installation"):
        harness(tmp_path / "d", installation="../../x")


def _plant(path, kind: str) -> None:
    """What a PR's train command can leave at `path` under its WANDB_DIR."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "garbage":
        path.write_bytes(b"\xff" * 100_000)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()


@pytest.mark.parametrize("kind", ["garbage", "fifo", "directory"])
def test_what_a_prs_code_plants_in_the_tracker_dir_never_breaks_the_next_job(tmp_path, kind):
    tracker = tracker_at(tmp_path / "wandb")
    installation, run = tracker.installation, train_identity(tracker, pr=6)
    # the files an older senpai kept there, and the folder its run configs went to
    for name in ("senpai-installation", "senpai-tags.jsonl", f"senpai-config/{run.id}.yaml"):
        _plant(tracker.dir / name, kind)
    again = tracker_at(tmp_path / "wandb")  # the next job
    assert again.installation == installation
    env = again.env_for(run, tmp_path / "job")  # the student: never blocks on a FIFO, never fails on a planted name
    assert yaml.safe_load(open(env["WANDB_SWEEP_PARAM_PATH"]))["senpai_installation"]["value"] == installation
    assert not env["WANDB_SWEEP_PARAM_PATH"].startswith(str(tracker.dir))
    assert again.add_tags("pr-6", ["verdict:merge"]) == 0  # the advisor after a merge
    assert again.log_run(run.model_copy(update={"job_type": "verify"}), {"passed": 1.0}).state == "finished"  # the verifier


def test_a_clone_url_with_a_credential_never_becomes_the_runs_remote():
    assert public_url("https://x-access-token:ghs_secret@github.com/lab/digits.git") == "https://github.com/lab/digits.git"
    assert public_url("http://bot@127.0.0.1:8123/git/lab/digits.git") == "http://127.0.0.1:8123/git/lab/digits.git"
    assert public_url(REMOTE) == REMOTE


def test_a_run_senpai_logs_itself_has_its_summary_and_table_and_a_retry_writes_the_same_id(tmp_path):
    tracker = tracker_at(tmp_path)
    run = train_identity(tracker, pr=5, job_type="verify").model_copy(update={"tags": ["senpai", "verifier", "pr-5"]})
    table = RunTable(name="holdout", columns=["side", "seed", "acc"], rows=[["candidate", 0, 0.9], ["baseline", 0, 0.7]])
    rec = tracker.log_run(run, {"candidate_mean": 0.9, "improvement": 0.2}, table)
    assert (rec.id, rec.state, rec.job_type, rec.group, rec.url) == (run.id, "finished", "verify", "pr-5", None)
    assert rec.summary["candidate_mean"] == 0.9 and rec.summary["improvement"] == 0.2
    assert (rec.git_commit, rec.git_remote, rec.notes) == (EXPERIMENT, REMOTE, run.notes)
    (table_file,) = (tmp_path / "wandb").glob(f"offline-run-*-{run.id}/files/media/table/holdout_*.table.json")
    assert json.loads(table_file.read_text())["data"] == table.rows  # wandb's own table file
    again = tracker.log_run(run, {"candidate_mean": 0.91})
    assert again.id == rec.id
    read = tracker.get_run(run.id)  # at once: log_run waits until wandb-core has written the run out
    assert (read.state, read.summary["candidate_mean"], read.job_type, read.path) == ("finished", 0.91, "verify", again.path)


def test_offline_verdicts_are_the_ledgers_and_tag_lines_a_pr_forged_are_not_applied(tmp_path, checkout):
    tracker = tracker_at(tmp_path / "out" / "wandb")
    run = train_identity(tracker)
    run_program(tracker, run, checkout, tmp_path)
    forged = {"group": "pr-4", "tags": ["verdict:merge"], "installation": tracker.installation}
    (tracker.dir / "senpai-tags.jsonl").write_text(json.dumps(forged) + "\n")  # the train command's doing
    assert tracker.add_tags("pr-4", ["verdict:close"]) == 0  # offline: nothing written beside the runs
    assert (tracker.dir / "senpai-tags.jsonl").read_text() == json.dumps(forged) + "\n"
    runs = offline_runs(tmp_path / "out")  # the demo's layout: <out>/wandb/wandb/offline-run-*
    decided = {"pr-4": {"verdict:close"}, "pr-9": {"verdict:merge"}}
    assert plan(runs, tracker.installation, decided).tags == {run.id: {"verdict:close"}}
    theirs = plan(runs, "0badc0de", decided)  # another installation's pr-4: neither uploaded nor tagged
    assert (theirs.upload, theirs.skipped, theirs.tags) == ([], [runs[0].path], {})
    said = []  # an upgrade: the config's installation is not the runs' (an older senpai kept it in a file)
    sync_offline(tmp_path / "out", said.append, dry_run=True, destination=Destination("0badc0de", "runs"))
    assert said == [
        f"no offline W&B runs of installation 0badc0de under {tmp_path / 'out'}; runs of other installations: "
        f"{tracker.installation} (1 runs). To sync one of them, set tracker.installation to its id in the config"
    ]


@pytest.fixture
def decided_forge(tmp_path, monkeypatch) -> tuple[Path, HarnessConfig, int]:
    """A local forge data folder (no server running) whose one senpai PR the bot decided `close`;
    returns (data folder, harness config, PR number)."""
    data, settings, pr = forge_folder_with_a_pr(tmp_path, "x", reason="not better")
    cfg = harness(tmp_path, repo=settings.repo, base_url=settings.base_url)
    monkeypatch.delenv("SENPAI_WANDB_RUNS_TEST_TOKEN", raising=False)
    return data, cfg, pr


def test_senpai_sync_tags_the_ledgers_verdict_not_a_forged_one(decided_forge, tmp_path, checkout):
    data, cfg, pr = decided_forge
    tracker = make_tracker(cfg)
    run = train_identity(tracker, pr=pr)
    run_program(tracker, run, checkout, tmp_path)
    forged = [{"group": f"pr-{pr}", "tags": ["verdict:merge"], "installation": tracker.installation}]
    forged += [{"group": "pr-77", "tags": ["verdict:merge"], "installation": tracker.installation}]
    (tracker.dir / "senpai-tags.jsonl").write_text("".join(json.dumps(f) + "\n" for f in forged))
    config = str(tmp_path / "harness.yaml")
    listed = CliRunner().invoke(cli, ["sync", "--config", config, "--local-forge", str(data), "--dry-run"])
    assert listed.exit_code == 0, listed.output
    assert f"would tag <the key's default entity>/runs/{run.id} (if it lacks them): verdict:close" in listed.stderr
    assert "Would sync 1 run(s)" in listed.stderr  # wandb's own dry run
    assert "verdict:merge" not in listed.stderr
    assert listed.stdout.splitlines() == ["runs: 1", "synced: 0", "skipped: 0", "tags_added: 0"]
    bare = CliRunner().invoke(cli, ["sync", str(tracker.dir), "--dry-run"])  # a folder alone: no ledger, no tags
    assert "would tag" not in bare.stderr and "none is uploaded without --config" in bare.stderr


def test_senpai_sync_needs_a_config_and_a_key_and_lists_with_dry_run(tmp_path, checkout, monkeypatch):
    tracker = tracker_at(tmp_path / "out" / "wandb")
    run_program(tracker, train_identity(tracker), checkout, tmp_path)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    runner = CliRunner()
    bare = runner.invoke(cli, ["sync", str(tmp_path / "out")])  # no config: whose runs, into which project?
    assert isinstance(bare.exception, ConfigError) and "--config <harness.yaml>, or set $SENPAI_CONFIG" in str(bare.exception)
    harness(tmp_path / "cfg", installation=tracker.installation)
    missing = runner.invoke(cli, ["sync", str(tmp_path / "out"), "--config", str(tmp_path / "cfg" / "harness.yaml")])
    assert isinstance(missing.exception, ConfigError) and "export WANDB_API_KEY" in str(missing.exception)
    listed = runner.invoke(cli, ["sync", str(tmp_path / "out"), "--dry-run"])
    assert listed.exit_code == 0, listed.output
    assert "1 offline W&B run(s) not yet synced" in listed.stderr and "none is uploaded without --config" in listed.stderr
    assert listed.stdout.splitlines() == ["runs: 0", "synced: 0", "skipped: 1", "tags_added: 0"]
    nothing = runner.invoke(cli, ["sync", str(checkout)])
    assert nothing.exit_code == 0 and "no offline W&B runs left to sync" in nothing.stderr
    not_a_folder = runner.invoke(cli, ["sync", str(tmp_path / "absent")])
    assert isinstance(not_a_folder.exception, ConfigError)


@pytest.mark.parametrize("key", ["0123456789abcdef", "paste your key here " + "x" * 40])
def test_a_malformed_wandb_key_is_a_config_error_naming_the_fix_and_uploads_nothing(decided_forge, tmp_path, checkout, key):
    data, cfg, pr = decided_forge
    tracker = make_tracker(cfg)
    run_program(tracker, train_identity(tracker, pr=pr), checkout, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env |= {"WANDB_API_KEY": key, "WANDB_BASE_URL": "http://127.0.0.1:9", "WANDB_CONFIG_DIR": str(tmp_path / "cfg")}
    args = [sys.executable, "-m", "senpai", "sync", "--config", str(tmp_path / "harness.yaml"), "--local-forge", str(data)]
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr  # permanent: a retry cannot fix it (3 would say it might)
    problem = wandb_key_problem(key)  # wandb's own reading of the key
    assert problem and f"WANDB_API_KEY is malformed: {problem} Copy the key again" in proc.stderr
    assert key not in proc.stderr  # a pasted key is never printed back
    assert [r.synced for r in offline_runs(tracker.dir)] == [False]


def test_senpai_sync_uploads_only_this_installations_runs_into_the_configs_project(tmp_path, checkout):
    tracker = tracker_at(tmp_path / "wandb")
    run = train_identity(tracker, pr=5)
    run_program(tracker, run, checkout, tmp_path)
    plant(tracker.dir, "prodrun123", "pr-5", tracker.installation, tmp_path)  # ours by its config, logged for a victim
    plant(tracker.dir, "theirs1", "pr-5", "0badc0de", tmp_path)  # another installation's
    here = Destination(tracker.installation, "runs", "lab-team")
    lines: list[str] = []
    report = sync_offline(tmp_path, lines.append, dry_run=True, destination=here, verdicts=lambda: {"pr-5": {"verdict:merge"}})
    said = "\n".join(lines)
    assert "victim-team" not in said and "prod-models" not in said and "theirs1" not in said
    assert f"would sync 2 offline W&B run(s) under {tmp_path} to lab-team/runs" in said and "Would sync 2 run(s)" in said
    assert "would tag lab-team/runs/prodrun123 (if it lacks them): verdict:merge" in said
    assert f"would tag lab-team/runs/{run.id} (if it lacks them): verdict:merge" in said
    assert [p.name.rsplit("-", 1)[1] for p in report.skipped] == ["theirs1"] and len(report.runs) == 2
    # the upload itself names the config's entity and project, which override the runs' own
    args = sync_args(report.runs, "lab-team", "runs", dry_run=False)
    assert args[1:4] == ["-I", "-m", "wandb"]  # isolated: no folder a job's code wrote reaches its imports
    assert args[4:7] == ["sync", "--project=runs", "--entity=lab-team"] and args[7:] == list(map(str, report.runs))


def test_senpai_sync_reads_the_ledger_first_and_tags_runs_an_earlier_sync_uploaded(tmp_path, checkout, monkeypatch):
    tracker = tracker_at(tmp_path / "wandb")
    earlier = train_identity(tracker, pr=4)
    run_program(tracker, earlier, checkout, tmp_path)
    (run_dir,) = tmp_path.glob(f"wandb/wandb/offline-run-*-{earlier.id}")
    (run_dir / f"run-{earlier.id}.wandb.synced").touch()  # what `wandb sync` leaves: uploaded before PR 4 was decided
    here, lines = Destination(tracker.installation, "runs"), []
    report = sync_offline(tmp_path, lines.append, dry_run=True, destination=here, verdicts=lambda: {"pr-4": {"verdict:close"}})
    assert report.runs == [] and "no offline W&B runs left" not in "\n".join(lines)
    assert f"would tag <the key's default entity>/runs/{earlier.id} (if it lacks them): verdict:close" in lines

    run_program(tracker, train_identity(tracker, pr=6), checkout, tmp_path)  # a new run to upload

    def unreadable() -> dict[str, set[str]]:
        raise TransientError("the forge is down")

    for dry_run in (True, False):  # a ledger that cannot be read stops the sync before anything is uploaded
        monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
        monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")
        lines.clear()
        with pytest.raises(TransientError, match="the forge is down"):
            sync_offline(tmp_path, lines.append, dry_run=dry_run, destination=here, verdicts=unreadable)
        assert not any("sync" in line for line in lines), lines
    assert len([r for r in offline_runs(tmp_path) if not r.synced]) == 1
