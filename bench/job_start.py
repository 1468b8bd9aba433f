"""Job start: the `senpai` CLI's import time, a local job's start, and the fleet listing per tick.

Each figure is measured next to what the code did before issue 10, in the same run:

- **CLI import**: `import senpai.cli.main, senpai.cli.job` (what `senpai job` loads: the CLI's
  subcommands are imported when they run) in a fresh interpreter, median of `--runs`, next to
  the same import plus what it used to pull in eagerly (the kubernetes client through
  `senpai.fleet.k8s_cluster`, and `scipy.stats`), and a bare `python -c pass`.
- **Job start**: from `LocalFleet.launch` to the job command's first line, median of `--runs`:
  `date +%s.%N` (the fleet's own cost: staging, the supervisor, the claim), and a Python command
  that prints once the job CLI is imported, with and without the old eager imports.
- **Listing**: `LocalFleet.list()` over N finished jobs plus 2 running ones: a fleet object's
  first list (every folder read, as every tick did before, and as a restarted wrapper does
  once) next to a later tick's list (finished jobs from memory), median of `--ticks`. The
  finished jobs are made as the fleet makes them: staged by `LocalFleet._stage`, renamed into
  place, and given a final status.json.
- **Harness overhead per job role**: the demo loop (search runtime, local fleet, examples/digits
  on a local forge: `tests/e2e/research.py: make_program`, `senpai.cli.demo.run_until`) until
  `--overhead STUDENTS:DECIDED` experiments are decided. Each finished job is read back: its
  status.json (launched, started, finished) and the `senpai-phases:` line that ends its log
  (`senpai.phases`). Per role, medians of: the job's wall time (launch to exit), the user
  commands' time (train/score: phase `command`), the harness overhead (the difference) and its
  phases: launch (staging, supervisor, claim), process start + imports (to the job command's
  entry), each named phase of the job, the rest of its Python (other), and exit (interpreter
  teardown, the redaction filter's drain, the supervisor seeing it). Also: job start (launch to
  the first user command's start), the advisor's launch to its hypothesis PR, the overhead as a
  share of a job training 60 s, and decided experiments per minute.

Writes bench/results/jobs-<UTC>.json and .md and prints the table.
"""

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]
for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}.items():
    os.environ.setdefault(key, value)

from forge_fixtures import seed_token  # noqa: E402
from record import utc_stamp, write_result  # noqa: E402  (bench/, beside this script)
from research import make_program  # noqa: E402

from senpai import phases  # noqa: E402
from senpai.cli.demo import run_until  # noqa: E402
from senpai.config.harness import load_harness  # noqa: E402
from senpai.fleet.base import JobSpec  # noqa: E402
from senpai.fleet.local import LocalFleet  # noqa: E402
from senpai.fleet.supervise import STATUS, JobDir, StatusRecord, utcnow  # noqa: E402
from senpai.forge.localforge.server import LocalForgeServer  # noqa: E402

JOB_CLI = "senpai.cli.main, senpai.cli.job"  # what `python -m senpai job ...` imports before it runs
EAGER_BEFORE = "import senpai.fleet.k8s_cluster, scipy.stats"  # what every senpai process imported before issue 10
QUICK = {"runs": 3, "jobs": [60, 600], "overhead": (1, 2)}
FULL = {"runs": 9, "jobs": [60, 600, 6000], "overhead": (2, 6)}
FIGURES = ("import", "start", "listing", "overhead")
TRAIN_SECONDS = 60.0  # the target: overhead <= 3% of a job whose training takes this long
PHASE_ORDER = (
    "launch (stage, supervisor, claim)", "process start + imports", "config", "redaction filter", "adapters",
    "ledger snapshot", "git clone (mirror)", "git clone", "git fetch", "git local", "git push", "forge read",
    "forge write", "tracker", "propose", "command cleanup", "other (the job's own Python)",
    "exit (teardown, log drain, reap)",
)  # fmt: skip


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
        f"import {JOB_CLI}": [py, "-c", f"import {JOB_CLI}"],
        f"import {JOB_CLI} + the old eager imports": [py, "-c", f"import {JOB_CLI}; {EAGER_BEFORE}"],
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
        "python: the job CLI imported": [sys.executable, "-c", f"import {JOB_CLI}; {stamp}"],
        "python: the job CLI + the old eager imports": [
            sys.executable,
            "-c",
            f"import {JOB_CLI}; {EAGER_BEFORE}; {stamp}",
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


def _job_row(folder: Path) -> dict | None:
    """One finished job of the loop: its times (status.json) and phases (its log's `senpai-phases:` line)."""
    status = StatusRecord.model_validate_json((folder / STATUS).read_text())
    rec = phases.parse((folder / "log").read_text(errors="replace"))
    if not status.done or status.started_at is None or status.finished_at is None or rec is None:
        return None
    launched, started, finished = (t.timestamp() for t in (status.created_at, status.started_at, status.finished_at))
    named = {name: wall for name, (wall, _, _) in rec["phases"].items()}
    command = named.pop("command", 0.0)
    role = json.loads((folder / "spec.json").read_text())["role"]
    if role == "advisor":
        role = "advisor: proposes" if "opened" in rec["marks"] else "advisor: reviews"
    split = {
        "launch (stage, supervisor, claim)": started - launched,
        "process start + imports": rec["entered"] - started,
        **named,
        "other (the job's own Python)": rec["left"] - rec["entered"] - command - sum(named.values()),
        "exit (teardown, log drain, reap)": finished - rec["left"],
    }
    cpu = {name: c for name, (_, c, _) in rec["phases"].items()}
    command_cpu = cpu.pop("command", 0.0)
    entered_cpu = rec.get("cpu_entered")
    cpu_split = {"process start + imports": entered_cpu, **cpu}
    if entered_cpu is not None:
        cpu_split["other (the job's own Python)"] = rec["cpu"] - entered_cpu - command_cpu - sum(cpu.values())
    marks = {k: v - launched for k, v in rec["marks"].items()}
    return {
        "job": folder.name, "role": role, "exit_code": status.exit_code, "wall": finished - launched,
        "command": command, "overhead": finished - launched - command, "phases": split, "phases_cpu": cpu_split,
        "harness_cpu": rec["cpu"] - command_cpu, "start": marks.get("command"), "to_pr": marks.get("opened"),
    }  # fmt: skip


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def _by_role(rows: list[dict]) -> list[dict]:
    """Per role: how many jobs, and the median of each figure and phase (medians need not add up)."""
    out = []
    for role in sorted({r["role"] for r in rows}):
        mine = [r for r in rows if r["role"] == role]
        names = list(dict.fromkeys(k for r in mine for k in r["phases"]))
        over = _median([r["overhead"] for r in mine])
        out.append({
            "role": role, "jobs": len(mine), **{k: _median([r[k] for r in mine]) for k in
                                                ("wall", "command", "overhead", "harness_cpu", "start", "to_pr")},
            "share_at_60s": round(100 * over / (over + TRAIN_SECONDS), 1) if over is not None else None,
            "phases": {k: _median([r["phases"].get(k, 0.0) for r in mine]) for k in names},
            "phases_cpu": {k: _median([r.get("phases_cpu", {}).get(k) for r in mine]) for k in names},
        })  # fmt: skip
    return out


def overhead(root: Path, students: int, decided: int, timeout: float) -> dict:
    """The demo loop on a local forge until `decided` experiments are decided; each finished job's split."""
    seed_token(root / "forge")
    server = LocalForgeServer(root / "forge").start()
    try:
        config = make_program(server.base_url, root, "overhead", students=students, experiments=decided)
        start = time.monotonic()
        report = run_until(config, decided, start + timeout)
        wall = time.monotonic() - start
    finally:
        server.stop()
    folders = sorted(d for d in Path(load_harness(config).fleet.dir).iterdir() if d.is_dir() and not d.name.startswith("."))
    rows = [row for d in folders if (row := _job_row(d)) is not None]
    ok = [r for r in rows if r["exit_code"] == 0]
    return {"students": students, "decided": report.decided, "loop_seconds": round(wall, 1),
            "experiments_per_minute": round(report.decided * 60 / wall, 2), "jobs": len(folders),
            "failed_jobs": len(rows) - len(ok), "roles": _by_role(ok), "job_rows": rows}  # fmt: skip


def _cell(value) -> str:
    return "–" if value is None else str(value)


def overhead_table(fig: dict) -> list[str]:
    roles = fig["roles"]
    out = [f"Harness overhead per job role: {fig['students']} students, {fig['decided']} decided in "
           f"{fig['loop_seconds']} s, {fig['experiments_per_minute']} experiments a minute "
           f"({fig['jobs']} jobs, {fig['failed_jobs']} failed). Medians; wall = launch to exit, command = the "
           f"user's train/score commands, overhead = wall - command.", ""]  # fmt: skip
    head = ["role", "jobs", "wall s", "command s", "overhead s", "harness CPU s",
            f"overhead at {TRAIN_SECONDS:.0f} s training", "launch → first command s", "launch → PR s"]  # fmt: skip
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in roles:
        cells = [r["role"], r["jobs"], r["wall"], r["command"], r["overhead"], r["harness_cpu"],
                 f"{r['share_at_60s']}%", _cell(r["start"]), _cell(r["to_pr"])]  # fmt: skip
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    seen = {k for r in roles for k in r["phases"]}
    names = [k for k in PHASE_ORDER if k in seen] + sorted(seen - set(PHASE_ORDER))
    out += ["", "| overhead phase: median wall s (CPU s of the job's process and its git) | "
            + " | ".join(r["role"] for r in roles) + " |", "|" + "---|" * (len(roles) + 1)]  # fmt: skip
    out += [f"| {k} | " + " | ".join(_both(r, k) for r in roles) + " |" for k in names]
    return out


def _both(role: dict, phase: str) -> str:
    wall, cpu = role["phases"].get(phase), role.get("phases_cpu", {}).get(phase)
    return _cell(wall) if wall is None or cpu is None else f"{wall} ({cpu})"


def table(result: dict) -> str:
    out = []
    if "cli_import" in result:
        out += ["| CLI import (fresh interpreter) | median s |", "|---|---|"]
        out += [f"| {r['what']} | {r['seconds']} |" for r in result["cli_import"]]
    if "job_start" in result:
        out += ["", "| job start (LocalFleet.launch to the command's first line) | launch() returns, s | first line, s |"]
        out += ["|---|---|---|"]
        out += [f"| {r['what']} | {r['launch_returns_seconds']} | {r['first_line_seconds']} |" for r in result["job_start"]]
    if "listing" in result:
        out += ["", "| finished jobs | live jobs | first list() (every folder read), ms | tick list(), ms | ratio |"]
        out += ["|---|---|---|---|---|"]
        out += [f"| {r['finished_jobs']} | {r['live_jobs']} | {r['first_list_ms']} | {r['tick_list_ms']} | {r['ratio']}x |"
                for r in result["listing"]]  # fmt: skip
    if "overhead" in result:
        out += ["", *overhead_table(result["overhead"])]
    load = f"Load average {result['load_avg'][0]:.1f} before, {result['load_avg_after'][0]:.1f} after"
    out += ["", f"{load} ({result['cpus']} CPUs)."]
    return "\n".join(out).lstrip("\n") + "\n"


def _size(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        students, decided = (int(x) for x in value.split(":"))
    except ValueError:
        raise click.BadParameter("expected STUDENTS:DECIDED, e.g. 2:4") from None
    if not (1 <= students <= 8 and decided >= 1):
        raise click.BadParameter("1-8 students and at least 1 decided experiment")
    return students, decided


@click.command()
@click.option("--quick", is_flag=True, help=f"{QUICK} instead of {FULL}.")
@click.option("--runs", type=click.IntRange(1, 100), default=None, help="Fresh processes / launches per case (median).")
@click.option("--jobs", "sizes", type=click.IntRange(1, 100_000), multiple=True, help="Finished-job counts for list().")
@click.option("--ticks", type=click.IntRange(1, 100), default=5, show_default=True, help="list() pairs per size (median).")
@click.option("--overhead", "loop", callback=_size, default=None, metavar="STUDENTS:DECIDED",
              help="The overhead figure's loop size [1:2 with --quick, else 2:6].")  # fmt: skip
@click.option("--overhead-timeout", type=float, default=900, show_default=True, help="Seconds before the loop gives up.")
@click.option("--only", type=click.Choice(FIGURES), multiple=True, help="Measure only these figures (repeatable) [all].")
@click.option("--keep", type=click.Path(file_okay=False), default=None, help="Keep the scratch folders here (jobs, logs).")
def main(quick, runs, sizes, ticks, loop, overhead_timeout, only, keep) -> None:  # noqa: PLR0913
    """Measure everything and write bench/results/jobs-<UTC>.{json,md}."""
    preset = QUICK if quick else FULL
    runs = runs or preset["runs"]
    wanted = set(only or FIGURES)
    # senpai's bytecode first, as an installed senpai has it: a source tree changed since its last
    # import, or under PYTHONDONTWRITEBYTECODE, is compiled again by every process (0.1 s a job)
    compileall.compile_dir(ROOT / "senpai", quiet=1)
    result: dict = {"cpus": os.cpu_count(), "load_avg": os.getloadavg(), "runs": runs, "ticks": ticks}
    if "import" in wanted:
        click.echo("CLI import ...", err=True)
        result["cli_import"] = cli_import(runs)
    with tempfile.TemporaryDirectory(prefix="senpai-bench-jobs-") as tmp:
        scratch = Path(keep).resolve() if keep else Path(tmp)
        if "start" in wanted:
            click.echo("job start ...", err=True)
            result["job_start"] = job_start(scratch / "start", runs)
        if "listing" in wanted:
            result["listing"] = []
            for n in sizes or preset["jobs"]:
                click.echo(f"list() at {n} finished jobs ...", err=True)
                result["listing"].append(listing(scratch / f"list-{n}", n, ticks))
        if "overhead" in wanted:
            students, decided = loop or preset["overhead"]
            click.echo(f"harness overhead: the demo loop, {students} students until {decided} decided ...", err=True)
            result["overhead"] = overhead(scratch / "overhead", students, decided, overhead_timeout)
    result["load_avg_after"] = os.getloadavg()
    md = table(result)
    write_result(f"jobs-{utc_stamp()}", result, md)
    click.echo(md)


if __name__ == "__main__":
    main()
