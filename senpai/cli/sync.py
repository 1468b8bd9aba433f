"""`senpai sync [DIR]`: upload offline W&B runs (a demo's, or any offline installation's) and apply
the verdict tags queued while offline (`senpai.tracker.wandb_sync`)."""

from pathlib import Path

import click

from senpai.config.harness import load_harness


@click.command()
@click.argument("folder", type=click.Path(file_okay=False), required=False)
@click.option(
    "--config", "config_path", envvar="SENPAI_CONFIG", type=click.Path(dir_okay=False), default=None,
    help="Harness config YAML: sync its tracker.dir (env: SENPAI_CONFIG). Ignored when FOLDER is given.",
)  # fmt: skip
@click.option("--dry-run", is_flag=True, help="List the runs that would be uploaded; needs no W&B key.")
def sync(folder: str | None, config_path: str | None, dry_run: bool) -> None:
    """Upload the offline W&B runs under FOLDER (a demo's out folder, a tracker dir, or a wandb/
    folder; default: the --config's tracker.dir, else the current folder) with wandb's own `wandb
    sync`, then add the verdict tags decided while offline. Runs already synced are skipped.
    Needs WANDB_API_KEY (exit 2 with how to set it if missing). wandb's progress goes to stderr.

    Example: WANDB_API_KEY=... senpai sync demo-out/20261203-081500
    """
    from senpai.tracker.wandb_sync import sync_offline

    root = Path(folder) if folder else Path(load_harness(config_path).tracker.dir) if config_path else Path.cwd()
    report = sync_offline(root.resolve(), lambda line: click.echo(line, err=True), dry_run=dry_run)
    click.echo(f"runs: {len(report.runs)}\nsynced: {0 if dry_run else len(report.runs)}\ntags_added: {len(report.tagged)}")
