"""Multi-arm experiments: the arms' block, the correction for their number, the neighbours the search
advisor proposes and the winner the student picks."""

import pytest
from forge_fixtures import experiment
from pydantic import TypeAdapter, ValidationError

from senpai.agents.evidence import Measured, train_timeout
from senpai.agents.search.propose import neighbours
from senpai.agents.student_steps import best_arm
from senpai.config.harness import HarnessConfig
from senpai.config.target import Metric, ParamSpec, TargetConfig
from senpai.config.time_limits import TimeLimits
from senpai.errors import MergeRefused
from senpai.fleet.base import ENV_DEADLINE
from senpai.ledger.blocks import Arm, BaselineRef, BudgetRef, Hypothesis, MetricRef, RunRef, Verification, parse, render
from senpai.ledger.gate import check_merge
from senpai.ledger.stats import for_arms, judge
from senpai.wrapper.actions import Launch
from senpai.wrapper.dispatch import Dispatcher, JobInputs

H, B = "h" * 40, "b" * 40
TARGET = TargetConfig.model_validate(
    {
        "name": "t",
        "train": "python train.py",
        "metric": {"name": "acc", "direction": "maximize"},
        "params": {"file": "params.json", "space": {"w": {"type": "float", "low": 0.0, "high": 1.0}}},
        "holdout": {"command": "python score.py {artifact} {holdout}", "files": ["score.py"], "metric": "acc", "rule": "welch"},
        "protected": ["score.py"],
        "scope": ["params.json"],
    }
)


def _h(arms) -> Hypothesis:
    return Hypothesis(
        id="h-1", hypothesis="w", rationale="r", plan="p", params={"w": 0.5},
        metric=MetricRef(name="val", direction="maximize"), baseline=BaselineRef(commit=B, run_id=None, value=None),
        budget=BudgetRef(wall_seconds=60, attempts=1), stop_condition="s", student="ada", arms=arms,
    )  # fmt: skip


def test_arms_round_trip_and_override_the_hypothesis_params():
    h = _h([Arm(name="control", control=True), Arm(name="up", params={"w": 0.6})])
    assert parse(render(h)) == h and h.arm_count() == 2
    assert [h.arm_params(a) for a in h.arms] == [{"w": 0.5}, {"w": 0.6}]
    assert _h(None).arm_count() == 1


@pytest.mark.parametrize(
    "arms, match",
    [
        ([Arm(name="a", control=True)], "2 to 8 arms"),
        ([Arm(name="a", control=True), Arm(name="a")], "distinct names"),
        ([Arm(name="a"), Arm(name="b")], "exactly one arm must be the control"),
        ([Arm(name="a", control=True), Arm(name="b", control=True)], "exactly one arm must be the control"),
    ],
)
def test_bad_arms_are_refused(arms, match):
    with pytest.raises(ValidationError, match=match):
        _h(arms)


def test_the_correction_is_bonferroni_for_tests_and_a_wider_floor_for_the_noise_floor():
    hold = TARGET.holdout
    assert for_arms(hold, 1) is hold
    three = for_arms(hold, 3)
    assert three.alpha == pytest.approx(hold.alpha / 3)
    floor = hold.model_copy(update={"rule": "noise_floor", "min_floor": 0.01})
    wide = for_arms(floor, 3)
    assert wide.noise_k / floor.noise_k == pytest.approx(1.2938, abs=1e-3)  # z(1 - 0.05/3) / z(0.95)
    assert wide.min_floor == pytest.approx(0.01 * 1.2938, abs=1e-5)


def _v(candidate: list[float], baseline: list[float]) -> Verification:
    j = judge(TARGET.holdout, "maximize", candidate, baseline)
    return Verification(
        pr=1, candidate=H, baseline=B, metric="acc", direction="maximize", seeds=[0, 1, 2],
        candidate_values=candidate, baseline_values=baseline, candidate_mean=sum(candidate) / 3,
        baseline_mean=sum(baseline) / 3, improvement=j.improvement, noise_floor=None, rule="welch",
        p_value=j.p_value, candidate_seconds=[1.0] * 3, baseline_seconds=[1.0] * 3, passed=True, reason="ok",
    )  # fmt: skip


def test_the_gate_refuses_a_win_that_does_not_survive_the_number_of_arms():
    v = _v([0.82, 0.81, 0.84], [0.79, 0.80, 0.78])
    p = judge(TARGET.holdout, "maximize", v.candidate_values, v.baseline_values).p_value
    assert 0.05 / 3 < p < 0.05  # significant for one arm, not for three
    check_merge(TARGET, H, B, ["params.json"], v)
    with pytest.raises(MergeRefused, match=r"p=0.021 >= alpha 0.0166667: not significant \(the rule corrected for 3 arms\)"):
        check_merge(TARGET, H, B, ["params.json"], v, arms=3)


SPACE = {
    k: TypeAdapter(ParamSpec).validate_python(v)
    for k, v in {
        "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
        "units": {"type": "int", "low": 8, "high": 10},
        "act": {"type": "categorical", "choices": ["relu", "tanh"]},
    }.items()
}


def test_neighbours_move_one_param_a_step_inside_the_space_and_skip_tried_points():
    point = {"lr": 0.01, "units": 10, "act": "relu"}
    near = neighbours(SPACE, point, 4)
    assert near == [{"act": "tanh"}, {"lr": 0.01995}, {"lr": 0.005012}, {"units": 9}]  # act down, units up: clipped
    assert neighbours(SPACE, point, 2, tried=[{**point, "act": "tanh"}]) == [{"lr": 0.01995}, {"lr": 0.005012}]
    assert neighbours({"act": SPACE["act"]}, {"act": "relu"}, 3) == [{"act": "tanh"}]  # fewer when the space has no more


def _m(value, failure=None) -> Measured:
    return Measured(value, failure, RunRef(id=f"r{value}", url=None, state="finished"), {}, 1.0, "")


def test_the_best_arm_wins_the_control_on_a_tie_and_when_all_fail():
    c, a, b = Arm(name="control", control=True), Arm(name="a"), Arm(name="b")
    acc, loss = Metric(name="acc", direction="maximize"), Metric(name="loss", direction="minimize")
    assert best_arm([(c, _m(0.5)), (a, _m(0.7)), (b, _m(0.6))], acc)[0] is a
    assert best_arm([(c, _m(0.5)), (a, _m(0.7)), (b, _m(0.6))], loss)[0] is c
    assert best_arm([(a, _m(0.5)), (c, _m(0.5))], acc)[0] is c
    assert best_arm([(c, _m(0.5)), (a, _m(0.9, "crashed"))], acc)[0] is c
    assert best_arm([(a, _m(None, "x")), (c, _m(None, "y"))], acc)[0] is c


class _Recorder:
    """The Fleet port's launch, recording the specs."""

    def __init__(self) -> None:
        self.specs = []

    def launch(self, spec) -> None:
        self.specs.append(spec)


def test_every_arm_gets_a_full_training_run_inside_the_student_jobs_deadline(monkeypatch):
    cfg = HarnessConfig.model_validate(
        {"forge": {"repo": "o/r"}, "tracker": {"dir": "/tmp/w"}, "fleet": {"dir": "/tmp/f"}, "state_dir": "/tmp/s",
         "students": [{"name": "ada"}]}
    )  # fmt: skip
    time_limits = TimeLimits.of(
        cfg.times(), TARGET.model_copy(update={"budget": TARGET.budget.model_copy(update={"wall_seconds": 100})})
    )
    fleet = _Recorder()
    dispatcher = Dispatcher(None, fleet, "/h.yaml", {})  # type: ignore[arg-type]
    arms = [Arm(name="control", control=True), Arm(name="up", params={"w": 0.6}), Arm(name="down", params={"w": 0.4})]
    exps = {3: experiment(3, "wip", hypothesis=_h(arms)), 4: experiment(4, "wip", hypothesis=_h(None))}
    for pr in (3, 4):
        launch = Launch("student", f"senpai-student-pr{pr}-1", ["student"], pr=pr, student="ada")
        dispatcher.apply(launch, exps, JobInputs(time_limits))
    assert [s.wall_seconds for s in fleet.specs] == [300, 100]  # a full run per arm; one for a single arm
    # in the 3-arm job (started at 0, the fleet's deadline 300), each arm may take its 90 s after the
    # arms before it took theirs and a few seconds each to reset and read back their runs
    monkeypatch.setenv(ENV_DEADLINE, str(fleet.specs[0].wall_seconds))
    starts = [5 + k * (90 + 3) for k in range(3)]
    assert [train_timeout(time_limits.student.train, time_limits.student.post, now=t) for t in starts] == [90, 90, 90]
