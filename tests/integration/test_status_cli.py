"""`senpai status` and `senpai logs` as a user meets them: on a stopped local forge's data folder
(`--local-forge`, as after `senpai demo`) and a local fleet that runs a real job."""

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from forge_fixtures import forge_folder_with_a_pr

from senpai.cli.main import cli
from senpai.errors import NotFound
from senpai.fleet.base import JobSpec
from senpai.fleet.local import LocalFleet
from senpai.wrapper.health import HealthServer, TickHealth
from senpai.wrapper.metrics import WrapperMetrics

SCRIPT = "import time; print('one', flush=True); time.sleep(1.5); print('two', flush=True)"


@pytest.fixture
def demo_like(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A forge data folder (no server running) holding one wip senpai PR of student ada, and its
    harness config; returns (data folder, config)."""
    data, settings, _ = forge_folder_with_a_pr(tmp_path, "wider | deeper", id="h-1")
    config = {
        "forge": {"base_url": settings.base_url, "repo": settings.repo, "token_env": "SENPAI_STATUS_TEST_TOKEN"},
        "tracker": {"dir": str(tmp_path / "wandb")},
        "fleet": {"dir": str(tmp_path / "jobs")},
        "state_dir": str(tmp_path / "state"),
        "students": [{"name": "ada"}, {"name": "bo"}],
        "max_experiments": 3,
    }
    path = tmp_path / "harness.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.delenv("SENPAI_STATUS_TEST_TOKEN", raising=False)
    return data, path


def _launch(config: Path, script: str = SCRIPT) -> LocalFleet:
    """Launch job senpai-student-pr1-1 running `script` on the config's local fleet."""
    fleet = LocalFleet(Path(yaml.safe_load(config.read_text())["fleet"]["dir"]))
    command = [sys.executable, "-c", script]
    fleet.launch(JobSpec(name="senpai-student-pr1-1", role="student", pr=1, student="ada", command=command, wall_seconds=120))
    return fleet


def test_status_reads_the_forge_folder_and_the_fleet(demo_like):
    data, config = demo_like
    fleet = _launch(config, "import time; time.sleep(100)")  # deleted at the end
    try:
        result = CliRunner().invoke(cli, ["status", "--config", str(config), "--local-forge", str(data), "--json"])
        assert result.exit_code == 0, result.output
        status = json.loads(result.output)
        (wip,) = status["open"]
        assert (wip["pr"], wip["state"], wip["student"]) == (1, "wip", "ada") and "wider | deeper" in wip["title"]
        assert [s["activity"] for s in status["students"]] == ["running", "idle"]
        (job,) = status["jobs"]
        assert job["name"] == "senpai-student-pr1-1" and job["phase"] in ("pending", "running")
        assert status["caps"]["experiments"] == 1 and status["caps"]["experiment_cap"] == 3
        assert status["last_tick"]["source"] == "ledger"  # the bot opened the PR
        text = CliRunner().invoke(cli, ["status", "--config", str(config), "--local-forge", str(data)]).output
        assert "senpai status" in text and "wider \\| deeper" not in text  # rich renders the table, unescaped
        health = TickHealth(5.0)
        health.tick_started()
        health.tick_finished()
        server = HealthServer(health, WrapperMetrics().registry).start()
        args = ["status", "--config", str(config), "--local-forge", str(data), "--json", "--health", server.url]
        try:
            tick = json.loads(CliRunner().invoke(cli, args).output)["last_tick"]
            assert tick["source"] == "health" and tick["at"] is not None and tick["detail"].startswith("1 ticks, ok")
        finally:
            server.stop()
        tick = json.loads(CliRunner().invoke(cli, args).output)["last_tick"]  # the wrapper is gone: the ledger's
        assert tick["source"] == "ledger" and f"{server.url} did not answer (ConnectionError)" in tick["detail"]
    finally:
        fleet.delete("senpai-student-pr1-1")


def test_watch_piped_prints_each_reading_as_it_is_read_and_a_kill_loses_none(demo_like):
    data, config = demo_like
    args = [sys.executable, "-m", "senpai", "status", "--config", str(config), "--local-forge", str(data), "--watch", "1"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(60, proc.kill)  # a reading that never comes ends the read, not the suite
    watchdog.start()
    try:
        seen = []
        while sum("senpai status" in line for line in seen) < 2 and len(seen) < 400:  # bounded: a few readings
            seen.append(proc.stdout.readline())
            assert seen[-1] or proc.poll() is None, proc.stderr.read()  # printed while running, not at exit
    finally:
        watchdog.cancel()
        proc.terminate()
        proc.wait(timeout=30)
    assert "wider | deeper" in "".join(seen) and proc.returncode == -signal.SIGTERM


def test_logs_follows_a_prs_newest_job_to_its_end_and_names_the_known_jobs(demo_like):
    _, config = demo_like
    fleet = _launch(config)
    try:
        result = CliRunner().invoke(cli, ["logs", "--config", str(config), "#1", "-f", "--interval", "0.2"])
        assert result.exit_code == 0, result.output
        assert result.output.count("one") == 1 and result.output.count("two") == 1  # each line once
        assert result.stderr.startswith("[job senpai-student-pr1-1: student ada on PR #1, attempt 1; ")  # which job, first
        assert "one" not in result.stderr  # the log itself is stdout's alone
        assert "[job senpai-student-pr1-1: succeeded, exit 0]" in result.output
        missing = CliRunner().invoke(cli, ["logs", "--config", str(config), "7"])
        assert isinstance(missing.exception, NotFound) and "The fleet knows: senpai-student-pr1-1 (#1)" in str(missing.exception)
    finally:
        fleet.delete("senpai-student-pr1-1")
