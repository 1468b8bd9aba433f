"""`senpai demo`: the whole research loop on one machine with no keys (what `make demo` runs).

Starts the local forge on a free loopback port, creates the target repo from `examples/digits`
with its research base branch, writes the sealed holdout next to (never inside) the work copies,
runs the wrapper with the `search` runtime and the `local` fleet until N experiments are decided,
then prints a leaderboard and where everything lives.
"""

import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.control import strip_control_codes
from rich.table import Table
from rich.text import Text

from senpai.cli.example_split import DIABETES, DIGITS
from senpai.cli.forge import BOT, HUMAN
from senpai.cli.progress import HEARTBEAT_SECONDS, DemoWatch, OutcomePrinter
from senpai.cli.seed import EXAMPLE, seed_target
from senpai.cli.wiring import make_reader
from senpai.cli.wrapper import build_wrapper
from senpai.config import credentials, safe_yaml
from senpai.config.harness import load_harness
from senpai.config.target import load_target
from senpai.errors import ConfigError, PermanentError
from senpai.fleet.supervise import WORK
from senpai.job.walls import train_python
from senpai.ledger.labels import ExperimentState
from senpai.ledger.table import ledger_rows
from senpai.wrapper.loop import TickReport

if TYPE_CHECKING:
    from senpai.forge.localforge.server import LocalForgeServer

# Nothing progressed for this long: give up. Between two observable events (a job launched, started
# or ended, a verifier's seed step begun, a record posted) a working demo spends at most one step,
# which the bundled examples cap at 120 s (budget.wall_seconds; a step past it is stopped, itself
# progress). The longest such gap in 7 runs on a shared 2-core machine was 13 s, so 300 s is
# far past any slowdown that still makes progress, and a real hang is reported within 5 minutes.
STALL_SECONDS = 300.0
BUNDLED = {EXAMPLE: DIGITS, EXAMPLE.parent / "diabetes": DIABETES}  # example -> how its sealed holdout is made


def write_config(
    out: Path,
    base_url: str,
    students: int,
    experiments: int,
    repo: str = "senpai/digits",
    holdout: Path | None = None,
    forge_data: Path | None = None,
) -> Path:
    """Write `out/harness.yaml` (local forge, offline W&B, local fleet, search runtime) and return its path.
    `fleet.holdout_dir` is `holdout` when given, else the sealed digits holdout written in `out/holdout`;
    either lies outside every work copy. `forge_data`, the local forge's folder (its tokens), is
    hidden from code from a PR (`wall.hidden`)."""
    out.mkdir(parents=True, exist_ok=True)
    holdout_dir = holdout.resolve() if holdout else DIGITS.seal(out / "holdout")
    cfg = {
        "schema_version": 1,
        "forge": {"base_url": base_url, "repo": repo, "token_env": "SENPAI_DEMO_TOKEN", "base_branch": "advisor"},
        "tracker": {"project": "senpai-demo", "dir": str(out / "wandb"), "mode": "offline"},
        "fleet": {"backend": "local", "dir": str(out / "jobs"), "holdout_dir": str(holdout_dir)},
        "students": [{"name": n} for n in ["ada", "bo", "cy", "dee", "eli", "fay", "gus", "hal"][:students]],
        "state_dir": str(out / "state"),
        "tick_seconds": 1.0,
        "full_refresh_seconds": 30.0,
        "max_experiments": experiments,
        "stale_after_seconds": 600.0,
    }
    if forge_data is not None:
        cfg["wall"] = {"hidden": [str(forge_data.resolve())]}
    path = out / "harness.yaml"
    path.write_text(safe_yaml.dump(cfg))
    return path


@click.command()
@click.option("--students", type=click.IntRange(1, 8), default=2, show_default=True)
@click.option("--experiments", type=click.IntRange(1, 100), default=6, show_default=True, help="Stop once this many are decided.")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Folder for all demo data [demo-out/<time>].")
@click.option("--example", type=click.Path(exists=True, file_okay=False), default=str(EXAMPLE), show_default=True)
@click.option(
    "--holdout",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="The sealed holdout folder the example's evaluator reads (outside the example) [a bundled example's own: "
    "examples/digits or examples/diabetes].",
)
@click.option(
    "--stall-timeout",
    type=click.FloatRange(0, min_open=True),
    default=STALL_SECONDS,
    show_default=True,
    help="Give up when nothing has progressed (no new job, seed step, record or decision) for this many seconds.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0, min_open=True),
    default=None,
    help="Also give up after this many seconds in all [default: no limit].",
)
def demo(
    students: int,
    experiments: int,
    out: str | None,
    example: str,
    holdout: str | None,
    stall_timeout: float,
    timeout: float | None,
) -> None:
    """Run the research loop end to end on the local forge, then print the leaderboard.

    \b
    Example:
      senpai demo --students 2 --experiments 6 --out demo-out/run1
    """
    from senpai.forge.localforge.ratelimit import WriteLimits
    from senpai.forge.localforge.server import LocalForgeServer

    target = load_target(Path(example))  # a bad senpai.yaml stops here (exit 2), not at the timeout
    train_python(target.train)  # so does a train interpreter that does not run: every training would fail
    repo = "senpai/digits" if Path(example).resolve() == EXAMPLE else f"senpai/{target.name}"
    split = BUNDLED.get(Path(example).resolve())
    if holdout is None and split is None:  # sealing digits for another target would fail late, in the verifier
        raise ConfigError(f"--example {example}: not a bundled example, so senpai cannot seal its holdout: pass --holdout DIR")
    root = Path(out or f"demo-out/{datetime.now():%Y%m%d-%H%M%S}").resolve()
    if root.is_dir() and any(root.iterdir()):  # a second demo would mix its forge, jobs and runs into the first's
        raise ConfigError(f"--out {out}: {root} is not empty (a demo ran there?): give a new folder, or remove it first")
    root.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    server = LocalForgeServer(root / "forge", write_limits=WriteLimits()).start()  # GitHub's secondary limits
    try:
        sealed = Path(holdout) if holdout else split.seal(root / "holdout")  # type: ignore[union-attr]
        config_path = write_config(root, server.base_url, students, experiments, repo, sealed, root / "forge")
        cfg = load_harness(config_path)
        human = forge_tokens(server, cfg.forge.token_env)
        seed_target(cfg.forge, Path(example), root / "seed")
        click.echo(f"forge: {server.base_url}  repo: {cfg.forge.repo}  students: {students}  target: {experiments} decided")
        click.echo(f"human token (user {HUMAN}, collaborator; steer with curl or PyGithub): {human}")
        click.echo(
            f"each experiment's outcome prints as it happens, and what runs every {HEARTBEAT_SECONDS:.0f} s otherwise "
            f"(the whole run takes minutes); data: {_shown(root)}"
        )
        work = Path(cfg.fleet.dir)
        watch = DemoWatch(experiments, target.holdout, lambda job: work / job / WORK, stall_timeout)
        report = run_until(config_path, experiments, None if timeout is None else start + timeout, watch)
        base = make_reader(cfg).branch_sha(cfg.forge.base_branch)  # names each delta's base
    finally:
        server.stop()
    show_leaderboard(ledger_rows(report.exps, None, base), target.metric.direction)
    click.echo(f"\nwall_seconds: {time.monotonic() - start:.1f}\ndecided: {report.decided}")
    click.echo(f"merged: {sum(e.state == ExperimentState.MERGED for e in report.exps)}")
    click.echo(
        f"forge_data: {root / 'forge'}\nwandb_offline_runs: {root / 'wandb'}\njobs: {root / 'jobs'}\n"
        f"sealed_holdout: {cfg.fleet.holdout_dir}\nconfig: {config_path}"
    )
    click.echo("\nnext, paste any of these:")
    for line in next_steps(root, report.exps[-1].pr if report.exps else 1):
        click.echo(f"  {line}")
    if report.decided < experiments:
        blocked = [e.pr for e in report.exps if e.state == ExperimentState.BLOCKED]
        raise PermanentError(given_up(report.decided, experiments, watch, timeout, time.monotonic() - start, blocked))


def given_up(
    decided: int, experiments: int, watch: DemoWatch, timeout: float | None, elapsed: float, blocked: list[int] = ()
) -> str:
    """Why the demo stopped short of `experiments` decided, in one sentence that names the option to
    change; or, when it stalled with PRs `blocked` for humans, names them (no wait would help)."""
    short = f"only {decided} of {experiments} experiments were decided"
    if watch.stalled() and blocked:
        prs = ", ".join(f"#{n}" for n in blocked)
        return (
            f"{short}: nothing progressed for {watch.stall_seconds:g} s while {prs} "
            f"{'is' if len(blocked) == 1 else 'are'} blocked for humans; the last comment on each says why "
            "(`senpai status` lists them): fix the cause, then run the demo again"
        )
    if watch.stalled():
        more = max(STALL_SECONDS, 3 * (watch.stall_seconds or 0))
        return (
            f"{short}: nothing progressed for {watch.stall_seconds:g} s (no new job, seed step, record or decision), so the demo "
            f"gave up; if the machine is only busy or slow, run it again with a longer --stall-timeout (say {more:g})"
        )
    if timeout is not None and elapsed > timeout:
        return f"{short} within --timeout {timeout:g} s; run it again with a larger --timeout, or without one"
    return f"{short}: the demo was stopped (Ctrl-C or SIGTERM)"


def next_steps(root: Path, pr: int) -> list[str]:
    """Commands that read this demo's data, as they can be pasted: the venv's `senpai` (`make demo`
    puts none on PATH) and paths relative to the current folder when they are inside it."""
    senpai = Path(sys.executable).with_name("senpai")
    command = _shown(senpai) if senpai.exists() else "senpai"
    where = f"--config {_shown(root / 'harness.yaml')} --local-forge {_shown(root / 'forge')}"
    return [
        f"{command} ledger {where}        # the experiment table",
        f"{command} status {where}        # what senpai is doing now",
        f"{command} report {where} --out {_shown(root / 'report.html')}",
        f"{command} logs --config {_shown(root / 'harness.yaml')} {pr}        # PR #{pr}'s job log",
        f"WANDB_API_KEY=... {command} sync {where}        # upload the offline W&B runs, tag them with the verdicts",
    ]


def _shown(path: Path) -> str:
    """`path` relative to the current folder if it is inside it, else absolute."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def forge_tokens(server: "LocalForgeServer", token_env: str) -> str:
    """Register the bot's token (user `senpai`, owner) and return a new human's (collaborator).

    The bot's token is `$token_env` when set, else a new one; this process holds it as that secret
    (`senpai.config.credentials`), for the wrapper and, on a private pipe, its local jobs. The forge
    stores only hashes, so the human token is shown once.
    """
    credentials.hold(token_env, server.store.add_token(BOT, "owner", credentials.get(token_env)))
    return server.store.add_token(HUMAN, "collaborator")


def run_until(config_path: Path, experiments: int, deadline: float | None = None, watch: DemoWatch | None = None) -> TickReport:
    """Run the wrapper until `experiments` are decided, `deadline` (time.monotonic()) passes or `watch`
    says the run stalled; then stop live jobs. `watch` prints each tick's outcomes and heartbeat
    (`DemoWatch`); without it, the outcome lines alone are printed."""
    w = build_wrapper(str(config_path))
    printer = OutcomePrinter(experiments)

    def on_tick(r: TickReport) -> None:
        if watch is None:
            printer(r)
        else:
            watch(r, w.fleet)

    def until(r: TickReport) -> bool:
        late = deadline is not None and time.monotonic() > deadline
        return r.decided >= experiments or late or (watch is not None and watch.stalled())

    try:
        report = w.run(until=until, on_tick=on_tick)
        report = w.tick() if report is None else report
    finally:
        for job in w.fleet.list():
            if not job.done:
                w.fleet.delete(job.name)
        w.store.close()
    return report


def show_leaderboard(rows: list[dict], direction: str) -> None:
    """Merged experiments first, then the rest; within each, best validation value first.

    The verifier delta is shown but not ranked on: each merge is measured against the base of its
    time, so deltas of different merges are not comparable. Each names its base (`verifier_vs`,
    `ledger_rows`), and one against a base that is no longer the current one is dimmed.
    """
    table = Table(title="leaderboard (merged first, then by validation metric)", caption="W&B runs: senpai ledger --csv")
    for col in ("PR", "val", "Δ holdout", "verdict"):
        table.add_column(col, no_wrap=True)
    table.add_column("params", ratio=1, min_width=20)  # wraps: the rest fit 80 columns on one line
    sign = -1 if direction == "maximize" else 1
    order = sorted(rows, key=lambda r: (r["verdict"] != "merge", r["value"] is None, sign * (r["value"] or 0.0)))
    for r in order:
        value = "" if r["value"] is None else f"{r['value']:.4f}"
        delta = "" if r["verifier_delta"] is None else f"{r['verifier_delta']:+.4f} {r.get('verifier_vs') or ''}".rstrip()
        params = " ".join(f"{k}={v}" for k, v in json.loads(r["params"] or "{}").items())
        cells = (f"#{r['pr']}", value, delta, r["verdict"] or r["state"], params)
        style = ["dim" if i == 2 and r.get("verifier_stale") else "" for i in range(len(cells))]
        # the advisor's params: text, not markup
        table.add_row(*(Text(strip_control_codes(c), style=st) for c, st in zip(cells, style, strict=True)))
    Console().print(table)  # the terminal's width: a wider table would wrap line by line in an 80-column one
