"""senpai's failures are not the hypothesis's: the policy's side (pure, no I/O).

Infrastructure failures of a job (exit 3, lost, killed by the fleet) are relaunched under a
distinct, deterministic name and spend no attempt; after `RELAUNCH.runs` the PR is escalated once.
"""

from datetime import timedelta

from policy_world import BASE, CFG, NOW, exp, launches

from senpai.config.time_limits import RELAUNCH
from senpai.fleet.base import JobStatus
from senpai.ledger.blocks import BaselineRef
from senpai.ledger.escalation import escalation_id
from senpai.wrapper.actions import Block, Escalate, FailureEvidence
from senpai.wrapper.dispatch import failure_evidence
from senpai.wrapper.policy import infra_failure, plan
from senpai.wrapper.world import World


def test_a_duplicated_evidence_counts_as_one_attempt():
    once = exp(1, "wip", attempts=1)
    twice = once.model_copy(update={"evidence": once.evidence * 2})
    assert twice.attempts == 1
    (s,) = launches(plan(World([twice], BASE, [], NOW), CFG), "student")
    assert s.name == "senpai-student-pr1-2"


def dead(name: str, pr: int = 1, role: str = "student", exit_code=3, reason="Error") -> JobStatus:
    return JobStatus(
        name=name,
        role=role,
        pr=pr,
        student="ada" if role == "student" else None,
        phase="failed",
        exit_code=exit_code,
        reason=reason,
    )


def test_the_classification():
    assert infra_failure(dead("j", exit_code=3))  # senpai job: TransientError
    assert infra_failure(dead("j", exit_code=137, reason="Killed"))  # a signal the deadline did not send
    assert infra_failure(dead("j", exit_code=None, reason="Lost"))  # supervisor gone
    assert infra_failure(dead("j", exit_code=None, reason="BackoffLimitExceeded"))  # pod gone, no exit status
    assert not infra_failure(dead("j", exit_code=137, reason="DeadlineExceeded"))  # the hypothesis's budget
    assert not infra_failure(dead("j", exit_code=3, reason="DeadlineExceeded"))
    assert not infra_failure(dead("j", exit_code=137, reason="OOMKilled"))
    assert not infra_failure(dead("j", exit_code=1))  # the job ran and failed
    assert not infra_failure(dead("j", exit_code=4))


def test_an_infra_failure_is_relaunched_under_a_new_name_without_evidence():
    jobs = [dead("senpai-student-pr1-1")]
    actions = plan(World([exp(1, "wip")], BASE, jobs, NOW), CFG)
    assert not [a for a in actions if isinstance(a, (FailureEvidence, Escalate))]
    (s,) = launches(actions, "student")
    assert (s.name, s.args[-1]) == ("senpai-student-pr1-1-r1", "1")  # the same attempt, no attempt spent
    jobs.append(dead("senpai-student-pr1-1-r1"))
    (s,) = launches(plan(World([exp(1, "wip")], BASE, jobs, NOW), CFG), "student")
    assert s.name == "senpai-student-pr1-1-r2"


def test_a_hypothesis_failure_after_an_infra_failure_spends_the_attempt():
    jobs = [dead("senpai-student-pr1-1"), dead("senpai-student-pr1-1-r1", exit_code=137, reason="DeadlineExceeded")]
    actions = plan(World([exp(1, "wip")], BASE, jobs, NOW), CFG)
    assert FailureEvidence(1, 1, "senpai-student-pr1-1-r1", to_review=False) in actions
    assert launches(actions, "student") == []


def test_spent_infra_retries_escalate_once():
    jobs = [dead(n) for n in ("senpai-student-pr1-1", "senpai-student-pr1-1-r1", "senpai-student-pr1-1-r2")]
    assert RELAUNCH.runs == 3
    actions = plan(World([exp(1, "wip")], BASE, jobs, NOW), CFG)
    (esc,) = [a for a in actions if isinstance(a, Escalate)]
    assert esc.prs == (1,) and esc.key == "senpai-student-pr1-1" and "3 times on infrastructure" in esc.reason
    assert launches(actions, "student") == [] and not [a for a in actions if isinstance(a, FailureEvidence)]
    assert not [a for a in plan(World([exp(1, "blocked")], BASE, jobs, NOW), CFG) if isinstance(a, Escalate)]


def test_verifier_infra_failures_are_relaunched_then_escalated():
    v = exp(1, "verifying", attempts=1)
    jobs = [dead("senpai-verifier-pr1-1", role="verifier", exit_code=None, reason="Lost")]
    actions = plan(World([v], BASE, jobs, NOW), CFG)
    assert [a.name for a in launches(actions, "verifier")] == ["senpai-verifier-pr1-1-r1"]
    assert not [a for a in actions if isinstance(a, (Block, Escalate))]  # no block for a lost verifier
    jobs += [dead(f"senpai-verifier-pr1-1-r{k}", role="verifier") for k in (1, 2)]
    (esc,) = [a for a in plan(World([v], BASE, jobs, NOW), CFG) if isinstance(a, Escalate)]
    assert esc.prs == (1,)
    # exit 3 is also the base head failing its own steps (BaselineFailed): the issue does not say only "infrastructure"
    assert "or because the base head failed its own train or score step" in esc.reason


def test_dead_advisor_turns_escalate_the_prs_of_their_batch():
    w = World([exp(1, "review", attempts=1)], BASE, [], NOW)
    (adv,) = launches(plan(w, CFG), "advisor")
    digest = adv.name.rsplit("-", 1)[0]
    jobs = [
        JobStatus(name=f"{digest}-{k}", role="advisor", pr=None, student=None, phase="failed", exit_code=137, reason="Killed")
        for k in (1, 2, 3)
    ]
    actions = plan(World(w.exps, BASE, jobs, NOW), CFG)
    (esc,) = [a for a in actions if isinstance(a, Escalate)]
    assert esc.prs == (1,) and "3 advisor turns" in esc.reason and launches(actions, "advisor") == []


def test_a_dead_advisor_batch_without_prs_is_escalated_once():
    w = World([], BASE, [], NOW)
    (adv,) = launches(plan(w, CFG), "advisor")
    digest = adv.name.rsplit("-", 1)[0]
    jobs = [
        JobStatus(name=f"{digest}-{k}", role="advisor", pr=None, student=None, phase="failed", exit_code=1, reason="Error")
        for k in (1, 2, 3)
    ]
    (esc,) = [a for a in plan(World([], BASE, jobs, NOW), CFG) if isinstance(a, Escalate)]
    assert esc.prs == ()
    done = World([], BASE, jobs, NOW, escalated=frozenset({escalation_id(esc.key)}))
    assert plan(done, CFG) == []


def test_a_relaunch_backs_off_from_the_failed_run():
    first = dead("senpai-student-pr1-1").model_copy(update={"finished_at": NOW - timedelta(seconds=5)})
    assert launches(plan(World([exp(1, "wip")], BASE, [first], NOW), CFG), "student") == []  # 15 s not over yet
    later = NOW + timedelta(seconds=RELAUNCH.wait(1))
    (s,) = launches(plan(World([exp(1, "wip")], BASE, [first], later), CFG), "student")
    assert s.name == "senpai-student-pr1-1-r1"
    second = dead("senpai-student-pr1-1-r1").model_copy(update={"finished_at": later})
    wait2 = timedelta(seconds=RELAUNCH.wait(2))
    assert launches(plan(World([exp(1, "wip")], BASE, [first, second], later + wait2 / 2), CFG), "student") == []
    (s,) = launches(plan(World([exp(1, "wip")], BASE, [first, second], later + wait2), CFG), "student")
    assert s.name == "senpai-student-pr1-1-r2"


def test_a_dead_advisor_turn_is_retried_after_a_backoff():
    w = World([exp(1, "review", attempts=1)], BASE, [], NOW)
    (adv,) = launches(plan(w, CFG), "advisor")
    died = JobStatus(
        name=adv.name, role="advisor", pr=None, student=None, phase="failed", exit_code=3, reason="Error", finished_at=NOW
    )
    assert launches(plan(World(w.exps, BASE, [died], NOW + timedelta(seconds=1)), CFG), "advisor") == []
    later = NOW + timedelta(seconds=RELAUNCH.wait(1))
    (again,) = launches(plan(World(w.exps, BASE, [died], later), CFG), "advisor")
    assert again.name == adv.name[:-1] + "2"


def test_the_wrappers_failure_evidence_names_the_hypothesiss_metric_and_baseline_like_a_students_own():
    e = exp(1, "wip")
    h = e.hypothesis.model_copy(update={"baseline": BaselineRef(commit=BASE, run_id="r", value=0.8)})
    ev = failure_evidence(
        e.model_copy(update={"hypothesis": h}), FailureEvidence(1, 1, "senpai-student-pr1-1", False), "boom", "Error"
    )
    assert (ev.outcome, ev.primary.name, ev.primary.value, ev.primary.baseline, ev.primary.delta) == (
        "failed",
        "acc",
        None,
        0.8,
        None,
    )
    assert ev.failure == "job senpai-student-pr1-1 ended without evidence: Error" and ev.log_tail == "boom"
