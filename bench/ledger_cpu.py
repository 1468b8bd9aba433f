"""Wrapper CPU per tick against the PR count: a first full refresh, a busy refresh and an idle tick.

For each size a fresh local forge (in this process, on 127.0.0.1) holds that many senpai PRs of
`senpai/cpu-<n>`, each with a hypothesis body, an evidence comment naming an offline W&B run and a
verification comment, all written as the bot; one PR per student is open, the rest closed. The
PRs are written straight into the forge's SQLite store (`forge_seed.seed_pulls`; over HTTP, 1,000
PRs take minutes to seed), stamped an hour back as a ledger's PRs are (the reader reads a PR
changed in the last 2 s again, so a fresh seed would double the first tick's and the busy tick's
requests: 180 at 100 PRs where 14 are needed). Each evidence's run is a real wandb offline run folder: one program run under the
tracker's `env_for`, copied once per PR (its `.wandb` log renamed); the runs of the open PRs are
cut before their exit record, so they read as running.

The wrapper (`senpai.cli.wrapper.build_wrapper`) then does, each measured with
`time.thread_time()` on its own thread (the forge's CPU, on its server threads, is the process
time minus that, divided by the requests the forge answered):

- **first**: the first tick (every PR and its comments read, every run read);
- **busy**: a tick after `--changed` PRs got a new comment and the running runs got new data
  (their full logs, with the exit record);
- **idle**: the mean of `--idle` ticks with nothing changed, each planning (the seeded students'
  launches are never applied, so there is always a plan to make);
- **quiet**: the mean of `--idle` quiet ticks: what `Wrapper.tick()` runs when nothing changed and
  the last plan was empty (`Wrapper._quiet`): the fleet listing and the observe step, no plan.

A tick here is `Wrapper.tick()` without the dispatch: the fleet listing, the observe step (the
ledger and the steering issues re-read when the forge changed), and `policy.plan` with the
steering rules; its actions are computed, not applied (the seeded students would get jobs).

Writes bench/results/cpu-<UTC>.json and .md and prints the table.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]
for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}.items():
    os.environ.setdefault(key, value)

from forge_fixtures import seed_token  # noqa: E402
from forge_seed import seed_pulls  # noqa: E402
from record import utc_stamp, write_result  # noqa: E402  (bench/, beside this script)
from research import make_program  # noqa: E402

from senpai.cli.wiring import make_forge  # noqa: E402
from senpai.cli.wrapper import build_wrapper  # noqa: E402
from senpai.config.harness import TrackerSettings, load_harness  # noqa: E402
from senpai.forge.localforge.server import LocalForgeServer  # noqa: E402
from senpai.ledger.blocks import Evidence, PrimaryResult, RunRef, Verification  # noqa: E402
from senpai.ledger.records import record_text  # noqa: E402
from senpai.tracker.base import RunIdentity  # noqa: E402
from senpai.tracker.wandb import WandbTracker  # noqa: E402
from senpai.wrapper.policy import plan  # noqa: E402

QUICK, FULL = [10, 100], [10, 100, 1000]
STUDENTS = 8
PROGRAM = """
import wandb
run = wandb.init(config={"hidden_width": 32})
for i in range(20):
    run.log({"loss": 1 / (i + 1), "val_accuracy": 0.9 + i / 1000})
"""


def template_run(tracker: WandbTracker, home: Path) -> bytes:
    """The `.wandb` log of one real offline run of PROGRAM (run id `cpu-template`)."""
    home.mkdir(parents=True, exist_ok=True)
    identity = RunIdentity(id="cpu-template", group="pr-0", name="ada/pr-0/1", tags=["senpai"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env |= {"WANDB_CONFIG_DIR": str(home / "config"), "WANDB_CACHE_DIR": str(home / "cache")}
    env |= {"WANDB_DATA_DIR": str(home / "data")} | tracker.env_for(identity, home / "job")
    subprocess.run([sys.executable, "-c", PROGRAM], env=env, cwd=home, check=True, capture_output=True, timeout=120)
    (log,) = (home / "job" / "wandb").glob("offline-run-*-cpu-template/run-cpu-template.wandb")  # WANDB_DIR: the job's dir
    data = log.read_bytes()
    shutil.rmtree(log.parent)
    return data


def write_run(tracker: WandbTracker, run_id: str, data: bytes) -> Path:
    """An offline run folder for `run_id` holding `data` as its log; returns the log's path."""
    folder = tracker.dir / "wandb" / f"offline-run-20261201_000000-{run_id}"
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"run-{run_id}.wandb"
    log.write_bytes(data)
    return log


def _evidence(pr: int, student: str, head: str, run_id: str) -> Evidence:
    return Evidence(
        pr=pr, attempt=1, student=student, head=head, command="python train.py", outcome="ok",
        runs=[RunRef(id=run_id, url=None, state="finished")], metrics={"val_accuracy": 0.919},
        primary=PrimaryResult(name="val_accuracy", value=0.919, baseline=0.9, delta=0.019), interpretation="better",
    )  # fmt: skip


def _verification(pr: int, head: str, base: str) -> Verification:
    return Verification(
        pr=pr, candidate=head, baseline=base, metric="val_accuracy", direction="maximize", seeds=[0, 1],
        candidate_values=[0.92, 0.918], baseline_values=[0.9, 0.901], candidate_mean=0.919, baseline_mean=0.9005,
        improvement=0.0185, noise_floor=0.002, passed=True, reason="above the noise floor",
    )  # fmt: skip


def seed(server: LocalForgeServer, cfg, tmp: Path, prs: int, log: bytes) -> list[Path]:
    """`prs` PRs with their records and runs, written into the forge's store; returns the logs of
    the open PRs' (running) runs."""
    tracker, running = WandbTracker(cfg.tracker), []

    def records(i: int, number: int, student: str, head: str, base: str, is_open: bool) -> list[str]:
        run_id = f"cpu-{i}"
        if is_open:
            running.append(write_run(tracker, run_id, log[: len(log) // 2]))  # no exit record yet
        else:
            write_run(tracker, run_id, log)
        return [
            record_text(_evidence(number, student, head, run_id), f"**Evidence** attempt 1 of PR {number}"),
            record_text(_verification(number, head, base), f"**Verification** of PR {number}"),
        ]

    seed_pulls(server.store, cfg, make_forge(cfg), tmp / "seed", prs, records)
    return running


def tick(w) -> list:
    """`Wrapper.tick()` up to its actions: fleet listing, observe, plan with the steering rules (not applied)."""
    jobs = w.fleet.list()
    done = {j.name for j in jobs if j.done}
    refreshed = w._observe(bool(done - w._done_seen))
    w._done_seen = done
    return plan(w._world(list(w._exps or []), jobs, fresh=refreshed), w.cfg)


def quiet_tick(w) -> None:
    """What `Wrapper.tick()` runs when the tick is quiet (`Wrapper._quiet`): the fleet listing, the
    observe step and the quiet check, no plan (here the seeded students' launches are never applied,
    so the bench's own ticks always have a plan to make)."""
    jobs = w.fleet.list()
    w._observe(False)
    w._quiet(False, jobs)


def cpu(fn, requests) -> dict:
    """Run `fn` once: the calling thread's CPU seconds, the forge's (the rest of the process) and its requests."""
    n0, t0, p0 = requests(), time.thread_time(), time.process_time()
    fn()
    t1, p1, n1 = time.thread_time(), time.process_time(), requests()
    return {"wrapper_cpu": t1 - t0, "forge_cpu": max(p1 - p0 - (t1 - t0), 0.0), "forge_requests": n1 - n0}


def profiled(fn, out: Path | None):
    """`fn`, under cProfile when `out` is set (stats written there, for `python -m pstats`)."""
    if out is None:
        return fn
    import cProfile

    def run():
        with cProfile.Profile(time.thread_time) as prof:  # this thread's CPU, not the wall clock
            fn()
        prof.dump_stats(out)

    return run


def measure(tmp: Path, prs: int, changed: int, idle: int, log: bytes, profile: Path | None = None) -> dict:
    seed_token(tmp / "forge")
    server = LocalForgeServer(tmp / "forge").start()
    try:
        config = make_program(server.url, tmp, f"cpu-{prs}", students=STUDENTS)
        cfg = load_harness(config)
        start = time.monotonic()
        running = seed(server, cfg, tmp, prs, log)
        seeding = time.monotonic() - start
        w = build_wrapper(str(config))
        requests = lambda: w.forge.calls  # noqa: E731 - the forge adapter counts its REST requests
        first = cpu(lambda: tick(w), requests)
        idles = [cpu(lambda: tick(w), requests) for _ in range(idle)]
        quiets = [cpu(lambda: quiet_tick(w), requests) for _ in range(idle)]
        forge, store = make_forge(cfg), server.store
        owner, name = cfg.forge.repo.split("/")
        repo = store.repo(owner, name)
        for number in range(1, changed + 1):
            store.create_comment(store.issue(repo["id"], number), forge.login, f"a note on {number}")
        for path in running:
            path.write_bytes(log)  # the run finished
        busy = cpu(profiled(lambda: tick(w), profile), requests)
        w.store.close()
    finally:
        server.stop()
    mean = {k: sum(i[k] for i in idles) / idle for k in idles[0]}
    quiet = {k: sum(i[k] for i in quiets) / idle for k in quiets[0]}
    row = {"prs": prs, "changed": changed, "running_runs": len(running), "seeding_seconds": round(seeding, 1)}
    for label, m in (("first", first), ("busy", busy), ("idle", mean), ("quiet", quiet)):
        row |= {f"{label}_{k}": round(v, 4) if isinstance(v, float) else v for k, v in m.items()}
    return row


def _per_request(cpu_s: float, n: float) -> str:
    return f"{1000 * cpu_s / n:.1f}" if n else "-"


def table(rows: list[dict]) -> str:
    head = ["code", "PRs", "first tick CPU (s)", "busy tick CPU (s)", "idle tick CPU (ms)", "quiet tick CPU (ms)",
            "forge requests (first / busy / idle)", "forge CPU per request (ms, first / busy)"]  # fmt: skip
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["code"], r["prs"], f"{r['first_wrapper_cpu']:.3f}", f"{r['busy_wrapper_cpu']:.3f}",
                 f"{1000 * r['idle_wrapper_cpu']:.1f}", f"{1000 * r['quiet_wrapper_cpu']:.1f}",
                 f"{r['first_forge_requests']} / {r['busy_forge_requests']} / {r['idle_forge_requests']:g}",
                 f"{_per_request(r['first_forge_cpu'], r['first_forge_requests'])} / "
                 f"{_per_request(r['busy_forge_cpu'], r['busy_forge_requests'])}"]  # fmt: skip
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out) + "\n"


def _describe() -> str:
    git = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True)
    return git.stdout.strip() or "unknown"


@click.command()
@click.option("--quick", is_flag=True, help=f"Sizes {QUICK} instead of {FULL}.")
@click.option("--sizes", default=None, help="Comma-separated PR counts, instead of the defaults.")
@click.option("--changed", type=click.IntRange(1, 100), default=5, show_default=True, help="PRs changed before the busy tick.")
@click.option("--idle", type=click.IntRange(1, 100), default=5, show_default=True, help="Idle ticks measured per size.")
@click.option("--profile", type=click.Path(file_okay=False), default=None, help="Write cProfile stats of each busy tick here.")
@click.option("--label", default=None, help="What was measured [git describe --dirty of this checkout].")
def main(quick: bool, sizes: str | None, changed: int, idle: int, profile: str | None, label: str | None) -> None:
    """Measure every size and write bench/results/cpu-<UTC>.{json,md}."""
    counts = [int(s) for s in sizes.split(",")] if sizes else QUICK if quick else FULL
    if profile:
        Path(profile).mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="senpai-bench-cpu-") as scratch:
        home = Path(scratch) / "wandb-home"
        log = template_run(WandbTracker(TrackerSettings(dir=str(home / "runs"), mode="offline")), home)
        for prs in counts:
            click.echo(f"measuring {prs} PRs ...", err=True)
            stats = Path(profile) / f"busy-{prs}.prof" if profile else None
            row = measure(Path(scratch) / str(prs), prs, min(changed, prs), idle, log, stats)
            rows.append({"code": label or _describe(), **row})
    md = table(rows)
    write_result(f"cpu-{utc_stamp()}", rows, md)
    click.echo(md)


if __name__ == "__main__":
    main()
