"""The diversity alarm: a seeded collapse raises it, and the search runtime's next proposals move."""

import math

import pytest
from pydantic import TypeAdapter

from senpai.agents.search.propose import propose
from senpai.config.harness import DiversitySettings
from senpai.config.target import Metric, ParamSpec
from senpai.ledger import diversity
from senpai.ledger.blocks import BaselineRef, BudgetRef, Decision, Hypothesis, MetricRef, parse, render
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState

SPACE = {
    k: TypeAdapter(ParamSpec).validate_python(v)
    for k, v in {
        "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
        "units": {"type": "int", "low": 8, "high": 256},
        "act": {"type": "categorical", "choices": ["relu", "tanh"]},
    }.items()
}
METRIC = Metric(name="acc", direction="maximize")
SETTINGS = DiversitySettings()


def _exp(pr: int, params: dict, state=ExperimentState.MERGED, change: str | None = None, request: str | None = None):
    h = Hypothesis(
        id=f"h-{pr:010x}", hypothesis="x", rationale="x", plan="x", params=params, change=change,
        metric=MetricRef(name="acc", direction="maximize"), baseline=BaselineRef(commit="b" * 40, run_id=None, value=None),
        budget=BudgetRef(wall_seconds=60, attempts=1), stop_condition="1 attempt", student="ada", request=request,
    )  # fmt: skip
    closed = state == ExperimentState.CLOSED
    decisions = [Decision(pr=pr, head="a" * 40, verdict="close", reason="no improvement")] if closed else []
    return Experiment(
        pr=pr, title="x", url="", branch=f"senpai/ada/{h.id}", head="a" * 40, student="ada", state=state,
        updated_at="2026-12-03T00:00:00Z", hypothesis=h, evidence=[], verifications=[], decisions=decisions,
    )  # fmt: skip


def _collapsed_history() -> list[Experiment]:
    """Six proposals in one neighbourhood: lr around 0.01, 60-64 units, relu."""
    return [_exp(i, {"lr": 0.01 * (1 + i / 100), "units": 60 + i % 5, "act": "relu"}) for i in range(1, 7)]


def test_distance_is_a_fraction_on_each_params_scale():
    assert diversity.distance({"lr": 1e-4, "units": 8, "act": "relu"}, {"lr": 1e-1, "units": 256, "act": "tanh"}, SPACE) == 1
    assert diversity.distance({"lr": 0.01, "units": 64, "act": "relu"}, {"lr": 0.01, "units": 64, "act": "relu"}, SPACE) == 0
    # lr on its log scale: 1e-3 is a third of the way from 1e-4 to 1e-1
    d = diversity.distance({"lr": 1e-4, "units": 8, "act": "relu"}, {"lr": 1e-3, "units": 8, "act": "relu"}, SPACE)
    assert math.isclose(d, math.sqrt((1 / 3) ** 2 / 3))
    # units missing from one point counts 1, act missing from both 0
    assert diversity.distance({"lr": 0.01}, {"lr": 0.01, "units": 8}, SPACE) == pytest.approx(math.sqrt(1 / 3))


def test_a_seeded_collapse_raises_the_alarm_and_the_next_proposals_move():
    exps = _collapsed_history()
    reading = diversity.read(exps, SPACE, SETTINGS)
    assert reading.collapsed and reading.spread < SETTINGS.min_spread and "params spread" in reading.reason
    assert "Diversity alarm" in reading.directive()
    avoid = diversity.recent_points(exps, SETTINGS)
    history = [(e.hypothesis.params, 0.9) for e in exps]
    points = propose(SPACE, METRIC, history, 2, seed=0, avoid=avoid, radius=SETTINGS.min_spread)
    for p in points:
        assert min(diversity.distance(p, a, SPACE) for a in avoid) > SETTINGS.min_spread, p
    # with them in the ledger, the window is no longer collapsed
    moved = exps + [_exp(7 + i, p) for i, p in enumerate(points)]
    assert diversity.read(moved, SPACE, SETTINGS).spread > reading.spread


def test_a_spread_history_raises_no_alarm_and_a_short_one_none_yet():
    spread = [_exp(i, p) for i, p in enumerate(propose(SPACE, METRIC, [], 6, seed=3), start=1)]
    reading = diversity.read(spread, SPACE, SETTINGS)
    assert not reading.collapsed and reading.reason == "" and reading.directive() == ""
    assert not diversity.read(_collapsed_history()[:3], SPACE, SETTINGS).collapsed  # under `window` hypotheses


def test_re_proposing_near_a_rejected_point_raises_the_alarm():
    rejected = _exp(1, {"lr": 0.05, "units": 200, "act": "tanh"}, ExperimentState.CLOSED)
    far = [
        {"lr": 1e-4, "units": 8, "act": "relu"},
        {"lr": 1e-1, "units": 256, "act": "relu"},
        {"lr": 1e-3, "units": 128, "act": "tanh"},
    ]
    near = [{"lr": 0.05, "units": 200 + i, "act": "tanh"} for i in range(3)]
    exps = [rejected] + [_exp(i, p) for i, p in enumerate(far + near, start=2)]
    reading = diversity.read(exps, SPACE, SETTINGS)
    assert reading.spread > SETTINGS.min_spread  # spread out as a whole...
    assert reading.near_rejected == pytest.approx(3 / 6) and not reading.collapsed  # ...and half near: at the threshold
    more = exps + [_exp(8, {"lr": 0.05, "units": 199, "act": "tanh"})]
    reading = diversity.read(more, SPACE, SETTINGS)
    assert reading.collapsed and "of a rejected one" in reading.reason
    assert {"lr": 0.05, "units": 200, "act": "tanh"} in diversity.recent_points(more, SETTINGS)


def test_alike_code_changes_raise_the_alarm_and_a_humans_try_is_not_counted():
    change = "replace the optimizer's learning-rate schedule by cosine decay with warmup of {} steps"
    exps = [_exp(i, {}, change=change.format(100 + i)) for i in range(1, 7)]
    reading = diversity.read(exps, SPACE, SETTINGS)
    assert reading.collapsed and "code changes" in reading.reason and reading.spread is None
    tries = [_exp(i, {"lr": 0.01, "units": 64, "act": "relu"}, request=f"{i}:1:1/0") for i in range(1, 7)]
    assert diversity.read(tries, SPACE, SETTINGS).window == 0


def test_the_reading_is_recorded_in_the_hypothesis_block():
    h = _exp(1, {"lr": 0.01}).hypothesis.model_copy(update={"exploration": "params spread 0.012 < 0.1 over the last 6 points"})
    assert parse(render(h)) == h
