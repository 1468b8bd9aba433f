"""The shared `--config` option: every command that needs a harness config says, when it is
missing and in its --help, that it comes from --config or $SENPAI_CONFIG."""

import click
from click.testing import CliRunner
from test_docs import leaves

from senpai.cli.main import cli
from senpai.errors import ConfigError


def _needs_config() -> dict[str, click.Command]:
    return {
        name: c
        for name, c in leaves(cli).items()
        if any(isinstance(p, click.Option) and "--config" in p.opts and p.required for p in c.params)
    }


def test_a_missing_config_names_both_ways_to_give_one_in_every_command_that_needs_one(monkeypatch):
    monkeypatch.delenv("SENPAI_CONFIG", raising=False)
    needs = _needs_config()
    assert {"senpai ledger", "senpai status", "senpai logs", "senpai wrapper run", "senpai report"} <= set(needs)
    for name, command in needs.items():
        args = ["1"] if name == "senpai logs" else []  # its JOB|PR argument, so that only --config is missing
        missing = CliRunner().invoke(command, args, prog_name=name)
        assert missing.exit_code == 2, (name, missing.output)
        assert "Missing option '--config'. Give the harness config YAML as --config FILE, or set $SENPAI_CONFIG" in missing.output
        shown = CliRunner().invoke(command, ["--help"], prog_name=name).output
        assert "$SENPAI_CONFIG" in " ".join(shown.split()), name


def test_senpai_config_stands_in_for_the_option(monkeypatch, tmp_path):
    monkeypatch.setenv("SENPAI_CONFIG", str(tmp_path / "absent.yaml"))
    result = CliRunner().invoke(cli, ["ledger"])  # a ConfigError: exit 2 from `senpai.cli.main.main`
    assert isinstance(result.exception, ConfigError) and str(result.exception).startswith(f"{tmp_path}/absent.yaml: no such")
