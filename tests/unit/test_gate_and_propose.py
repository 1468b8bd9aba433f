"""The merge gate refuses what it must; Optuna proposals are seeded and never repeat a point."""

import pytest
from pydantic import TypeAdapter

from senpai.agents.search.propose import point_key, propose
from senpai.config.target import Metric, ParamSpec, TargetConfig
from senpai.errors import MergeRefused, PermanentError
from senpai.ledger.blocks import Verification
from senpai.ledger.gate import check_merge

TARGET = TargetConfig.model_validate(
    {
        "name": "t",
        "train": "python train.py",
        "metric": {"name": "acc", "direction": "maximize"},
        "params": {"file": "params.json", "space": {"a": {"type": "int", "low": 1, "high": 3}}},
        "protected": ["eval/", "data.py"],
    }
)
H, B = "h" * 40, "b" * 40


def _v(**kw) -> Verification:
    base = dict(
        pr=1,
        candidate=H,
        baseline=B,
        metric="acc",
        direction="maximize",
        seeds=[0, 1],
        candidate_values=[0.9, 0.92],
        baseline_values=[0.8, 0.81],
        candidate_mean=0.91,
        baseline_mean=0.805,
        improvement=0.105,
        noise_floor=0.02,
        passed=True,
        reason="ok",
    )
    return Verification(**{**base, **kw})


def test_gate_allows_a_verified_improvement():
    check_merge(TARGET, H, B, ["params.json"], _v())


@pytest.mark.parametrize(
    "files, v, match",
    [
        (["eval/holdout.py"], _v(), "protected paths: eval/holdout.py"),
        (["senpai.yaml"], _v(), "protected paths: senpai.yaml"),
        (["data.py", "params.json"], _v(), "protected paths: data.py"),
        (["params.json"], None, "no verification"),
        (["params.json"], _v(candidate="x" * 40), "stale"),
        (["params.json"], _v(baseline="y" * 40), "stale"),
        (["params.json"], _v(candidate_values=[float("nan"), 0.9]), "NaN"),
        (["params.json"], _v(improvement=float("inf")), "NaN, infinite"),
        (["params.json"], _v(improvement=0.01, noise_floor=0.02), "does not beat the noise floor"),
        (["params.json"], _v(passed=False), "does not beat the noise floor"),
    ],
)
def test_gate_refuses(files, v, match):
    with pytest.raises(MergeRefused, match=match):
        check_merge(TARGET, H, B, files, v)


SPACE = {
    k: TypeAdapter(ParamSpec).validate_python(v)
    for k, v in {
        "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
        "units": {"type": "int", "low": 8, "high": 256, "log": True},
        "act": {"type": "categorical", "choices": ["relu", "tanh"]},
    }.items()
}
METRIC = Metric(name="acc", direction="maximize")


def test_proposals_are_seeded_and_in_range():
    a = propose(SPACE, METRIC, [], 3, seed=7)
    assert a == propose(SPACE, METRIC, [], 3, seed=7)
    assert a != propose(SPACE, METRIC, [], 3, seed=8)
    for p in a:
        assert 1e-4 <= p["lr"] <= 1e-1 and 8 <= p["units"] <= 256 and p["act"] in ("relu", "tanh")


def test_never_reproposes_a_tried_point():
    history = []
    for _ in range(10):
        (point,) = propose(SPACE, METRIC, history, 1, seed=0)
        assert point_key(point) not in {point_key(p) for p, _ in history}
        history.append((point, 0.5))


def test_exhausted_space_is_a_permanent_error():
    tiny = {"a": TypeAdapter(ParamSpec).validate_python({"type": "categorical", "choices": [1, 2]})}
    history = [({"a": 1}, 0.1), ({"a": 2}, 0.2)]
    with pytest.raises(PermanentError, match="exhausted"):
        propose(tiny, METRIC, history, 1, seed=0, tries=10)
