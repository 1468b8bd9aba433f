"""The verifier's statistics (`senpai.ledger.stats`): each rule's verdicts, direction symmetry, NaN,
Benjamini–Hochberg and the sequential test. Each rule's false-accept rate over simulated null edits
is measured in tests/integration/test_stats_null_edits.py (thousands of simulated experiments)."""

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from senpai.config.target import Holdout
from senpai.ledger.stats import bh_adjust, judge, looks, schedule

RULES = ["noise_floor", "welch", "paired", "bootstrap"]


def hold(rule: str = "welch", **kw) -> Holdout:
    base = dict(command="python eval.py {artifact} {holdout}", files=["eval.py"], metric="acc", rule=rule)
    base |= {"min_floor": 0.0} if rule == "noise_floor" else {}
    return Holdout(**{**base, **kw})


def test_welch_reason_reads_like_a_reviewer_and_matches_scipy():
    c, b = [0.95, 0.952, 0.951], [0.80, 0.81, 0.799]
    j = judge(hold("welch"), "maximize", c, b)
    from scipy import stats as sp  # after judge() has imported it, as a job does: not at collection

    expected = sp.ttest_ind(c, b, equal_var=False, alternative="greater")
    assert j.passed and not j.inconclusive and j.noise_floor is None
    assert j.p_value == pytest.approx(expected.pvalue) and j.statistic == pytest.approx(expected.statistic)
    assert j.improvement == pytest.approx(0.148, abs=1e-3)
    assert j.reason.startswith("acc 0.951 vs 0.803: +0.148, Welch t=") and "< alpha 0.05" in j.reason


def test_paired_uses_same_seed_pairs():
    """A shift smaller than the spread between seeds but the same on every seed: paired sees it, Welch does not."""
    b = [0.70, 0.80, 0.90, 0.75]
    c = [x + 0.01 + d for x, d in zip(b, [0.001, -0.001, 0.002, 0.0], strict=True)]
    assert judge(hold("paired"), "maximize", c, b).passed
    assert not judge(hold("welch"), "maximize", c, b).passed
    short = judge(hold("paired"), "maximize", c, b[:3])
    assert not short.passed and "one candidate and one baseline value per seed" in short.reason


def test_bootstrap_bound_and_its_floor_with_three_seeds():
    c, b = [0.95, 0.96, 0.955, 0.951], [0.80, 0.81, 0.799, 0.805]
    j = judge(hold("bootstrap"), "maximize", c, b)
    assert j.passed and 0 < j.statistic < j.improvement and "bootstrap 95% lower bound" in j.reason
    assert judge(hold("bootstrap"), "maximize", c, b) == j  # fixed seed: the gate re-derives the same verdict
    # 3 seeds a side: null values separate completely 1 time in 20, so p can never go below 0.05
    three = judge(hold("bootstrap"), "maximize", c[:3], b[:3])
    assert not three.passed and three.p_value == pytest.approx(1 / 20)
    assert "(with 3 and 3 seeds no p below 1/20), p=0.05 >= alpha 0.05: not significant" in three.reason


def test_min_delta_and_the_exact_case():
    j = judge(hold("welch", min_delta=0.2), "maximize", [0.95, 0.952, 0.951], [0.80, 0.81, 0.799])
    assert not j.passed and "not above min_delta 0.2" in j.reason
    exact = judge(hold("welch"), "minimize", [0.1, 0.1, 0.1], [0.2, 0.2, 0.2])  # no spread at all: the difference is exact
    assert exact.passed and exact.p_value == 0.0
    assert not judge(hold("welch"), "maximize", [0.1, 0.1], [0.1, 0.1]).passed


def test_noise_floor_rule():
    h = hold("noise_floor", noise_k=2.0, min_floor=0.005)
    j = judge(h, "maximize", [0.95, 0.96, 0.955], [0.90, 0.91, 0.905])
    assert j.passed and j.noise_floor == pytest.approx(0.01) and j.p_value is None
    assert "> noise floor 0.01 (2 x stdev 0.005, at least 0.005)" in j.reason
    small = judge(h, "maximize", [0.906, 0.915, 0.91], [0.90, 0.91, 0.905])
    assert not small.passed and not small.inconclusive
    assert judge(h, "maximize", [0.906, 0.915, 0.91], [0.90, 0.91, 0.905], look=1, looks=3).inconclusive


def test_sequential_looks_spend_alpha_and_stop_for_futility():
    h = hold("welch", seeds=[0, 1, 2], max_seeds=9)
    assert schedule(h) == [3, 6, 9] and looks(h) == 3
    assert schedule(hold(seeds=[0, 1, 2], max_seeds=10)) == [3, 6, 9, 10] and schedule(hold()) == [3]
    c, b = [0.91, 0.93, 0.90], [0.89, 0.91, 0.90]  # better, not yet significant
    first = judge(h, "maximize", c, b, look=1, looks=3)
    assert not first.passed and first.inconclusive and "inconclusive at look 1 of 3" in first.reason
    assert "alpha 0.05/3 looks = 0.0167" in first.reason
    assert not judge(h, "maximize", c, b, look=3, looks=3).inconclusive  # no look left
    assert not judge(h, "maximize", b, c, look=1, looks=3).inconclusive  # worse: more seeds will not help
    c, b = [0.92, 0.95, 0.94], [0.90, 0.92, 0.91]
    assert 0.05 / 3 < judge(h, "maximize", c, b).p_value < 0.05  # passes with one look, not with three
    assert judge(h, "maximize", c, b).passed and not judge(h, "maximize", c, b, look=1, looks=3).passed


values = st.lists(st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False), min_size=2, max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(RULES), values, values, st.integers(1, 3))
@example("welch", [0.0, 2.887480444230626e-288], [0.0, 2.887480444230626e-288], 1)  # variance underflows: NaN p
@example("paired", [0.0, 1e-300], [0.0, 0.0], 1)
@example("bootstrap", [0.0, 0.0], [0.0, 8.62152250142131e-94], 1)  # a degenerate interval: NaN p on both sides
def test_direction_symmetry(rule, c, b, look):
    """Maximizing x is minimizing -x: the same verdict, improvement, statistic and p-value (NaN as NaN)."""
    b = b[: len(c)] if rule == "paired" else b
    c = c[: len(b)] if rule == "paired" else c
    h = hold(rule)
    up = judge(h, "maximize", c, b, look, 3)
    down = judge(h, "minimize", [-x for x in c], [-x for x in b], look, 3)
    assert (up.passed, up.inconclusive) == (down.passed, down.inconclusive)
    for x, y in ((up.p_value, down.p_value), (up.statistic, down.statistic)):
        assert x == y or (x is not None and y is not None and math.isnan(x) and math.isnan(y)), (x, y)
    assert up.improvement == pytest.approx(down.improvement) and up.noise_floor == pytest.approx(down.noise_floor)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(RULES), values, values, st.sampled_from([math.nan, math.inf, -math.inf]), st.booleans(), st.data())
def test_a_nan_or_infinite_value_anywhere_fails(rule, c, b, bad, on_candidate, data):
    side = c if on_candidate else b
    side.insert(data.draw(st.integers(0, len(side))), bad)
    j = judge(hold(rule), "maximize", c, b, 1, 3)
    assert not j.passed and not j.inconclusive and j.improvement is None and "is not a finite number" in j.reason


def test_bh_matches_a_hand_computed_example():
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4/1, x4/2, x4/3, x4/4 = 0.02, 0.02, 0.04, 0.04 (already monotone)
    assert bh_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # step-up: 0.04 x 3/2 = 0.06 is lowered to the next rank's 0.045 x 3/3
    assert bh_adjust([0.04, 0.045, 0.001]) == pytest.approx([0.045, 0.045, 0.003])
    assert bh_adjust([]) == [] and bh_adjust([0.2]) == [0.2]
    assert bh_adjust([math.nan, 0.01]) == pytest.approx([1.0, 0.02])  # a NaN counts as a comparison, never significant


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_bh_is_monotone_and_never_below_the_raw_p(ps):
    adjusted = bh_adjust(ps)
    assert all(p <= a <= 1 for p, a in zip(ps, adjusted, strict=True))
    for i in range(len(ps)):
        for k in range(len(ps)):
            if ps[i] <= ps[k]:
                assert adjusted[i] <= adjusted[k]
