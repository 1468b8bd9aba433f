"""The merge gate refuses what it must; Optuna proposals are seeded and never repeat a point."""

import pytest
from pydantic import TypeAdapter

from senpai.agents.search.propose import point_key, propose
from senpai.config.target import Metric, ParamSpec, TargetConfig
from senpai.errors import MergeRefused, PermanentError
from senpai.job.measure import Outcome
from senpai.ledger.blocks import Verification
from senpai.ledger.comments import prose
from senpai.ledger.experiment import Experiment
from senpai.ledger.gate import check_merge, rival_p_values
from senpai.ledger.stats import judge
from senpai.verifier.evaluate import Trained
from senpai.verifier.judge import measure, refusal
from senpai.verifier.plan import NAMED_CHARS, Plan, named

TARGET = TargetConfig.model_validate(
    {
        "name": "t",
        "train": "python train.py",
        "metric": {"name": "acc", "direction": "maximize"},
        "params": {"file": "params.json", "space": {"a": {"type": "int", "low": 1, "high": 3}}},
        "holdout": {
            "command": "python eval/score.py {artifact} {holdout}",
            "files": ["eval/score.py"],
            "metric": "acc",
            "rule": "welch",
            "compute": {"key": "steps", "tolerance": 0.25},
            "guards": {"latency_ms": {"direction": "minimize", "tolerance": 5.0}},
        },
        "protected": ["eval/", "data.py"],
        "scope": ["params.json", "model/*.py"],
        "test": "python -m pytest -q",
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
        seeds=[0, 1, 2],
        candidate_values=[0.95, 0.952, 0.951],
        baseline_values=[0.80, 0.81, 0.799],
        candidate_mean=0.951,
        baseline_mean=0.803,
        improvement=0.148,
        noise_floor=None,
        rule="welch",
        candidate_seconds=[10.0, 11.0, 10.5],
        baseline_seconds=[10.0, 10.0, 10.0],
        candidate_compute=[1000.0, 1000.0, 1000.0],
        baseline_compute=[1000.0, 1000.0, 1000.0],
        guards={"latency_ms": [12.0, 10.0]},
        test_passed=True,
        passed=True,
        reason="ok",
    )
    return Verification(**{**base, **kw})


def test_gate_allows_a_verified_improvement():
    check_merge(TARGET, H, B, ["params.json", "model/net.py"], _v())
    check_merge(TARGET, H, B, ["params.json"], _v(), rivals={2: 0.5, 3: 0.9})  # weak rivals: BH keeps it significant


@pytest.mark.parametrize(
    "files, v, match",
    [
        (["eval/holdout.py"], _v(), "protected paths: eval/holdout.py"),
        (["senpai.yaml"], _v(), "protected paths: senpai.yaml"),
        (["data.py", "params.json"], _v(), "protected paths: data.py"),
        (
            ["params.json", "scratch.py", "logs/run.log", "model/train_copy.ipynb"],
            _v(),
            r"outside the experiment's scope \(params.json, model/\*.py\): logs/run.log, model/train_copy.ipynb, scratch.py",
        ),
        (["params.json"], None, "no verification"),
        (["params.json"], _v(candidate="x" * 40), "stale"),
        (["params.json"], _v(baseline="y" * 40), "stale"),
        (["params.json"], _v(metric="val_acc"), "measured 'val_acc', but senpai.yaml's holdout metric is 'acc'"),
        (["params.json"], _v(candidate_values=[float("nan"), 0.9, 0.9]), "NaN"),
        (["params.json"], _v(improvement=float("inf")), "NaN, infinite"),
        (
            ["params.json"],
            _v(candidate_values=[0.95, 0.96], baseline_values=[0.8, 0.81]),
            "2 seed\\(s\\) a side; senpai.yaml declares 3",
        ),
        # never trusts `passed`: the numbers say no improvement, whatever the block claims
        (["params.json"], _v(candidate_values=[0.81, 0.80, 0.805]), r"no improvement by rule welch: acc 0.805 vs 0.803"),
        (["params.json"], _v(passed=False, reason="too slow"), "the verifier did not pass it: too slow"),
        (
            ["params.json"],
            _v(candidate_seconds=[20.0, 21.0, 19.0]),
            r"training seconds 20 vs 10 is x2.00, over 1 \+ tolerance 0.25 \(a trusted human may allow this PR with `/senpai",
        ),
        (["params.json"], _v(candidate_compute=[2000.0, 2000.0, 2000.0]), "compute figure 'steps' 2000 vs 1000 is x2.00"),
        (["params.json"], _v(candidate_compute=[]), "compute figure 'steps' not measured"),
        # the candidate's own code prints its figure: a negative one, or one on its cheap seed only, is no measurement
        (["params.json"], _v(candidate_compute=[-1.0, -1.0, -1.0]), "compute figure 'steps' not measured"),
        (["params.json"], _v(candidate_compute=[10.0]), "compute figure 'steps' not measured .* on every seed"),
        (["params.json"], _v(baseline_seconds=[0.0, 0.0, 0.0]), "training seconds 10.5 vs 0 is xinf"),
        (
            ["params.json"],
            _v(guards={"latency_ms": [16.0, 10.0]}),
            "guard latency_ms regressed: 16 vs baseline 10 \\(tolerance 5\\)",
        ),
        (["params.json"], _v(guards={}), "guard latency_ms was not measured"),
        (["params.json"], _v(test_passed=False), "test command failed on the candidate"),
        (["params.json"], _v(test_passed=None), "test command was not run"),
        # the forge's list was read after a push; the verification's own list is of the measured pair
        (["params.json"], _v(files=["params.json", "scratch.py"]), "outside the experiment's scope .*: scratch.py"),
        ([], _v(files=["senpai.yaml"]), "touches protected paths: senpai.yaml"),
    ],
)
def test_gate_refuses(files, v, match):
    with pytest.raises(MergeRefused, match=match):
        check_merge(TARGET, H, B, files, v)


def test_a_trusted_allowance_lifts_only_the_compute_check():
    slow = _v(candidate_seconds=[20.0, 21.0, 19.0], candidate_compute=[3000.0] * 3)
    check_merge(TARGET, H, B, ["params.json"], slow, compute_allowed_by="alice")
    worse = _v(candidate_seconds=[20.0] * 3, guards={"latency_ms": [30.0, 1.0]})
    with pytest.raises(MergeRefused, match="guard latency_ms regressed"):
        check_merge(TARGET, H, B, ["params.json"], worse, compute_allowed_by="alice")


def test_competing_verifications_are_corrected_with_benjamini_hochberg():
    v = _v(candidate_values=[0.83, 0.85, 0.84], baseline_values=[0.80, 0.82, 0.81])
    p = judge(TARGET.holdout, "maximize", v.candidate_values, v.baseline_values).p_value
    assert p == pytest.approx(0.0107, abs=1e-4)
    check_merge(TARGET, H, B, ["params.json"], v, rivals={2: 0.9})  # 0.0107 x 2/1 = 0.021 < 0.05
    # BH, not Bonferroni: among strong rivals its rank counts (0.0107 x 6/5 = 0.013; Bonferroni would say 0.064)
    check_merge(TARGET, H, B, ["params.json"], v, rivals={2: 0.001, 3: 0.002, 4: 0.003, 5: 0.004, 6: 0.9})
    refused = r"Benjamini-Hochberg over 6 verifications against base bbbbbbbb \(with #2, #3, #4, #5, #6\): p=0.011 becomes 0.064"
    with pytest.raises(MergeRefused, match=refused + " >= alpha 0.05"):
        check_merge(TARGET, H, B, ["params.json"], v, rivals={n: 0.9 for n in range(2, 7)})


def test_rivals_are_the_latest_verification_of_each_other_pr_against_the_same_base():
    def exp(pr: int, *vs: Verification) -> Experiment:
        return Experiment(
            pr=pr, title="t", url="u", branch="b", head=H, student="ada", state="closed", updated_at="2026-01-01T00:00:00+00:00",
            hypothesis=None, evidence=[], verifications=list(vs), decisions=[],
        )  # fmt: skip

    null = dict(candidate_values=[0.80, 0.81, 0.80], baseline_values=[0.80, 0.81, 0.799])
    exps = [
        exp(1, _v()),  # the PR being merged: not its own rival
        exp(2, _v(pr=2), _v(pr=2, **null)),  # the latest counts, re-judged from its numbers
        exp(3, _v(pr=3, baseline="y" * 40)),  # another base: not competing
        exp(4, _v(pr=4, candidate_values=[float("nan"), 0.9, 0.9])),  # a NaN still counts, as p = 1
        exp(5),
    ]
    rivals = rival_p_values(TARGET, exps, 1, B)
    assert sorted(rivals) == [2, 4] and rivals[4] == 1.0
    expected = judge(TARGET.holdout, "maximize", null["candidate_values"], null["baseline_values"]).p_value
    assert rivals[2] == pytest.approx(expected) and expected > 0.3
    floor = TARGET.model_copy(update={"holdout": TARGET.holdout.model_copy(update={"rule": "noise_floor", "min_floor": 0.01})})
    assert rival_p_values(floor, exps, 1, B) == {}


def test_noise_floor_target_is_judged_by_its_floor():
    hold = TARGET.holdout.model_copy(update={"rule": "noise_floor", "min_floor": 0.05})
    target = TARGET.model_copy(update={"holdout": hold})
    check_merge(target, H, B, ["params.json"], _v(), rivals={2: 0.9})  # no p-value: BH does not apply
    with pytest.raises(MergeRefused, match="acc 0.841 vs 0.803: \\+0.038 <= noise floor 0.05"):
        check_merge(target, H, B, ["params.json"], _v(candidate_values=[0.84, 0.842, 0.841]))


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


def test_a_file_list_the_forge_truncated_is_refused_before_any_run():
    unlisted = "PR #1 changes 3001 files; the forge lists only 3000, so its scope cannot be checked"
    plan = Plan(pr=1, candidate="c" * 40, baseline="b" * 40, files=["params.json"], protected_touched=[], out_of_scope=[])
    assert refusal(TARGET, plan) is None
    v = refusal(TARGET, plan.model_copy(update={"unlisted": unlisted}))
    assert v is not None and not v.passed and v.seeds == []
    assert v.reason == f"refused without running: {unlisted}: split it"


def test_a_refusal_names_a_bounded_number_of_paths():
    paths = [f"scratch/{'x' * 90}{i:03}.py" for i in range(300)]
    plan = Plan(pr=1, candidate="c" * 40, baseline="b" * 40, files=paths, protected_touched=[], out_of_scope=paths)
    v = refusal(TARGET, plan)
    assert v is not None and len(v.reason) < 2 * NAMED_CHARS and v.reason.endswith("008.py and 291 more")
    assert named(["a" * 5000]) == "a" * NAMED_CHARS and named(["a", "b"]) == "a, b"


# A model trained on a loss (lower is better) whose evaluator prints accuracy (higher is better):
# the holdout declares its own direction, and the verifier and the gate judge by it (issue 24, finding 4).
C = "c" * 40  # a sha the verifier's plan accepts
LOSS_TRAINED = TargetConfig.model_validate(
    {
        "name": "t",
        "train": "python train.py",
        "metric": {"name": "val_loss", "direction": "minimize"},
        "params": {"file": "params.json", "space": {"a": {"type": "int", "low": 1, "high": 3}}},
        "holdout": {
            "command": "python eval/score.py {artifact} {holdout}",
            "files": ["eval/score.py"],
            "metric": "holdout_accuracy",
            "direction": "maximize",
            "min_floor": 0.01,
            "compute": {"seconds": False},
        },
        "protected": ["eval/"],
    }
)


def _verified(candidate: float, baseline: float) -> Verification:
    """What the real verifier (`judge.measure`) records when each side's evaluator prints these
    holdout accuracies (+ 0.001 per seed) for LOSS_TRAINED."""
    plan = Plan(pr=1, candidate=C, baseline=B, files=["params.json"], protected_touched=[], out_of_scope=[], merged=C)
    means = {"candidate": candidate, "baseline": baseline}

    def train(side: str, seed: int) -> Trained:
        return Trained(side=side, seed=seed, returncode=0, seconds=1.0, compute=None, artifact=f"/a/{side}", digest="d", tail="")

    def score(t: Trained) -> tuple[Outcome, None]:
        return Outcome(0, 0.1, "", {"holdout_accuracy": str(means[t.side] + 0.001 * t.seed)}), None

    return measure(LOSS_TRAINED, plan, train, score, None)


def test_the_verifier_and_the_gate_judge_by_the_holdout_direction():
    assert LOSS_TRAINED.holdout_direction == "maximize" and TARGET.holdout_direction == "maximize"  # default: metric's
    better = _verified(candidate=0.90, baseline=0.80)  # higher holdout accuracy: better, though val_loss is minimised
    assert better.passed and better.direction == "maximize" and better.improvement == pytest.approx(0.10)
    check_merge(LOSS_TRAINED, C, B, ["params.json"], better)
    worse = _verified(candidate=0.70, baseline=0.80)
    assert not worse.passed and worse.improvement == pytest.approx(-0.10)
    with pytest.raises(MergeRefused, match="no improvement by rule noise_floor: holdout_accuracy 0.701 vs 0.801: -0.1"):
        check_merge(LOSS_TRAINED, C, B, ["params.json"], worse)
    # numbers judged the other way (a verification from before holdout.direction was declared) never merge
    flipped = worse.model_copy(update={"direction": "minimize", "improvement": 0.1, "passed": True})
    with pytest.raises(MergeRefused, match="judged holdout_accuracy as minimize, but senpai.yaml's holdout direction is max"):
        check_merge(LOSS_TRAINED, C, B, ["params.json"], flipped)
    assert "**Direction** higher holdout_accuracy is better" in prose("verification.md.j2", v=better)
