"""Forge requests per hour: senpai's wrapper next to a Senpai-style per-student poller, one forge each.

For each (students, PRs) size a fresh local forge holds PRs of `senpai/req-<n>`: one open per
student, the rest closed, each with a hypothesis body and one comment. Every request goes through
`tests/fault_proxy.py` (no faults), which counts the forge's answers by status; 304s are counted
apart, since GitHub does not charge a conditional request answered 304 to the rate limit.

- **senpai**: the wrapper's observe step (`Wrapper._observe`, what an idle tick asks the forge)
  after a first full read: `--ticks` idle ticks, then one periodic full refresh. Per hour:
  3600 / tick_seconds idle ticks and 3600 / full_refresh_seconds refreshes.
- **poller**: each student lists the open PRs (every page) and reads the comments of each of its
  own, every 60 s; the advisor lists the open PRs and reads every one's comments every 600 s.
  One cycle of each is run and counted; per hour: 60 student cycles and 6 advisor cycles.
- **busy** (`--busy STUDENTS:DECIDED`): the demo loop (search runtime, local fleet) until DECIDED
  experiments are decided: REST requests per decided experiment and per hour of the run, the
  wrapper's apart from its jobs', reads apart from writes, 304s apart; the most writes in one
  minute, against GitHub's secondary limit for content creation (80 a minute).

Writes bench/results/requests-<UTC>.json and .md and prints the tables.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]
for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}.items():
    os.environ.setdefault(key, value)

from fault_proxy import FaultProxy  # noqa: E402
from forge_fixtures import seed_token  # noqa: E402
from research import hand_hypothesis, make_program  # noqa: E402

from senpai.cli.demo import IDENTITY  # noqa: E402
from senpai.cli.progress import TickPrinter  # noqa: E402
from senpai.cli.wiring import make_forge  # noqa: E402
from senpai.cli.wrapper import build_wrapper  # noqa: E402
from senpai.config.harness import load_harness  # noqa: E402
from senpai.forge.localforge.server import LocalForgeServer  # noqa: E402
from senpai.ledger.transitions import hypothesis_body  # noqa: E402

STUDENT_PERIOD, ADVISOR_PERIOD = 60.0, 600.0  # seconds: the per-student poller's cycles
GITHUB_WRITES_PER_MINUTE = 80  # GitHub's secondary limit on content-creating requests
QUICK = {"students": [1, 8], "prs": [10, 100]}
FULL = {"students": [1, 8, 32], "prs": [10, 100, 1000]}


def _branches(forge, seed: Path, names: list[str]) -> None:
    """One commit per branch on top of the seeded `main` (a PR needs a commit its base lacks), pushed at once."""
    env = {**os.environ, **IDENTITY, **forge.git_env()}

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(seed), *args], env=env, check=True, capture_output=True, text=True).stdout

    tree, parent = git("rev-parse", "main^{tree}").strip(), git("rev-parse", "main").strip()
    refs = [f"{git('commit-tree', tree, '-p', parent, '-m', name).strip()}:refs/heads/{name}" for name in names]
    for i in range(0, len(refs), 500):
        git("push", "-q", forge.clone_url, *refs[i : i + 500])


def _seed(forge, seed: Path, students: list[str], prs: int) -> None:
    base = forge.branch_sha("advisor")
    names = [f"senpai/{students[i % len(students)]}/h-{i}" for i in range(prs)]
    _branches(forge, seed, names)
    for i, name in enumerate(names):
        student = students[i % len(students)]
        h = hand_hypothesis(f"h-{i}", base).model_copy(update={"student": student})
        labels = ["senpai", f"student:{student}", "status:wip"]
        pr = forge.create_pull(f"h-{i}", hypothesis_body(h), head=name, base="advisor", labels=labels)
        forge.create_comment(pr.number, f"progress note {i}")
        if i >= len(students):  # one open PR per student, the rest decided
            forge.update_pull(pr.number, state="closed")


def _counted(proxy: FaultProxy, fn) -> dict[str, int]:
    """Requests `fn()` made: {"charged": n, "not_modified": n} (REST only)."""
    before = dict(proxy.answered)
    fn()
    after = proxy.answered
    rest = {status: n - before.get(("rest", status), 0) for (surface, status), n in after.items() if surface == "rest"}
    return {"charged": sum(n for s, n in rest.items() if s != 304), "not_modified": rest.get(304, 0)}


def _poller(new_forge, students: list[str]) -> tuple:
    """One cycle of each kind, each through a fresh `new_forge()`: a poller that sends no conditional
    requests (senpai's adapter re-asks for a listing page it has seen with its ETag)."""

    def student_cycle(student: str):
        forge = new_forge()
        for p in forge.list_pulls("open"):
            if f"student:{student}" in p.labels:
                forge.list_comments(p.number)

    def advisor_cycle():
        forge = new_forge()
        for p in forge.list_pulls("open"):
            forge.list_comments(p.number)

    return student_cycle, advisor_cycle


def measure(tmp: Path, students: int, prs: int, ticks: int) -> dict:
    """One size: requests per senpai idle tick and refresh, per poller cycle, and both per hour."""
    seed_token(tmp / "forge")
    server = LocalForgeServer(tmp / "forge").start()
    try:
        with FaultProxy(server.base_url, rate=0.0) as proxy:
            config = make_program(proxy.url, tmp, f"req-{students}-{prs}", students=students)
            cfg = load_harness(config)
            names = [s.name for s in cfg.students]
            start = time.monotonic()
            _seed(make_forge(cfg), tmp / "seed", names, prs)
            seeding = time.monotonic() - start
            w = build_wrapper(str(config))
            w._observe(False)  # the first full read
            idle = [_counted(proxy, lambda: w._observe(False)) for _ in range(ticks)]
            w._last_refresh = float("-inf")
            refresh = _counted(proxy, lambda: w._observe(False))
            w.store.close()
            student_cycle, advisor_cycle = _poller(lambda: make_forge(cfg), names)
            per_student = [_counted(proxy, lambda s=s: student_cycle(s)) for s in names]
            advisor = _counted(proxy, advisor_cycle)
    finally:
        server.stop()
    idle_charged = sum(i["charged"] for i in idle) / ticks
    idle_304 = sum(i["not_modified"] for i in idle) / ticks
    ticks_h, refresh_h = 3600 / cfg.tick_seconds, 3600 / cfg.full_refresh_seconds
    senpai_h = ticks_h * idle_charged + refresh_h * refresh["charged"]
    poller_h = 3600 / STUDENT_PERIOD * sum(c["charged"] for c in per_student) + 3600 / ADVISOR_PERIOD * advisor["charged"]
    return {
        "students": students, "prs": prs, "tick_seconds": cfg.tick_seconds, "full_refresh_seconds": cfg.full_refresh_seconds,
        "idle_tick_charged": idle_charged, "idle_tick_304": idle_304, "refresh_charged": refresh["charged"],
        "senpai_charged_per_hour": round(senpai_h), "senpai_304_per_hour": round(ticks_h * idle_304),
        "poller_student_cycle": sum(c["charged"] for c in per_student), "poller_advisor_cycle": advisor["charged"],
        "poller_charged_per_hour": round(poller_h), "ratio": round(poller_h / senpai_h, 2) if senpai_h else None,
        "seeding_seconds": round(seeding, 1),
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
                report = w.run(until=stop, on_tick=TickPrinter(quiet=True))
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
    head = ["students", "PRs", "idle tick (charged / 304)", "full refresh", "senpai per hour (charged / 304)",
            "poller per hour", "poller / senpai"]  # fmt: skip
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["students"], r["prs"], f"{r['idle_tick_charged']:g} / {r['idle_tick_304']:g}", r["refresh_charged"],
                 f"{r['senpai_charged_per_hour']} / {r['senpai_304_per_hour']}", r["poller_charged_per_hour"],
                 f"{r['ratio']}x" if r["ratio"] else "-"]  # fmt: skip
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out) + "\n"


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
@click.option("--ticks", type=click.IntRange(1, 100), default=5, show_default=True, help="Idle ticks counted per size.")
@click.option("--busy", "busy_size", callback=_busy_size, default=None, metavar="STUDENTS:DECIDED",
              help="Also run the demo loop to DECIDED experiments (default: 2:4 with --quick, 8:16 without).")  # fmt: skip
@click.option("--busy-timeout", type=float, default=1800, show_default=True, help="Seconds before the busy run gives up.")
@click.option("--no-busy", is_flag=True, help="Skip the busy run.")
def main(quick: bool, ticks: int, busy_size: tuple[int, int] | None, busy_timeout: float, no_busy: bool) -> None:
    """Measure every size and write bench/results/requests-<UTC>.{json,md}."""
    sizes = QUICK if quick else FULL
    rows, busy_rows = [], []
    with tempfile.TemporaryDirectory(prefix="senpai-bench-requests-") as scratch:
        for students in sizes["students"]:
            for prs in sizes["prs"]:
                if prs < students:
                    continue
                click.echo(f"measuring {students} students, {prs} PRs ...", err=True)
                rows.append(measure(Path(scratch) / f"{students}-{prs}", students, prs, ticks))
        if not no_busy:
            students, decided = busy_size or ((2, 4) if quick else (8, 16))
            click.echo(f"busy: {students} students until {decided} experiments are decided ...", err=True)
            busy_rows.append(busy(Path(scratch) / "busy", students, decided, busy_timeout))
    md = "## Idle\n\n" + table(rows) + ("\n## Busy\n\n" + busy_table(busy_rows) if busy_rows else "")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"requests-{stamp}.json").write_text(json.dumps({"idle": rows, "busy": busy_rows}, indent=2))
    (out / f"requests-{stamp}.md").write_text(md)
    click.echo(md)


if __name__ == "__main__":
    main()
