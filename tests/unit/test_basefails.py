"""A base that does not train (`senpai.ledger.basefails`): which failed measurement blocks its base,
read from senpai's own evidence and the bot's own issue, and when a human's closing resolves it."""

from datetime import UTC, datetime

from senpai.agents.hypothesis import reported
from senpai.config.target import Metric
from senpai.forge.base import Issue
from senpai.ledger import basefails
from senpai.ledger.baseline import measuring_base
from senpai.ledger.blocks import BaselineRef, BudgetRef, Decision, Evidence, Hypothesis, MetricRef, PrimaryResult
from senpai.ledger.escalation import escalation_id
from senpai.ledger.events import idle_event
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState

BASE, HEAD, BOT = "b" * 40, "a" * 40, "senpai"
NOW = datetime(2026, 12, 6, tzinfo=UTC)


def _exp(
    pr: int, outcome: str | None = "failed", state=ExperimentState.CLOSED, base=BASE, measures=True, head=HEAD
) -> Experiment:
    h = Hypothesis(
        id=f"h-{pr:010x}", hypothesis="x", rationale="x", plan="x", params={"w": 1}, measures_base=measures,
        metric=MetricRef(name="val", direction="maximize"), baseline=BaselineRef(commit=base, run_id=None, value=None),
        budget=BudgetRef(wall_seconds=60, attempts=1), stop_condition="1 attempt", student="ada",
    )  # fmt: skip
    evidence = []
    if outcome is not None:
        evidence = [
            Evidence(
                pr=pr, attempt=1, student="ada", head=HEAD, command="c", outcome=outcome, interpretation="i",
                failure="train command exited with status 127" if outcome == "failed" else None,
                primary=PrimaryResult(name="val", value=None if outcome == "failed" else 0.5, baseline=None, delta=None),
            )
        ]  # fmt: skip
    closed = state == ExperimentState.CLOSED
    return Experiment(
        pr=pr, title="x", url="", branch=f"senpai/ada/{h.id}", head=head, student="ada", state=state,
        updated_at="2026-12-06T00:00:00Z", hypothesis=h, evidence=evidence, verifications=[],
        decisions=[Decision(pr=pr, head=head, verdict="close", reason="the base does not train")] if closed else [],
    )  # fmt: skip


def _issue(pr: int, state: str = "open", user: str = BOT) -> Issue:
    marker = f"<!-- senpai:escalation:{escalation_id(basefails.issue_key(pr))} -->"
    return Issue(
        number=100 + pr, title="senpai: the base does not train", body=f"the base does not train\n\n{marker}", state=state,
        labels=["senpai", "senpai:steer"], user=user, author_association="OWNER", created_at=NOW, updated_at=NOW,
    )  # fmt: skip


def test_failed_is_read_from_senpais_evidence_for_the_head_it_was_closed_at():
    assert basefails.failed(_exp(1))
    assert not basefails.failed(_exp(1, outcome="ok"))
    assert not basefails.failed(_exp(1, outcome=None))  # no evidence: nothing says the base failed
    assert not basefails.failed(_exp(1, state=ExperimentState.REVIEW))  # not closed yet
    assert not basefails.failed(_exp(1, head="c" * 40))  # the failure was another head's


def test_the_newest_failed_measurement_blocks_its_base_while_the_bots_issue_is_open():
    exps = [_exp(1)]
    assert basefails.blocking(exps, BASE, [_issue(1)], BOT).pr == 1
    assert basefails.blocking(exps, "c" * 40, [_issue(1)], BOT) is None  # a new base commit is not blocked
    assert basefails.blocking(exps, BASE, [], BOT) is None  # no issue: it was not the base's failure
    assert basefails.blocking(exps, BASE, [_issue(1, user="mallory")], BOT) is None  # a copied marker counts nothing
    assert basefails.blocking([_exp(1, outcome="ok")], BASE, [_issue(1)], BOT) is None
    assert basefails.blocking([_exp(1, measures=False)], BASE, [_issue(1)], BOT) is None  # a proposal's failure


def test_a_closed_issue_resolves_the_failure_and_the_same_base_is_measured_again():
    exps, closed = [_exp(1)], [_issue(1, state="closed")]
    assert basefails.blocking(exps, BASE, closed, BOT) is None
    assert basefails.resolved(exps, BASE, closed, BOT) == {1}
    assert basefails.resolved(exps, BASE, [_issue(1)], BOT) == frozenset()
    assert measuring_base(exps, BASE) and not measuring_base(exps, BASE, basefails.resolved(exps, BASE, closed, BOT))
    # the repeat runs: it is measuring, nothing blocks; once it fails too, its own open issue blocks again
    again = [*exps, _exp(2, outcome=None, state=ExperimentState.WIP)]
    assert measuring_base(again, BASE, frozenset({1})) and basefails.blocking(again, BASE, closed, BOT) is None
    failed_again = [*exps, _exp(2)]
    assert basefails.blocking(failed_again, BASE, [*closed, _issue(2)], BOT).pr == 2


def test_a_resolved_failure_gives_the_idle_event_a_new_id():
    """A closed issue changes nothing else the idle event's id holds, so the advisor is woken again."""
    assert idle_event("ada", BASE, 1).id == f"idle:ada@{BASE}:1"
    assert idle_event("ada", BASE, 1, resolved=1).id not in (idle_event("ada", BASE, 1).id, idle_event("ada", BASE, 2).id)


def test_a_plan_names_where_the_metric_comes_from():
    assert reported(Metric(name="val", direction="maximize")) == "val from the W&B run's summary"
    assert reported(Metric(name="val", direction="maximize", source="stdout")) == (
        "val from the last value the program prints of it on stdout"
    )


def test_a_blocked_measurement_holds_its_base_until_a_human_unblocks_or_closes_it():
    """Its job could not start training on senpai's side (the train interpreter does not run):
    escalated and blocked, with no evidence. Only the newest measurement of the current base counts."""
    blocked = _exp(1, outcome=None, state=ExperimentState.BLOCKED)
    assert basefails.held([blocked], BASE).pr == 1
    assert basefails.held([blocked], "c" * 40) is None  # a new base commit is not held
    assert basefails.held([_exp(1, outcome=None, state=ExperimentState.CLOSED)], BASE) is None  # a human closed it
    assert basefails.held([_exp(1, outcome=None, state=ExperimentState.BLOCKED, measures=False)], BASE) is None
    assert basefails.held([blocked, _exp(2, outcome=None, state=ExperimentState.WIP)], BASE) is None  # measured again
