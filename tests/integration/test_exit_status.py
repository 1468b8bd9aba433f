"""`senpai` turns a network error that no adapter translated into exit 3 (transient), like TransientError;
`python -m senpai job ...` ends without the interpreter's teardown and keeps its exit status."""

import subprocess
import sys

import click
import pytest
import requests

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
