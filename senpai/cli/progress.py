"""Progress on stdout while the wrapper ticks.

`TickPrinter` (`senpai wrapper run`): a grep-able line per tick that did something, with the actions.
`OutcomePrinter` (`senpai demo`): a line per experiment as its outcome changes, e.g.
`#3 merged: holdout 0.950 vs 0.803, +0.147 > floor 0.026` or `#4 closed: <the advisor's reason>`.
"""

from datetime import datetime

import click

from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState
from senpai.wrapper.loop import TickReport

MAX_TEXT = 120  # characters of forge text (a hypothesis, a reason) one line shows


class TickPrinter:
    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet

    def __call__(self, r: TickReport) -> None:
        if self.quiet and not (r.actions or r.errors):
            return
        now = datetime.now().strftime("%H:%M:%S")
        states = {}
        for e in r.exps:
            states[e.state] = states.get(e.state, 0) + 1
        summary = " ".join(f"{k}={v}" for k, v in sorted(states.items())) or "no experiments"
        click.echo(f"{now} tick {r.tick}: calls={r.calls} jobs={r.live_jobs} decided={r.decided} [{summary}]")
        for line in r.actions:
            click.echo(f"    {line}")
        for line in r.errors:
            click.echo(f"    error: {line}", err=True)


class OutcomePrinter:
    """Prints `HH:MM:SS #<pr> <what happened>` once per experiment state it has not printed yet
    (proposed, trained, verifying, merged, closed, changes asked, blocked), with the decided count
    out of `target` after each decision; a state with nothing to say yet (a merge whose decision is
    not posted yet) is looked at again on the next tick. Action errors go to stderr."""

    def __init__(self, target: int) -> None:
        self.target = target
        self._seen: dict[int, ExperimentState] = {}

    def __call__(self, r: TickReport) -> None:
        now = datetime.now().strftime("%H:%M:%S")
        for e in r.exps:
            if self._seen.get(e.pr) == e.state:
                continue
            if line := outcome(e):
                self._seen[e.pr] = e.state
                decided = e.state in (ExperimentState.MERGED, ExperimentState.CLOSED)
                click.echo(f"{now} #{e.pr} {line}" + (f"  [{r.decided} of {self.target} decided]" if decided else ""))
        for line in r.errors:
            click.echo(f"{now} error: {line}", err=True)


def outcome(e: Experiment) -> str | None:
    """What `e`'s state means in words, from its blocks; None for a state with nothing to say."""
    d, ev = e.decision, (e.evidence[-1] if e.evidence else None)
    match e.state:
        case ExperimentState.MERGED if d is not None and d.verdict == "merge":
            return f"merged: {_measured(d.candidate, d.baseline, d.improvement, d.noise_floor)}"
        case ExperimentState.MERGED if d is not None:
            return None  # the merge lands before its decision is posted: say it when the decision is there
        case ExperimentState.MERGED:
            return "merged (no senpai decision: merged by hand?)"
        case ExperimentState.CLOSED:
            return f"closed: {_line(d.reason) if d else 'closed without a senpai decision'}"
        case ExperimentState.CHANGES:
            return f"changes asked: {_line(d.reason) if d else ''}"
        case ExperimentState.VERIFYING:
            return "verifying on the sealed holdout"
        case ExperimentState.REVIEW if ev is not None:
            value = "no value" if ev.primary.value is None else f"{ev.primary.value:.3f}"
            return f"trained by {e.student or 'a student'} ({ev.outcome}): validation {ev.primary.name} {value}"
        case ExperimentState.BLOCKED:
            return f"blocked: {_line(e.error or 'waiting for a human')}"
        case ExperimentState.WIP if e.hypothesis is not None and not e.evidence:
            return f"proposed: {_line(e.hypothesis.hypothesis)}"
    return None


def _measured(candidate: float | None, baseline: float | None, improvement: float | None, floor: float | None) -> str:
    if candidate is None or baseline is None or improvement is None:
        return "holdout not measured"
    margin = f" > floor {floor:.3f}" if floor is not None else ""
    return f"holdout {candidate:.3f} vs {baseline:.3f}, {improvement:+.3f}{margin}"


def _line(text: str) -> str:
    """Forge text as one printable line of at most MAX_TEXT characters (no terminal escapes)."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= MAX_TEXT else flat[: MAX_TEXT - 1] + "…"
