"""A PR whose head someone other than senpai keeps moving under its jobs: when to stop and say so.

Every head a student measures is one senpai pushed (its evidence names it). A head no evidence
names was pushed by someone else: senpai runs again on it (the advisor's `changes` after a moved
student job, `senpai.agents.review.head_moved`; the wrapper's next verifier after a moved verifier
job), at most HEAD_MOVES times, then blocks the PR. This is the verifier's side, for the policy.
"""

from senpai.config.time_limits import HEAD_MOVES
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState


def head_keeps_moving(e: Experiment) -> str | None:
    """Why verifying PR `e` is blocked instead of verified again, or None: its head is one no student
    measured, after HEAD_MOVES verifications of such heads (each pushed by someone other than
    senpai under a verifier, which then verified the new head), so someone keeps pushing to it."""
    measured = {ev.head for ev in e.evidence} | {r.head for r in e.reapplies}  # both pushed by senpai
    moved = {v.candidate for v in e.verifications} - measured
    if e.state != ExperimentState.VERIFYING or e.head in measured or len(moved) < HEAD_MOVES:
        return None
    return (
        f"the head keeps moving: someone other than senpai pushed to `{e.branch}` under its verifier {len(moved)} "
        f"times, and again now ({e.head[:8]}); senpai stops verifying it: stop pushing to the branch, or close the PR"
    )
