"""Ledger blocks: strict render/parse round trip, and clear errors for human-broken YAML."""

import math

import pytest

from senpai.errors import LedgerFormatError
from senpai.ledger.blocks import (
    BaselineRef,
    BudgetRef,
    Cost,
    Decision,
    Evidence,
    Hypothesis,
    MetricRef,
    PrimaryResult,
    RunRef,
    Verification,
    find_block,
    parse_blocks,
    render,
)

HYP = Hypothesis(
    id="h-0123456789",
    hypothesis="wider layers help",
    rationale="TPE",
    plan="edit params.json",
    params={"alpha": 0.001, "activation": "relu", "units": 64, "early": True},
    metric=MetricRef(name="val_accuracy", direction="maximize"),
    baseline=BaselineRef(commit="a" * 40, run_id=None, value=None),
    budget=BudgetRef(wall_seconds=60, attempts=2),
    stop_condition="2 attempts",
    student="ada",
)
EVIDENCE = Evidence(
    pr=3,
    attempt=1,
    student="ada",
    head="b" * 40,
    command="python train.py",
    outcome="ok",
    runs=[RunRef(id="digits-pr3-a1", url=None, state="finished")],
    metrics={"val_accuracy": 0.95, "loss": 0.1},
    primary=PrimaryResult(name="val_accuracy", value=0.95, baseline=0.8, delta=0.15),
    interpretation="better",
    cost=Cost(wall_seconds=2.5),
    log_tail="line 1\n```\nline 3",
)
VERIFICATION = Verification(
    pr=3,
    candidate="b" * 40,
    baseline="a" * 40,
    metric="holdout_accuracy",
    direction="maximize",
    seeds=[0, 1],
    candidate_values=[0.9, 0.91],
    baseline_values=[0.8, 0.82],
    candidate_mean=0.905,
    baseline_mean=0.81,
    improvement=0.095,
    noise_floor=0.028,
    passed=True,
    reason="beats the floor",
)
DECISION = Decision(pr=3, head="b" * 40, verdict="merge", reason="verified", metric="val_accuracy", improvement=0.095)


@pytest.mark.parametrize("block", [HYP, EVIDENCE, VERIFICATION, DECISION], ids=lambda b: b.KIND)
def test_round_trip_is_exact(block):
    text = f"Some prose a human wrote.\n\n{render(block)}\n\nMore prose."
    assert parse_blocks(text) == [block]
    assert find_block(text, type(block)) == block
    assert render(parse_blocks(render(block))[0]) == render(block)


def test_nan_survives_the_round_trip():
    ev = EVIDENCE.model_copy(
        update={"primary": PrimaryResult(name="val_accuracy", value=float("nan"), baseline=None, delta=None)}
    )
    back = parse_blocks(render(ev))[0]
    assert math.isnan(back.primary.value)


def test_several_blocks_in_order():
    text = "\n".join(render(b) for b in (EVIDENCE, VERIFICATION, DECISION))
    assert [b.KIND for b in parse_blocks(text)] == ["evidence", "verification", "decision"]


def test_invalid_yaml_names_the_block():
    broken = render(HYP).replace("student: ada", "student: [ada")
    with pytest.raises(LedgerFormatError, match="senpai-hypothesis block is not valid YAML"):
        parse_blocks(broken)


def test_schema_error_names_the_field():
    broken = render(HYP).replace("attempts: 2", "attempts: two")
    with pytest.raises(LedgerFormatError, match=r"budget\.attempts"):
        parse_blocks(broken)


def test_unknown_field_is_rejected():
    broken = render(DECISION).replace("verdict: merge", "verdict: merge\nsurprise: 1")
    with pytest.raises(LedgerFormatError, match="surprise"):
        parse_blocks(broken)


def test_unknown_kind_is_rejected():
    with pytest.raises(LedgerFormatError, match="unknown block kind"):
        parse_blocks("```senpai-wish\na: 1\n```")
