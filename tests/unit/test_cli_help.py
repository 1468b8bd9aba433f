"""Every command answers `-h` as `--help`, and its help ends with an example to paste; errors a
person meets before anything starts read as sentences naming what to change (exit 2)."""

import click
import pytest
from click.testing import CliRunner

from senpai.cli.main import cli
from senpai.errors import ConfigError


def _commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    ctx = click.Context(group)
    found = [path]
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        found += _commands(cmd, (*path, name)) if isinstance(cmd, click.Group) else [(*path, name)]
    return found


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p) or "senpai")
def test_dash_h_is_help_with_an_example(path: tuple[str, ...]) -> None:
    short, long = (CliRunner().invoke(cli, [*path, flag]) for flag in ("-h", "--help"))
    assert (short.exit_code, short.stdout) == (0, long.stdout)  # (a job adds its senpai-phases line on stderr)
    assert "\n  Example" in short.stdout, short.stdout


def test_demo_refuses_an_out_folder_that_is_not_empty(tmp_path) -> None:
    (tmp_path / "forge").mkdir()
    result = CliRunner().invoke(cli, ["demo", "--out", str(tmp_path)])
    assert isinstance(result.exception, ConfigError) and f"{tmp_path} is not empty" in str(result.exception)
    assert [p.name for p in tmp_path.iterdir()] == ["forge"]


def test_validate_with_no_argument_names_the_folder_it_looked_in(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["validate"])
    assert isinstance(result.exception, ConfigError)
    assert f"no senpai.yaml in {tmp_path} (the current folder)" in str(result.exception)
