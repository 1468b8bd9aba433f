"""Red team: the measured start's value must be the base's, not whatever its student trained
(fixed: `search.advisor._close_measurement` compares the trained head's tree with the base's)."""

import pytest
from forge_fixtures import commit_and_push
from test_arms_loop import STUDENT_TRAIN, _ctx, arms_config  # noqa: F401  (the fixture)
from test_measured_start import _train, one_arm  # noqa: F401  (the fixture)

from senpai.agents.search.advisor import advisor_turn
from senpai.ledger.baseline import current_baseline
from senpai.ledger.events import idle_event, pr_event

pytestmark = pytest.mark.e2e


def test_a_measurement_of_the_base_whose_head_is_not_the_base_gives_the_base_no_value(one_arm, tmp_path):  # noqa: F811
    """The measurement PR's student changed the code (an LLM student told to improve things; here a
    push to its branch stands for it), so what it trained is not the base. Its value (inflated by
    0.3) must not become the base's validation value: it would close, unverified, every proposal
    less than 0.3 better than the real base."""
    forge, config = one_arm
    base = commit_and_push(forge, tmp_path / "seed", "advisor", {"params.json": '{"w": 0.6}\n'})
    (opened,) = advisor_turn(_ctx(config, tmp_path / "a1"), [idle_event("ada", base, 0)])
    measure = int(opened.split(":")[0].lstrip("#"))
    branch = forge.get_pull(measure).head_ref
    inflated = STUDENT_TRAIN.replace('print("val:", w)', 'print("val:", w + 0.3)')
    assert inflated != STUDENT_TRAIN
    commit_and_push(forge, tmp_path / "seed", branch, {"train.py": inflated}, start=branch)
    ev = _train(config, measure, tmp_path / "s1")
    assert ev.primary.value == pytest.approx(0.9)  # not the base's 0.6
    advisor_turn(_ctx(config, tmp_path / "a2"), [pr_event("review", measure, ev.head, "/a1d0")])
    exps = _ctx(config, tmp_path / "r").ledger.experiments()
    b = current_baseline(exps, base)
    assert b.value is None or b.value == pytest.approx(0.6), f"the base's value is {b.value}, measured on a changed tree"
