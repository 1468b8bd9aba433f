"""`senpai preflight`: check the forge, W&B, the LLMs and the cluster before launching the wrapper."""

import json

import click
from rich.console import Console
from rich.table import Table

from senpai.cli.options import config_option
from senpai.cli.wiring import hold_secrets, make_cluster_probe, make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.preflight import CheckResult
from senpai.preflight.checks import run_preflight

STYLE = {"pass": "green", "fail": "bold red", "skip": "yellow"}


@click.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the results as a JSON list instead of a table.")
def preflight(config_path: str, as_json: bool) -> None:
    """Check everything the harness config needs; exit 0 if all checks pass or skip, 1 otherwise.

    Creates the missing senpai labels on the repository; makes no other change.
    A bad config exits 2.

    \b
    Example:
      senpai preflight --config harness.yaml
    """
    cfg = load_harness(config_path)
    hold_secrets(cfg)  # from the errors it reports
    results = run_preflight(cfg, make_forge(cfg), make_tracker(cfg), make_cluster_probe(cfg))
    if as_json:
        click.echo(json.dumps([r.model_dump() for r in results], indent=1))
    else:
        print_report(results)
    if any(r.outcome == "fail" for r in results):
        raise click.exceptions.Exit(1)


def print_report(results: list[CheckResult]) -> None:
    table = Table(title="senpai preflight")
    for col in ("area", "check", "result", "detail", "fix"):
        table.add_column(col, overflow="fold")
    for r in results:
        table.add_row(r.area, r.check, f"[{STYLE[r.outcome]}]{r.outcome}[/]", r.detail, r.fix or "")
    console = Console()
    console.print(table)
    counts = {o: sum(r.outcome == o for r in results) for o in ("pass", "fail", "skip")}
    console.print(f"passed: {counts['pass']}  failed: {counts['fail']}  skipped: {counts['skip']}")
