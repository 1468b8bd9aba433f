"""Job start: the `senpai` CLI's import time, a local job's start, and the fleet listing per tick.

Each figure is measured next to what the code did before issue 10, in the same run:

- **CLI import**: `import senpai.cli.main` in a fresh interpreter, median of `--runs`, next to
  the same import plus what it used to pull in eagerly (the kubernetes client through
  `senpai.fleet.k8s_cluster`, and `scipy.stats`), and a bare `python -c pass`.
- **Job start**: from `LocalFleet.launch` to the job command's first line, median of `--runs`:
  `date +%s.%N` (the fleet's own cost: staging, the supervisor, the claim), and a Python command
  that prints once `senpai.cli.main` is imported, with and without the old eager imports.
- **Listing**: `LocalFleet.list()` over N finished jobs plus 2 running ones: a fleet object's
  first list (every folder read, as every tick did before, and as a restarted wrapper does
  once) next to a later tick's list (finished jobs from memory), median of `--ticks`. The
  finished jobs are made as the fleet makes them: staged by `LocalFleet._stage`, renamed into
  place, and given a final status.json.

Writes bench/results/jobs-<UTC>.json and .md and prints the table.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import click

from senpai.fleet.base import JobSpec
from senpai.fleet.local import LocalFleet
from senpai.fleet.supervise import JobDir, utcnow

ROOT = Path(__file__).resolve().parents[1]
EAGER_BEFORE = "import senpai.fleet.k8s_cluster, scipy.stats"  # what every senpai process imported before issue 10
QUICK = {"runs": 3, "jobs": [60, 600]}
FULL = {"runs": 9, "jobs": [60, 600, 6000]}


def _median_seconds(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cli_import(runs: int) -> list[dict]:
    """Seconds to import the CLI in a fresh interpreter, now and with the old eager imports."""
    py = sys.executable
    cases = {
        "python -c pass": [py, "-c", "pass"],
        "import senpai.cli.main": [py, "-c", "import senpai.cli.main"],
        "import senpai.cli.main + the old eager imports": [py, "-c", f"import senpai.cli.main; {EAGER_BEFORE}"],
    }
    return [{"what": what, "seconds": round(_median_seconds(cmd, runs), 3)} for what, cmd in cases.items()]


def _first_line(fleet: LocalFleet, name: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = fleet.logs(name, 1)
        if text.endswith("\n"):
            return text.strip()
        time.sleep(0.005)
    raise RuntimeError(f"{name}: no line after {timeout} s: {fleet.get(name)}")


def job_start(root: Path, runs: int) -> list[dict]:
    """Seconds from launch() to the command's first line (a wall-clock stamp it prints), and to launch() returning."""
    stamp = "import time; print(f'{time.time():.6f}', flush=True)"
    cases = {
        "date +%s.%N": ["sh", "-c", "date +%s.%N"],
        "python: senpai.cli.main imported": [sys.executable, "-c", f"import senpai.cli.main; {stamp}"],
        "python: senpai.cli.main + the old eager imports": [
            sys.executable,
            "-c",
            f"import senpai.cli.main; {EAGER_BEFORE}; {stamp}",
        ],
    }
    fleet = LocalFleet(root, gpus=[])
    rows = []
    for what, cmd in cases.items():
        starts, returns = [], []
        for i in range(runs):
            name = f"start-{len(rows)}-{i}"
            spec = JobSpec(name=name, role="student", student="ada", command=cmd, env={"PYTHONPATH": str(ROOT)}, wall_seconds=120)
            t0 = time.time()
            fleet.launch(spec)
            returns.append(time.time() - t0)
            starts.append(float(_first_line(fleet, name)) - t0)
        rows.append({"what": what, "launch_returns_seconds": round(statistics.median(returns), 3),
                     "first_line_seconds": round(statistics.median(starts), 3)})  # fmt: skip
    return rows


def _finished_jobs(fleet: LocalFleet, n: int) -> None:
    """`n` finished student jobs, made as LocalFleet.launch and the supervisor make them."""
    for i in range(n):
        name = f"senpai-student-pr{i}-1"
        spec = JobSpec(name=name, role="student", pr=i, student="ada", command=["true"], wall_seconds=60)
        launch_id = uuid.uuid4().hex
        staging = fleet.root / f".staging-{name}-{launch_id[:8]}"
        fleet._stage(staging, spec, launch_id)
        os.rename(staging, fleet.root / name)
        with JobDir(fleet.root / name) as jd:
            jd.claim(None, None)
            now = utcnow()
            done = {"phase": "succeeded", "exit_code": 0, "started_at": now, "finished_at": now}
            jd.write_status(jd.status().model_copy(update=done))


def listing(root: Path, finished: int, ticks: int) -> dict:
    """list() seconds over `finished` finished jobs and 2 running ones: a fresh fleet's first, a later tick's."""
    fleet = LocalFleet(root, gpus=[])
    start = time.perf_counter()
    _finished_jobs(fleet, finished)
    making = time.perf_counter() - start
    live = [f"senpai-student-live-{i}" for i in range(2)]
    for name in live:
        fleet.launch(JobSpec(name=name, role="student", student="bo", command=["sleep", "600"], wall_seconds=900))
    try:
        firsts, laters = [], []
        for _ in range(ticks):
            restarted = LocalFleet(root, gpus=[])
            t0 = time.perf_counter()
            jobs = restarted.list()
            firsts.append(time.perf_counter() - t0)
            assert len(jobs) == finished + len(live) and sum(not j.done for j in jobs) == len(live), jobs[-3:]
            t0 = time.perf_counter()
            assert len(restarted.list()) == finished + len(live)
            laters.append(time.perf_counter() - t0)
    finally:
        for name in live:
            fleet.delete(name)
    first, later = statistics.median(firsts), statistics.median(laters)
    return {"finished_jobs": finished, "live_jobs": len(live), "first_list_ms": round(first * 1000, 1),
            "tick_list_ms": round(later * 1000, 1), "ratio": round(first / later, 1),
            "making_seconds": round(making, 1)}  # fmt: skip


def table(result: dict) -> str:
    out = ["| CLI import (fresh interpreter) | median s |", "|---|---|"]
    out += [f"| {r['what']} | {r['seconds']} |" for r in result["cli_import"]]
    out += ["", "| job start (LocalFleet.launch to the command's first line) | launch() returns, s | first line, s |"]
    out += ["|---|---|---|"]
    out += [f"| {r['what']} | {r['launch_returns_seconds']} | {r['first_line_seconds']} |" for r in result["job_start"]]
    out += ["", "| finished jobs | live jobs | first list() (every folder read), ms | tick list(), ms | ratio |"]
    out += ["|---|---|---|---|---|"]
    out += [f"| {r['finished_jobs']} | {r['live_jobs']} | {r['first_list_ms']} | {r['tick_list_ms']} | {r['ratio']}x |"
            for r in result["listing"]]  # fmt: skip
    return "\n".join(out) + "\n"


@click.command()
@click.option("--quick", is_flag=True, help=f"{QUICK} instead of {FULL}.")
@click.option("--runs", type=click.IntRange(1, 100), default=None, help="Fresh processes / launches per case (median).")
@click.option("--jobs", "sizes", type=click.IntRange(1, 100_000), multiple=True, help="Finished-job counts for list().")
@click.option("--ticks", type=click.IntRange(1, 100), default=5, show_default=True, help="list() pairs per size (median).")
def main(quick: bool, runs: int | None, sizes: tuple[int, ...], ticks: int) -> None:
    """Measure everything and write bench/results/jobs-<UTC>.{json,md}."""
    preset = QUICK if quick else FULL
    runs = runs or preset["runs"]
    result: dict = {"cpus": os.cpu_count(), "load_avg": os.getloadavg(), "runs": runs, "ticks": ticks}
    click.echo("CLI import ...", err=True)
    result["cli_import"] = cli_import(runs)
    with tempfile.TemporaryDirectory(prefix="senpai-bench-jobs-") as scratch:
        click.echo("job start ...", err=True)
        result["job_start"] = job_start(Path(scratch) / "start", runs)
        result["listing"] = []
        for n in sizes or preset["jobs"]:
            click.echo(f"list() at {n} finished jobs ...", err=True)
            result["listing"].append(listing(Path(scratch) / f"list-{n}", n, ticks))
    result["load_avg_after"] = os.getloadavg()
    md = table(result)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"jobs-{stamp}.json").write_text(json.dumps(result, indent=2))
    (out / f"jobs-{stamp}.md").write_text(md)
    click.echo(md)


if __name__ == "__main__":
    main()
