"""A fixed compute budget, declared by the target (issue 25): the gate compares the candidate's
compute figure with the budget, never with the moving baseline's, and `senpai validate` refuses a
search space that reaches past it."""

import pytest
from pydantic import ValidationError
from test_gate_and_propose import TARGET, B, H, _v

from senpai.config.target import TargetConfig, budget_problems
from senpai.errors import MergeRefused
from senpai.ledger.gate import check_merge, compute_problem


def target(**compute) -> TargetConfig:
    data = TARGET.model_dump(mode="json")
    data["holdout"]["compute"] = {"key": "steps", "tolerance": 0.25, **compute}
    data["params"]["space"] = {"a": {"type": "int", "low": 1, "high": 3}, "steps": {"type": "int", "low": 100, "high": 3000}}
    return TargetConfig.model_validate(data)


def test_a_candidate_within_the_budget_merges_whatever_the_baseline_spent():
    """The ratchet the issue measured: a cheap merge (16 epochs) left 29 epochs refused at x1.81."""
    cheap_base = _v(candidate_compute=[2900.0] * 3, baseline_compute=[1600.0] * 3, candidate_seconds=[50.0] * 3)
    with pytest.raises(MergeRefused, match="x1.81"):
        check_merge(target(), H, B, ["params.json"], cheap_base)  # against the moving baseline: refused
    budgeted = target(budget=3000)
    check_merge(budgeted, H, B, ["params.json"], cheap_base)  # seconds (x5 here) are recorded, not compared
    assert compute_problem(budgeted.holdout, cheap_base, None) is None


@pytest.mark.parametrize(
    "compute, match",
    [
        ([3100.0, 3000.0, 2950.0], r"compute figure 'steps' 3017 > budget 3000 \(a trusted human may allow"),
        ([1000.0, 1000.0], "not measured on every candidate seed"),
        ([1000.0, -1.0, 1000.0], "not measured on every candidate seed"),
        ([1000.0, float("nan"), 1000.0], "not measured on every candidate seed"),
    ],
)
def test_a_candidate_over_the_budget_or_silent_about_it_is_refused(compute, match):
    v = _v(candidate_compute=compute, baseline_compute=[5000.0] * 3)  # even a costlier baseline changes nothing
    with pytest.raises(MergeRefused, match=match):
        check_merge(target(budget=3000), H, B, ["params.json"], v)
    assert compute_problem(target(budget=3000).holdout, v, "alice") is None  # a trusted allowance lifts it


def test_the_budget_needs_its_figure_and_the_space_must_fit_it():
    with pytest.raises(ValidationError, match="budget needs holdout.compute.key"):
        target(key=None, budget=3000)
    with pytest.raises(ValidationError, match="param needs holdout.compute.budget"):
        target(param="steps")
    assert budget_problems(target(budget=3000, param="steps")) == []
    (wide,) = budget_problems(target(budget=2000, param="steps"))
    assert "params.space.steps reaches 3000, over holdout.compute.budget 2000" in wide
    (missing,) = budget_problems(target(budget=3000, param="epochs"))
    assert "'epochs' is not an int or float param" in missing
    assert budget_problems(target(budget=3000)) == []  # no param named: nothing to check against the space
