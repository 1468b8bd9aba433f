"""`senpai`: the click group, logging setup, and the one place errors become exit statuses.

`main` maps the error tree (`senpai.errors`) to exit statuses; a click usage error exits 2 and
Ctrl-C 130.  It sets the environment defaults first (`senpai.startup`).

Heavy libraries stay off the CLI's path: a subcommand's module is imported only when it runs
(COMMANDS), and each module imports the kubernetes client, OpenHands and LiteLLM, numpy and scipy,
Optuna (with redis hidden, which Optuna would import for a storage senpai never uses) or wandb
only where it uses them (wandb never offline).  So `senpai --help` and a local-fleet process load
none of them; each would add 0.3-1 s to every job's start (`tests/integration/test_lazy_imports.py`).
"""

import atexit
import importlib
import logging
import os
import sys
from typing import NoReturn

import click
import requests

from senpai import startup
from senpai.errors import SenpaiError, TransientError
from senpai.fleet.disk import from_os_error


def _json_formatter() -> logging.Formatter:
    """One JSON object a line: {"level", "logger", "message"} (python-json-logger)."""
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter("%(levelname)s %(name)s %(message)s", rename_fields={"levelname": "level", "name": "logger"})


# name -> "module:attribute"; a command's module is imported only when that command runs (or for
# `senpai --help`): a job then loads `senpai.cli.job` alone, not the demo, wrapper and preflight.
COMMANDS = {
    "forge": "senpai.cli.forge:forge",
    "ledger": "senpai.cli.ledger:ledger",
    "report": "senpai.cli.report:report",
    "wrapper": "senpai.cli.wrapper:wrapper",
    "job": "senpai.cli.job:job",
    "demo": "senpai.cli.demo:demo",
    "validate": "senpai.cli.validate:validate",
    "init": "senpai.cli.init:init",
    "preflight": "senpai.cli.preflight:preflight",
    "status": "senpai.cli.status:status",
    "logs": "senpai.cli.logs:logs",
    "sync": "senpai.cli.sync:sync",
}


class _LazyGroup(click.Group):
    """A click group whose COMMANDS are imported on first use; `add_command` still works."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attr = COMMANDS[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--log-format",
    type=click.Choice(["plain", "json"]),
    default="plain",
    show_default=True,
    help="Format of the log lines on stderr.",
)
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
@click.version_option(package_name="senpai")
def cli(log_format: str, verbose: bool) -> None:
    """senpai: a self-improvement research harness. Results go to stdout, logs to stderr.

    \b
    Example:
      senpai demo                 # the research loop on this machine, no keys
      senpai validate examples/digits
      senpai COMMAND -h           # a command's options
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_json_formatter() if log_format == "json" else logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, handlers=[handler], force=True)


_end_quickly = False


def end_quickly() -> None:
    """Ask `python -m senpai` to end this process without the interpreter's teardown (`exit_now`)
    once the command is done. A job asks; the wrapper and the forge, long-lived, do not."""
    global _end_quickly
    _end_quickly = True


def ends_quickly() -> bool:
    return _end_quickly


def exit_now(code: object) -> NoReturn:
    """End the process as `sys.exit(code)` would, minus the teardown of the interpreter: the atexit
    handlers run, stdout and stderr are flushed, then `os._exit`. Threads still running are not
    waited for (a job leaves only daemon threads)."""
    status = code if isinstance(code, int) else 0 if code is None else 1
    if not isinstance(code, int | None):
        print(code, file=sys.stderr)
    for flush in (sys.stdout.flush, sys.stderr.flush, atexit._run_exitfuncs, sys.stdout.flush, sys.stderr.flush):
        try:
            flush()
        except (OSError, ValueError):
            status = status or 1  # as the interpreter does when it cannot flush stdout at exit
    os._exit(status)


def main() -> None:
    """Console entry point: SenpaiError → its exit status (2 config, 3 transient, 4 permanent,
    6 a full volume); a command's `click.exceptions.Exit(n)` / `ctx.exit(n)` → n.

    A network error that no adapter translated (ConnectionError, TimeoutError, or a `requests`
    error) is transient too: exit 3, so the wrapper relaunches a job it killed instead of taking
    it for the hypothesis's failure (`senpai.wrapper.policy.infra_failure`). So is a write that
    found its volume full (ENOSPC, EDQUOT), wherever it was: exit 6, as DiskFull."""
    startup.apply()  # before a command imports pydantic models, LiteLLM or OpenHands
    try:
        # without standalone mode Click returns an Exit's code instead of raising it
        status = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(2 if isinstance(e, click.UsageError) else e.exit_code)
    except SenpaiError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(e.exit_code)
    except (ConnectionError, TimeoutError, requests.exceptions.RequestException) as e:
        click.echo(f"error: network: {type(e).__name__}: {e}", err=True)
        sys.exit(TransientError.exit_code)
    except OSError as e:
        if (full := from_os_error(e)) is None:
            raise
        click.echo(f"error: {full}", err=True)
        sys.exit(full.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    if isinstance(status, int) and status:
        sys.exit(status)
