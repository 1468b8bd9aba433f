"""Failures by cause, the policy's side (pure, no I/O): a full volume, a verified PR's re-apply,
and a head someone other than senpai keeps moving under the verifier."""

from datetime import timedelta

from policy_world import BASE, CFG, NOW, exp, launches
from test_policy_infra import dead

from senpai.config.time_limits import HEAD_MOVES, RELAUNCH
from senpai.ledger.blocks import Decision, Verification
from senpai.ledger.experiment import Experiment
from senpai.wrapper.actions import Block, Escalate, FailureEvidence
from senpai.wrapper.policy import infra_failure, plan
from senpai.wrapper.world import World


def test_a_full_volume_is_senpais_failure_and_its_escalation_says_so():
    assert infra_failure(dead("j", exit_code=6))  # DiskFull
    jobs = [dead(n, exit_code=6) for n in ("senpai-student-pr1-1", "senpai-student-pr1-1-r1", "senpai-student-pr1-1-r2")]
    actions = plan(World([exp(1, "wip")], BASE, jobs[:1], NOW), CFG)
    assert [a.name for a in launches(actions, "student")] == ["senpai-student-pr1-1-r1"]
    assert not [a for a in actions if isinstance(a, FailureEvidence)]
    (esc,) = [a for a in plan(World([exp(1, "wip")], BASE, jobs, NOW), CFG) if isinstance(a, Escalate)]
    assert esc.title == "a volume is full" and "a volume it writes to is full" in esc.reason


def _verified_reapply(pr: int = 1) -> Experiment:
    """PR `pr` passed verification at its first head, its merge conflicted with a moved base, and it
    was sent back to re-apply (`changes`): attempt 2 is the re-apply."""
    e = exp(pr, "changes", attempts=1)
    v = Verification(
        pr=pr, candidate=e.head, baseline=BASE, metric="acc", direction="maximize", seeds=[0, 1], candidate_values=[0.9, 0.9],
        baseline_values=[0.8, 0.8], candidate_mean=0.9, baseline_mean=0.8, improvement=0.1, noise_floor=0.01, passed=True,
        reason="better",
    )  # fmt: skip
    d = Decision(pr=pr, head=e.head, verdict="changes", reason="the base moved and the merge conflicts; re-apply on the new base")
    return e.model_copy(update={"verifications": [v], "decisions": [d]})


def test_a_verified_prs_reapply_that_hangs_is_relaunched_then_escalated_never_charged():
    e = _verified_reapply()
    hung = [dead("senpai-student-pr1-2", exit_code=137, reason="DeadlineExceeded")]
    actions = plan(World([e], BASE, hung, NOW), CFG)
    assert not [a for a in actions if isinstance(a, (FailureEvidence, Escalate))]  # no failure evidence: no close
    assert [a.name for a in launches(actions, "student")] == ["senpai-student-pr1-2-r1"]
    crashed = [
        *hung,
        dead("senpai-student-pr1-2-r1", exit_code=1),
        dead("senpai-student-pr1-2-r2", exit_code=137, reason="OOMKilled"),
    ]
    actions = plan(World([e], BASE, crashed, NOW), CFG)
    (esc,) = [a for a in actions if isinstance(a, Escalate)]
    assert esc.prs == (1,) and f"failed {RELAUNCH.runs} times while re-applying a PR that passed verification" in esc.reason
    assert launches(actions, "student") == [] and not [a for a in actions if isinstance(a, FailureEvidence)]
    # an unverified PR's attempt that hangs is still the hypothesis's (its budget)
    plain = exp(1, "changes", attempts=1)
    assert FailureEvidence(1, 2, "senpai-student-pr1-2", to_review=True) in plan(World([plain], BASE, hung, NOW), CFG)


def _moved(heads: int) -> Experiment:
    """A verifying PR whose student measured head 'a'*40, then verified at `heads` heads no student
    measured (each pushed by someone else under the verifier), now at another such head."""
    e = exp(1, "verifying", attempts=1)
    measured = e.evidence[0].model_copy(update={"head": "a" * 40})
    vs = [
        Verification(
            pr=1,
            candidate=f"{k:x}" * 40,
            baseline=BASE,
            metric="acc",
            direction="maximize",
            seeds=[0],
            candidate_values=[0.9],
            baseline_values=[0.8],
            candidate_mean=0.9,
            baseline_mean=0.8,
            improvement=0.1,
            noise_floor=0.01,
            passed=True,
            reason="r",
        )  # fmt: skip
        for k in range(1, heads + 1)
    ]
    return e.model_copy(update={"evidence": [measured], "verifications": vs, "head": "f" * 40})


def test_a_head_that_keeps_moving_under_the_verifier_is_verified_again_then_blocked():
    (v,) = launches(plan(World([_moved(HEAD_MOVES - 1)], BASE, [], NOW), CFG), "verifier")  # re-run on the new head
    assert v.name == f"senpai-verifier-pr1-{HEAD_MOVES}"
    actions = plan(World([_moved(HEAD_MOVES)], BASE, [], NOW), CFG)
    assert launches(actions, "verifier") == []
    (block,) = [a for a in actions if isinstance(a, Block)]
    assert block.pr == 1 and block.reason.startswith("the head keeps moving") and "senpai/ada/h-1" in block.reason


def test_a_wip_pr_that_waited_long_for_its_launch_is_not_closed_as_stale_when_it_gets_one():
    # e.g. the fleet's volume was full for longer than stale_after_seconds: the launch that goes once
    # there is room must not come with an advisor turn that closes the PR as stale
    waited = exp(1, "wip", updated=NOW - timedelta(hours=1))
    actions = plan(World([waited], BASE, [], NOW), CFG)
    assert [a.pr for a in launches(actions, "student")] == [1]
    (adv,) = launches(actions, "advisor")
    assert [ev.kind for ev in adv.events] == ["idle"]  # bo is idle; no stale event for #1
