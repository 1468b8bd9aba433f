"""Each verifier rule's false-accept rate over simulated null edits (`senpai.ledger.stats`): thousands
of simulated experiments per rule, seconds each, so not a unit test."""

import math

import numpy as np
import pytest

from senpai.config.target import Holdout
from senpai.ledger.stats import judge, schedule

NULL_EXPERIMENTS = 2000
TOLERANCE = 4 * math.sqrt(0.05 * 0.95 / NULL_EXPERIMENTS)  # 4 binomial standard errors at alpha 0.05: about 0.019


def hold(rule: str = "welch", **kw) -> Holdout:
    base = dict(command="python eval.py {artifact} {holdout}", files=["eval.py"], metric="acc", rule=rule)
    base |= {"min_floor": 0.0} if rule == "noise_floor" else {}
    return Holdout(**{**base, **kw})


def _accept_rate(h: Holdout, effect: float, experiments: int, seed: int = 2026) -> float:
    """Share of simulated experiments the verifier accepts: normal holdout values (sd 1), the candidate
    `effect` sd better, looking at `schedule(h)` seeds until a verdict is not inconclusive."""
    rng, plan, accepted = np.random.default_rng(seed), schedule(h), 0
    for _ in range(experiments):
        c, b = rng.normal(effect, 1, plan[-1]), rng.normal(0, 1, plan[-1])
        for look, n in enumerate(plan, 1):
            j = judge(h, "maximize", list(c[:n]), list(b[:n]), look, len(plan))
            if not j.inconclusive:
                break
        accepted += j.passed
    return accepted / experiments


@pytest.mark.parametrize(
    "rule, seeds, max_seeds, experiments",
    [
        ("welch", 3, None, NULL_EXPERIMENTS),
        ("paired", 3, None, NULL_EXPERIMENTS),
        ("bootstrap", 4, None, NULL_EXPERIMENTS),
        ("welch", 3, 9, NULL_EXPERIMENTS),
        ("paired", 3, 9, NULL_EXPERIMENTS),
        ("bootstrap", 3, 9, NULL_EXPERIMENTS // 2),  # up to 3 bootstraps of 9999 resamples per experiment
    ],
)
def test_false_accept_rate_on_null_edits_is_at_most_alpha(rule, seeds, max_seeds, experiments):
    """A behaviour count over simulated null edits (fixed seed); and the rule does accept a real effect."""
    h = hold(rule, seeds=list(range(seeds)), max_seeds=max_seeds)
    rate = _accept_rate(h, 0.0, experiments)
    tolerance = 4 * math.sqrt(h.alpha * (1 - h.alpha) / experiments)
    assert rate <= h.alpha + tolerance, f"{rule}: {rate:.4f} of null edits accepted"
    assert _accept_rate(h, 4.0, 100) >= 0.8  # 4 sd better: a rule that never accepts would pass the line above


def test_noise_floor_accepts_null_edits_as_often_as_its_t_bound_says():
    """No alpha is claimed: with min_floor 0, a null edit passes when t(n-1) > noise_k sqrt(n/2)
    (6.7% for 3 seeds, k 2); min_floor lowers it."""
    from scipy import stats as sp  # scipy (a second): when run, not when the suite is collected

    h = hold("noise_floor", seeds=[0, 1, 2], noise_k=2.0, min_floor=0.0)
    expected = float(sp.t.sf(2.0 * math.sqrt(3 / 2), df=2))
    assert _accept_rate(h, 0.0, NULL_EXPERIMENTS) == pytest.approx(expected, abs=TOLERANCE)
    assert _accept_rate(hold("noise_floor", seeds=[0, 1, 2], min_floor=2.0), 0.0, NULL_EXPERIMENTS) < expected / 2
