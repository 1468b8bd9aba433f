"""A run that stops at N decided experiments never stops between an advisor's merge and its decision."""

from forge_fixtures import experiment

from senpai.ledger.blocks import Decision
from senpai.wrapper.loop import TickReport


def test_a_merge_counts_as_decided_once_its_decision_is_recorded():
    merge = Decision(pr=1, head="a" * 40, verdict="merge", reason="beats the floor")
    close = Decision(pr=3, head="a" * 40, verdict="close", reason="worse")
    exps = [experiment(1, "merged"), experiment(2, "verifying"), experiment(3, "closed", decisions=[close])]
    assert TickReport(tick=1, calls=0, refreshed=True, exps=exps).decided == 1  # #1 is merged, its decision not yet posted
    exps[0] = experiment(1, "merged", decisions=[merge])
    assert TickReport(tick=1, calls=0, refreshed=True, exps=exps).decided == 2
