"""The hostile-target corpus through the real loop, and what the wall costs (issue 24).

A target whose train command and evaluator run the probe of tests/hostile_target.py (it looks for
credentials in its environment, in /proc of every process and ancestor, in every folder above its
own and in the home folder; plants a trigger in senpai's SQLite; writes beside the ledger snapshot
and the base mirror; tries every token-shaped string it found on the forge, to comment and merge)
is researched by `senpai wrapper run` until `--experiments` are decided, as a non-root user (a user
namespace as uid 1000 when this runs as root). Counted, per step that ran the target's code
(student train, verifier train, score): the probes that ran, the token-shaped strings they saw,
the paths they read outside their own folders, and the hits: the bot's token found, senpai's
folders read (the score step's holdout excepted), senpai's files written, forge actions. Every
hit is a breach; the figure's verdict is `held` when all are 0.

Then the wall's own cost: the median wall-clock seconds of starting `/bin/true` as it is, and
through the wall launcher (`senpai.fleet.wall`) with the wall a student's train command gets.

    python bench/hostile.py                    # 1 experiment decided (about a minute), 30 launches
    python bench/hostile.py --experiments 2 --launches 100

Writes bench/results/hostile-<UTC>.{json,md} and prints the table.
"""

import os
import statistics
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

from forge_fixtures import TOKEN, seed_token  # noqa: E402
from hostile_target import (  # noqa: E402
    HOSTILE_TRAIN,
    as_non_root,
    given_to_score,
    hostile_files,
    probes,
    senpai_folders,
    step_kind,
)
from record import utc_stamp, write_result  # noqa: E402  (bench/, beside this script)
from research import make_program, reader  # noqa: E402

from senpai.cli.demo import EXAMPLE  # noqa: E402
from senpai.config.harness import load_harness  # noqa: E402
from senpai.forge.localforge.server import LocalForgeServer  # noqa: E402
from senpai.ledger.consistency import check  # noqa: E402

KINDS = ("student train", "verifier train", "score")
COLUMNS = {
    "probes": "probes", "tokens_seen": "token-shaped strings seen", "paths_read": "paths read outside its folders",
    "token_found": "bot token found", "senpai_read": "senpai's folders read", "wrote": "senpai's files written",
    "forge": "forge actions",
}  # fmt: skip


def _row() -> dict:
    return {"uids": set(), **dict.fromkeys(COLUMNS, 0)}


def corpus(tmp: Path, experiments: int, timeout: float) -> dict:
    """Run the hostile target until `experiments` are decided; the probes' counts and hits per step kind."""
    seed_token(tmp / "forge")
    server = LocalForgeServer(tmp / "forge").start()
    try:
        files = hostile_files((EXAMPLE / "train.py").read_text(), (EXAMPLE / "eval" / "evaluate.py").read_text())
        config = make_program(
            server.base_url, tmp, "hostile", students=1, experiments=experiments,
            mutate=lambda t: t.update(train=HOSTILE_TRAIN), files=files,
        )  # fmt: skip
        argv = [
            sys.executable,
            "-m",
            "senpai",
            "wrapper",
            "run",
            "--config",
            str(config),
            "--until-decided",
            str(experiments),
            "--quiet",
        ]
        started = time.monotonic()
        proc = subprocess.run(
            as_non_root(argv), env={**os.environ, "SENPAI_DEMO_TOKEN": TOKEN}, capture_output=True, text=True, timeout=timeout
        )
        seconds = time.monotonic() - started
        if proc.returncode != 0:
            raise click.ClickException(f"the wrapper exited {proc.returncode}: {proc.stderr[-2000:]}")
        folders = senpai_folders(config, server.data_dir)
        exps = reader(config).experiments()
        consistent = check(exps, reader(config).forge.branch_sha(load_harness(config).forge.base_branch)).ok
    finally:
        server.stop()
    rows = {k: _row() for k in KINDS}
    for p in probes(tmp / "run"):
        r = rows.setdefault(step_kind(p), _row())
        r["probes"] += 1
        r["uids"].add(p["uid"])
        r["tokens_seen"] += len(p["tokens"])
        r["paths_read"] += len(p["read"])
        r["token_found"] += sum(TOKEN in t for t in p["tokens"])
        r["senpai_read"] += sum(
            Path(path).is_relative_to(folder) and not (p["role"] == "score" and given_to_score(path, name))
            for path in p["read"] for name, folder in folders.items()
        )  # fmt: skip
        r["wrote"] += len(p["wrote"])
        r["forge"] += len(p["forge"])
    for r in rows.values():
        r["uids"] = sorted(r["uids"])
    breaches = sum(r[k] for r in rows.values() for k in ("token_found", "senpai_read", "wrote", "forge"))
    missing = [k for k in KINDS if not rows[k]["probes"]]
    return {
        "experiments": experiments, "decided": sum(e.decided for e in exps), "ledger_consistent": consistent,
        "seconds": round(seconds, 1), "steps": rows, "breaches": breaches, "steps_not_probed": missing,
        "held": breaches == 0 and not missing and consistent,
    }  # fmt: skip


def launch_cost(tmp: Path, launches: int) -> dict:
    """Median seconds to start and end /bin/true, bare and through the wall a student's train command gets."""
    from senpai.fleet.wall import landlock_abi
    from senpai.job.walls import sandbox, walls_of

    cfg = load_harness(tmp / "run" / "harness.yaml")
    own, env = sandbox(tmp / "launch")
    wall = walls_of(cfg)([tmp / "launch", *own], [])

    def median(argv: list[str]) -> float:
        times = []
        for _ in range(launches):
            t = time.perf_counter()
            subprocess.run(argv, env={**os.environ, **env}, check=True)
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    bare, walled = median(["/bin/true"]), median(wall.argv(["/bin/true"]))
    abi = landlock_abi() if wall.landlock else 0
    return {
        "launches": launches,
        "bare_ms": round(bare * 1000, 2),
        "walled_ms": round(walled * 1000, 2),
        "landlock_abi": abi,
        "uid": wall.uid,
    }


def table(r: dict) -> str:
    c, w = r["corpus"], r["launch"]
    uids = sorted({u for s in c["steps"].values() for u in s["uids"]})
    out = [
        f"Hostile corpus: {c['decided']} of {c['experiments']} experiments decided in {c['seconds']} s, as uid {uids}; "
        f"ledger consistent: {c['ledger_consistent']}; **{'held' if c['held'] else 'BREACHED'}** ({c['breaches']} hits)\n",
        "| step | " + " | ".join(COLUMNS.values()) + " |",
        "|---" * (len(COLUMNS) + 1) + "|",
    ]
    out += [f"| {kind} | " + " | ".join(str(s[k]) for k in COLUMNS) + " |" for kind, s in c["steps"].items()]
    out += [
        "",
        f"Wall launch cost (median of {w['launches']}, Landlock ABI {w['landlock_abi']}, uid {w['uid']}): "
        f"`/bin/true` {w['bare_ms']} ms bare, {w['walled_ms']} ms through the wall.",
    ]
    return "\n".join(out) + "\n"


@click.command()
@click.option("--experiments", type=click.IntRange(1, 20), default=1, show_default=True, help="Experiments decided.")
@click.option("--launches", type=click.IntRange(3, 1000), default=30, show_default=True, help="Launches per median.")
@click.option("--timeout", type=click.FloatRange(60, 7200), default=1800, show_default=True, help="Seconds for the loop.")
def main(experiments: int, launches: int, timeout: float) -> None:
    """Run the hostile corpus and the wall's launch cost; write bench/results/hostile-<UTC>.{json,md}."""
    with tempfile.TemporaryDirectory(prefix="senpai-bench-hostile-") as scratch:
        click.echo(f"hostile corpus: {experiments} experiment(s), as a non-root user", err=True)
        result = {"corpus": corpus(Path(scratch), experiments, timeout)}
        click.echo("wall launch cost", err=True)
        result["launch"] = launch_cost(Path(scratch), launches)
    md = table(result)
    write_result(f"hostile-{utc_stamp()}", result, md)
    click.echo(md)
    if not result["corpus"]["held"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
