"""`senpai` turns a network error that no adapter translated into exit 3 (transient), like TransientError."""

import click
import pytest
import requests

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
