"""`senpai sync [DIR]`: upload offline W&B runs (a demo's, or any offline installation's) and add
the ledger's verdict tags to them (`senpai.tracker.wandb_sync`)."""

from pathlib import Path

import click

from senpai.cli.options import local_forge_option
from senpai.config.harness import HarnessConfig, load_harness
from senpai.tracker.wandb_sync import Verdicts


@click.command()
@click.argument("folder", type=click.Path(file_okay=False), required=False)
@click.option(
    "--config", "config_path", envvar="SENPAI_CONFIG", type=click.Path(dir_okay=False), default=None,
    help="Harness config YAML (env: SENPAI_CONFIG): its ledger's verdicts are added as tags, and its tracker.dir "
    "is synced when no FOLDER is given.",
)  # fmt: skip
@local_forge_option
@click.option("--dry-run", is_flag=True, help="List the runs that would be uploaded and their tags; needs no W&B key.")
def sync(folder: str | None, config_path: str | None, local_forge: str | None, dry_run: bool) -> None:
    """Upload the offline W&B runs under FOLDER (a demo's out folder, a tracker dir, or a wandb/
    folder; default: the --config's tracker.dir, else the current folder) with wandb's own `wandb
    sync`, then add to them the verdicts of the --config's ledger (`verdict:merge`, ...; without
    --config, no tags). Runs already synced are skipped. Needs WANDB_API_KEY (exit 2 with how to set
    it if missing). wandb's progress goes to stderr.

    \b
    Example, after `senpai demo --out demo-out/run1`:
      WANDB_API_KEY=... senpai sync --config demo-out/run1/harness.yaml --local-forge demo-out/run1/forge
    """
    from senpai.tracker.wandb_sync import sync_offline

    if local_forge and not config_path:
        raise click.UsageError("--local-forge serves the forge of a --config: give --config too")
    cfg = load_harness(config_path) if config_path else None
    root = Path(folder) if folder else Path(cfg.tracker.dir) if cfg else Path.cwd()
    verdicts = (lambda: ledger_verdicts(cfg, local_forge)) if cfg else None
    report = sync_offline(root.resolve(), lambda line: click.echo(line, err=True), dry_run=dry_run, verdicts=verdicts)
    click.echo(f"runs: {len(report.runs)}\nsynced: {0 if dry_run else len(report.runs)}\ntags_added: {len(report.tagged)}")


def ledger_verdicts(cfg: HarnessConfig, local_forge: str | None) -> Verdicts:
    """The verdict tag of every decision the ledger of `cfg` holds (the bot's `senpai-decision`
    blocks, read from its forge; `local_forge`: a local forge data folder served for it), by the
    PR's run group, for `cfg`'s installation. Raises what reading the forge raises."""
    from senpai.agents.runs import group, verdict_tag
    from senpai.cli.ledger import served
    from senpai.cli.wiring import make_forge, make_tracker, redact_secrets
    from senpai.ledger.table import LedgerReader

    installation = make_tracker(cfg).installation
    with served(cfg, local_forge) as cfg:
        redact_secrets(cfg)
        exps = LedgerReader(make_forge(cfg)).experiments()
    return Verdicts(installation, {group(e.pr): {verdict_tag(d.verdict) for d in e.decisions} for e in exps if e.decisions})
