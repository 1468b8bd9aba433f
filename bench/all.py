"""`make bench` / `make bench-quick`: every figure of bench/, and one table.

Each figure is its own script (see bench/README.md); each writes `bench/results/<prefix>-<UTC>.json|md`
(`record.write_result`) and names the .md it wrote in the file `$SENPAI_BENCH_RESULT` names: the
summary cites that one, never merely the newest of its kind.
`make bench` runs them one after another (each measures time, CPU or memory, and the machine has
few cores). `make bench-quick` overlaps what can share the machine: the robustness figure (counts
only: faults, kills, audits) runs in the background from the start, while the figures that count
requests or CPU time run beside it (requests, its idle sizes beside its busy run; cpu); the
wall-clock figures (jobs, wake, replay) run after it, alone. The busy run's per-hour rate is then
that of a shared machine (lower).

It prints a line as each figure starts and ends (seconds since the start), passes on each
script's own progress lines (the background figure's go to a log file, named when it starts),
then writes `bench/results/all-<UTC>.md`: the wall seconds of each figure and of the whole run,
and the figures' Markdown tables under one heading each. A figure that fails is reported as
failed and the others still run; the exit status is then 1.
"""

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import click
from record import RESULT_ENV, RESULTS, utc_stamp  # bench/, beside this script

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Figure:
    title: str
    script: str
    quick: tuple[str, ...]
    full: tuple[str, ...]
    quick_as: str = "alone"  # with --quick: "background" (from the start), "beside" it, or "alone" (after it)


FIGURES = [
    Figure("Forge requests: idle and busy, next to a per-student poller", "forge_requests.py",
           ("--quick", "--busy", "1:2", "--overlap"), (), "beside"),
    Figure("Wrapper CPU per tick", "ledger_cpu.py", ("--quick",), (), "beside"),
    Figure("Job start, CLI import and the fleet listing", "job_start.py", ("--quick",), ()),
    Figure("Wake latency", "wake_latency.py", ("--trials", "5", "--tick", "1"), ("--trials", "20", "--tick", "5")),
    Figure("Replay of a 70-day programme", "replay.py", ("--quick",), ()),
    Figure("Robustness: faults and kills", "run.py", ("--quick",), (), "background"),
    Figure("Hostile target and the wall's cost", "hostile.py", ("--launches", "10"),
           ("--experiments", "2", "--launches", "100")),
    Figure("Log stream: memory over hundreds of MiB of output", "log_stream.py", ("--mb", "100"), ()),
]  # fmt: skip


@dataclass
class Run:
    figure: Figure
    start: float  # time.monotonic()
    told: Path  # the file its child names its result in (`record.RESULT_ENV`)
    proc: subprocess.Popen
    result: Path | None = None  # the .md it wrote, read from `told` when it ends
    log: Path | None = None
    wall: float | None = None
    waiter: threading.Thread | None = None


def _nested(markdown: str) -> str:
    """A figure's Markdown with every heading one level under the figure's own `##`."""
    return "\n".join(("###" + line.lstrip("#") if line.startswith("#") else line) for line in markdown.splitlines())


class Bench:
    def __init__(self, quick: bool, logs: Path) -> None:
        self.quick, self.logs, self.t0 = quick, logs, time.monotonic()
        self.runs: list[Run] = []

    def say(self, line: str) -> None:
        click.echo(f"[{time.monotonic() - self.t0:5.0f} s] {line}", err=True)

    def start(self, f: Figure, background: bool = False) -> Run:
        args = [sys.executable, str(ROOT / "bench" / f.script), *(f.quick if self.quick else f.full)]
        log = self.logs / f"{f.script.removesuffix('.py')}.log" if background else None
        told = self.logs / f"{f.script.removesuffix('.py')}.result"
        where = f", in the background (its output: {log})" if log else ""
        self.say(f"== {f.title}: {' '.join(['bench/' + f.script, *args[2:]])}{where}")
        out = open(log, "wb") if log else None  # noqa: SIM115 (the child owns it)
        try:
            env = {**os.environ, RESULT_ENV: str(told)}
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT if out else None, env=env)
        finally:
            if out:
                out.close()
        run = Run(f, time.monotonic(), told, proc, log=log)
        self.runs.append(run)
        if background:  # its end is told (and timed) when it comes, not when it is waited for
            run.waiter = threading.Thread(target=self._ended, args=(run,), daemon=True)
            run.waiter.start()
        return run

    def _ended(self, run: Run) -> None:
        code = run.proc.wait()
        run.wall = time.monotonic() - run.start
        run.result = Path(run.told.read_text().strip()) if run.told.exists() else None  # the child's own file
        self.say(f"-- {run.figure.title}: {'done' if code == 0 else f'FAILED (exit {code})'} in {run.wall:.0f} s")
        if code != 0 and run.log:
            click.echo(run.log.read_text(errors="replace")[-4000:], err=True)

    def wait(self, run: Run) -> None:
        if run.waiter is None:
            self._ended(run)
        else:
            run.waiter.join()

    def section(self, run: Run) -> tuple[str, bool]:
        f, result = run.figure, run.result
        if run.proc.returncode != 0 or result is None:
            return f"## {f.title}\n\nfailed: `{f.script}` exited {run.proc.returncode} after {run.wall:.0f} s\n", False
        table = _nested(result.read_text().strip())
        where = result.relative_to(ROOT) if result.is_relative_to(ROOT) else result
        return f"## {f.title}\n\n({run.wall:.0f} s, `{where}`)\n\n{table}\n", True


@click.command()
@click.option("--quick", is_flag=True, help="Each figure's small version, overlapped where it can share the machine.")
def main(quick: bool) -> None:
    """Run every figure and write bench/results/all-<UTC>.md."""
    with tempfile.TemporaryDirectory(prefix="senpai-bench-all-") as logs:
        bench = Bench(quick, Path(logs))
        if quick:
            background = [bench.start(f, background=True) for f in FIGURES if f.quick_as == "background"]
            for f in [f for f in FIGURES if f.quick_as == "beside"]:
                bench.wait(bench.start(f))
            for run in background:
                bench.wait(run)
            for f in [f for f in FIGURES if f.quick_as == "alone"]:
                bench.wait(bench.start(f))
        else:
            for f in FIGURES:
                bench.wait(bench.start(f))
    total = time.monotonic() - bench.t0
    order = {f.script: i for i, f in enumerate(FIGURES)}
    runs = sorted(bench.runs, key=lambda r: order[r.figure.script])
    sections = [bench.section(r) for r in runs]
    timing = ["| figure | script | started at s | wall s |", "|---|---|---|---|"]
    timing += [f"| {r.figure.title} | {r.figure.script} | {r.start - bench.t0:.0f} | {r.wall:.0f} |" for r in runs]
    timing.append(f"| **total** | | | **{total:.0f}** |")
    stamp = utc_stamp()
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    out = RESULTS / f"all-{stamp}.md"
    head = f"# bench {'--quick ' if quick else ''}{stamp}\n\n{total:.0f} s in all (load average at the end: {load})\n\n"
    out.write_text(head + "\n".join(timing) + "\n\n" + "\n".join(text for text, _ in sections))
    click.echo(out.read_text())
    bench.say(f"all figures in {total:.0f} s: {out.relative_to(ROOT)}")
    if not all(ok for _, ok in sections):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
