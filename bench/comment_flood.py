"""A comment flood on one steering issue: what the wrapper's re-read of it costs (issue 24, finding 7).

A read-only user (author_association NONE) floods one `senpai:steer` issue with `--comments`
comments of `--size` bytes each, written straight into the local forge's SQLite store (over HTTP
the forge's write limits refuse such a flood: `senpai forge serve --writes-per-minute`, `--max-comments`).
Then the wrapper's observe step (`Wrapper._observe`, what a tick asks the forge), in a process of
its own (this script with `--measure`), reads everything once, the outsider posts one more comment,
and the wrapper reads again. Per step: seconds, REST requests (charged, and 304s apart) and the
process's resident memory (VmRSS) after it, its peak (VmHWM) over all of it, and the size of the
ledger snapshot the wrapper leaves its jobs.

    python bench/comment_flood.py                       # 3,000 comments of 60 kB (about 3 minutes)
    python bench/comment_flood.py --comments 300        # a quick look

Prints one JSON object and writes nothing else.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]
for key, value in {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}.items():
    os.environ.setdefault(key, value)

from forge_seed import STORE_FILE, peak_rss_mib, serve, stop  # noqa: E402

OUTSIDER = "mallory"


def _rss_mib() -> float | None:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def _one_more(data: str, repo: str, issue: int) -> None:
    """One more outsider comment, straight into the store (the thread is past the forge's comment cap)."""
    from senpai.forge.localforge.store import Store

    store = Store(Path(data) / STORE_FILE)
    try:
        owner, name = repo.split("/")
        store.create_comment(store.issue(store.repo(owner, name)["id"], issue), OUTSIDER, "one more")
    finally:
        store.close()


def _measure(config: str, issue: int, data: str) -> dict:
    """The wrapper's side, in this process: a first read, one more outsider comment, a re-read."""
    from senpai.cli.wrapper import build_wrapper
    from senpai.config.harness import load_harness
    from senpai.ledger.table import SNAPSHOT_FILE

    w = build_wrapper(config)

    def step(fn) -> dict:
        calls, free, start = w.forge.calls, w.forge.not_modified, time.perf_counter()
        fn()
        free = w.forge.not_modified - free
        return {
            "seconds": round(time.perf_counter() - start, 2),
            "charged": w.forge.calls - calls - free,
            "not_modified": free,
            "rss_mib": _rss_mib(),
        }

    try:
        before = _rss_mib()
        first = step(lambda: w._observe(False))
        _one_more(data, load_harness(config).forge.repo, issue)
        time.sleep(2.5)  # past the ledger reader's SETTLE: the re-read is the ordinary one
        again = step(lambda: w._observe(False))
    finally:
        w.store.close()
    snapshot = Path(load_harness(config).state_dir) / SNAPSHOT_FILE  # what the wrapper leaves its jobs
    size = round(snapshot.stat().st_size / 1024**2, 1) if snapshot.exists() else None
    return {"rss_before_mib": before, "first_read": first, "re_read": again, "peak_rss_mib": peak_rss_mib(), "snapshot_mib": size}


@click.command()
@click.option("--comments", type=click.IntRange(1, 100_000), default=3000, show_default=True)
@click.option("--size", type=click.IntRange(1, 65_536), default=60_000, show_default=True, help="Bytes of each comment.")
@click.option("--measure", nargs=3, hidden=True, help="CONFIG ISSUE DATA: the wrapper's side (internal).")
def main(comments: int, size: int, measure: tuple[str, str, str] | None) -> None:
    if measure:
        print(json.dumps(_measure(measure[0], int(measure[1]), measure[2])))
        return
    from research import make_program

    from senpai.cli.wiring import make_forge
    from senpai.config.harness import load_harness
    from senpai.forge.localforge.store import Store
    from senpai.ledger.labels import STEER

    with tempfile.TemporaryDirectory(prefix="senpai-flood-") as tmp_name:
        tmp = Path(tmp_name)
        proc, url = serve(tmp / "forge")
        try:
            config = make_program(url, tmp, "flood")
            bot = make_forge(load_harness(config))
            issue = bot.create_issue("steering", "Steer here.", [STEER]).number
            store = Store(tmp / "forge" / STORE_FILE)  # the forge's own file; it serves on, in its process
            try:
                store.add_token(OUTSIDER, "read")
                owner, name = load_harness(config).forge.repo.split("/")
                row = store.issue(store.repo(owner, name)["id"], issue)
                body = ("flood " * (size // 6 + 1))[:size]
                started = time.perf_counter()
                for _ in range(comments):
                    store.create_comment(row, OUTSIDER, body)
                seeded = round(time.perf_counter() - started, 1)
            finally:
                store.close()
            cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", str(config), str(issue), str(tmp / "forge")]
            env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))}  # the tree under test
            out = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if out.returncode != 0:
                raise click.ClickException(out.stderr[-3000:])
            result = {"comments": comments, "size": size, "seed_seconds": seeded, **json.loads(out.stdout.splitlines()[-1])}
            result["forge_peak_rss_mib"] = peak_rss_mib(proc.pid)
        finally:
            stop(proc)
    click.echo(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
