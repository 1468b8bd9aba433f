"""Replay: a research programme's event stream through the wrapper's refresh and `plan()`.

`bench/data/programme-70d.jsonl` is the event stream of a 70-day programme (`generate`: ~580
experiments by 59 students, ~3,500 events: a PR opened with its hypothesis, an evidence comment,
the status label moved to verifying, a verification, a decision, the PR closed). It is synthetic:
its shape follows the sizes Senpai's papers report, its records are rendered exactly as senpai
renders them (`records.record_text`), and it is regenerated with `--generate`.

Each event is applied to a local forge (its own process) as the bot, over HTTP, at the time the
stream gives it: the forge's clock is the programme's (`forge_seed.serve` with a clock), and so
is the wrapper's. Then the wrapper refreshes (`Wrapper._observe`: base head,
`LedgerReader.experiments()`, steering) and plans (`policy.plan` over the tick's `World`). Only
the refresh and the plan are timed. Reported: events per second (of refresh + plan), CPU seconds
per event (mean, and the last tenth's, to show how the cost grows with the ledger), the wrapper's
requests per event (charged and 304, as its forge adapter counts them), the experiments it read
as closed against the close events applied (a missed change shows there), and the peak memory of
the wrapper (max RSS of this process) and of the forge.

On the programme's clock events are minutes apart, as in a real programme; replayed on the wall
clock they were a tenth of a second apart, so every PR changed in the last 2 s (the ledger
reader's settle window) was read again on every refresh: 10 extra conditional requests per event.

Writes bench/results/replay-<UTC>.json and .md and prints the table.
"""

import json
import os
import random
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]
for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}.items():
    os.environ.setdefault(key, value)

from forge_seed import peak_rss_mib, push_branches, serve, set_clock, stop  # noqa: E402
from record import utc_stamp, write_result  # noqa: E402  (bench/, beside this script)
from research import hand_hypothesis, make_program  # noqa: E402

from senpai.cli.wiring import make_forge  # noqa: E402
from senpai.cli.wrapper import build_wrapper  # noqa: E402
from senpai.config.harness import load_harness  # noqa: E402
from senpai.ledger.blocks import Decision, Evidence, PrimaryResult, Verification  # noqa: E402
from senpai.ledger.labels import SENPAI, ExperimentState, student_label, with_status  # noqa: E402
from senpai.ledger.records import record_text  # noqa: E402
from senpai.ledger.transitions import hypothesis_body  # noqa: E402
from senpai.wrapper.policy import plan  # noqa: E402

DATA = ROOT / "bench" / "data" / "programme-70d.jsonl"
STUDENTS = 59
KINDS = ("open", "evidence", "verifying", "verification", "decision", "close")


def generate(seed: int = 70, days: int = 70, experiments: int = 580) -> list[dict]:
    """The event stream: per experiment, the six events of KINDS in order, at seeded times over `days`."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 5, tzinfo=UTC)
    events = []
    for i in range(experiments):
        t = start + timedelta(days=days * i / experiments)
        student = f"s{i % STUDENTS:02d}"
        value = round(0.9 + rng.gauss(0, 0.02), 4)
        passed = rng.random() < 0.15
        for kind in KINDS:
            t += timedelta(minutes=rng.uniform(5, 240))
            events.append(
                {"at": t.isoformat(), "experiment": i, "kind": kind, "student": student, "value": value, "passed": passed}
            )
    return sorted(events, key=lambda e: e["at"])


def _apply(forge, ev: dict, prs: dict[int, object], base: str) -> None:
    """Apply one event as the bot, with the records senpai renders."""
    i, student = ev["experiment"], ev["student"]
    if ev["kind"] == "open":
        h = hand_hypothesis(f"h-{i}", base).model_copy(update={"student": student})
        labels = [SENPAI, student_label(student), ExperimentState.WIP.label]
        prs[i] = forge.create_pull(f"h-{i}", hypothesis_body(h), head=f"senpai/{student}/h-{i}", base="advisor", labels=labels)
        return
    pr = prs[i]
    if ev["kind"] == "evidence":
        primary = PrimaryResult(name="val_accuracy", value=ev["value"], baseline=0.9, delta=ev["value"] - 0.9)
        block = Evidence(pr=pr.number, student=student, head=pr.head_sha, attempt=1, command="python train.py", primary=primary,
                         interpretation="as planned", log_tail=None, failure=None, outcome="ok")  # fmt: skip
        forge.create_comment(pr.number, record_text(block, "**Evidence**"))
    elif ev["kind"] == "verifying":
        forge.set_labels(pr.number, with_status(pr.labels, ExperimentState.VERIFYING))
    elif ev["kind"] == "verification":
        v = ev["value"]
        block = Verification(pr=pr.number, candidate=pr.head_sha, baseline=base, metric="holdout_accuracy", direction="maximize",
                             seeds=[0, 1, 2], candidate_values=[v] * 3, baseline_values=[0.9] * 3, candidate_mean=v,
                             baseline_mean=0.9, improvement=v - 0.9, noise_floor=0.01, passed=ev["passed"],
                             reason="beats the floor" if ev["passed"] else "within the noise floor")  # fmt: skip
        forge.create_comment(pr.number, record_text(block, "**Verification**"))
    elif ev["kind"] == "decision":
        block = Decision(pr=pr.number, head=pr.head_sha, verdict="close", reason="a useful failure")
        forge.create_comment(pr.number, record_text(block, "**Decision**"))
    else:
        forge.set_labels(pr.number, with_status(pr.labels, None))
        forge.update_pull(pr.number, state="closed")


def replay(tmp: Path, events: list[dict]) -> dict:
    clock, start = tmp / "clock", datetime.fromisoformat(events[0]["at"]) - timedelta(days=1)
    server, url = serve(tmp / "forge", clock, start)  # the forge's clock is the programme's
    try:
        config = make_program(url, tmp, "replay", students=1)
        forge = make_forge(load_harness(config))
        base = forge.branch_sha("advisor")
        experiments = sorted({e["experiment"] for e in events})
        students = {e["experiment"]: e["student"] for e in events}
        push_branches(forge, tmp / "seed", [f"senpai/{students[i]}/h-{i}" for i in experiments])
        w = build_wrapper(str(config))
        now = [datetime.fromisoformat(events[0]["at"])]
        w.clock = lambda: now[0]  # the programme's time, as the forge's
        prs: dict[int, object] = {}
        wall, cpu, tail_cpu = 0.0, 0.0, 0.0
        calls0, free0 = w.forge.calls, w.forge.not_modified  # type: ignore[attr-defined]
        for n, ev in enumerate(events):
            now[0] = datetime.fromisoformat(ev["at"])
            set_clock(clock, now[0])
            _apply(forge, ev, prs, base)
            t0, c0 = time.perf_counter(), time.process_time()
            w._observe(True)
            plan(w._world(w._exps or [], [], fresh=True), w.cfg)
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            wall, cpu = wall + dt, cpu + dc
            tail_cpu += dc if n >= len(events) * 9 // 10 else 0.0
            if (n + 1) % max(1, len(events) // 10) == 0 or n == len(events) - 1:
                click.echo(f"{n + 1}/{len(events)} events, {len(w._exps or [])} experiments, {cpu:.1f} s CPU", err=True)
        closed = sum(e.state == "closed" for e in w._exps or [])
        free = w.forge.not_modified - free0  # type: ignore[attr-defined]
        charged = w.forge.calls - calls0 - free  # type: ignore[attr-defined]
        w.store.close()
        forge_rss = peak_rss_mib(server.pid)
    finally:
        stop(server)
    n = len(events)
    tail = n - n * 9 // 10
    return {
        "events": n, "experiments": len(prs), "events_per_second": round(n / wall, 1),
        "cpu_ms_per_event": round(1000 * cpu / n, 1), "cpu_ms_per_event_last_tenth": round(1000 * tail_cpu / tail, 1),
        "charged_per_event": round(charged / n, 2), "not_modified_per_event": round(free / n, 2),
        "wrapper_max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "forge_max_rss_mib": forge_rss, "closed_read": closed, "closed_applied": sum(e["kind"] == "close" for e in events),
    }  # fmt: skip


def table(r: dict) -> str:
    head = ["events", "experiments", "events/s (refresh + plan)", "CPU ms/event (all / last tenth)",
            "requests/event (charged / 304)", "read closed / closed", "max RSS MiB (wrapper / forge)"]  # fmt: skip
    cells = [r["events"], r["experiments"], r["events_per_second"],
             f"{r['cpu_ms_per_event']} / {r['cpu_ms_per_event_last_tenth']}",
             f"{r['charged_per_event']} / {r['not_modified_per_event']}", f"{r['closed_read']} / {r['closed_applied']}",
             f"{r['wrapper_max_rss_mib']} / {r['forge_max_rss_mib']}"]  # fmt: skip
    return "| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n| " + " | ".join(str(c) for c in cells) + " |\n"


@click.command()
@click.option("--quick", is_flag=True, help="Replay the first tenth of the stream.")
@click.option("--generate", "regenerate", is_flag=True, help=f"Write {DATA.relative_to(ROOT)} again from its seed first.")
def main(quick: bool, regenerate: bool) -> None:
    """Replay the programme and write bench/results/replay-<UTC>.{json,md}."""
    if regenerate or not DATA.exists():
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in generate()))
    events = [json.loads(line) for line in DATA.read_text().splitlines()]
    if quick:
        first = {e["experiment"] for e in events[: len(events) // 10]}
        events = [e for e in events if e["experiment"] in first]
    with tempfile.TemporaryDirectory(prefix="senpai-bench-replay-") as scratch:
        result = replay(Path(scratch), events)
    md = table(result)
    write_result(f"replay-{utc_stamp()}", result, md)
    click.echo(md)


if __name__ == "__main__":
    main()
