"""Forge requests per hour: senpai's wrapper next to a Senpai-style per-student poller, one forge each.

For each (students, PRs) size a fresh local forge, in its own process, holds PRs of
`senpai/req-<students>-<prs>`: one open per student, the rest closed, each with a hypothesis body
and one comment, written straight into its SQLite store (`forge_seed.seed_pulls`: over HTTP,
10,000 PRs take an hour). Requests are counted by the forge adapter that makes them (what it
asked, 304s apart: GitHub does not charge a conditional request answered 304 to the rate limit).

- **senpai**: the wrapper's observe step (`Wrapper._observe`, what an idle tick asks the forge),
  in a process of its own (`bench/wrapper_idle.py`): a first full read, `--ticks` idle ticks, then
  one periodic full refresh. Per hour: 3600 / tick_seconds idle ticks and 3600 /
  full_refresh_seconds refreshes. Its peak RSS over all of it is the wrapper's; the forge's peak
  RSS is read when the size is done.
- **poller**: each student lists the open PRs (every page) and reads the comments of each of its
  own, every 60 s; the advisor lists the open PRs and reads every one's comments every 600 s.
  One cycle of each is run and counted, each on a fresh adapter (no ETags); per hour: 60 student
  cycles and 6 advisor cycles. Every size is run, 100 students x 10,000 PRs too.
- **busy** (`--busy STUDENTS:DECIDED`): the demo loop (search runtime, local fleet) until DECIDED
  experiments are decided: REST requests per decided experiment and per hour of the run, the
  wrapper's apart from its jobs', reads apart from writes, 304s apart; the most writes in one
  minute, against GitHub's secondary limit for content creation (80 a minute). Every request goes
  through `tests/fault_proxy.py` (no faults), which counts the forge's answers, the jobs' too.

Writes bench/results/requests-<UTC>.json and .md and prints the tables.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import click

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]
for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}.items():
    os.environ.setdefault(key, value)

import yaml  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from forge_fixtures import seed_token  # noqa: E402
from forge_seed import STORE_FILE, peak_rss_mib, seed_pulls, serve, stop  # noqa: E402
from record import utc_stamp, write_result  # noqa: E402  (bench/, beside this script)
from research import make_program  # noqa: E402

from senpai.cli.ticklog import TickLog  # noqa: E402
from senpai.cli.wiring import make_forge  # noqa: E402
from senpai.cli.wrapper import build_wrapper  # noqa: E402
from senpai.config.harness import load_harness  # noqa: E402
from senpai.forge.localforge.server import LocalForgeServer  # noqa: E402
from senpai.forge.localforge.store import Store  # noqa: E402

STUDENT_PERIOD, ADVISOR_PERIOD = 60.0, 600.0  # seconds: the per-student poller's cycles
GITHUB_WRITES_PER_MINUTE = 80  # GitHub's secondary limit on content-creating requests
QUICK = {"students": [1, 8], "prs": [10, 100]}
FULL = {"students": [1, 8, 32, 100], "prs": [10, 100, 1000, 10000]}


def _program(url: str, tmp: Path, students: int, prs: int) -> Path:
    """The demo's harness config on `url` with `students` students (the demo names 8; more are s000, s001, ...)."""
    config = make_program(url, tmp, f"req-{students}-{prs}", students=min(students, 8))
    if students > 8:
        raw = yaml.safe_load(config.read_text())
        raw["students"] = [{"name": f"s{i:03d}"} for i in range(students)]
        config.write_text(yaml.safe_dump(raw, sort_keys=False))
    return config


def _wrapper_side(config: Path, ticks: int) -> dict:
    """bench/wrapper_idle.py in its own process: the wrapper's requests per step and its peak RSS."""
    cmd = [sys.executable, str(HERE / "wrapper_idle.py"), str(config), str(ticks)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise click.ClickException(f"wrapper_idle.py exited {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def _poller_cycle(cfg, student: str | None) -> dict[str, int]:
    """One cycle of the per-student poller (`student`) or of its advisor (None), on a fresh adapter
    (no ETags: it sends no conditional request): the open PRs listed (every page), then the
    comments of each, a student's own only."""
    forge = make_forge(cfg)
    for p in forge.list_pulls("open"):
        if student is None or f"student:{student}" in p.labels:
            forge.list_comments(p.number)
    return {"charged": forge.calls - forge.not_modified, "not_modified": forge.not_modified}


def measure(tmp: Path, students: int, prs: int, ticks: int) -> dict:
    """One size: requests per senpai idle tick and refresh, per poller cycle, and both per hour; the
    seconds of the wrapper's first full read and the peak RSS of the wrapper and of the forge."""
    start = time.monotonic()
    proc, url = serve(tmp / "forge")
    try:
        config = _program(url, tmp, students, prs)
        cfg = load_harness(config)
        names = [s.name for s in cfg.students]
        seeded = time.monotonic()
        store = Store(tmp / "forge" / STORE_FILE)  # the forge's own file; it serves on, in its process
        try:
            seed_pulls(store, cfg, make_forge(cfg), tmp / "seed", prs, lambda i, *_: [f"progress note {i}"])
        finally:
            store.close()
        seeding = time.monotonic() - seeded
        senpai = _wrapper_side(config, ticks)
        per_student = [_poller_cycle(cfg, s) for s in names]
        advisor = _poller_cycle(cfg, None)
        forge_rss = peak_rss_mib(proc.pid)
    finally:
        stop(proc)
    idle, refresh, first = senpai["idle"], senpai["refresh"], senpai["first"]
    idle_charged = sum(i["charged"] for i in idle) / ticks
    idle_304 = sum(i["not_modified"] for i in idle) / ticks
    ticks_h, refresh_h = 3600 / cfg.tick_seconds, 3600 / cfg.full_refresh_seconds
    senpai_h = ticks_h * idle_charged + refresh_h * refresh["charged"]
    senpai_304_h = ticks_h * idle_304 + refresh_h * refresh["not_modified"]
    poller_h = 3600 / STUDENT_PERIOD * sum(c["charged"] for c in per_student) + 3600 / ADVISOR_PERIOD * advisor["charged"]
    return {
        "students": students, "prs": prs, "tick_seconds": cfg.tick_seconds, "full_refresh_seconds": cfg.full_refresh_seconds,
        "idle_tick_charged": idle_charged, "idle_tick_304": idle_304, "refresh_charged": refresh["charged"],
        "refresh_304": refresh["not_modified"], "first_read_charged": first["charged"],
        "first_read_seconds": first["seconds"], "experiments": senpai["experiments"],
        "senpai_charged_per_hour": round(senpai_h), "senpai_304_per_hour": round(senpai_304_h),
        "poller_student_cycle": sum(c["charged"] for c in per_student), "poller_advisor_cycle": advisor["charged"],
        "poller_charged_per_hour": round(poller_h), "ratio": round(poller_h / senpai_h, 2) if senpai_h else None,
        "wrapper_peak_rss_mib": senpai["peak_rss_mib"], "forge_peak_rss_mib": forge_rss,
        "seeding_seconds": round(seeding, 1), "wall_seconds": round(time.monotonic() - start, 1),
    }  # fmt: skip


def busy(tmp: Path, students: int, decided: int, timeout: float) -> dict:
    """The demo loop until `decided` experiments are decided: its REST requests, split and per experiment."""
    seed_token(tmp / "forge")
    server = LocalForgeServer(tmp / "forge").start()
    writes_at: list[float] = []
    try:
        with FaultProxy(server.base_url, rate=0.0) as proxy:
            config = make_program(proxy.url, tmp, "busy", students=students, experiments=decided)
            before, roles_before = dict(proxy.methods), dict(proxy.charged_by_role)
            answer = proxy.answer

            def timed(path: str, status: int, method: str = "GET", agent: str = "") -> None:
                if method != "GET" and not path.startswith("/git/"):
                    writes_at.append(time.monotonic())
                answer(path, status, method, agent)

            proxy.answer = timed  # type: ignore[method-assign]
            start = time.monotonic()
            w = build_wrapper(str(config))
            try:
                stop = lambda r: r.decided >= decided or time.monotonic() - start > timeout  # noqa: E731
                report = w.run(until=stop, on_tick=TickLog(quiet=True))
            finally:
                for job in w.fleet.list():
                    if not job.done:
                        w.fleet.delete(job.name)
                w.store.close()
            wall = time.monotonic() - start
            counts = {k: n - before.get(k, 0) for k, n in proxy.methods.items()}
            top = proxy.charged_paths.most_common(12)
            by_role = Counter({k: n - roles_before.get(k, 0) for k, n in proxy.charged_by_role.items()})
    finally:
        server.stop()
    rest = {k: n for k, n in counts.items() if k[0] == "rest"}
    charged = sum(n for (_, _, free), n in rest.items() if not free)
    reads = sum(n for (_, method, free), n in rest.items() if method == "GET" and not free)
    not_modified = sum(n for (_, _, free), n in rest.items() if free)
    wrapper_charged = w.forge.calls - w.forge.not_modified  # type: ignore[attr-defined]
    done = max(1, report.decided if report else 0)
    peak = max((sum(1 for t in writes_at if s <= t < s + 60) for s in writes_at), default=0)
    return {
        "students": students, "decided": report.decided if report else 0, "wall_seconds": round(wall, 1),
        "charged": charged, "reads": reads, "writes": charged - reads, "not_modified": not_modified,
        "wrapper_charged": wrapper_charged, "jobs_charged": charged - wrapper_charged,
        "git": sum(n for k, n in counts.items() if k[0] == "git"),
        "per_experiment": round(charged / done, 1), "wrapper_per_experiment": round(wrapper_charged / done, 1),
        "jobs_per_experiment": round((charged - wrapper_charged) / done, 1),
        "charged_per_hour": round(charged * 3600 / wall), "peak_writes_per_minute": peak,
        "top_charged": dict(top),
        "charged_by_role": {role: sum(n for (r, _), n in by_role.items() if r == role) for role, _ in by_role},
        "top_charged_by_role": {f"{role} {route}": n for (role, route), n in by_role.most_common(20) if n},
    }  # fmt: skip


def busy_table(rows: list[dict]) -> str:
    head = ["students", "decided", "wall s", "charged (reads / writes)", "304s", "per experiment (wrapper / jobs)",
            "charged per hour", f"peak writes a minute (GitHub: {GITHUB_WRITES_PER_MINUTE})", "git"]  # fmt: skip
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["students"], r["decided"], r["wall_seconds"], f"{r['charged']} ({r['reads']} / {r['writes']})",
                 r["not_modified"],
                 f"{r['per_experiment']} ({r['wrapper_per_experiment']} / {r['jobs_per_experiment']})",
                 r["charged_per_hour"], r["peak_writes_per_minute"], r["git"]]  # fmt: skip
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out) + "\n"


def table(rows: list[dict]) -> str:
    head = ["students", "PRs", "first read (charged, s)", "idle tick (charged / 304)", "full refresh (charged / 304)",
            "senpai per hour (charged / 304)", "poller per hour", "poller / senpai",
            "peak RSS MiB (wrapper / forge)"]  # fmt: skip
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ratio = f"{r['ratio']}x" if r["ratio"] else "∞ (senpai: 0 charged)" if r["poller_charged_per_hour"] else "-"
        cells = [r["students"], f"{r['prs']:,}", f"{r['first_read_charged']}, {r['first_read_seconds']:.1f} s",
                 f"{r['idle_tick_charged']:g} / {r['idle_tick_304']:g}", f"{r['refresh_charged']} / {r['refresh_304']}",
                 f"{r['senpai_charged_per_hour']} / {r['senpai_304_per_hour']}", r["poller_charged_per_hour"], ratio,
                 f"{r['wrapper_peak_rss_mib']} / {r['forge_peak_rss_mib']}"]  # fmt: skip
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out) + "\n"


def _sizes(ctx: click.Context, param: click.Parameter, value: str | None) -> list[tuple[int, int]] | None:
    if value is None:
        return None
    try:
        sizes = [tuple(int(x) for x in size.split(":")) for size in value.split(",")]
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected STUDENTS:PRS[,STUDENTS:PRS...], e.g. 8:10000") from None
    if any(len(size) != 2 or min(size) < 1 for size in sizes):
        raise click.BadParameter(f"{value!r}: expected STUDENTS:PRS pairs of positive numbers")
    return sizes  # type: ignore[return-value]


def _busy_size(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        students, decided = (int(x) for x in value.split(":"))
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected STUDENTS:DECIDED, e.g. 2:4") from None
    if students < 1 or decided < 1:
        raise click.BadParameter(f"{value!r}: both must be at least 1")
    return students, decided


@click.command()
@click.option("--quick", is_flag=True, help=f"Sizes {QUICK} instead of {FULL}.")
@click.option("--sizes", "chosen", callback=_sizes, default=None, metavar="STUDENTS:PRS,...",
              help="Only these idle sizes, e.g. 8:10000 (default: each students x PRs pair with PRs >= students).")  # fmt: skip
@click.option("--ticks", type=click.IntRange(1, 100), default=5, show_default=True, help="Idle ticks counted per size.")
@click.option("--busy", "busy_size", callback=_busy_size, default=None, metavar="STUDENTS:DECIDED",
              help="Also run the demo loop to DECIDED experiments (default: 2:4 with --quick, 8:16 without).")  # fmt: skip
@click.option("--busy-timeout", type=float, default=1800, show_default=True, help="Seconds before the busy run gives up.")
@click.option("--no-busy", is_flag=True, help="Skip the busy run.")
@click.option("--no-idle", is_flag=True, help="Skip the idle sizes.")
@click.option("--overlap", is_flag=True,
              help="Measure the idle sizes beside the busy run, not before it (both count requests; the busy run's "
                   "per-hour rate is then that of a shared machine).")  # fmt: skip
def main(quick: bool, chosen: list[tuple[int, int]] | None, ticks: int, busy_size: tuple[int, int] | None,
         busy_timeout: float, no_busy: bool, no_idle: bool, overlap: bool) -> None:  # fmt: skip
    """Measure every size and write bench/results/requests-<UTC>.{json,md}."""
    preset = QUICK if quick else FULL
    sizes = [] if no_idle else chosen or [(s, p) for s in preset["students"] for p in preset["prs"] if p >= s]
    rows, busy_rows, failed = [], [], []
    with tempfile.TemporaryDirectory(prefix="senpai-bench-requests-") as scratch:

        def idle() -> None:
            for n, (students, prs) in enumerate(sizes, 1):
                click.echo(f"[{n}/{len(sizes)}] idle: {students} students, {prs:,} PRs ...", err=True)
                rows.append(r := measure(Path(scratch) / f"{students}-{prs}", students, prs, ticks))
                click.echo(f"    seeded in {r['seeding_seconds']} s; first read {r['first_read_charged']} requests in "
                           f"{r['first_read_seconds']:.1f} s; idle tick {r['idle_tick_charged']:g} charged / "
                           f"{r['idle_tick_304']:g} 304; {r['wall_seconds']} s in all", err=True)  # fmt: skip

        def guarded() -> None:  # in a thread: its exception is raised again in the main one
            try:
                idle()
            except BaseException as e:
                failed.append(e)

        beside = threading.Thread(target=guarded) if overlap and not no_busy else None
        if beside:
            beside.start()
        else:
            idle()
        if not no_busy:
            students, decided = busy_size or ((2, 4) if quick else (8, 16))
            click.echo(f"busy: {students} students until {decided} experiments are decided ...", err=True)
            busy_rows.append(r := busy(Path(scratch) / "busy", students, decided, busy_timeout))
            click.echo(f"    {r['decided']} decided in {r['wall_seconds']} s", err=True)
        if beside:
            beside.join()
        if failed:
            raise failed[0]
    md = ("## Idle\n\n" + table(rows) if rows else "") + ("\n## Busy\n\n" + busy_table(busy_rows) if busy_rows else "")
    write_result(f"requests-{utc_stamp()}", {"idle": rows, "busy": busy_rows}, md)
    click.echo(md)


if __name__ == "__main__":
    main()
