"""`senpai --log-format json`: one JSON object a line on stderr."""

import json
import logging

from click.testing import CliRunner

from senpai.cli.main import cli


def test_json_log_lines_carry_level_logger_and_message():
    @cli.command("log-probe")
    def probe() -> None:
        logging.getLogger("senpai.probe").warning("disk %s is %d%% full", "/data", 91)

    handlers, level = logging.root.handlers[:], logging.root.level  # the command reconfigures the root logger
    try:
        result = CliRunner().invoke(cli, ["--log-format", "json", "log-probe"])
    finally:
        cli.commands.pop("log-probe")
        logging.root.handlers[:], logging.root.level = handlers, level
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert lines == [{"level": "WARNING", "logger": "senpai.probe", "message": "disk /data is 91% full"}]
