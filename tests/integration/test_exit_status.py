"""`senpai` turns a network error that no adapter translated into exit 3 (transient), like TransientError;
`python -m senpai job ...` ends without the interpreter's teardown and keeps its exit status."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest
import requests
import yaml

from senpai import phases
from senpai.cli.main import cli, main


@pytest.mark.parametrize(
    "error",
    [ConnectionResetError("reset by peer"), TimeoutError("timed out"), requests.exceptions.ChunkedEncodingError("broken")],
)
def test_a_stray_network_error_exits_3(error, monkeypatch, capsys):
    @click.command("raise-network-error")
    def boom() -> None:
        raise error

    cli.add_command(boom)
    monkeypatch.setattr("sys.argv", ["senpai", "raise-network-error"])
    try:
        with pytest.raises(SystemExit) as exc:
            main()
    finally:
        cli.commands.pop("raise-network-error")
    assert exc.value.code == 3 and "network" in capsys.readouterr().err


JOB_PROBE = """
import atexit, sys
sys.argv = ["senpai", *sys.argv[1:]]
atexit.register(lambda: print("atexit ran", flush=True))
import senpai.__main__
"""


@pytest.mark.parametrize(
    ("args", "code", "err"),
    [
        (["job", "advisor", "--config", "/no/such/harness.yaml"], 2, "error: /no/such/harness.yaml"),  # ConfigError
        (["job", "student", "--pr", "x", "--attempt", "1"], 2, "Invalid value for '--pr'"),  # a usage error
        (["job", "student", "--help"], 0, ""),
    ],
)
def test_a_job_ends_without_teardown_and_keeps_its_exit_status_and_output(args, code, err):
    """`python -m senpai job ...` skips the interpreter's teardown, not its atexit handlers or output."""
    proc = subprocess.run([sys.executable, "-c", JOB_PROBE, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == code, proc.stderr
    assert err in proc.stderr and "atexit ran" in proc.stdout
    assert phases.parse(proc.stderr) is not None  # the job's own last line


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _harness(tmp_path: Path, base_url: str) -> Path:
    raw = {
        "forge": {"base_url": base_url, "repo": "senpai/digits", "token_env": "SENPAI_EXIT_TOKEN"},
        "tracker": {"dir": str(tmp_path / "wandb"), "mode": "offline"},
        "fleet": {"backend": "local", "dir": str(tmp_path / "jobs")},
        "students": [{"name": "ada"}],
        "state_dir": str(tmp_path / "state"),
    }
    path = tmp_path / "harness.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _senpai(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SENPAI_EXIT_TOKEN": "t"}
    return subprocess.run([sys.executable, "-m", "senpai", *args], capture_output=True, text=True, timeout=120, env=env)


def test_a_forge_that_is_down_is_named_with_how_to_start_one(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}"
    proc = _senpai("ledger", "--config", str(_harness(tmp_path, url)))
    assert proc.returncode == 3, proc.stderr  # transient: the wrapper and a job try again later
    assert f"cannot reach {url}: connection refused: is the forge running?" in proc.stderr
    assert "senpai forge serve --data" in proc.stderr and "Traceback" not in proc.stderr


def test_a_health_port_in_use_names_the_flag(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = _harness(tmp_path, f"http://127.0.0.1:{_closed_port()}")
        proc = _senpai("wrapper", "run", "--config", str(config), "--health-port", str(port), "--max-ticks", "1")
    assert proc.returncode == 2, proc.stderr
    assert f"the wrapper's health endpoint cannot listen on 127.0.0.1:{port}: the port is in use" in proc.stderr
    assert "pick another --health-port" in proc.stderr and "Traceback" not in proc.stderr
