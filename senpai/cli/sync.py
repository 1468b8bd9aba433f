"""`senpai sync [DIR]`: upload offline W&B runs (a demo's, or any offline installation's) and add
the ledger's verdict tags to them (`senpai.tracker.wandb_sync`)."""

from functools import partial
from pathlib import Path

import click

from senpai.cli.options import local_forge_option
from senpai.config.harness import HarnessConfig, load_harness


@click.command()
@click.argument("folder", type=click.Path(file_okay=False), required=False)
@click.option(
    "--config", "config_path", envvar="SENPAI_CONFIG", type=click.Path(dir_okay=False), default=None,
    help="Harness config YAML (env: SENPAI_CONFIG): only its installation's runs are uploaded, into its tracker "
    "entity and project, with its ledger's verdicts as tags; its tracker.dir is synced when no FOLDER is given. "
    "Required, except for --dry-run.",
)  # fmt: skip
@local_forge_option
@click.option("--dry-run", is_flag=True, help="List the runs that would be uploaded and their tags; needs no W&B key.")
def sync(folder: str | None, config_path: str | None, local_forge: str | None, dry_run: bool) -> None:
    """Upload the --config's installation's offline W&B runs under FOLDER (a demo's out folder, a
    tracker dir, or a wandb/ folder; default: the --config's tracker.dir) with wandb's own `wandb
    sync`, into the config's tracker entity and project (never those a run's log names), then add
    the verdicts of its ledger (`verdict:merge`, ...), read before uploading, to its runs under
    FOLDER, uploaded now or earlier. Runs of another installation and runs already synced are not
    uploaded. Needs --config (or $SENPAI_CONFIG) and WANDB_API_KEY (exit 2 with the fix if either is
    missing, or the key is malformed), except with --dry-run. wandb's progress goes to stderr.

    \b
    Example, after `senpai demo --out demo-out/run1`:
      WANDB_API_KEY=... senpai sync --config demo-out/run1/harness.yaml --local-forge demo-out/run1/forge
    """
    from senpai.cli.wiring import make_tracker
    from senpai.tracker.wandb_sync import Destination, sync_offline

    if local_forge and not config_path:
        raise click.UsageError("--local-forge serves the forge of a --config: give --config too")
    cfg = load_harness(config_path) if config_path else None
    root = Path(folder) if folder else Path(cfg.tracker.dir) if cfg else Path.cwd()
    dest = Destination(make_tracker(cfg).installation, cfg.tracker.project, cfg.tracker.entity) if cfg else None
    verdicts = (lambda: ledger_verdicts(cfg, local_forge)) if cfg else None
    report = sync_offline(root.resolve(), partial(click.echo, err=True), dry_run=dry_run, destination=dest, verdicts=verdicts)
    click.echo(
        f"runs: {len(report.runs)}\nsynced: {0 if dry_run else len(report.runs)}\nskipped: {len(report.skipped)}\n"
        f"tags_added: {len(report.tagged)}"
    )


def ledger_verdicts(cfg: HarnessConfig, local_forge: str | None) -> dict[str, set[str]]:
    """The verdict tag of every decision the ledger of `cfg` holds (the bot's `senpai-decision`
    blocks, read from its forge; `local_forge`: a local forge data folder served for it), by the
    PR's run group (`pr-<n>` -> {`verdict:close`, ...}). Raises what reading the forge raises."""
    from senpai.cli.ledger import served
    from senpai.cli.wiring import hold_secrets, make_reader
    from senpai.job.runs import group, verdict_tag
    from senpai.ledger.table import LedgerReader

    with served(cfg, local_forge) as cfg:
        hold_secrets(cfg)
        exps = LedgerReader(make_reader(cfg)).experiments()
    return {group(e.pr): {verdict_tag(d.verdict) for d in e.decisions} for e in exps if e.decisions}
