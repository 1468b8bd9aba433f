"""Exact holdout numbers must not reach an LLM agent through the merge turn's lines, and the
current holdout is the latest verdict's (found by a red team)."""

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from test_ladder import _verification

from senpai.agents import review
from senpai.config.target import Holdout
from senpai.errors import MergeRefused
from senpai.ledger import gate, stats
from senpai.ledger.baseline import Baseline
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState


def _refusal() -> tuple[MergeRefused, float]:
    """The gate's Benjamini-Hochberg refusal of a pass whose rival's p-value is high, and its exact p."""
    hold = Holdout(command="score {artifact} {holdout}", files=["score.py"], metric="acc", seeds=[0, 1, 2], rule="welch")
    judgement = stats.judge(hold, "maximize", [0.9694, 0.9712, 0.9681], [0.9667, 0.9651, 0.9669])
    assert judgement.passed
    with pytest.raises(MergeRefused) as e:
        gate._multiple(hold, judgement, {7: 0.9, 8: 0.8}, "a" * 40)
    return e.value, judgement.p_value


def test_a_merge_the_gate_refuses_tells_the_llm_advisor_no_exact_p_value(monkeypatch):
    """`merge_verified`'s line is an LLM advisor's tool output (openhands `_merge`): a Benjamini-Hochberg
    refusal named the exact p-value (and its adjusted one), which the Ladder keeps from every agent."""
    refused, p = _refusal()
    v = _verification(passed=True, p_value=p, rule="welch")

    def fake_apply(ctx, pr, exp, baseline, d):
        if d.verdict == "merge":
            raise refused

    monkeypatch.setattr(review, "apply", fake_apply)
    exp = Experiment(
        pr=3, title="t", url="u", branch="b", head="b" * 40, student=None, state=ExperimentState.VERIFYING,
        updated_at="2026-01-01T00:00:00+00:00", hypothesis=None, evidence=[], verifications=[v], decisions=[],
    )  # fmt: skip
    base = Baseline(commit="a" * 40, pr=None, run_id=None, value=None, params=None)
    line = review.merge_verified(SimpleNamespace(), SimpleNamespace(head_sha="b" * 40), exp, base, v, "best of the round")
    assert line.startswith("#3: closed, merge gate refused: not significant after Benjamini-Hochberg")
    assert f"{p:.2g}" not in line, line


def _exp(pr: int, *vs) -> Experiment:
    return Experiment(
        pr=pr, title="t", url="u", branch="b", head="b" * 40, student=None, state=ExperimentState.MERGED,
        updated_at="2026-01-01T00:00:00+00:00", hypothesis=None, evidence=[], verifications=list(vs), decisions=[],
    )  # fmt: skip


def test_the_current_holdout_is_the_latest_verdicts_not_the_highest_prs():
    """After a holdout refresh, the newest verdict is a re-verification of merged PR #3 (a merge that
    landed on a moved base, `consistency.reverify`) on holdout H2; PR #10's verdict on H1 is older.
    Ledger order (PR, then comment) makes H1 'current': status shows H1's count as the current one."""
    from senpai.ledger.experiment import holdout_verdicts

    h1, h2 = "1" * 16, "2" * 16
    t = datetime(2026, 12, 6, tzinfo=UTC)
    old, new, older = (_verification(holdout=h, at=t + timedelta(hours=n)) for h, n in ((h1, 0), (h2, 2), (h1, 1)))
    exps = [_exp(3, old, new), _exp(10, older)]
    assert holdout_verdicts(exps) == 1  # H2, the holdout mounted now, served one verdict
