"""`make bench` / `make bench-quick`: every figure of bench/, one after another, and one table.

Each figure is its own script (see bench/README.md); each writes `bench/results/<prefix>-<UTC>.json|md`.
This runs them in turn (not at once: each measures time or CPU, and the machine has few cores),
then writes `bench/results/all-<UTC>.md`, their Markdown tables under one heading each, with the
wall seconds each took. A figure that fails is reported as failed and the others still run; the
exit status is then 1.
"""

import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"

# (title, script, result prefix, quick args, full args)
FIGURES = [
    ("Forge requests: idle and busy, next to a per-student poller", "forge_requests.py", "requests-",
     ["--quick", "--busy", "1:2"], []),
    ("Wrapper CPU per tick", "ledger_cpu.py", "cpu-", ["--quick"], []),
    ("Job start, CLI import and the fleet listing", "job_start.py", "jobs-", ["--quick"], []),
    ("Wake latency", "wake_latency.py", "wake-", ["--trials", "5", "--tick", "1"], ["--trials", "20", "--tick", "5"]),
    ("Replay of a 70-day programme", "replay.py", "replay-", ["--quick"], []),
    ("Robustness: faults and kills", "run.py", "", ["--quick"], []),
]  # fmt: skip


def _newest(prefix: str, since: float) -> Path | None:
    """The newest `<prefix><UTC>.md` written after `since` (epoch seconds)."""
    found = [p for p in RESULTS.glob(f"{prefix}2*.md") if p.stat().st_mtime >= since]
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


@click.command()
@click.option("--quick", is_flag=True, help="Each figure's small version: minutes, not hours.")
def main(quick: bool) -> None:
    """Run every figure and write bench/results/all-<UTC>.md."""
    sections, failed = [], []
    for title, script, prefix, quick_args, full_args in FIGURES:
        click.echo(f"== {title} ({script})", err=True)
        start, clock = time.time(), time.monotonic()
        code = subprocess.run([sys.executable, str(ROOT / "bench" / script), *(quick_args if quick else full_args)]).returncode
        wall = time.monotonic() - clock
        result = _newest(prefix, start)
        if code != 0 or result is None:
            failed.append(script)
            sections.append(f"## {title}\n\nfailed: `{script}` exited {code} after {wall:.0f} s\n")
            continue
        sections.append(f"## {title}\n\n({wall:.0f} s, `{result.relative_to(ROOT)}`)\n\n{result.read_text().strip()}\n")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS / f"all-{stamp}.md"
    out.write_text(f"# bench {'--quick ' if quick else ''}{stamp}\n\n" + "\n".join(sections))
    click.echo(out.read_text())
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
