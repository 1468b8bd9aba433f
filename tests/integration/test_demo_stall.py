"""The real `senpai demo` gives up when nothing progresses for `--stall-timeout` seconds: exit 4,
one sentence on stderr that names the option to raise, and no job left running."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from senpai.fleet.supervise import STATUS


def test_a_demo_that_stalls_exits_4_naming_the_option_to_raise(tmp_path: Path) -> None:
    """A stall time shorter than one tick: the first tick that changes nothing (an advisor or
    student job running a second) is a stall."""
    out = tmp_path / "out"
    args = [sys.executable, "-m", "senpai", "demo", "--stall-timeout", "0.01", "--out", str(out)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env={**os.environ, "WANDB_SILENT": "true"})
    assert proc.returncode == 4, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and re.fullmatch(
        r"error: only \d of 6 experiments were decided: nothing progressed for 0\.01 s \(no new job, seed step, record or "
        r"decision\), so the demo gave up; if the machine is only busy or slow, run it again with a longer --stall-timeout "
        r"\(say 300\)",
        errors[0],
    ), errors
    assert "wall_seconds:" in proc.stdout  # the leaderboard and the paths still come first
    jobs = [job for job in (out / "jobs").iterdir() if not job.name.startswith(".")]  # not a staged or deleted one
    phases = {job.name: json.loads((job / STATUS).read_text())["phase"] for job in jobs}
    assert not {name for name, phase in phases.items() if phase in ("pending", "running")}, phases  # stopped and removed
