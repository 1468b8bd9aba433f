"""Wake latency: from a human's message on the forge to the advisor job that answers it being launched.

A local forge and the wrapper loop (`Wrapper.run`, in a thread, at `--tick` seconds, steering batch
window 0) on the digits program. A trusted collaborator first pauses new work (`/senpai pause`),
so that only the trials wake the advisor; then, `--trials` times, posts a free-text message on the
steering issue and waits for the tick that launches the advisor job for it, and for that job to
end. The latency is from the comment's answer to the end of that tick (its launch).

Writes bench/results/wake-<UTC>.json and .md and prints the table: p50, p95 and max against the
target, the tick period + 2 s.
"""

import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]
for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}.items():
    os.environ.setdefault(key, value)

import yaml  # noqa: E402
from forge_fixtures import add_collaborator, as_user, seed_token  # noqa: E402
from record import utc_stamp, write_result  # noqa: E402  (bench/, beside this script)
from research import make_program  # noqa: E402

from senpai.cli.wrapper import build_wrapper  # noqa: E402
from senpai.config.harness import load_harness  # noqa: E402
from senpai.forge.localforge.server import LocalForgeServer  # noqa: E402
from senpai.ledger.labels import STEER  # noqa: E402


def _wait(what: str, done, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise click.ClickException(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def measure(tmp: Path, trials: int, tick: float) -> dict:
    seed_token(tmp / "forge")
    server = LocalForgeServer(tmp / "forge").start()
    launches: list[tuple[float, str]] = []
    try:
        config = make_program(server.base_url, tmp, "wake", students=1)
        raw = yaml.safe_load(config.read_text())
        raw["tick_seconds"] = tick
        raw.setdefault("steering", {})["batch_seconds"] = 0.0
        config.write_text(yaml.safe_dump(raw))
        cfg = load_harness(config)
        add_collaborator(server.base_url, cfg.forge.repo, "alice")
        alice = as_user(server, cfg.forge, "alice", "collaborator")
        issue = alice.create_issue("steering", "/senpai pause", [STEER])
        stop, built, wrappers = threading.Event(), threading.Event(), []

        def on_tick(report) -> None:
            launches.extend((time.monotonic(), a) for a in report.actions if a.startswith("launched senpai-advisor"))

        def run() -> None:  # the wrapper's state store is SQLite: built, used and closed in its own thread
            w = build_wrapper(str(config))
            wrappers.append(w)
            built.set()
            try:
                w.run(until=lambda _: stop.is_set(), on_tick=on_tick)
            finally:
                w.store.close()

        loop = threading.Thread(target=run, daemon=True)
        loop.start()
        try:
            _wait("the wrapper to start", built.is_set, 120)
            w = wrappers[0]
            _wait("the pause to be acknowledged", lambda: w.view.state.paused, 120)
            idle = lambda: all(j.done for j in w.fleet.list())  # noqa: E731
            _wait("the first jobs to end", idle, 300)
            latencies = []
            for i in range(trials):
                seen = len(launches)
                alice.create_comment(issue.number, f"trial {i}: what is the plan for the next experiment?")
                posted = time.monotonic()
                _wait(f"trial {i}'s advisor launch", lambda s=seen: len(launches) > s, 120)
                latencies.append(launches[seen][0] - posted)
                _wait(f"trial {i}'s advisor job to end", idle, 300)
                time.sleep(0.5)
        finally:
            stop.set()
            loop.join(60)
    finally:
        server.stop()
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "trials": trials, "tick_seconds": tick, "p50": round(statistics.median(ordered), 2), "p95": round(p95, 2),
        "max": round(ordered[-1], 2), "target_p95": tick + 2.0, "met": p95 <= tick + 2.0,
        "latencies": [round(x, 2) for x in latencies],
    }  # fmt: skip


def table(r: dict) -> str:
    head = "| trials | tick s | p50 s | p95 s | max s | target p95 (tick + 2 s) |\n|---|---|---|---|---|---|\n"
    met = "met" if r["met"] else "missed"
    return head + f"| {r['trials']} | {r['tick_seconds']} | {r['p50']} | {r['p95']} | {r['max']} | {r['target_p95']} ({met}) |\n"


@click.command()
@click.option("--trials", type=click.IntRange(2, 500), default=20, show_default=True)
@click.option("--tick", type=click.FloatRange(0.1, 60), default=5.0, show_default=True, help="The wrapper's tick_seconds.")
def main(trials: int, tick: float) -> None:
    """Measure wake latency and write bench/results/wake-<UTC>.{json,md}."""
    with tempfile.TemporaryDirectory(prefix="senpai-bench-wake-") as scratch:
        result = measure(Path(scratch), trials, tick)
    md = table(result)
    write_result(f"wake-{utc_stamp()}", result, md)
    click.echo(md)


if __name__ == "__main__":
    main()
