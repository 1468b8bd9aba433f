"""A base that does not train: its measurement (the measured start) failed, so no hypothesis on it
can be judged, and every experiment opened on it would fail the same way.

The search advisor closes such a measurement as the base's failure, never a hypothesis's, and opens
one issue for humans keyed by the measurement's PR (`issue_key`, through `escalation.open_issue`).
While that issue is open the base is blocked (`blocking`): nothing new is opened on it. It ends
when the base moves (a new commit is a new base: measured afresh) or when a human closes the issue
(`resolved`: the same base is measured again, on a fresh branch). "Failed" is read from senpai's
own evidence record for the head the measurement was decided at, never from PR text.

A measurement whose job cannot start training (the train command's interpreter does not run:
`student_steps.TrainPythonFailed`, exit 3) posts no evidence: the wrapper relaunches it, then blocks
it with one issue for humans. While it is blocked the base is held too (`held`): no idle student is
woken to open work that would fail the same way.
"""

from senpai.forge.base import Issue
from senpai.ledger.escalation import escalated, escalation_id
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState


def issue_key(pr: int) -> str:
    """The escalation key of the humans' issue about the failed measurement #`pr`."""
    return f"base-fails:pr{pr}"


def measurements(exps: list[Experiment], base_sha: str) -> list[Experiment]:
    """The experiments that measure the base `base_sha` itself (`Hypothesis.measures_base`), by PR."""
    out = [e for e in exps if e.hypothesis and e.hypothesis.measures_base and e.hypothesis.baseline.commit == base_sha]
    return sorted(out, key=lambda e: e.pr)


def failed(e: Experiment) -> bool:
    """True if `e` was closed and senpai's evidence for the head it was closed at says `failed`."""
    ev = e.evidence_for(e.head)
    return e.state == ExperimentState.CLOSED and ev is not None and ev.outcome == "failed"


def _issues(exps: list[Experiment], base_sha: str, issues: list[Issue], bot: str, state: str) -> frozenset[int]:
    """PRs of the failed measurements of `base_sha` whose issue (written by `bot`) is in `state`."""
    ids = escalated([i for i in issues if i.state == state], bot)
    return frozenset(e.pr for e in measurements(exps, base_sha) if failed(e) and escalation_id(issue_key(e.pr)) in ids)


def resolved(exps: list[Experiment], base_sha: str, issues: list[Issue], bot: str) -> frozenset[int]:
    """PRs of the failed measurements of `base_sha` whose humans' issue is closed: a human says the
    base trains now, so they no longer count as measurements (`baseline.measuring_base`)."""
    return _issues(exps, base_sha, issues, bot, "closed")


def blocking(exps: list[Experiment], base_sha: str, issues: list[Issue], bot: str) -> Experiment | None:
    """The failed measurement that blocks the base `base_sha`: its newest measurement, if that one
    failed and its humans' issue (by `bot`, among `issues`) is still open; None if the base is not
    blocked. `issues`: the bot's issues of any state (GitHub REST: GET .../issues?state=all)."""
    ms = measurements(exps, base_sha)
    if not ms or not failed(ms[-1]):
        return None
    return ms[-1] if ms[-1].pr in _issues(exps, base_sha, issues, bot, "open") else None


def held(exps: list[Experiment], base_sha: str) -> Experiment | None:
    """The newest measurement of the base `base_sha` if it is blocked for humans (its job failed on
    senpai's side past its relaunches: escalated with one issue); None otherwise. Until a human
    closes it, nothing new is opened on the base (`policy.idle_events`)."""
    ms = measurements(exps, base_sha)
    return ms[-1] if ms and ms[-1].state == ExperimentState.BLOCKED else None
