"""What `senpai wrapper run` prints on stdout: the ticks that did something, and a summary line
when nothing did for a while, so an idle wrapper (a tick a second) does not print a line a second.

A tick did something when it dispatched an action (a launch, a label or comment, a deleted job),
when an action failed other than as it failed on the tick before, or when an experiment's state
changed since the tick before (a decision, a label a job or a human changed, a new PR): its line is
`HH:MM:SS tick N: calls=.. jobs=.. decided=.. [state=count ...]`, then one indented line per action
and per change, and its new errors on stderr. The first tick is always printed. An error repeated
tick after tick (a senpai.yaml missing at the base) is printed once and then counted. After
SUMMARY_SECONDS without a line, one summary line says how many ticks passed and what they cost:
`HH:MM:SS 60 quiet ticks in 1 min: calls=120 (120 free) jobs=2 decided=3 [review=1 wip=2]`, with
`errors=N (repeated)` when some repeated.
"""

import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime

import click

from senpai.ledger.comments import duration
from senpai.ledger.labels import ExperimentState
from senpai.wrapper.loop import TickReport

SUMMARY_SECONDS = 60.0  # seconds without a printed line before a summary line


class TickLog:
    """`on_tick` of `Wrapper.run`: prints the ticks that did something; unless `quiet`, a summary
    line once `every` seconds (of `clock`, monotonic) passed since the last printed line."""

    def __init__(self, quiet: bool = False, every: float = SUMMARY_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet, self.every, self.clock = quiet, every, clock
        self._states: dict[int, ExperimentState] | None = None  # None until the first tick
        self._since = clock()  # when the last line was printed
        self._errors: set[str] = set()  # the tick before's
        self._ticks = self._calls = self._free = self._repeated = 0  # since the last printed line

    def __call__(self, r: TickReport) -> None:
        states = {e.pr: e.state for e in r.exps}
        changes = [
            f"#{pr} {self._states[pr] if pr in self._states else 'new'} -> {state}"
            for pr, state in sorted(states.items())
            if self._states is not None and self._states.get(pr) != state
        ]
        errors = [e for e in r.errors if e not in self._errors]
        first, self._states, self._errors = self._states is None, states, set(r.errors)
        self._ticks, self._calls, self._free = self._ticks + 1, self._calls + r.calls, self._free + r.free
        self._repeated += len(r.errors) - len(errors)
        now = self.clock()
        if first or r.actions or errors or changes:
            click.echo(f"{_hhmmss()} tick {r.tick}: calls={r.calls} jobs={r.live_jobs} decided={r.decided} [{_counts(r)}]")
            for line in [*r.actions, *changes]:
                click.echo(f"    {line}")
            for line in errors:
                click.echo(f"    error: {line}", err=True)
        elif self.quiet or now - self._since < self.every:
            return
        else:
            click.echo(
                f"{_hhmmss()} {self._ticks} quiet ticks in {duration(now - self._since)}: calls={self._calls} "
                f"({self._free} free) jobs={r.live_jobs} decided={r.decided} [{_counts(r)}]"
                + (f" errors={self._repeated} (repeated)" if self._repeated else "")
            )
        self._since, self._ticks, self._calls, self._free, self._repeated = now, 0, 0, 0, 0


def _counts(r: TickReport) -> str:
    """Experiments by state, `review=1 wip=2`, or `no experiments`."""
    return " ".join(f"{k}={v}" for k, v in sorted(Counter(e.state for e in r.exps).items())) or "no experiments"


def _hhmmss() -> str:
    return datetime.now().strftime("%H:%M:%S")
