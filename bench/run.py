"""`make bench` / `make bench-quick`: the fault figure and the kill figure, side by side in one run.

Writes `bench/results/<UTC timestamp>.json` (every count) and `.md` (the table) and prints the table.
Both figures run at once, each on its own local forge on 127.0.0.1, in a scratch folder that is
removed afterwards (kept with --keep).
"""

import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
from record import utc_stamp, write_result  # bench/, beside this script

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]  # audit, chaos, research
for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}.items():
    os.environ.setdefault(key, value)

from audit import DUPLICATES  # noqa: E402
from chaos import fault_run, kill_run  # noqa: E402
from fault_proxy import KINDS  # noqa: E402

QUICK = {"kills": 15, "decided": 1, "fault_decided": 1, "timeout": 300.0, "max_gap": 4.0}
FULL = {"kills": 200, "decided": 12, "fault_decided": 6, "timeout": 3600.0, "max_gap": 4.0}


def clean(r: dict, decided: int) -> bool:
    """The figure met its target: decided, no crash, every PR terminal, no duplicate, loss or infra closure."""
    a = r["audit"]
    bad = a["duplicates"] + a["lost_events"] + a["closed_for_infra"] + a["not_terminal"] + a["unreadable"]
    return a["decided"] >= decided and not r.get("crash") and r.get("wrapper_finished", True) and bad == 0


def table(results: list[dict], decided: dict[str, int]) -> str:
    """One Markdown row per figure."""
    head = ["figure", "faults injected", "faults survived", "kills", "duplicates", "lost events", "closed for infra",
            "infra attempts", "not terminal", "decided", "clean", "wall s"]  # fmt: skip
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        a, ok = r["audit"], clean(r, decided[r["figure"]])
        injected = r.get("faults", {}).get("injected", {})
        total = sum(injected.values())
        kinds = ", ".join(f"{k} {n}" for k, n in injected.items() if n) or "-"
        missing = [k for k in KINDS if not injected.get(k)] if "rate" in r else []
        kinds += f"; none of: {', '.join(missing)}" if missing else ""
        dupes = ", ".join(f"{k.removeprefix('duplicate_')} {a[k]}" for k in DUPLICATES if a[k]) or "0"
        kills = ", ".join(f"{k} {n}" for k, n in r.get("kills", {}).items() if n) or "-"
        kills += f" (of {r['kills_requested']} asked)" if "kills_requested" in r else ""
        cells = [r["figure"], f"{total} ({kinds})" if total else "-", str(total if ok else 0), kills, dupes,
                 str(a["lost_events"]), str(a["closed_for_infra"]), str(a["infra_attempts"]), str(a["not_terminal"]),
                 f"{a['decided']}/{decided[r['figure']]}", "yes" if ok else "no", str(r["wall_seconds"])]  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


@click.command()
@click.option("--quick", is_flag=True, help=f"Small counts: {QUICK}.")
@click.option("--kills", type=click.IntRange(1, 10_000), default=None, help=f"Wrapper SIGKILLs [{FULL['kills']}].")
@click.option("--decided", type=click.IntRange(1, 50), default=None, help="Experiments the kill figure decides.")
@click.option("--fault-decided", type=click.IntRange(1, 50), default=None, help="Experiments the fault figure decides.")
@click.option("--fault-rate", type=click.FloatRange(0, 1), default=0.2, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--timeout", type=float, default=None, help="Seconds each figure may take.")
@click.option("--only", type=click.Choice(["faults", "kills"]), default=None, help="Run one figure.")
@click.option("--keep", is_flag=True, help="Keep the scratch folder (forge data, job logs).")
def main(quick, kills, decided, fault_decided, fault_rate, seed, timeout, only, keep) -> None:
    """Run the figures and write bench/results/<timestamp>.{json,md}."""
    p = {**(QUICK if quick else FULL)}
    p.update(
        {k: v for k, v in {"kills": kills, "decided": decided, "fault_decided": fault_decided, "timeout": timeout}.items() if v}
    )
    scratch = Path(tempfile.mkdtemp(prefix="senpai-bench-"))
    jobs = {
        "faults": lambda: fault_run(
            scratch / "faults", decided=p["fault_decided"], rate=fault_rate, seed=seed, timeout=p["timeout"]
        ),
        "kills": lambda: kill_run(
            scratch / "kills", kills=p["kills"], decided=p["decided"], seed=seed, timeout=p["timeout"], max_gap=p["max_gap"]
        ),
    }
    chosen = [only] if only else list(jobs)
    start = time.monotonic()
    try:
        with ThreadPoolExecutor(len(chosen)) as pool:
            results = [f.result() for f in [pool.submit(jobs[name]) for name in chosen]]
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)
    targets = {"faults": p["fault_decided"], "kills": p["decided"]}
    md = table(results, targets)
    stamp = utc_stamp()
    meta = {
        "params": {**p, "fault_rate": fault_rate, "seed": seed, "quick": quick},
        "wall_seconds": round(time.monotonic() - start, 1),
    }
    written = write_result(stamp, {**meta, "results": results}, f"# bench {stamp}\n\n{md}")
    click.echo(md + f"\nresults: {written.with_suffix('.json')}" + (f"\nscratch: {scratch}" if keep else ""))


if __name__ == "__main__":
    main()
