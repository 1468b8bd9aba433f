"""Log stream: a train command that prints hundreds of MiB, through the train step's `run_command`.

The command prints `--mb` MiB of 1 KiB lines of noise, then `acc: 0.75`; then a quarter of that of a
training log's lines (six `name=value` pairs each), and of hostile lines (long numbers the parser
must refuse: the shape that once backtracked for seconds a line). `run_command` streams each behind the
wall into a capped log (its head and tail, `senpai.fleet.logcap`) and keeps a bounded tail in memory
(`senpai.job.measure.TAIL_BYTES`). Measured (tests/log_flood.py, the child the test also runs at
100 MiB): the child interpreter's peak RSS (VmHWM, MiB), the log's size on disk, the bytes of
output kept, the wall seconds and MiB streamed a second, and whether the metric printed after the
noise was still read. Before the stream, `run_command` held all of it: more than 2 x `--mb` MiB.

    python bench/log_stream.py              # 400 MiB
    python bench/log_stream.py --mb 100     # what `make test` streams

Writes bench/results/logstream-<UTC>.{json,md} and prints the table.
"""

import sys
import tempfile
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from log_flood import flood  # noqa: E402
from record import utc_stamp, write_result  # noqa: E402  (bench/, beside this script)

from senpai.fleet.logcap import HEAD_BYTES, TAIL_BYTES  # noqa: E402
from senpai.job.measure import TAIL_BYTES as KEPT_BYTES  # noqa: E402

LINE_NAMES = {
    "noise": "1 KiB lines, no value",
    "log": "a training log's lines, 6 values each",
    "hostile": "4 numbers refused a line",
}


@click.command()
@click.option("--mb", type=click.IntRange(1, 4096), default=400, show_default=True, help="MiB of noise printed.")
def main(mb: int) -> None:
    sizes = {"noise": mb, "log": max(1, mb // 4), "hostile": max(1, mb // 4)}
    runs = {}
    for kind, size in sizes.items():
        with tempfile.TemporaryDirectory(prefix="senpai-logstream-") as scratch:
            runs[kind] = flood(Path(scratch), size, kind)
        click.echo(f"{kind}: {size} MiB in {runs[kind]['seconds']:.1f} s", err=True)
    cap = HEAD_BYTES + 2 * TAIL_BYTES
    rows = [
        ("MiB printed", lambda k, r: str(sizes[k])),
        (
            "metric read after the flood",
            lambda k, r: "yes" if r["rc"] == 0 and r["acc"] == 0.75 else f"no (rc {r['rc']}, acc {r['acc']})",
        ),
        ("peak RSS of the measuring process, MiB", lambda k, r: f"{r['peak_mb']:.1f} (before the stream: > {2 * sizes[k]})"),
        ("log on disk, bytes", lambda k, r: f"{r['log_bytes']:,} (cap {cap:,})"),
        ("output kept in memory, bytes", lambda k, r: f"{r['tail']:,} (at most {KEPT_BYTES:,})"),
        ("wall s", lambda k, r: f"{r['seconds']:.1f}"),
        ("MiB streamed a second", lambda k, r: f"{sizes[k] / r['seconds']:.3g}"),
    ]
    head = "| log stream | " + " | ".join(f"{k}: {LINE_NAMES[k]}" for k in sizes) + " |\n|---|" + "---|" * len(sizes) + "\n"
    md = head + "".join(f"| {name} | " + " | ".join(cell(k, runs[k]) for k in sizes) + " |\n" for name, cell in rows)
    write_result(f"logstream-{utc_stamp()}", {"sizes": sizes, "runs": runs}, md)
    click.echo(md)


if __name__ == "__main__":
    main()
