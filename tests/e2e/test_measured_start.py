"""The measured start on the tiny target (tests/tiny_target.py) over the real local forge, real git
and wandb offline: before any merge, the search advisor's first assignment measures the base
itself on validation, once; that value then screens the proposals, so a point no better than the
base is closed without a verification; and it is the base's value until a verified merge moves it."""

import pytest
from forge_fixtures import commit_and_push
from test_arms_loop import _ctx, arms_config  # noqa: F401  (the fixture, with one arm below)

from senpai.agents.search.advisor import advisor_turn
from senpai.agents.search.student import student_turn
from senpai.agents.student_steps import run_attempt
from senpai.job.walls import walls_of
from senpai.ledger.baseline import current_baseline
from senpai.ledger.events import idle_event, pr_event
from senpai.ledger.labels import ExperimentState

pytestmark = pytest.mark.e2e


@pytest.fixture
def one_arm(arms_config):  # noqa: F811
    forge, config = arms_config
    text = config.read_text().replace("arms: 3", "arms: 1")
    config.write_text(text)
    return forge, config


def _train(config, pr, work):
    ctx = _ctx(config, work)
    ev = run_attempt(ctx, student_turn(ctx, pr, 1), walls_of(ctx.harness))
    assert ev.outcome == "ok", ev.failure
    return ev


def test_the_base_is_measured_once_on_validation_and_screens_the_proposals(one_arm, tmp_path):
    forge, config = one_arm
    base = commit_and_push(forge, tmp_path / "seed", "advisor", {"params.json": '{"w": 0.9}\n'})  # a good base
    (opened,) = advisor_turn(_ctx(config, tmp_path / "a1"), [idle_event("ada", base, 0)])
    assert "opened the measurement of the base for ada" in opened
    measure = int(opened.split(":")[0].lstrip("#"))
    read = _ctx(config, tmp_path / "r1")
    h = read.ledger.experiment(forge.get_pull(measure)).hypothesis
    assert h.measures_base and h.params == {"w": 0.9} and h.baseline.commit == base  # the base's own params
    # another idle student gets a proposal: the base is measured once
    (proposal,) = advisor_turn(_ctx(config, tmp_path / "a2"), [idle_event("bo", base, 1)])
    assert "opened" in proposal and "measurement" not in proposal
    point = int(proposal.split(":")[0].lstrip("#"))

    ev = _train(config, measure, tmp_path / "s1")
    assert ev.primary.value == pytest.approx(0.9)  # the tiny target's validation value is w
    (closed,) = advisor_turn(_ctx(config, tmp_path / "a3"), [pr_event("review", measure, ev.head, "/a1d0")])
    assert closed == f"#{measure}: closed, the base measured on validation: val = {ev.primary.value:.4g}"
    exps = _ctx(config, tmp_path / "r2").ledger.experiments()
    e = next(x for x in exps if x.pr == measure)
    assert e.state == ExperimentState.CLOSED and e.verifications == []
    b = current_baseline(exps, base)
    assert (b.value, b.pr, b.params) == (pytest.approx(0.9), None, {"w": 0.9})

    ev = _train(config, point, tmp_path / "s2")
    (line,) = advisor_turn(_ctx(config, tmp_path / "a4"), [pr_event("review", point, ev.head, "/a1d0")])
    assert ev.primary.value < 0.9  # the seeded proposal, no better than the base
    assert line == f"#{point}: closed, no improvement on validation: {ev.primary.value:.4f} vs baseline 0.9000"
    assert next(x for x in _ctx(config, tmp_path / "r3").ledger.experiments() if x.pr == point).verifications == []
