"""`senpai wrapper run`: the long-lived loop (a Deployment on Kubernetes, a process locally)."""

from pathlib import Path

import click

from senpai.cli.options import config_option
from senpai.cli.progress import TickPrinter
from senpai.cli.wiring import make_fleet, make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.ledger.table import LedgerReader
from senpai.wrapper.loop import Wrapper
from senpai.wrapper.state import StateStore


def build_wrapper(config_path: str) -> Wrapper:
    cfg = load_harness(config_path)
    forge = make_forge(cfg)
    store = StateStore(Path(cfg.state_dir) / "wrapper.sqlite")
    return Wrapper(cfg, str(Path(config_path).resolve()), forge, make_fleet(cfg), LedgerReader(forge, make_tracker(cfg)), store)


@click.group()
def wrapper() -> None:
    """The wrapper loop."""


@wrapper.command()
@config_option
@click.option("--until-decided", type=int, default=None, help="Exit 0 once this many experiments are decided.")
@click.option("--max-ticks", type=int, default=None, help="Exit after this many ticks.")
@click.option("--quiet", is_flag=True, help="Print only ticks that did something.")
def run(config_path: str, until_decided: int | None, max_ticks: int | None, quiet: bool) -> None:
    """Tick until stopped (SIGTERM/Ctrl-C stop cleanly after the current tick)."""
    w = build_wrapper(config_path)
    printer = TickPrinter(quiet=quiet)

    def until(r) -> bool:
        return (until_decided is not None and r.decided >= until_decided) or (max_ticks is not None and r.tick >= max_ticks)

    try:
        w.run(until=until, on_tick=printer)
    finally:
        w.store.close()
