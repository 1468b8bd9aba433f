"""`senpai ledger`: rebuild the experiment table from the forge and the tracker alone."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.control import strip_control_codes
from rich.table import Table
from rich.text import Text

from senpai.cli.options import config_option, local_forge_option
from senpai.cli.wiring import hold_secrets, make_reader, make_tracker
from senpai.config import credentials
from senpai.config.harness import HarnessConfig, load_harness
from senpai.errors import ConfigError, LedgerInconsistent
from senpai.ledger.baseline import best_merge
from senpai.ledger.consistency import check
from senpai.ledger.table import LedgerReader, ledger_rows, to_csv, to_json

# the table's columns (row key -> header), then what changed and the reason; --csv and --json carry every
# field (the whole params, run ids, hypotheses): a demo's seven params alone would fill 80 columns
COLUMNS = {"pr": "PR", "state": "state", "student": "student", "value": "val", "verifier_delta": "Δ holdout"}
BEST = "★"
STALE = "dim"  # the style of a delta measured against a base that is no longer the current one
DELTA_WIDTH = 10  # characters of the delta column, whose base wraps under the number at 80 columns
MAX_REASON = 160  # characters of a decision's reason in the table (--json has it whole)


@click.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="Every experiment with all its blocks and runs.")
@click.option("--csv", "as_csv", is_flag=True, help="One flat row per experiment.")
@local_forge_option
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Print only the inconsistencies (hand-made decisions, merges, base pushes); exit 5 if there are any.",
)
def ledger(config_path: str, as_json: bool, as_csv: bool, local_forge: str | None, check_only: bool) -> None:
    """Print the experiment table (PRs labelled `senpai` + their W&B runs), with a consistency column
    that flags what the forge shows but senpai did not do (see `senpai.ledger.consistency`).
    Every inconsistency is also printed on stderr, whatever the format.

    \b
    Example, after `senpai demo --out demo-out/run1`:
      senpai ledger --config demo-out/run1/harness.yaml --local-forge demo-out/run1/forge
      senpai ledger --config harness.yaml --csv > ledger.csv
    """
    if as_json + as_csv + check_only > 1:
        raise click.UsageError("--json, --csv and --check are alternatives: give one")
    cfg = load_harness(config_path)
    with served(cfg, local_forge) as cfg:
        hold_secrets(cfg)  # a token `served` made too
        forge = make_reader(cfg)
        exps = LedgerReader(forge, make_tracker(cfg)).experiments()
        base = forge.branch_sha(cfg.forge.base_branch)
        flags = check(exps, base)
    if check_only:
        if not flags.ok:
            raise LedgerInconsistent("the ledger does not match the forge:\n" + "\n".join(flags.lines()))
        click.echo(f"consistent: {len(exps)} experiment(s)")
        return
    if as_json:
        click.echo(to_json(exps))
    elif as_csv:
        click.echo(to_csv(exps, flags, base), nl=False)
    else:
        best = best_merge(exps)
        print_table(ledger_rows(exps, flags, base), best.pr if best else None)
    for line in flags.lines():
        click.echo(f"inconsistent: {line}", err=True)


@contextmanager
def served(cfg: HarnessConfig, local_forge: str | None) -> Iterator[HarnessConfig]:
    """`cfg`, or with `local_forge` (a forge data folder) served on a free port for the duration.

    With no token set, the ledger reads as the repository's owner (the bot) with a token made for
    this command and revoked after it.  Raises ConfigError if the folder holds no forge.
    """
    if not local_forge:
        yield cfg
        return
    from senpai.forge.localforge.server import LocalForgeServer

    data = Path(local_forge)
    if not (data / "forge.sqlite3").is_file():
        hint = f" (did you mean {data / 'forge'}?)" if (data / "forge" / "forge.sqlite3").is_file() else ""
        raise ConfigError(f"--local-forge {data}: no local forge data there (forge.sqlite3){hint}")
    server = LocalForgeServer(data).start()
    token = None
    if not cfg.forge.token():
        token = server.store.add_token(cfg.forge.repo.split("/")[0], "owner")
        credentials.hold(cfg.forge.token_env, token)
    try:
        yield cfg.model_copy(update={"forge": cfg.forge.model_copy(update={"base_url": server.url})})
    finally:
        if token:
            server.store.revoke_token(token)
            credentials.forget(cfg.forge.token_env)
        server.stop()


def print_table(rows: list[dict], best: int | None, console: Console | None = None) -> None:
    """One row per experiment (`ledger_rows`), readable at 80 columns (the last three wrap): the PR
    (`BEST` marks PR `best`, the current best: `senpai.ledger.baseline.best_merge`), its state,
    student, validation value, the verifier's holdout delta with the base it was measured against
    (greyed, "vs old base", when that base is no longer the current one), what the PR changed
    against its base and the decision's reason, led by the consistency flags when there are any."""
    title = "senpai ledger" + (f" ({BEST} current best: #{best}, the best holdout of the verified merges)" if best else "")
    caption = "the whole params, runs and hypotheses: senpai ledger --csv or --json"
    table = Table(title=title, caption=caption, expand=False)
    for key, header in COLUMNS.items():
        table.add_column(header, no_wrap=key != "student", justify="right" if key == "pr" else "left")
    table.columns[-1].no_wrap, table.columns[-1].max_width = False, DELTA_WIDTH  # its base wraps under the number
    table.add_column("changed", ratio=1, min_width=10, overflow="fold")  # a long word folds, never cut
    table.add_column("reason", ratio=2, min_width=12, overflow="fold")
    for r in rows:
        cells = [_cell(c, r.get(c)) for c in COLUMNS]
        cells[0] = f"{BEST} {r['pr']}" if r["pr"] == best else str(r["pr"])
        if r.get("verifier_vs") and cells[4]:
            cells[4] += f" {r['verifier_vs']}"
        reason = r.get("reason") or r.get("error") or ""
        reason = reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"
        flags = r.get("consistency")
        cells += [r.get("change") or "", f"inconsistent: {flags}; {reason}" if flags and flags != "ok" else reason]
        texts = [Text(strip_control_codes(c)) for c in cells]  # forge text: no rich markup, no escapes
        if r.get("verifier_stale"):
            texts[4].stylize(STALE)
        table.add_row(*texts)
    (console or Console()).print(table)


def _cell(column: str, v) -> str:
    if isinstance(v, float):
        return f"{v:+.4f}" if column.endswith("delta") else f"{v:.4f}"
    return "" if v is None else str(v)
