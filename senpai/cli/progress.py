"""Progress lines for ticks on stdout (`key: value` style, grep-able), one line per action."""

from datetime import datetime

import click

from senpai.wrapper.loop import TickReport


class TickPrinter:
    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet

    def __call__(self, r: TickReport) -> None:
        if self.quiet and not (r.actions or r.errors):
            return
        now = datetime.now().strftime("%H:%M:%S")
        states = {}
        for e in r.exps:
            states[e.state] = states.get(e.state, 0) + 1
        summary = " ".join(f"{k}={v}" for k, v in sorted(states.items())) or "no experiments"
        click.echo(f"{now} tick {r.tick}: calls={r.calls} jobs={r.live_jobs} decided={r.decided} [{summary}]")
        for line in r.actions:
            click.echo(f"    {line}")
        for line in r.errors:
            click.echo(f"    error: {line}", err=True)
