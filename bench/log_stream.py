"""Log stream: a train command that prints hundreds of MiB, through the train step's `run_command`.

The command prints `--mb` MiB of 1 KiB lines, then `acc: 0.75`; `run_command` streams it behind the
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


@click.command()
@click.option("--mb", type=click.IntRange(1, 4096), default=400, show_default=True, help="MiB the command prints.")
def main(mb: int) -> None:
    with tempfile.TemporaryDirectory(prefix="senpai-logstream-") as scratch:
        r = flood(Path(scratch), mb)
    cap = HEAD_BYTES + 2 * TAIL_BYTES
    rows = [
        ("MiB printed", str(mb)),
        ("metric read after the noise", "yes" if r["rc"] == 0 and r["acc"] == 0.75 else f"no (rc {r['rc']}, acc {r['acc']})"),
        ("peak RSS of the measuring process, MiB", f"{r['peak_mb']:.1f} (before the stream: > {2 * mb})"),
        ("log on disk, bytes", f"{r['log_bytes']:,} (cap {cap:,})"),
        ("output kept in memory, bytes", f"{r['tail']:,} (at most {KEPT_BYTES:,})"),
        ("wall s", f"{r['seconds']:.1f}"),
        ("MiB streamed a second", f"{mb / r['seconds']:.1f}"),
    ]
    md = "| log stream | value |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
    write_result(f"logstream-{utc_stamp()}", {"mb": mb, **r}, md)
    click.echo(md)


if __name__ == "__main__":
    main()
