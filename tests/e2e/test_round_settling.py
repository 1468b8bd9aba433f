"""Red-team tests of `review.reapply_round` settling a round's other passes from its own numbers
(tests/tiny_target.py: acc = 1 - |w - 0.8| + a per-seed noise; the base's w is 0.5, acc ~0.7)."""

import pytest
from test_verifier import _params, _verify, _verify_from, tiny  # noqa: F401  (the fixture)
from tiny_target import open_candidate, train_py

from senpai.agents import review
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.job.context import prepare_turn
from senpai.ledger.baseline import current_baseline
from senpai.ledger.labels import ExperimentState

pytestmark = pytest.mark.e2e


def _turn(config, work):
    cfg = load_harness(config)
    return prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), work)


def _round(tiny, tmp_path, other: dict[str, str]):  # noqa: F811
    """A (params w 0.7, acc ~0.9) and B (`other`) both pass against the base; returns
    (forge, config, ctx, round base, exps read at the turn's start, a_pr, b_pr, a, b)."""
    make, _ = tiny
    forge, config = make()
    seed = tmp_path / "seed"
    a_pr = open_candidate(forge, seed, {"params.json": _params(0.7)})
    b_pr = open_candidate(forge, seed, other)
    a = _verify(config, a_pr, tmp_path / "a")
    b = _verify_from(config, b_pr, tmp_path / "b", (a_pr,))
    assert a.passed and b.passed, (a.reason, b.reason)
    ctx = _turn(config, tmp_path / "advisor")
    round_base, exps = current_baseline([], ctx.forge.branch_sha("advisor")), ctx.ledger.experiments()
    return forge, config, ctx, round_base, exps, a_pr, b_pr, a, b


def _merge_a(ctx, round_base, a_pr, a):
    pull = ctx.forge.get_pull(a_pr)
    line = review.merge_verified(ctx, pull, ctx.ledger.experiment(pull), round_base, a, "verified")
    assert line.startswith(f"#{a_pr}: merged")


def test_a_pass_whose_change_composes_with_the_pick_is_not_closed_from_the_rounds_numbers(tiny, tmp_path):  # noqa: F811
    """B is a code change (w + 0.15: acc ~0.85 on the old base, worse than A's ~0.9 alone). On the new
    base it trains A's params AND its own change (w 0.85: acc ~0.95), which beats A: the round's numbers
    (B alone vs A) say nothing of that tree, so B must be verified against the new base, not closed."""
    forge, config, ctx, round_base, exps, a_pr, b_pr, a, b = _round(tiny, tmp_path, {"train.py": train_py(0.15)})
    _merge_a(ctx, round_base, a_pr, a)
    lines = review.reapply_round(ctx, a_pr, round_base, exps)
    assert not any(line.startswith(f"#{b_pr}: closed") for line in lines), lines
    again = _verify_from(config, b_pr, tmp_path / "again", (a_pr,))  # what the closed PR would have shown
    assert again.passed, again.reason


def test_the_close_line_an_llm_advisor_reads_shows_no_exact_holdout_numbers(tiny, tmp_path):  # noqa: F811
    """`_merge` (openhands) hands reapply_round's lines to the LLM advisor: a close must show the
    Ladder's rounded numbers, never the rule's exact means, floor or p-value."""
    forge, config, ctx, round_base, exps, a_pr, b_pr, a, b = _round(tiny, tmp_path, {"params.json": _params(0.65)})
    _merge_a(ctx, round_base, a_pr, a)
    (line,) = review.reapply_round(ctx, a_pr, round_base, exps)
    assert line.startswith(f"#{b_pr}: closed, cannot beat the new base")
    for exact in (b.candidate_mean, a.candidate_mean):
        assert f"{exact:.4g}" not in line, line


@pytest.mark.parametrize("labels", [["senpai", "student:ada", "status:blocked"], ["senpai", "student:ada"]])
def test_a_round_pass_whose_status_moved_after_the_turn_read_it_is_left_alone(tiny, tmp_path, labels):  # noqa: F811
    """B was verifying when the turn read the ledger; then a human blocked it (or took its status
    label off). Settling the round must neither close a PR a human holds nor raise out of the merge
    turn (the merge already happened: the LLM advisor would be told `refused`)."""
    forge, config, ctx, round_base, exps, a_pr, b_pr, a, b = _round(tiny, tmp_path, {"params.json": _params(0.65)})
    forge.set_labels(b_pr, labels)
    _merge_a(ctx, round_base, a_pr, a)
    lines = review.reapply_round(ctx, a_pr, round_base, exps)
    assert not any(line.startswith(f"#{b_pr}: closed") for line in lines), lines
    pull = forge.get_pull(b_pr)
    assert pull.state == "open" and sorted(pull.labels) == sorted(labels)


def test_a_pass_in_the_round_still_closes_when_its_tree_on_the_new_base_is_the_one_it_measured(tiny, tmp_path):  # noqa: F811
    """The settlement stays for what it is sound for: B params-only (w 0.65) re-applied onto A's base
    is the very tree B measured, so A's candidate values are the new base's on those seeds."""
    forge, config, ctx, round_base, exps, a_pr, b_pr, a, b = _round(tiny, tmp_path, {"params.json": _params(0.65)})
    _merge_a(ctx, round_base, a_pr, a)
    (line,) = review.reapply_round(ctx, a_pr, round_base, exps)
    assert line.startswith(f"#{b_pr}: closed, cannot beat the new base (#{a_pr} merged)")
    e = _turn(config, tmp_path / "reader").ledger.experiment(forge.get_pull(b_pr))
    assert e.state == ExperimentState.CLOSED and e.verifications == [b]
