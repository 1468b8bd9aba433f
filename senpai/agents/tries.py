"""Steering inside an advisor turn, the same for every runtime: open what humans asked for.

A `try` event (a `/senpai try` the wrapper checked and acknowledged) is opened here, by code,
before the runtime's own turn sees its events, so a human's hypothesis always goes before any
proposal.  The hypothesis records the request (`Hypothesis.request`); the wrapper stops raising
the event once a PR carries it, and a replayed event finds the PR and does nothing.

Why the wrapper applies the command and the advisor job opens it: checking the params needs only
senpai.yaml at the base head (one cached read), so the wrapper answers at once; opening a PR needs
a clone to push the branch, which a job has and the wrapper does not.  This keeps one way to open
an experiment (`open_hypothesis`).  The hypothesis id includes the request's ref, so a human asking
again for a point proposed before gets a fresh branch.
"""

from senpai.agents.hypothesis import open_hypothesis, reported
from senpai.agents.params import read_params
from senpai.errors import TransitionError
from senpai.job.context import TurnContext
from senpai.ledger.baseline import current_baseline
from senpai.ledger.events import Event, parse_event_id
from senpai.ledger.labels import ASSIGNED


def open_requested(ctx: TurnContext, events: list[Event]) -> tuple[list[str], list[Event]]:
    """Open every `try` event's hypothesis; returns (one line per try, the other events)."""
    lines = [_open(ctx, ev) for ev in events if ev.kind == "try"]
    return lines, [ev for ev in events if ev.kind != "try"]


def _open(ctx: TurnContext, ev: Event) -> str:
    ref, student = parse_event_id(ev.id).ref, ev.student or ""
    exps = ctx.ledger.experiments()
    done = next((e for e in exps if e.hypothesis and e.hypothesis.request == ref), None)
    if done is not None:
        return f"#{done.pr}: already opened for /senpai try {ref}"
    if any(e.student == student and e.state in ASSIGNED for e in exps):
        return f"{student}: busy; /senpai try {ref} waits for the next idle student"
    baseline = current_baseline(exps, ctx.forge.branch_sha(ctx.base))
    current = baseline.params or read_params(ctx.repo.path / ctx.target.params.file)
    asked = ev.params or {}
    point = ", ".join(f"{k}={v}" for k, v in asked.items())
    t = ctx.target
    try:
        pr = open_hypothesis(
            ctx,
            student,
            hypothesis=f"setting {point} improves {t.metric.name}",
            rationale=f"asked for by @{ev.by} with `/senpai try {' '.join(f'{k}={v}' for k, v in asked.items())}`",
            plan=f"write the params into {t.params.file}, run `{t.train}`, report {reported(t.metric)}",
            params={**current, **asked},
            baseline=baseline,
            request=ref,
        )
    except TransitionError as e:
        return f"{student}: /senpai try {ref} not opened: {e}"
    return f"#{pr.number}: opened /senpai try ({point}) for {student}"
