"""The wrapper's decide step on advisor turns that changed nothing (`no_effect`, exit 7): it backs
off from the same events, and after `runtime.no_effect.turns` tells humans once."""

from datetime import timedelta

from policy_world import BASE, CFG, NOW, exp, launches

from senpai.fleet.base import JobStatus
from senpai.ledger.escalation import escalation_id
from senpai.wrapper.actions import Escalate
from senpai.wrapper.policy import plan
from senpai.wrapper.world import World

MODEL = "openai/tiny-coder"
OH = CFG.model_copy(update={"runtime": CFG.runtime.model_validate({"advisor": {"kind": "openhands", "llm": {"model": MODEL}}})})
KEY = f"senpai-advisor-no-effect:{MODEL}"


def ended(name: str, at, exit_code: int = 7) -> JobStatus:
    return JobStatus(name=name, role="advisor", pr=None, student=None, phase="failed", exit_code=exit_code, finished_at=at)


def advisor_at(jobs, now, exps=(), escalated=frozenset(), cfg=OH):
    actions = plan(World(list(exps), BASE, jobs, now, escalated=escalated), cfg)
    return launches(actions, "advisor"), [a for a in actions if isinstance(a, Escalate)]


def test_the_same_events_wait_longer_after_each_turn_that_changed_nothing():
    (first,), _ = advisor_at([], NOW)
    prefix = first.name.rsplit("-", 1)[0]
    one = [ended(first.name, NOW)]
    for tick in (5, 60, 299):  # not every tick: 300 s after the first (runtime.no_effect.backoff_seconds)
        assert advisor_at(one, NOW + timedelta(seconds=tick)) == ([], [])
    (second,), _ = advisor_at(one, NOW + timedelta(seconds=300))
    assert second.name == f"{prefix}-2" and [e.id for e in second.events] == [e.id for e in first.events]
    t2 = NOW + timedelta(seconds=400)
    two = [*one, ended(second.name, t2)]
    assert advisor_at(two, t2 + timedelta(seconds=599)) == ([], [])  # doubled: 600 s after the second
    (third,), _ = advisor_at(two, t2 + timedelta(seconds=600))
    assert third.name == f"{prefix}-3"


def test_a_turn_that_died_still_relaunches_on_the_short_backoff():
    (first,), _ = advisor_at([], NOW)
    dead = [ended(first.name, NOW, exit_code=1)]
    (again,), _ = advisor_at(dead, NOW + timedelta(seconds=15))  # RELAUNCH.wait(1), not the no-effect wait
    assert again.name.endswith("-2")


def test_new_events_wake_the_advisor_at_once_while_the_old_ones_back_off():
    (first,), _ = advisor_at([], NOW)
    (woken,), _ = advisor_at([ended(first.name, NOW)], NOW + timedelta(seconds=5), exps=[exp(1, "review", "ada", attempts=1)])
    assert woken.name.endswith("-1") and woken.name != first.name and "review" in {e.kind for e in woken.events}


def test_after_n_turns_that_changed_nothing_one_issue_then_nothing():
    (first,), _ = advisor_at([], NOW)
    prefix = first.name.rsplit("-", 1)[0]
    three = [ended(f"{prefix}-{i}", NOW + timedelta(seconds=i)) for i in (1, 2, 3)]
    later = NOW + timedelta(days=1)

    launched, (issue,) = advisor_at(three, later)
    assert launched == [] and issue.key == KEY and issue.prs == () and issue.job == f"{prefix}-3"
    assert issue.title == "the advisor's model calls no tools" and f"`{MODEL}`" in issue.reason
    assert issue.reason.startswith("3 advisor turns over the same 2 event(s) (idle) changed nothing")
    # once the issue exists (whatever the batch): no issue again, no turn again for these events
    assert advisor_at(three, later, escalated=frozenset({escalation_id(KEY)})) == ([], [])
    # two of them are not enough (runtime.no_effect.turns: 3); a setting of 2 is
    assert advisor_at(three[:2], later)[1] == []
    two_turns = OH.model_validate({**OH.model_dump(), "runtime": {**OH.runtime.model_dump(), "no_effect": {"turns": 2}}})
    assert advisor_at(three[:2], later, cfg=two_turns)[1][0].key == KEY


def test_a_review_that_is_never_decided_is_blocked_for_a_human():
    exps = [exp(1, "review", "ada", attempts=1), exp(2, "wip", "ada"), exp(3, "wip", "bo")]  # no student is idle
    (first,), _ = advisor_at([], NOW, exps=exps)
    assert [e.kind for e in first.events] == ["review"]
    prefix = first.name.rsplit("-", 1)[0]
    three = [ended(f"{prefix}-{i}", NOW) for i in (1, 2, 3)]
    _, (issue,) = advisor_at(three, NOW + timedelta(seconds=10), exps=exps, escalated=frozenset({escalation_id(KEY)}))
    assert issue.prs == (1,) and issue.key == KEY  # the issue is found again by its key; the PR is blocked
