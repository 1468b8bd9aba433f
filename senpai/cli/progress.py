"""Progress on stdout while the demo's wrapper ticks (`senpai wrapper run` prints through
`senpai.cli.ticklog`).

`OutcomePrinter` (`senpai demo`): a line per experiment as its outcome changes, e.g.
`#3 merged: holdout 0.950 vs 0.803, +0.147 > floor 0.026` or `#4 closed: <the advisor's reason>`.
`DemoWatch` (`senpai demo`): those lines, a heartbeat while jobs run and nothing else was said
(`running: #3 verifying, seed 2 of 3, 41 s; #4 training (bo), 12 s`), and the stall detector that
tells the demo to give up when nothing has progressed for a while.
"""

import os
import re
from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from pathlib import Path

import click

from senpai.config.roles import Role
from senpai.config.target import Holdout
from senpai.errors import TransientError
from senpai.fleet.base import Fleet, JobStatus
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState
from senpai.wrapper.loop import TickReport

MAX_TEXT = 120  # characters of forge text (a hypothesis, a reason) one line shows
HEARTBEAT_SECONDS = 30.0  # the longest the demo stays silent while a job runs
Clock = Callable[[], datetime]  # now, aware (UTC)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class OutcomePrinter:
    """Prints `HH:MM:SS #<pr> <what happened>` once per experiment state it has not printed yet
    (proposed, trained, verifying, merged, closed, changes asked, blocked), with the decided count
    out of `target` after each decision; a state with nothing to say yet (a merge whose decision is
    not posted yet) is looked at again on the next tick. Action errors go to stderr."""

    def __init__(self, target: int, clock: Clock = _utcnow) -> None:
        self.target, self.clock = target, clock
        self.printed_at: datetime | None = None  # when the last line was printed
        self._seen: dict[int, ExperimentState] = {}

    def __call__(self, r: TickReport) -> None:
        at = self.clock()
        now = at.astimezone().strftime("%H:%M:%S")
        for e in r.exps:
            if self._seen.get(e.pr) == e.state:
                continue
            if line := outcome(e):
                self._seen[e.pr] = e.state
                decided = e.state in (ExperimentState.MERGED, ExperimentState.CLOSED)
                click.echo(f"{now} #{e.pr} {line}" + (f"  [{r.decided} of {self.target} decided]" if decided else ""))
                self.printed_at = at
        for line in r.errors:
            click.echo(f"{now} error: {line}", err=True)
            self.printed_at = at


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


_STEP = re.compile(r"(baseline|candidate)-(\d{1,9})-(train|score)\.log")  # `senpai.verifier.evaluate`'s step logs


def seed_steps(work: Path) -> set[tuple[str, int, str]]:
    """The verifier's train and score steps begun in a local verifier job's `work` folder, as
    (side, seed, "train" or "score"): each step creates its log as it starts,
    `<side>/artifacts/<side>-<seed>-train.log` and `score/<side>-<seed>-score.log` (the layout of
    `senpai.verifier.steps`). A folder that cannot be listed (not made yet) counts as none.
    The side's code may write there too: the names only feed the heartbeat and the stall detector,
    within its job's deadline."""
    found: set[tuple[str, int, str]] = set()
    for folder in (work / "baseline" / "artifacts", work / "candidate" / "artifacts", work / "score"):
        try:
            with os.scandir(folder) as entries:
                found.update((m[1], int(m[2]), m[3]) for e in entries if (m := _STEP.fullmatch(e.name)))
        except OSError:
            continue
    return found


def seed_progress(steps: set[tuple[str, int, str]], holdout: Holdout) -> str | None:
    """`seed 2 of 3` for the newest seed a train step began on (its place in `holdout.all_seeds()`),
    `seed 4 of 3 (up to 5)` once the sequential test added seeds; None before the first train step
    (or when every seed is reused from an earlier verification)."""
    order = holdout.all_seeds()
    begun = [order.index(seed) + 1 for _, seed, step in steps if step == "train" and seed in order]
    if not begun:
        return None
    more = f" (up to {len(order)})" if len(order) > len(holdout.seeds) else ""
    return f"seed {max(begun)} of {len(holdout.seeds)}{more}"


def describe(job: JobStatus, now: datetime, seed: str | None = None) -> str:
    """One unfinished job in words: `#3 verifying, seed 2 of 3, 41 s`, `#4 training (bo), 12 s`,
    `advisor, 3 s`, or `..., waiting to start` while it is pending. Seconds since it started."""
    match job.role:
        case Role.STUDENT:
            what = f"#{job.pr} training" + (f" ({job.student})" if job.student else "")
        case Role.VERIFIER:
            what = f"#{job.pr} verifying" + (f", {seed}" if seed else "")
        case _:
            what = "advisor" + (f" on #{job.pr}" if job.pr is not None else "")
    if job.started_at is None:
        return f"{what}, waiting to start"
    return f"{what}, {max((now - job.started_at).total_seconds(), 0):.0f} s"


class DemoWatch:
    """What `senpai demo` prints, tick by tick, and when it gives up (`__call__(report, fleet)`).

    - The outcome lines (`OutcomePrinter`).
    - A heartbeat: `HH:MM:SS running: <each unfinished job, see describe>  [2 of 6 decided]`, once
      `heartbeat` seconds passed with no line printed while a job is unfinished, so at most one
      per `heartbeat` seconds. From twice `heartbeat` seconds without progress on, it adds for how
      long, and when the demo gives up.
    - The stall detector: `stalled()` is true once nothing progressed for `stall_seconds` (None:
      never). Progress is any change of the experiments (a PR's state, head or `updated_at`: a new
      record or decision), of the fleet's jobs (one launched, started, finished or removed) or of
      a verifier's seed steps begun (`seed_steps` of `work_of(job name)`; None: not read, as on a
      fleet whose jobs have no local folder).

    `clock` gives now (aware); a fleet that cannot be listed this tick (TransientError) makes a
    tick with neither heartbeat nor progress.
    """

    def __init__(
        self,
        target: int,
        holdout: Holdout,
        work_of: Callable[[str], Path] | None = None,
        stall_seconds: float | None = None,
        heartbeat: float = HEARTBEAT_SECONDS,
        clock: Clock = _utcnow,
    ) -> None:
        self.outcomes = OutcomePrinter(target, clock)
        self.holdout, self.work_of, self.clock = holdout, work_of, clock
        self.stall_seconds, self.heartbeat = stall_seconds, heartbeat
        self.progressed_at = self.said_at = clock()
        self._marks: Hashable = None

    def __call__(self, r: TickReport, fleet: Fleet) -> None:
        self.outcomes(r)
        try:
            jobs = fleet.list()
        except TransientError:
            return
        now = self.clock()
        work_of = self.work_of
        steps = {j.name: seed_steps(work_of(j.name)) for j in jobs if work_of and j.role == Role.VERIFIER and not j.done}
        marks = (
            tuple((e.pr, e.state, e.head, e.updated_at) for e in r.exps),
            tuple((j.name, j.phase) for j in jobs),
            tuple(sorted((name, len(s)) for name, s in steps.items())),
        )
        if marks != self._marks:
            self._marks, self.progressed_at = marks, now
        running = sorted((j for j in jobs if not j.done), key=lambda j: (j.pr is None, j.pr or 0, j.name))
        said = max(self.said_at, self.outcomes.printed_at or self.said_at)
        if running and (now - said).total_seconds() >= self.heartbeat:
            self.said_at = now
            each = "; ".join(describe(j, now, seed_progress(steps.get(j.name, set()), self.holdout)) for j in running)
            decided = f"[{r.decided} of {self.outcomes.target} decided]"
            click.echo(f"{now.astimezone():%H:%M:%S} running: {each}{self._idle(now)}  {decided}")

    def idle_seconds(self) -> float:
        """Seconds since the last progress (or since the watch began)."""
        return (self.clock() - self.progressed_at).total_seconds()

    def stalled(self) -> bool:
        """Whether nothing progressed for `stall_seconds`."""
        return self.stall_seconds is not None and self.idle_seconds() >= self.stall_seconds

    def _idle(self, now: datetime) -> str:
        idle = (now - self.progressed_at).total_seconds()
        if idle < 2 * self.heartbeat:  # one quiet heartbeat is normal; say so from the second on
            return ""
        limit = f", gives up at {self.stall_seconds:g} s (--stall-timeout)" if self.stall_seconds is not None else ""
        return f"; nothing new for {idle:.0f} s{limit}"
