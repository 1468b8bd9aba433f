"""`senpai wrapper run`: the long-lived loop (a Deployment on Kubernetes, a process locally)."""

import os
from pathlib import Path

import click

from senpai.cli.options import config_option
from senpai.cli.ticklog import SUMMARY_SECONDS, TickLog
from senpai.cli.wiring import hold_secrets, make_fleet, make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.errors import TransientError, cannot_listen
from senpai.ledger.table import LedgerReader, Snapshot
from senpai.wrapper.health import HealthServer
from senpai.wrapper.loop import Wrapper
from senpai.wrapper.state import StateStore


def build_wrapper(config_path: str) -> Wrapper:
    cfg = load_harness(config_path)
    hold_secrets(cfg)  # the failure evidence it posts carries jobs' log tails
    forge = make_forge(cfg, "wrapper")
    store = StateStore(Path(cfg.cache_dir or cfg.state_dir) / "wrapper.sqlite")
    # absolute, not resolved: a ConfigMap mount is a symlink into a timestamped folder that is replaced on update
    ledger = LedgerReader(forge, make_tracker(cfg), Snapshot.of(cfg.state_dir, cfg.forge.token(), cfg.forge.scope))
    ledger.load()  # a restart re-reads only what changed while it was down
    return Wrapper(cfg, str(Path(config_path).absolute()), forge, make_fleet(cfg), ledger, store)


@click.group()
def wrapper() -> None:
    """The wrapper loop.

    \b
    Example:
      senpai wrapper run --config harness.yaml --health-port 8080
    """


@wrapper.command()
@config_option
@click.option("--until-decided", type=int, default=None, help="Exit 0 once this many experiments are decided.")
@click.option("--max-ticks", type=int, default=None, help="Exit after this many ticks.")
@click.option(
    "--quiet",
    is_flag=True,
    help=f"No summary line after {SUMMARY_SECONDS:.0f} s without one: print only the ticks that did something.",
)
@click.option(
    "--health-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve GET /healthz, /readyz and /metrics on this port (0: a free one) [default: off].",
)
@click.option(
    "--health-host",
    default=lambda: "0.0.0.0" if os.environ.get("KUBERNETES_SERVICE_HOST") else "127.0.0.1",
    show_default="0.0.0.0 in a Kubernetes pod, else 127.0.0.1",
    help="Interface of the health endpoint.",
)
def run(
    config_path: str, until_decided: int | None, max_ticks: int | None, quiet: bool, health_port: int | None, health_host: str
) -> None:
    """Tick until stopped (SIGTERM/Ctrl-C stop cleanly after the current tick). Prints the ticks
    that did something (an action, an error, an experiment's state changed) and, unless --quiet,
    a summary line after a minute without one (`senpai.cli.ticklog`).

    \b
    Example:
      senpai wrapper run --config harness.yaml --health-port 8080
    """
    w = build_wrapper(config_path)
    printer = TickLog(quiet=quiet)
    try:
        health = None if health_port is None else HealthServer(w.health, w.metrics.registry, health_host, health_port).start()
    except OSError as e:
        w.store.close()
        raise cannot_listen("the wrapper's health endpoint", health_host, health_port, e, "--health-port") from e
    if health:
        click.echo(f"health: {health.url}", err=True)

    def until(r) -> bool:
        return until_decided is not None and r.decided >= until_decided

    try:
        w.run(until=until, on_tick=printer, max_ticks=max_ticks)
        state = w.health.snapshot()
        if state["consecutive_failures"]:  # stopped by --max-ticks (or a signal) while the forge was unreachable
            raise TransientError(f"the last {state['consecutive_failures']} tick(s) failed: {state['last_error']}")
    finally:
        if health:
            health.stop()
        w.store.close()
