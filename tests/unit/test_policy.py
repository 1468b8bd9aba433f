"""The wrapper's decide step, as the pure function it is."""

from datetime import timedelta

from policy_world import BASE, CFG, NOW, exp, job, launches

from senpai.ledger.blocks import Decision, Verification
from senpai.ledger.experiment import Experiment
from senpai.wrapper.actions import Block, DeleteJob, FailureEvidence, FinishAttempts, RestoreStudent
from senpai.wrapper.policy import plan
from senpai.wrapper.world import World


def test_idle_students_wake_the_advisor_once():
    actions = plan(World([], BASE, [], NOW), CFG)
    (adv,) = launches(actions, "advisor")
    assert [e.student for e in adv.events] == ["ada", "bo"]
    assert adv.name.startswith("senpai-advisor-") and adv.name.endswith("-1")
    # the same world again while that advisor runs: no second advisor turn
    again = plan(World([], BASE, [job(adv.name, "advisor")], NOW), CFG)
    assert launches(again, "advisor") == []


def test_student_job_per_assigned_pr_and_one_job_per_student():
    w = World([exp(1, "wip"), exp(2, "changes", attempts=1)], BASE, [], NOW)
    (s,) = launches(plan(w, CFG), "student")
    assert s.name == "senpai-student-pr1-1" and s.student == "ada"
    busy = World(w.exps, BASE, [job("senpai-student-pr1-1", "student", 1, "ada")], NOW)
    assert launches(plan(busy, CFG), "student") == []


def test_dead_job_without_evidence_gets_failure_evidence_then_retry_budget():
    dead = job("senpai-student-pr1-1", "student", 1, "ada", phase="failed", reason="DeadlineExceeded")
    actions = plan(World([exp(1, "wip")], BASE, [dead], NOW), CFG)
    assert FailureEvidence(1, 1, dead.name, to_review=False) in actions
    assert launches(actions, "student") == []  # its name is taken until the evidence lands
    # after the failure evidence is posted, attempt 2 is launched
    (s,) = launches(plan(World([exp(1, "wip", attempts=1)], BASE, [dead], NOW), CFG), "student")
    assert s.name == "senpai-student-pr1-2"
    dead2 = job("senpai-student-pr1-2", "student", 1, "ada", phase="failed").model_copy(update={"exit_code": 1})
    assert FailureEvidence(1, 2, dead2.name, to_review=True) in plan(
        World([exp(1, "wip", attempts=1)], BASE, [dead, dead2], NOW), CFG
    )


def test_review_and_verifying_prs():
    actions = plan(World([exp(1, "review", attempts=1), exp(2, "verifying", "bo", attempts=1)], BASE, [], NOW), CFG)
    (v,) = launches(actions, "verifier")
    assert (v.name, v.student) == ("senpai-verifier-pr2-1", "bo")  # the job gets bo's GPUs to train both sides
    (adv,) = launches(actions, "advisor")
    assert [e.id for e in adv.events] == [f"review:pr-1@{'1' * 40}/a1d0", f"idle:ada@{BASE}:2", f"idle:bo@{BASE}:2"]


def _verified(e: Experiment, baseline: str, key: str | None = "k" * 64) -> Experiment:
    v = Verification(
        pr=e.pr, candidate=e.head, baseline=baseline, metric="acc", direction="maximize", seeds=[0, 1],
        candidate_values=[0.5, 0.5], baseline_values=[0.6, 0.6], candidate_mean=0.5, baseline_mean=0.6,
        improvement=-0.1, noise_floor=0.01, baseline_key=key, passed=False, reason="r",
    )  # fmt: skip
    return e.model_copy(update={"verifications": [v]})


def test_a_base_no_verification_measured_gets_one_verifier_at_a_time():
    w = World([exp(1, "verifying", attempts=1), exp(2, "verifying", "bo", attempts=1)], BASE, [], NOW)
    (v,) = launches(plan(w, CFG), "verifier")
    assert v.pr == 1 and v.args == ["verify", "--pr", "1"]
    running = World(w.exps, BASE, [job("senpai-verifier-pr1-1", "verifier", 1)], NOW)
    assert launches(plan(running, CFG), "verifier") == []  # PR 2 waits to reuse PR 1's baseline seeds
    # PR 1's verification of this base is recorded: PR 2 goes, told where the baseline was measured
    measured = World([_verified(w.exps[0], BASE), w.exps[1]], BASE, [], NOW)
    (v2,) = launches(plan(measured, CFG), "verifier")
    assert v2.pr == 2 and v2.args == ["verify", "--pr", "2", "--baseline-from", "1"]
    # a verification of another base is not this base's measurement
    waiting = World([_verified(w.exps[0], "c" * 40), w.exps[1]], BASE, [job("senpai-verifier-pr9-1", "verifier", 9)], NOW)
    assert launches(plan(waiting, CFG), "verifier") == []
    # a base measured without a key has nothing to reuse: its other verifiers go at once, with no hint
    keyless = World([_verified(w.exps[0], BASE, key=None), w.exps[1]], BASE, [job("senpai-verifier-pr9-1", "verifier", 9)], NOW)
    (v3,) = launches(plan(keyless, CFG), "verifier")
    assert v3.pr == 2 and v3.args == ["verify", "--pr", "2"]


def test_the_merge_that_made_the_base_is_named_first_and_releases_its_verifiers():
    """Its verification measured, as its candidate, the tree the merge landed: the base's seeds."""
    merged = _verified(exp(1, "merged", attempts=1), "c" * 40).model_copy(update={"merge_commit": BASE})
    merged = merged.model_copy(
        update={"verifications": [merged.verifications[0].model_copy(update={"passed": True, "candidate_key": "t" * 64})]}
    )
    other = _verified(exp(3, "closed", attempts=1), BASE)  # measured the base as its baseline
    w = World([merged, exp(2, "verifying", "bo", attempts=1), other], BASE, [job("senpai-verifier-pr9-1", "verifier", 9)], NOW)
    (v,) = launches(plan(w, CFG), "verifier")  # another verifier runs, yet PR 2 need not wait: the base is measured
    assert v.pr == 2 and v.args == ["verify", "--pr", "2", "--baseline-from", "1", "--baseline-from", "3"]
    # a merge with no key (or no passing verification) measured nothing reusable: not named
    keyless = merged.model_copy(update={"verifications": [merged.verifications[0].model_copy(update={"candidate_key": None})]})
    (v,) = launches(plan(World([keyless, *w.exps[1:]], BASE, [], NOW), CFG), "verifier")
    assert v.args == ["verify", "--pr", "2", "--baseline-from", "3"]


def test_a_merge_that_landed_on_a_moved_base_measured_another_tree_and_releases_nothing():
    old_base, parent = "a" * 40, "c" * 40
    merged = _verified(exp(1, "merged", attempts=1), old_base)  # verified against old_base, merged onto parent
    v0 = merged.verifications[0].model_copy(update={"passed": True, "candidate_key": "t" * 64})
    moved = Decision(pr=1, head=merged.head, verdict="merge", reason="r", base=old_base, merged_onto=parent)
    merged = merged.model_copy(update={"merge_commit": BASE, "verifications": [v0], "decisions": [moved]})
    w = World([merged, exp(2, "verifying", "bo", attempts=1)], BASE, [job("senpai-verifier-pr9-1", "verifier", 9)], NOW)
    got = [(v.pr, v.args) for v in launches(plan(w, CFG), "verifier")]
    assert 2 not in [pr for pr, _ in got], got  # BASE is not measured yet: PR 2 waits for a verifier that measures it


def test_invalid_block_blocks_only_that_pr():
    actions = plan(World([exp(1, "wip", error="bad yaml"), exp(2, "wip", "bo")], BASE, [], NOW), CFG)
    assert [a for a in actions if isinstance(a, Block)] == [Block(1, "a senpai block is invalid: bad yaml")]
    assert [a.pr for a in launches(actions, "student")] == [2]


def test_the_experiment_cap_holds_new_experiments_and_stale_wip_goes_to_advisor():
    old = NOW - timedelta(hours=1)
    exps = [exp(1, "closed"), exp(2, "merged"), exp(3, "closed", "bo"), exp(4, "wip", updated=old, attempts=2)]
    (adv,) = launches(plan(World(exps, BASE, [], NOW), CFG), "advisor")
    assert [e.kind for e in adv.events] == ["stale"]  # 4 experiments = max: nobody is idle


def test_failed_advisor_batches_are_retried_three_times_then_left():
    first = launches(plan(World([], BASE, [], NOW), CFG), "advisor")[0].name
    prefix = first.rsplit("-", 1)[0]
    failed = [job(f"{prefix}-{i}", "advisor", phase="failed") for i in (1, 2, 3)]
    assert launches(plan(World([], BASE, failed[:2], NOW), CFG), "advisor")[0].name == f"{prefix}-3"
    assert launches(plan(World([], BASE, failed, NOW), CFG), "advisor") == []


def test_never_more_idle_events_than_experiments_left():
    (adv,) = launches(plan(World([exp(1, "closed"), exp(2, "closed"), exp(3, "review", "bo")], BASE, [], NOW), CFG), "advisor")
    assert [e.kind for e in adv.events] == ["review", "idle"]  # max 4, 3 exist: one more


def test_a_live_job_of_a_pr_decided_by_hand_is_deleted_and_a_lost_student_label_restored():
    running = [job("senpai-student-pr1-1", "student", 1, "ada"), job("senpai-verifier-pr2-1", "verifier", 2)]
    labels = {1: ("senpai",), 2: ("senpai", "student:bo"), 3: ("senpai", "student:cy", "status:wip")}
    w = World([exp(1, "closed"), exp(2, "merged", "bo"), exp(3, "wip", "bo")], BASE, running, NOW, labels=labels)
    actions = plan(w, CFG)
    assert [a for a in actions if isinstance(a, DeleteJob)] == [
        DeleteJob("senpai-student-pr1-1", 1, "PR #1 is closed"),
        DeleteJob("senpai-verifier-pr2-1", 2, "PR #2 is merged"),
    ]
    assert [a for a in actions if isinstance(a, RestoreStudent)] == [RestoreStudent(3, "bo")]  # decided PRs keep theirs
    assert [a.pr for a in launches(actions, "student")] == [3]  # bo still has its experiment: no idle event for bo
    assert "bo" not in [e.student for a in launches(actions, "advisor") for e in a.events]


def test_a_wip_pr_out_of_attempts_is_moved_to_review_once_no_job_runs_for_it():
    out = exp(1, "wip", attempts=2)  # budget 2: the last evidence landed, the move to review did not
    assert FinishAttempts(1) in plan(World([out], BASE, [], NOW), CFG)
    running = job("senpai-student-pr1-2", "student", 1, "ada")  # still posting: it moves the PR itself
    assert not [a for a in plan(World([out], BASE, [running], NOW), CFG) if isinstance(a, FinishAttempts)]
