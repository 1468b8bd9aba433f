"""`senpai preflight`: check the forge, W&B, the LLMs and the cluster before launching the wrapper."""

import json

import click
from rich.console import Console
from rich.table import Table

from senpai.agents.walls import trial
from senpai.cli.options import config_option
from senpai.cli.wiring import hold_secrets, make_cluster_probe, make_forge, make_tracker
from senpai.config.harness import HarnessConfig, LocalFleetSettings, load_harness
from senpai.errors import PermanentError
from senpai.preflight import CheckResult, failed, passed
from senpai.preflight.checks import run_preflight

STYLE = {"pass": "green", "warn": "bold yellow", "fail": "bold red", "skip": "yellow"}


@click.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the results as a JSON list instead of a table.")
def preflight(config_path: str, as_json: bool) -> None:
    """Check everything the harness config needs; exit 0 if no check fails (each passes, warns or skips), 1 otherwise.

    Creates the missing senpai labels on the repository; makes no other change.
    A bad config exits 2.

    \b
    Example:
      senpai preflight --config harness.yaml
    """
    cfg = load_harness(config_path)
    hold_secrets(cfg)  # from the errors it reports
    results = run_preflight(cfg, make_forge(cfg), make_tracker(cfg), make_cluster_probe(cfg))
    if isinstance(cfg.fleet, LocalFleetSettings):  # on Kubernetes the target's code runs in containers of its own
        results.append(wall_check(cfg))
    if as_json:
        click.echo(json.dumps([r.model_dump() for r in results], indent=1))
    else:
        print_report(results)
    if any(r.outcome == "fail" for r in results):
        raise click.exceptions.Exit(1)


def wall_check(cfg: HarnessConfig) -> CheckResult:
    """The local fleet's wall: the one code from a PR runs behind here (`walls.trial`): failed if it cannot run, or if it
    has neither Landlock nor a view of its own (then it reads and writes whatever senpai's user can)."""
    fix = "see docs/target-contract.md#the-wall: Linux 5.13+ with Landlock, user namespaces, wall.uid, or the Kubernetes fleet"
    try:
        what = trial(cfg)
    except PermanentError as e:
        return failed("local", "wall", str(e), fix)
    if what.startswith("no Landlock; no view"):
        return failed("local", "wall", f"{what}: code from a PR can read and write every file senpai's user can", fix)
    return passed("local", "wall", what)


def print_report(results: list[CheckResult]) -> None:
    table = Table(title="senpai preflight")
    for col in ("area", "check", "result", "detail", "fix"):
        table.add_column(col, overflow="fold")
    for r in results:
        table.add_row(r.area, r.check, f"[{STYLE[r.outcome]}]{r.outcome}[/]", r.detail, r.fix or "")
    console = Console()
    console.print(table)
    counts = {o: sum(r.outcome == o for r in results) for o in STYLE}
    console.print(f"passed: {counts['pass']}  warned: {counts['warn']}  failed: {counts['fail']}  skipped: {counts['skip']}")
