"""A run that stops at N decided experiments never stops between an advisor's merge and its decision."""

from senpai.ledger.blocks import Decision
from senpai.ledger.experiment import Experiment
from senpai.wrapper.loop import TickReport


def _exp(pr: int, state: str, decisions: list[Decision]) -> Experiment:
    return Experiment(
        pr=pr, title="t", url="u", branch=f"senpai/ada/h{pr}", head="a" * 40, student="ada", state=state,
        updated_at="2026-12-01T00:00:00Z", hypothesis=None, evidence=[], verifications=[], decisions=decisions,
    )  # fmt: skip


def test_a_merge_counts_as_decided_once_its_decision_is_recorded():
    merge = Decision(pr=1, head="a" * 40, verdict="merge", reason="beats the floor")
    close = Decision(pr=3, head="a" * 40, verdict="close", reason="worse")
    exps = [_exp(1, "merged", []), _exp(2, "verifying", []), _exp(3, "closed", [close])]
    assert TickReport(tick=1, calls=0, refreshed=True, exps=exps).decided == 1  # #1 is merged, its decision not yet posted
    exps[0] = _exp(1, "merged", [merge])
    assert TickReport(tick=1, calls=0, refreshed=True, exps=exps).decided == 2
