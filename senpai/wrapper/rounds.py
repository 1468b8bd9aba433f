"""Rounds: the candidates verified against one base, and which of them goes to the merge gate.

The verifications of one base form a round. Once one of them passes, the round waits for the
others of that base still owed by PRs that were already verifying then (a verifier running or
about to run; a PR that reaches verifying later does not hold the round, so a busy fleet cannot
keep it open), at most `round_wait_seconds` after the wrapper first saw a pass, so a slow
verifier never holds the loop.
Then the advisor sees the round's best passing candidate (largest verified improvement, then the
smallest p-value, then the oldest PR) and not the others: the first verified PR no longer merges
ahead of a better one. The merge gate then re-checks the pick, correcting for the round's other
comparisons (`gate.rival_p_values`); a pick the gate closes, or that conflicts, leaves the round,
and the next best goes. After a merge the base moves, so the others owe a verification against
the new base (their numbers and the new base's are reused where the trees match:
`senpai.verifier.reuse`).

Why only the PRs already verifying: with a busy fleet some PR always reaches verifying, and a
20-experiment digits run held its first round open for 3.5 minutes while 16 PRs queued into it.
The moment the wrapper first saw a pass and the highest PR number verifying then are kept in its
store (`StateStore.pinned`: `round_id`, `upto_key`), so a restart does not restart the wait;
deleting the store restarts it, bounded again.  Why a round at all: issue 25 measured merging the
first pass on digits: of 8 passes against the starting base, the one that merged (0.8917) was 7
points worse than three others (0.9593 to 0.9648).

A human's acknowledged approval pins its own PR: its event goes whatever the round. A PR whose
merge waits for a human's approval is not the pick while it waits, so the round does not wait
on a human. A failed verification is never held: the advisor closes or re-applies it at once.
"""

import math
from datetime import timedelta

from senpai.config.harness import HarnessConfig
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState
from senpai.wrapper.steering import current_fingerprint
from senpai.wrapper.world import World


def round_id(base: str) -> str:
    """The wrapper cache's key for when the round of `base` first had a pass (`World.first_seen`)."""
    return f"round:{base}"


def upto_key(base: str) -> str:
    """The wrapper cache's key prefix for the round's members (`World.round_upto`, `StateStore.pinned`)."""
    return f"round:{base}:upto:"


def verifying_upto(w: World) -> int:
    """The highest PR number verifying now (0 if none): the round's members, pinned at its first pass."""
    return max((e.pr for e in w.exps if e.state == ExperimentState.VERIFYING), default=0)


def passed(w: World) -> list[Experiment]:
    """Verifying PRs whose verification of (head, current base) passed."""
    out = []
    for e in w.exps:
        v = e.verification_for(e.head, w.base_sha) if e.state == ExperimentState.VERIFYING and not e.error else None
        if v is not None and v.passed:
            out.append(e)
    return out


def open_ids(w: World) -> list[str]:
    """The round ids whose first pass the wrapper must remember: the current base's, once it has one."""
    return [round_id(w.base_sha)] if passed(w) else []


def held(w: World, cfg: HarnessConfig) -> set[int]:
    """PRs whose `verified` event waits: every pass while the round is open (a verification of
    this base is still owed by a PR verifying at the round's first pass, `World.round_upto`, and
    `round_wait_seconds` has not passed since that pass), then
    every pass but the round's pick. Pinned PRs (a human's approval acknowledged) never wait."""
    wins = passed(w)
    if not wins:
        return set()
    pinned = {e.pr for e in wins if (fp := current_fingerprint(e, w.base_sha)) and fp in w.steer.approvals.get(e.pr, {})}
    owed = any(
        e.state == ExperimentState.VERIFYING
        and not e.error
        and e.verification_for(e.head, w.base_sha) is None
        and (w.round_upto is None or e.pr <= w.round_upto)  # already verifying at the round's first pass
        for e in w.exps
    )
    first = w.first_seen.get(round_id(w.base_sha), w.now)
    if owed and w.now < first + timedelta(seconds=cfg.round_wait_seconds):
        return {e.pr for e in wins} - pinned
    ready = [e for e in wins if e.pending_approval() is None]  # one waiting for a human is not the pick meanwhile
    pick = min(ready, key=lambda e: _rank(e, w.base_sha)) if ready else None
    return {e.pr for e in wins if e is not pick} - pinned


def _rank(e: Experiment, base: str) -> tuple[float, float, int]:
    """Sort key, best first: the largest improvement (signed: positive is better), then the
    smallest p-value (the noise-floor rule has none), then the oldest PR."""
    v = e.verification_for(e.head, base)
    gain = v.improvement if v and v.improvement is not None and math.isfinite(v.improvement) else -math.inf
    p = v.p_value if v and v.p_value is not None else 1.0
    return (-gain, p, e.pr)
