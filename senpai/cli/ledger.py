"""`senpai ledger`: rebuild the experiment table from the forge and the tracker alone."""

import os
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from senpai.cli.options import config_option
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.errors import LedgerInconsistent
from senpai.ledger.consistency import check
from senpai.ledger.table import LedgerReader, ledger_rows, to_csv, to_json

COLUMNS = ("pr", "state", "student", "params", "value", "verifier_delta", "verdict", "run_id", "consistency")


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
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Print only the inconsistencies (hand-made decisions, merges, base pushes); exit 5 if there are any.",
)
def ledger(config_path: str, as_json: bool, as_csv: bool, local_forge: str | None, check_only: bool) -> None:
    """Print the experiment table (PRs labelled `senpai` + their W&B runs), with a consistency column
    that flags what the forge shows but senpai did not do (see `senpai.ledger.consistency`)."""
    cfg = load_harness(config_path)
    server = None
    if local_forge:
        from senpai.forge.localforge.server import LocalForgeServer

        server = LocalForgeServer(Path(local_forge)).start()
        cfg = cfg.model_copy(update={"forge": cfg.forge.model_copy(update={"base_url": server.url})})
        if not cfg.forge.token():  # the data folder is ours: read as the repository's owner, the bot
            os.environ[cfg.forge.token_env] = server.store.add_token(cfg.forge.repo.split("/")[0], "owner")
    try:
        forge = make_forge(cfg)
        exps = LedgerReader(forge, make_tracker(cfg)).experiments()
        flags = check(exps, forge.branch_sha(cfg.forge.base_branch))
    finally:
        if server:
            server.stop()
    if check_only:
        if not flags.ok:
            raise LedgerInconsistent("the ledger does not match the forge:\n" + "\n".join(flags.lines()))
        click.echo(f"consistent: {len(exps)} experiment(s)")
    elif as_json:
        click.echo(to_json(exps))
    elif as_csv:
        click.echo(to_csv(exps, flags), nl=False)
    else:
        print_table(ledger_rows(exps, flags))
        for line in flags.base:
            click.echo(f"base: {line}", err=True)


def print_table(rows: list[dict]) -> None:
    table = Table(title="senpai ledger")
    for col in COLUMNS:
        table.add_column(col)
    for r in rows:
        table.add_row(*(_cell(r.get(c)) for c in COLUMNS))
    Console().print(table)


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:+.4f}" if abs(v) < 0.5 else f"{v:.4f}"
    return "" if v is None else str(v)
