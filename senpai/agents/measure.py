"""Run a target command and read `key: value` lines from what it prints (autoresearch style)."""

import math
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

LINE = re.compile(r"^([A-Za-z0-9_./-]+):\s*(\S+)\s*$", re.MULTILINE)


@dataclass
class Outcome:
    returncode: int | None  # None: killed at the timeout
    seconds: float
    output: str  # combined stdout + stderr

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.output.splitlines()[-lines:])

    def value(self, key: str) -> float | None:
        """Last `key: value` line printed, as float (nan/inf kept); None if absent or not a number."""
        found = [v for k, v in LINE.findall(self.output) if k == key]
        if not found:
            return None
        try:
            return float(found[-1])
        except ValueError:
            return None


def run_command(command: str, cwd: Path, env: dict[str, str], timeout: float, log: Path | None = None) -> Outcome:
    """Run shell `command` in `cwd` with `env` over os.environ; kill it after `timeout` seconds."""
    start = time.monotonic()
    # `python` in a target command is the interpreter running senpai (it has wandb); PATH wins otherwise
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    try:
        proc = subprocess.run(
            command,
            shell=True,
            cwd=cwd,
            env={**os.environ, "PATH": path, **env},
            timeout=timeout,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        out = Outcome(proc.returncode, time.monotonic() - start, proc.stdout)
    except subprocess.TimeoutExpired as e:
        text = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        out = Outcome(None, time.monotonic() - start, text)
    if log is not None:
        log.write_text(out.output)
    return out


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
