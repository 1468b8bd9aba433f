"""Red-team tests of rounds, the params re-apply and the measured start, on the tiny target
(tests/tiny_target.py) over the real local forge and real git."""

import pytest
from forge_fixtures import commit_and_push
from test_verifier import _params, _verify, _verify_from, tiny  # noqa: F401  (the fixture)
from tiny_target import open_candidate, train_py

from senpai.agents import review
from senpai.agents.reapply import params_onto_base
from senpai.agents.search.advisor import advisor_turn
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.job.context import prepare_turn
from senpai.ledger import transitions
from senpai.ledger.baseline import current_baseline
from senpai.ledger.events import pr_event

pytestmark = pytest.mark.e2e


def _turn(config, work):
    cfg = load_harness(config)
    return prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), work)


def test_two_passes_of_one_base_in_one_turn_merge_once_not_twice(tiny, tmp_path):  # noqa: F811
    """The round's pick and a PR a human's approval pinned both get a `verified` event in the same
    tick (`rounds.held`), so one advisor turn holds both. Both passed against the same base. Once
    the first merges the base has moved: the second's verification is of a base that is no longer
    the base, so it must wait for a verification against the new one, not merge in the same turn
    onto a base nobody measured it on. Here the two merged together are worse (w 0.8 + shift 0.2 =
    1.0, acc 0.8) than the pick alone (acc 1.0)."""
    make, _ = tiny
    forge, config = make()
    seed = tmp_path / "seed"
    pick = open_candidate(forge, seed, {"params.json": _params(0.8)})  # acc ~1.0
    pinned = open_candidate(forge, seed, {"train.py": train_py(0.2)})  # acc ~0.9, no conflict with the pick
    a = _verify(config, pick, tmp_path / "a")
    b = _verify_from(config, pinned, tmp_path / "b", (pick,))
    assert a.passed and b.passed, (a.reason, b.reason)
    base = forge.branch_sha("advisor")
    events = [
        pr_event("verified", pick, forge.get_pull(pick).head_sha, "/a0d0", base=base),
        pr_event("verified", pinned, forge.get_pull(pinned).head_sha, "/a0d0", base=base),
    ]
    advisor_turn(_turn(config, tmp_path / "advisor"), events)
    merged = [pr for pr in (pick, pinned) if forge.get_pull(pr).merged]
    assert merged == [pick], f"merged {merged} in one turn against {base[:8]}"
    # it is not merged onto a base nobody measured it on; nor closed from the round's numbers: on the new
    # base it trains its change on top of the pick's (w 1.0), a tree the round never measured
    assert forge.get_pull(pinned).state == "open"  # it waits for a verification against the new base


def test_a_re_apply_recorded_but_not_pushed_is_pushed_on_retry_not_counted_against_the_budget(tiny, tmp_path):  # noqa: F811
    """The advisor posts the `senpai-reapply` record, then crashes before the push. Its retry (the
    base has not moved again) builds the same commit: that is the same re-apply, finished, not a
    second one. With `budget.attempts` 1 (the tiny hypothesis-less PR), counting the record of a
    push that never happened closed the PR as if the base had kept moving."""
    make, _ = tiny
    forge, config = make()
    seed = tmp_path / "seed"
    a_pr = open_candidate(forge, seed, {"params.json": _params(0.8)})
    b_pr = open_candidate(forge, seed, {"params.json": _params(0.75)})
    forge.merge_pull(a_pr, "merge A", forge.get_pull(a_pr).head_sha)
    ctx = _turn(config, tmp_path / "crash")
    baseline = current_baseline(ctx.ledger.experiments(), forge.branch_sha("advisor"))
    pull = forge.get_pull(b_pr)
    exp = ctx.ledger.experiment(pull)
    r = params_onto_base(ctx, pull, exp, baseline.commit)
    assert r is not None
    transitions.record_reapply(ctx.forge, pull, r)  # ... and the process dies before `git push`
    assert forge.get_pull(b_pr).head_sha == pull.head_sha

    retry = _turn(config, tmp_path / "retry")
    pull = retry.forge.get_pull(b_pr)
    line = review.reapply(retry, pull, retry.ledger.experiment(pull), baseline, {})
    assert "params re-applied" in line, line
    after = forge.get_pull(b_pr)
    assert after.state == "open" and after.head_sha == r.head
    assert len(retry.ledger.experiment(after).reapplies) == 1  # one record, the same commit


def test_a_toml_params_pr_that_conflicts_goes_to_its_student_not_a_crash(tiny, tmp_path):  # noqa: F811
    """A TOML params file can be read but not written (`params.write_params`). A params-only PR of
    such a target (an LLM runtime's) that conflicts with a moved base is not one senpai can
    re-apply: `params_onto_base` must say so (None: its student re-applies it), not raise
    ConfigError out of the advisor's turn every time the PR comes up."""
    import yaml

    from senpai.config import safe_yaml

    make, _ = tiny
    forge, config = make()
    seed = tmp_path / "seed"
    target = yaml.safe_load((seed / "senpai.yaml").read_text()) if (seed / "senpai.yaml").exists() else None
    assert target is not None
    target["params"]["file"] = "params.toml"
    target["scope"] = ["params.toml", "*.py"]
    commit_and_push(forge, seed, "advisor", {"senpai.yaml": safe_yaml.dump(target), "params.toml": "w = 0.5\n"}, start="advisor")
    a_pr = open_candidate(forge, seed, {"params.toml": "w = 0.8\n"})
    b_pr = open_candidate(forge, seed, {"params.toml": "w = 0.75\n"})
    forge.merge_pull(a_pr, "merge A", forge.get_pull(a_pr).head_sha)
    ctx = _turn(config, tmp_path / "advisor")
    assert ctx.target.params.file == "params.toml"
    pull = forge.get_pull(b_pr)
    assert params_onto_base(ctx, pull, ctx.ledger.experiment(pull), forge.branch_sha("advisor")) is None


def test_a_round_pass_closed_and_deleted_by_a_human_during_the_turn_does_not_break_the_merge_turn(tiny, tmp_path):  # noqa: F811
    """Right after the pick merges, `reapply_round` looks at the round's other passes (as the turn
    read them). One was closed by a human meanwhile and its branch deleted: it is not open, so it
    is skipped, and nothing about it (a fetch of a head nobody serves any more) may raise out of
    the turn that has just merged."""
    from forge_fixtures import run_git

    make, _ = tiny
    forge, config = make()
    seed = tmp_path / "seed"
    a_pr = open_candidate(forge, seed, {"params.json": _params(0.8)})
    b_pr = open_candidate(forge, seed, {"params.json": _params(0.75)})
    ctx = _turn(config, tmp_path / "advisor")
    exps = ctx.ledger.experiments()
    from senpai.ledger.blocks import Verification

    base = forge.branch_sha("advisor")
    passed = Verification(
        pr=b_pr, candidate=forge.get_pull(b_pr).head_sha, baseline=base, metric="acc", direction="maximize", seeds=[0],
        candidate_values=[0.9], baseline_values=[0.7], candidate_mean=0.9, baseline_mean=0.7, improvement=0.2,
        noise_floor=0.01, passed=True, reason="r",
    )  # fmt: skip
    exps = [e.model_copy(update={"verifications": [passed]}) if e.pr == b_pr else e for e in exps]
    round_base = current_baseline([], base)
    forge.merge_pull(a_pr, "merge A", forge.get_pull(a_pr).head_sha)
    branch = forge.get_pull(b_pr).head_ref
    forge.update_pull(b_pr, state="closed")
    run_git(seed, "push", "-q", "origin", "--delete", branch, env=forge.git_env())
    run_git(seed, "-c", "gc.reflogExpire=now", "-c", "gc.pruneExpire=now", "gc", "-q")
    assert review.reapply_round(ctx, a_pr, round_base, exps) == []
