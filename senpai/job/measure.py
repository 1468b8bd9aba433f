"""Run a target command and read the values it prints (autoresearch style).

A printed value is a `key: value` line; failing that, each `name: value` or `name=value` inside a
longer line (`step 300 | test loss: 2.27` gives `test_loss` 2.27, and `loss` too: a name of two
words is also kept by its last word), or each number of a line that is one JSON object
(`{"val_auc": 0.91}`). Names are spelled as `senpai init` spells them (`scaffold._printed`):
runs of other characters than `A-Za-z0-9_./-` become `_`.

The output streams to the log file as it comes, capped on disk (its head and tail:
`senpai.fleet.logcap`); memory holds only a bounded tail (TAIL_BYTES) and
the last value of each key (at most MAX_KEYS keys, lines up to MAX_LINE bytes), so a command that
prints gigabytes costs the job no more than a few MB. The command runs behind its wall
(`senpai.fleet.wall`), gets the allow-listed environment (`senpai.job.environ`) plus what the
caller passes, runs in its own session, and every process
it started (setsid daemons included, found by their `ENV_RUN` tag, or as descendants of this
process, their orphans' reaper, if they also cleared their environment) is stopped when it ends.
"""

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from senpai import phases, trees
from senpai.fleet.disk import full_volume
from senpai.fleet.logcap import CappedLog
from senpai.fleet.procs import ENV_RUN, become_subreaper, descendants, kill_new_descendants, kill_tagged
from senpai.fleet.wall import Wall
from senpai.job.environ import allowed_env

# Possessive names and numbers (`++`, `*+`): what follows a name is never a name character, and what
# follows a shortened number is a digit, `.` or `e`, which the number's end refuses; so giving some
# back can never make a match. Without them each unmatched line backtracked through every character:
# a 1 KiB line of noise cost 0.4 ms (output streamed at 3 MiB/s), and `a=<4,000 digits>x` 1-3 s.
LINE = re.compile(rb"^([A-Za-z0-9_./-]++):[ \t]*(\S+)\s*$")
# `name: value` or `name=value` inside a line: a name of one or two words, a number ending there
NUMBER = rb"[-+]?(?:\d++(?:\.\d*+)?|\.\d++)(?:[eE][-+]?\d++)?|[-+]?(?:nan|inf)"
PAIR = re.compile(
    rb"(?<![A-Za-z0-9_./-])([A-Za-z][A-Za-z0-9_./-]*+(?: [A-Za-z][A-Za-z0-9_./-]*+)?)[ \t]*[:=][ \t]*("
    + NUMBER
    + rb")(?![A-Za-z0-9_.])",
    re.IGNORECASE,
)
UNNAMED = re.compile(r"[^A-Za-z0-9_./-]+")  # what `senpai init` turns into `_` in a printed name
MAX_PAIRS = 64  # values read from one line
TAIL_BYTES = 256 * 1024
MAX_LINE = 4096  # a longer line is logged, never parsed
MAX_KEYS = 10_000  # the least recently printed key is forgotten past this
VOLUME_ENV = ("WANDB_DIR", "TMPDIR", "SENPAI_ARTIFACT_DIR")  # folders a command's env tells it to write to
GRACE_SECONDS = 3.0  # between SIGTERM and SIGKILL of what the command left behind
CHUNK = 64 * 1024


@dataclass
class Outcome:
    returncode: int | None  # None: killed at the timeout
    seconds: float
    output: str  # the last TAIL_BYTES of combined stdout + stderr
    values: dict[str, str] = field(default_factory=dict)  # last raw value printed of each key (see the module)

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.output.splitlines()[-lines:])

    def value(self, key: str) -> float | None:
        """Last value printed of `key` (see the module), as float (nan/inf kept); None if absent or not a number."""
        raw = self.values.get(key)
        if raw is None:
            return None
        try:
            return float(raw)
        except ValueError:
            return None


class _Reader:
    """Copies a pipe to a log file, keeping a bounded tail and the values printed (see the module)."""

    def __init__(self, pipe, log) -> None:
        self.pipe, self.log = pipe, log
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.partial = b""
        self.values: dict[str, str] = {}

    def run(self) -> None:
        while chunk := os.read(self.pipe.fileno(), CHUNK):
            self._write(chunk)
            self._keep(chunk)
            lines = (self.partial + chunk).split(b"\n")
            self.partial = lines.pop()[: MAX_LINE + 1]
            for line in lines:
                self._parse(line)
        self._parse(self.partial)

    def _write(self, chunk: bytes) -> None:
        if self.log is None:
            return
        try:
            self.log.write(chunk)
        except OSError as e:  # a full disk stops the log, never the command (it would block on the pipe)
            self.log = None
            self._keep(f"\n[senpai] log file write failed, log truncated: {e}\n".encode())

    def _keep(self, chunk: bytes) -> None:
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size - len(self.tail[0]) >= TAIL_BYTES:
            self.tail_size -= len(self.tail.popleft())

    def _parse(self, line: bytes) -> None:
        if len(line) > MAX_LINE or (b":" not in line and b"=" not in line):  # no value without a separator
            return
        if m := LINE.match(line):
            self._set(m[1].decode(), m[2].decode(errors="replace"))
            return
        numbers = _json(line)
        for key, value in (_pairs(line) if numbers is None else numbers)[:MAX_PAIRS]:
            self._set(key, value)

    def _set(self, key: str, value: str) -> None:
        self.values.pop(key, None)
        self.values[key] = value
        if len(self.values) > MAX_KEYS:
            del self.values[next(iter(self.values))]

    def text(self) -> str:
        return b"".join(self.tail)[-TAIL_BYTES:].decode("utf-8", "replace")


def _pairs(line: bytes) -> list[tuple[str, str]]:
    """(key, raw number) of each `name: value` / `name=value` in `line`; a two-word name also by its last word."""
    out = []
    for m in PAIR.finditer(line):
        name = m[1].decode()
        out.append((UNNAMED.sub("_", name), m[2].decode()))
        if " " in name:
            out.append((name.rsplit(" ", 1)[1], m[2].decode()))
    return out


def _json(line: bytes) -> list[tuple[str, str]] | None:
    """(key, number) of each top-level number of `line` if it is one JSON object (MAX_LINE bounds the
    parse), else None. Booleans are not numbers here, and nothing inside a string is read: a JSON
    object with no number gives [], not the `name=value` pairs of its strings."""
    text = line.strip()
    if not (text.startswith(b"{") and text.endswith(b"}")):
        return None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    numbers = ((k, v) for k, v in obj.items() if isinstance(v, int | float) and not isinstance(v, bool))
    return [(UNNAMED.sub("_", k), repr(float(v)) if isinstance(v, float) else str(v)) for k, v in numbers]


def clear(path: Path) -> Path:
    """Remove whatever is at `path` (a file, a symlink, a FIFO, a directory tree), so that opening it
    for writing creates a new regular file: where a target command ran, it may have planted a FIFO
    (an open for writing blocks for ever), a symlink (the write lands elsewhere) or a directory."""
    if path.exists() or path.is_symlink():
        trees.remove(path)
    return path


def command_path() -> str:
    """The PATH a target command runs with: `python` in it is the interpreter running senpai (it has
    wandb); os.environ's PATH wins otherwise."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def run_command(
    command: str,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    log: Path | None = None,
    drop: tuple[str, ...] = (),
    *,
    wall: Wall,
) -> Outcome:
    """Run shell `command` in `cwd` behind `wall` (`senpai.fleet.wall`: what it may read and write,
    no way into senpai's processes) with `env` over the allow-listed os.environ; kill it (and all
    it started) after `timeout` seconds. The output goes to `log` if given, capped (`CappedLog`). Inherited
    variables whose names start with a prefix in `drop` are left out (the verifier drops
    `PYTHON*` and `SENPAI_*`: PYTHONPATH, the harness config's path...). The command's own run is
    phase `command` (`senpai.phases`), stopping what it left behind phase `command cleanup`. A wall
    that cannot be built makes the command exit 126 with a `[senpai-wall]` line in its output.
    Raises DiskFull (senpai's failure, not the command's) if the command failed, or was killed at
    the timeout, and a volume it writes to is full (`_volumes`, `senpai.fleet.disk.full_volume`)."""
    start = time.monotonic()
    path = command_path()
    tag = uuid.uuid4().hex
    inherited = {k: v for k, v in allowed_env(os.environ).items() if not (drop and k.startswith(drop))}
    full_env = {**inherited, "PATH": path, **env, ENV_RUN: tag}
    become_subreaper()
    before = descendants()
    with CappedLog.create(clear(log)) if log is not None else open(os.devnull, "wb") as sink:
        phases.mark("command")
        with phases.phase("command"):
            proc = subprocess.Popen(
                wall.argv(["/bin/sh", "-c", command]), cwd=cwd, env=full_env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            reader = _Reader(proc.stdout, sink)
            thread = threading.Thread(target=reader.run, daemon=True)
            thread.start()
            try:
                returncode: int | None = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                returncode = None
        with phases.phase("command cleanup"):
            kill_tagged(ENV_RUN, tag, GRACE_SECONDS)  # leftovers, and the command itself at the timeout
            _killpg(proc.pid)  # anything that dropped its tag but stayed in the session's group
            proc.wait()
            # one that also cleared its environment and left the group: reparented to us, as our reaper
            kill_new_descendants(before, GRACE_SECONDS)
            thread.join(timeout=GRACE_SECONDS)  # a stranger that inherited the pipe must not hold us
            proc.stdout.close()
    if returncode != 0 and (full := full_volume(_volumes(cwd, env, log), f"`{command[:80]}` failed on it")):
        raise full
    return Outcome(returncode, time.monotonic() - start, reader.text(), dict(reader.values))


def _volumes(cwd: Path, env: dict[str, str], log: Path | None) -> list[Path]:
    """Where a command writes as senpai runs it: its cwd, its log's folder, and the folders its env names."""
    named = [Path(env[k]) for k in VOLUME_ENV if env.get(k)]
    return [cwd, *([log.parent] if log is not None else []), *named]


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
