"""Where a job's own time goes: named phases, timed once, reported as one line of its log.

A `senpai job ...` process records (`start`) and, when it ends, writes to stderr (its log):

    senpai-phases: {"role": ..., "entered": <epoch s>, "left": <epoch s>, "marks": {...},
                    "phases": {"<phase>": [wall s, cpu s, calls], ...}, "cpu_entered": <s>, "cpu": <s>}

- `entered`/`left`: wall-clock times (epoch seconds) when the job's command began and ended, so
  the fleet's own timestamps (launch, process start, process exit) can be set beside them.
- `phases`: per phase, wall seconds, CPU seconds (this process's and the children it reaped
  meanwhile: a `git` or the train command) and the number of times it ran. Phases nest; time
  spent in an inner phase counts only there (a forge read inside the ledger load is a forge read),
  so the phases never add up to more than `left - entered`.
- `marks`: the epoch second something first happened (`command`: the first user command started;
  `opened`: the first hypothesis PR opened).
- `cpu_entered`, `cpu`: this process's CPU seconds, children included, from its start to `entered`
  (the interpreter's start and the imports) and to `left`.

bench/job_start.py reads these lines to split each job's time into the user's command and the
harness overhead. Recording costs two clock reads and two getrusage calls per phase.
"""

import functools
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

PREFIX = "senpai-phases: "

_lock = threading.Lock()
_totals: dict[str, list[float]] = {}  # phase -> [wall s, cpu s, calls]
_marks: dict[str, float] = {}
_stack = threading.local()  # per thread: the open phases' [name, wall, cpu, inner wall, inner cpu]
_role: str | None = None
_entered: float | None = None
_cpu_entered = 0.0


def _cpu() -> float:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def start(role: str) -> None:
    """Begin recording this process's phases as job `role` (again from zero)."""
    global _role, _entered, _cpu_entered
    with _lock:
        _totals.clear()
        _marks.clear()
        _role, _entered, _cpu_entered = role, time.time(), _cpu()


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as phase `name` (exclusive of the phases opened inside it, on this thread)."""
    stack = _stack.__dict__.setdefault("open", [])
    frame = [name, time.perf_counter(), _cpu(), 0.0, 0.0]
    stack.append(frame)
    try:
        yield
    finally:
        stack.pop()
        wall, cpu = time.perf_counter() - frame[1], _cpu() - frame[2]
        if stack:  # the enclosing phase does not count this block again
            stack[-1][3] += wall
            stack[-1][4] += cpu
        with _lock:
            total = _totals.setdefault(name, [0.0, 0.0, 0])
            total[0] += wall - frame[3]
            total[1] += cpu - frame[4]
            total[2] += 1


def mark(name: str) -> None:
    """Note when `name` first happened (epoch seconds)."""
    with _lock:
        _marks.setdefault(name, time.time())


def timed(target: Any, label: Callable[[str], str]) -> Any:
    """`target` with each method call timed as phase `label(method name)`; anything else is passed
    through. Used on the forge and tracker adapters, whose modules stay free of timing."""
    return _Timed(target, label)


class _Timed:
    def __init__(self, target: Any, label: Callable[[str], str]) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_label", label)

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._target, attr)
        if not callable(value) or attr.startswith("_"):
            return value
        name = self._label(attr)

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            with phase(name):
                return value(*args, **kwargs)

        return call

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._target, attr, value)


def report() -> dict | None:
    """What was recorded since `start` (None if it never started)."""
    if _entered is None:
        return None
    with _lock:
        phases = {k: [round(w, 4), round(c, 4), int(n)] for k, (w, c, n) in sorted(_totals.items())}
        marks = {k: round(v, 4) for k, v in _marks.items()}
    return {"role": _role, "pid": os.getpid(), "entered": round(_entered, 4), "left": round(time.time(), 4),
            "marks": marks, "phases": phases, "cpu_entered": round(_cpu_entered, 4), "cpu": round(_cpu(), 4)}  # fmt: skip


def emit() -> None:
    """Write `report()` as one `senpai-phases:` line to stderr (nothing if recording never started)."""
    if (rec := report()) is not None:
        print(PREFIX + json.dumps(rec), file=sys.stderr, flush=True)


def parse(log_text: str) -> dict | None:
    """The last `senpai-phases:` record in a job's log, or None."""
    for line in reversed(log_text.splitlines()):
        if line.startswith(PREFIX):
            try:
                return json.loads(line[len(PREFIX) :])
            except ValueError:
                return None
    return None
