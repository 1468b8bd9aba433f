"""The search explores before it exploits: a Sobol start that covers the space, then TPE, which
learns from validation values only (the holdout never reaches the proposer)."""

import json
from pathlib import Path

import yaml
from pydantic import TypeAdapter

from senpai.agents.search.advisor import _history
from senpai.agents.search.propose import propose, startup_size
from senpai.config.target import Metric, ParamSpec
from senpai.ledger.blocks import (
    BaselineRef,
    BudgetRef,
    Evidence,
    Hypothesis,
    MetricRef,
    PrimaryResult,
    Verification,
)
from senpai.ledger.diversity import distance
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState

DIGITS = Path(__file__).resolve().parents[2] / "examples" / "digits"
TARGET = yaml.safe_load((DIGITS / "senpai.yaml").read_text())
SPACE = {k: TypeAdapter(ParamSpec).validate_python(v) for k, v in TARGET["params"]["space"].items()}
BASE = json.loads((DIGITS / "params.json").read_text())
METRIC = Metric(name="val_accuracy", direction="maximize")


def _turns(values, turns: int, students: int = 2, seed: int = 0) -> list[dict]:
    """The points `turns` advisor turns propose, each point's value `values(point)` once it ran."""
    history = [(BASE, 0.9)]
    out = []
    for _ in range(turns):
        for p in propose(SPACE, METRIC, history, students, seed=seed):
            out.append(p)
            history.append(({**BASE, **p}, values(p)))
    return out


def test_the_startup_is_spread_over_every_choice_and_ignores_the_values():
    n = startup_size(SPACE)
    assert n >= 10
    points = _turns(lambda p: 0.5, (n - 1) // 2)
    for name in ("activation", "batch_size"):  # every choice of each categorical within the first 8
        assert {p[name] for p in points[:8]} == set(SPACE[name].choices), name
    assert min(distance(a, b, SPACE) for i, a in enumerate(points) for b in points[:i]) > 0.15
    # the values do not steer the startup: a different result per point, the same points
    assert _turns(lambda p: p["hidden_width"] / 128, (n - 1) // 2) == points


def test_after_the_startup_tpe_learns_from_the_values():
    n = startup_size(SPACE)
    startup = (n + 1) // 2  # turns until the history holds `n` points of the space
    tanh = _turns(lambda p: 0.95 if p["activation"] == "tanh" else 0.6, startup + 3)
    relu = _turns(lambda p: 0.95 if p["activation"] == "relu" else 0.6, startup + 3)
    assert tanh[: 2 * startup] == relu[: 2 * startup]
    assert [p["activation"] for p in tanh[2 * startup :]].count("tanh") >= 4
    assert [p["activation"] for p in relu[2 * startup :]].count("relu") >= 4


def _experiment(pr: int, params: dict, validation: float, holdout: float) -> Experiment:
    head, base = f"{pr:040x}", "b" * 40
    h = Hypothesis(
        id=f"h-{pr:010x}", hypothesis="x", rationale="x", plan="x", params=params,
        metric=MetricRef(name="val_accuracy", direction="maximize"), baseline=BaselineRef(commit=base, run_id=None, value=0.9),
        budget=BudgetRef(wall_seconds=60, attempts=1), stop_condition="1 attempt", student="ada",
    )  # fmt: skip
    evidence = Evidence(
        pr=pr, attempt=1, student="ada", head=head, command="python train.py", outcome="ok",
        primary=PrimaryResult(name="val_accuracy", value=validation, baseline=0.9, delta=validation - 0.9), interpretation="x",
    )  # fmt: skip
    verification = Verification(
        pr=pr, candidate=head, baseline=base, metric="holdout_accuracy", direction="maximize", seeds=[0, 1, 2],
        candidate_values=[holdout] * 3, baseline_values=[0.8] * 3, candidate_mean=holdout, baseline_mean=0.8,
        improvement=holdout - 0.8, noise_floor=0.01, passed=holdout > 0.81, reason="x",
    )  # fmt: skip
    return Experiment(
        pr=pr, title="x", url="", branch=f"senpai/ada/{h.id}", head=head, student="ada", state=ExperimentState.CLOSED,
        updated_at="2026-12-06T00:00:00Z", hypothesis=h, evidence=[evidence], verifications=[verification], decisions=[],
    )  # fmt: skip


def test_the_proposer_learns_from_validation_evidence_only():
    points = _turns(lambda p: 0.5, startup_size(SPACE))

    def ledger(holdout):
        return [
            _experiment(i, {**BASE, **p}, validation=0.5 + i / 100, holdout=holdout(i)) for i, p in enumerate(points, start=2)
        ]

    history = _history(ledger(lambda i: 0.9))
    assert [v for _, v in history] == [0.5 + i / 100 for i in range(2, len(points) + 2)]
    assert len(history) >= startup_size(SPACE)  # past the startup: TPE models these values
    proposed = propose(SPACE, METRIC, history, 3, seed=0)
    # holdout values that would rank the points the other way round change nothing
    assert propose(SPACE, METRIC, _history(ledger(lambda i: 1 - i / 100)), 3, seed=0) == proposed
    # and validation values do: the proposer reads them
    flipped = [(p, 1 - v) for p, v in history]
    assert propose(SPACE, METRIC, flipped, 3, seed=0) != proposed
