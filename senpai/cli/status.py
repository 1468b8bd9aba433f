"""`senpai status`: what senpai is doing now, read from the forge and the fleet (`senpai.wrapper.status`)."""

import time
from datetime import UTC, datetime

import click
import requests
from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown

from senpai.cli.ledger import served
from senpai.cli.options import config_option, local_forge_option
from senpai.cli.wiring import hold_secrets, make_fleet, make_reader
from senpai.config.harness import HarnessConfig, load_harness
from senpai.fleet.base import Fleet
from senpai.forge.base import Issue, PullRequest
from senpai.forge.read import ForgeReader
from senpai.ledger.labels import SENPAI
from senpai.ledger.records import by_bot
from senpai.ledger.table import LedgerReader
from senpai.wrapper.humans import HumanReader
from senpai.wrapper.status import LastTick, Status, build_status

HEALTH_TIMEOUT_SECONDS = 2.0


class StatusReader:
    """Reads a `Status` again on each `read`: the forge (conditional listings: unchanged PRs and
    issues cost a free 304), the fleet, and the wrapper's health endpoint if given."""

    def __init__(self, cfg: HarnessConfig, forge: ForgeReader, fleet: Fleet, health: str | None) -> None:
        self.cfg, self.forge, self.fleet, self.health = cfg, forge, fleet, health
        self.ledger = LedgerReader(forge)  # no tracker: the status shows no W&B run
        self.humans = HumanReader(cfg, forge, self.ledger)

    def read(self) -> Status:
        exps = self.ledger.experiments()
        self.humans.poll()
        view = self.humans.read()
        jobs = self.fleet.list()
        tick = self._tick([*(p for p in self.ledger.pulls if SENPAI in p.labels), *view.issues])
        base = self.forge.branch_sha(self.cfg.forge.base_branch)
        return build_status(self.cfg, exps, jobs, view.state, datetime.now(UTC), tick, self.forge.rate_limit(), base)

    def _tick(self, threads: list[PullRequest | Issue]) -> LastTick:
        """The last tick from the wrapper's `GET /healthz` (`senpai.wrapper.health`) if it answers;
        else the newest PR, issue or comment by the bot's login among `threads` and their comments
        (the wrapper and its jobs write as the bot, so it bounds the last tick that did something
        from below)."""
        why = ""
        if self.health:
            try:
                body = requests.get(f"{self.health.rstrip('/')}/healthz", timeout=HEALTH_TIMEOUT_SECONDS).json()
                at = body.get("last_tick_finished")
                detail = f"{body.get('ticks', '?')} ticks, {body.get('status', '?')}: {body.get('reason', '')}"
                return LastTick(at=datetime.fromisoformat(at) if at else None, source="health", detail=detail)
            except (requests.RequestException, ValueError, AttributeError) as e:
                why = f"{self.health} did not answer ({type(e).__name__}); "
        bot = self.forge.login
        written = [x for t in threads for x in (t, *self.ledger.comments(t)) if by_bot(x, bot)]
        newest = max((x.created_at for x in written), default=None)
        return LastTick(at=newest, source="ledger" if newest else "none", detail=f"{why}the bot's newest post")


@click.command()
@config_option
@local_forge_option
@click.option("--json", "as_json", is_flag=True, help="The status as JSON (the `Status` model of senpai.wrapper.status).")
@click.option(
    "--watch",
    type=click.FloatRange(min=1.0),
    default=None,
    is_flag=False,
    flag_value=5.0,
    metavar="[SECONDS]",
    help="Refresh every SECONDS (default 5) until Ctrl-C.",
)
@click.option(
    "--health", metavar="URL", default=None, help="The wrapper's health endpoint (`wrapper run --health-port`): its last tick."
)
def status(config_path: str, local_forge: str | None, as_json: bool, watch: float | None, health: str | None) -> None:
    """Students busy or idle, open experiments by state, live jobs with their age and deadline, the
    spend against the fleet caps, the wrapper's last tick and the forge's rate limit: all read
    now from the forge and the fleet, never from the wrapper's state.

    The last tick comes from `--health` if it answers, else from the bot's newest comment.

    \b
    Example, after `senpai demo --out demo-out/run1`:
        senpai status --config demo-out/run1/harness.yaml --local-forge demo-out/run1/forge
        senpai status --config harness.yaml --health http://127.0.0.1:8080 --watch 10
    """
    if as_json and watch:
        raise click.UsageError("--json and --watch are alternatives: give one")
    cfg = load_harness(config_path)
    with served(cfg, local_forge) as cfg:
        hold_secrets(cfg)
        reader = StatusReader(cfg, make_reader(cfg), make_fleet(cfg), health)
        if as_json:
            click.echo(reader.read().model_dump_json(indent=2))
        elif watch:
            _watch(reader, watch)
        else:
            Console().print(Markdown(reader.read().markdown()))


def _watch(reader: StatusReader, seconds: float) -> None:
    """Show the status, read again every `seconds`, until Ctrl-C (which ends it with exit 0). On a
    terminal it is redrawn in place; piped (a log, `tee`), each reading is printed whole as it is
    read, under a rule with its time, so a kill loses none of them."""
    console = Console()
    try:
        if not console.is_terminal:
            while True:
                console.rule(datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))
                console.print(Markdown(reader.read().markdown()))
                console.file.flush()
                time.sleep(seconds)
        with Live(Markdown(reader.read().markdown()), console=console, auto_refresh=False) as live:
            while True:
                time.sleep(seconds)
                live.update(Markdown(reader.read().markdown()), refresh=True)
    except KeyboardInterrupt:
        pass
