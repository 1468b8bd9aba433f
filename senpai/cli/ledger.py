"""`senpai ledger`: rebuild the experiment table from the forge and the tracker alone."""

import os
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from senpai.cli.options import config_option
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.ledger.table import LedgerReader, ledger_rows, to_csv, to_json


@click.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="Every experiment with all its blocks and runs.")
@click.option("--csv", "as_csv", is_flag=True, help="One flat row per experiment.")
@click.option(
    "--local-forge",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Serve this local forge data dir on a free port for the duration (e.g. after `senpai demo`).",
)
def ledger(config_path: str, as_json: bool, as_csv: bool, local_forge: str | None) -> None:
    """Print the experiment table (PRs labelled `senpai` + their W&B runs)."""
    cfg = load_harness(config_path)
    server = None
    if local_forge:
        from senpai.forge.localforge.server import LocalForgeServer

        server = LocalForgeServer(Path(local_forge)).start()
        cfg = cfg.model_copy(update={"forge": cfg.forge.model_copy(update={"base_url": server.url})})
        if not cfg.forge.token():  # the data folder is ours: read as the repository's owner, the bot
            os.environ[cfg.forge.token_env] = server.store.add_token(cfg.forge.repo.split("/")[0], "owner")
    try:
        exps = LedgerReader(make_forge(cfg), make_tracker(cfg)).experiments()
    finally:
        if server:
            server.stop()
    if as_json:
        click.echo(to_json(exps))
    elif as_csv:
        click.echo(to_csv(exps), nl=False)
    else:
        print_table(ledger_rows(exps))


def print_table(rows: list[dict]) -> None:
    table = Table(title="senpai ledger")
    for col in ("pr", "state", "student", "params", "value", "verifier_delta", "verdict", "run_id"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            *(_cell(r[c]) for c in ("pr", "state", "student", "params", "value", "verifier_delta", "verdict", "run_id"))
        )
    Console().print(table)


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:+.4f}" if abs(v) < 0.5 else f"{v:.4f}"
    return "" if v is None else str(v)
