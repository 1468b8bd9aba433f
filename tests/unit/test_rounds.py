"""Rounds (senpai.wrapper.rounds): the advisor sees the best pass of a base, not the first, once the
round's other verifications are in or its wait is over; a human's approval pins its own PR."""

from datetime import timedelta

from policy_world import BASE, CFG, NOW, exp, job, launches

from senpai.ledger.blocks import ApprovalRequest, Verification
from senpai.ledger.experiment import Experiment
from senpai.ledger.inbox import SteerState
from senpai.wrapper.policy import advisor_events, plan
from senpai.wrapper.rounds import held, round_id
from senpai.wrapper.steering import current_fingerprint
from senpai.wrapper.world import World

WAIT = timedelta(seconds=CFG.round_wait_seconds)


def verified(pr: int, gain: float, passed: bool = True, student: str = "ada") -> Experiment:
    e = exp(pr, "verifying", student, attempts=1)
    v = Verification(
        pr=pr, candidate=e.head, baseline=BASE, metric="acc", direction="maximize", seeds=[0, 1],
        candidate_values=[0.6 + gain] * 2, baseline_values=[0.6] * 2, candidate_mean=0.6 + gain, baseline_mean=0.6,
        improvement=gain, noise_floor=0.01, baseline_key="k" * 64, passed=passed, reason="r",
    )  # fmt: skip
    return e.model_copy(update={"verifications": [v]})


def verified_prs(w: World) -> list[int]:
    return sorted(ev.pr for ev in advisor_events(w, CFG) if ev.kind == "verified")


def test_the_best_pass_goes_once_the_round_is_in_and_the_others_wait_for_the_new_base():
    first, best, worse = verified(1, 0.02), verified(2, 0.09, student="bo"), verified(3, 0.05)
    owed = exp(4, "verifying", "bo", attempts=1)  # its verifier has not recorded yet
    seen = {round_id(BASE): NOW}
    waiting = World([first, best, worse, owed], BASE, [job("senpai-verifier-pr4-1", "verifier", 4)], NOW, first_seen=seen)
    assert verified_prs(waiting) == []  # the round waits for #4
    assert held(waiting, CFG) == {1, 2, 3}
    # #4's verification is recorded (a failure): the round is in, the best of the passes goes, alone
    done = World([first, best, worse, verified(4, -0.1, passed=False)], BASE, [], NOW, first_seen=seen)
    assert verified_prs(done) == [2, 4]  # a failure is never held: the advisor closes it
    # the wait is bounded: #4 still owed after round_wait_seconds, the best so far goes
    late = World(waiting.exps, BASE, waiting.jobs, NOW + WAIT, first_seen=seen)
    assert verified_prs(late) == [2]
    # #2 merged: the base moved, so #1 and #3 owe a verification against it (no verified event, a verifier)
    moved = World([first, worse], "c" * 40, [], NOW + WAIT, first_seen=seen)
    assert verified_prs(moved) == []
    assert sorted(v.pr for v in launches(plan(moved, CFG), "verifier")) == [1]  # one at a time on an unmeasured base


def test_a_human_approval_pins_its_pr_and_a_pick_waiting_for_one_gives_way():
    best, other = verified(2, 0.09), verified(3, 0.05, student="bo")
    fp = current_fingerprint(best, BASE)
    asked = ApprovalRequest(pr=2, head=best.head, base=BASE, fingerprint=fp, reasons=["compute"])
    waiting_human = best.model_copy(update={"approval_requests": [asked]})
    w = World([waiting_human, other], BASE, [], NOW)
    assert verified_prs(w) == [3]  # #2 waits for a human: the round does not wait on it
    approved = World(w.exps, BASE, [], NOW, steer=SteerState(approvals={2: {fp: "alice"}}))
    assert 2 in verified_prs(approved)  # the approval pins #2: it goes whatever the round


def test_no_wait_configured_sends_the_best_verified_so_far():
    cfg = CFG.model_copy(update={"round_wait_seconds": 0.0})
    w = World([verified(1, 0.02), verified(2, 0.03), exp(4, "verifying", "bo", attempts=1)], BASE, [], NOW)
    assert sorted(ev.pr for ev in advisor_events(w, cfg) if ev.kind == "verified") == [2]


def test_a_pr_that_reaches_verifying_after_the_first_pass_does_not_hold_the_round():
    """With a busy fleet some PR is always verifying: the round waits only for those verifying at
    its first pass (`World.round_upto`, pinned in the wrapper cache)."""
    best, later = verified(2, 0.09), exp(5, "verifying", "bo", attempts=1)  # #5 reached verifying after #2 passed
    w = World([verified(1, 0.02), best, later], BASE, [], NOW, first_seen={round_id(BASE): NOW}, round_upto=2)
    assert verified_prs(w) == [2]
    member = World([verified(1, 0.02), best, exp(3, "verifying", "bo", attempts=1)], BASE, [], NOW, round_upto=3)
    assert verified_prs(member) == []  # #3 was verifying at the first pass: the round waits for it
