"""A train command that prints `mb` MiB of noise then its metric, run through `run_command` in a
child interpreter whose peak memory is read back: the log-stream check of
tests/integration/test_measure.py (100 MiB) and the figure of bench/log_stream.py (400 MiB)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# VmHWM is the peak RSS of this process image (ru_maxrss would carry the forking parent's over exec).
PEAK = """
import json, sys
from pathlib import Path
from senpai.job.measure import run_command
from walled import wall_around
out = run_command(sys.argv[1], Path(sys.argv[2]), {}, 600, Path(sys.argv[3]), wall=wall_around(Path(sys.argv[2])))
hwm = [line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:")]
peak_mb = int(hwm[0].split()[1]) / 1024
print(json.dumps({"peak_mb": peak_mb, "rc": out.returncode, "acc": out.value("acc"), "tail": len(out.output)}))
"""


# the lines a flood repeats, each 1 KiB with its newline: noise with no value in it; a training log's
# line with six `name=value` pairs; a hostile line of 4 numbers the parser must refuse (each a run of
# digits whose end is not a number's end: `a=111...1x`), the shape that once backtracked for seconds
LINES = {
    "noise": "'x' * 1023",
    "log": "('2026-12-07 12:00:00,123 INFO train epoch=3 step=1200 loss=0.1234 lr=0.001 grad_norm=1.25 '"
    " 'tokens_per_s=5123.5 ' + 'y' * 1023)[:1023]",
    "hostile": "' '.join(['a=' + '1' * 250 + 'x'] * 4)[:1023]",
}


def flood(folder: Path, mb: int, kind: str = "noise") -> dict:
    """Stream `mb` MiB of 1 KiB lines of `kind` (a key of LINES), then `acc: 0.75`, through
    `run_command` behind the test wall in folder `folder` (it writes `spam.py` and `train.log`
    there). Returns the child's {"peak_mb": its peak RSS (MiB), "rc", "acc": the value parsed,
    "tail": bytes of output kept} and "seconds" (wall, the child's whole life) and "log_bytes"
    (train.log's size on disk). Raises CalledProcessError if the child fails, TimeoutExpired after 600 s."""
    printer = (
        f"import sys; line = {LINES[kind]} + chr(10)\nfor i in range({mb} * 1024): sys.stdout.write(line)\nprint('acc: 0.75')"
    )
    (folder / "spam.py").write_text(printer)
    log = folder / "train.log"
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])  # the child imports `walled`
    start = time.monotonic()
    child = subprocess.run(
        [sys.executable, "-c", PEAK, f"{sys.executable} spam.py", str(folder), str(log)],
        capture_output=True, text=True, check=True, timeout=600, env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip
    return {**json.loads(child.stdout), "seconds": time.monotonic() - start, "log_bytes": log.stat().st_size}
