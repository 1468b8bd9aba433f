"""`senpai report`: the research so far as an HTML page with plots, or Markdown, from the ledger alone."""

from pathlib import Path

import click

from senpai.cli.ledger import served
from senpai.cli.options import config_option
from senpai.cli.wiring import hold_secrets, make_reader, make_tracker
from senpai.config.harness import load_harness
from senpai.errors import ConfigError
from senpai.ledger.table import LedgerReader
from senpai.wrapper.humans import HumanReader


@click.command()
@config_option
@click.option(
    "--out", type=click.Path(dir_okay=False), default=None, help="File to write [report.html, or report.md with --format md]."
)
@click.option("--format", "fmt", type=click.Choice(["html", "md"]), default="html", show_default=True)
@click.option(
    "--local-forge",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Serve this local forge data dir on a free port for the duration (e.g. after `senpai demo`).",
)
@click.option("--no-wandb", is_flag=True, help="Do not publish a W&B Report and workspace, even online.")
def report(config_path: str, out: str | None, fmt: str, local_forge: str | None, no_wandb: bool) -> None:
    """Write the research so far as one self-contained HTML page (the baseline over time, the metric
    per experiment against the noise floor, the cost per accepted improvement, the rejected
    hypotheses with their reasons, links to PRs and runs), or as Markdown (`--format md`, for an
    issue or a BASELINE.md). Both are computed from the forge and W&B alone, never from a cache.
    Online (WANDB_API_KEY set) it also saves a W&B Report and workspace (needs `senpai[report]`).

    \b
    Example, after `senpai demo --out demo-out/run1`:
      senpai report --config demo-out/run1/harness.yaml --local-forge demo-out/run1/forge --out demo-out/run1/report.html
    """
    from senpai.report import render  # jinja2: only when a report is made, not for `senpai --help`
    from senpai.report.summary import summarise

    cfg = load_harness(config_path)
    tracker = make_tracker(cfg)
    path = Path(out or f"report.{fmt}")
    if not path.parent.is_dir():
        raise ConfigError(f"--out {path}: the folder {path.parent} does not exist; create it or pick another path")
    with served(cfg, local_forge) as live:
        hold_secrets(live)  # a token `served` made too
        ledger = LedgerReader(make_reader(live), tracker)
        exps = ledger.experiments()
        base = ledger.forge.branch_sha(live.forge.base_branch)  # what names each delta's base as the current one
        turns = HumanReader(cfg, ledger.forge, ledger).read().state.advisor_turns  # the advisor's turns about no PR
    if local_forge:  # its forge lives only as long as this command: a link to it would be dead
        exps = [e.model_copy(update={"url": ""}) for e in exps]
    summary = summarise(exps, cfg.forge.repo, cpus={s.name: s.cpus for s in cfg.students}, turns=turns, base=base)
    try:
        path.write_text(render.html(summary) if fmt == "html" else render.markdown(summary), encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"--out {path}: cannot write it ({e.strerror}); pick another path") from None
    click.echo(f"report: {path} ({summary.counts['experiments']} experiments, {summary.merges} verified merges)")
    if not no_wandb:
        for url in tracker.publish_report(render.tracker_spec(summary)):
            click.echo(f"wandb: {url}")
