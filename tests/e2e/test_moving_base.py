"""An advisor turn whose base branch moves after its clone still opens its hypothesis on the new base."""

import pytest
from forge_fixtures import clone, commit_and_push
from research import make_program

from senpai.agents.hypothesis import open_hypothesis
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.job.context import prepare_turn
from senpai.ledger.baseline import current_baseline

pytestmark = pytest.mark.e2e


def test_the_advisor_fetches_a_base_that_moved_after_its_clone(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "moving-base", target="quick")
    cfg = load_harness(config)
    forge = make_forge(cfg)
    ctx = prepare_turn(cfg, forge, make_tracker(cfg), tmp_path / "turn")
    cloned = ctx.repo.head()
    moved = commit_and_push(forge, clone(forge, tmp_path / "human", "advisor"), "advisor", {"notes.md": "moved\n"})
    assert moved != cloned and forge.branch_sha("advisor") == moved

    baseline = current_baseline(ctx.ledger.experiments(), forge.branch_sha("advisor"))
    pr = open_hypothesis(ctx, "ada", hypothesis="h", rationale="r", plan="p", params={"hidden_width": 32}, baseline=baseline)
    assert pr.head_ref.startswith("senpai/ada/")
    assert ctx.repo.git("rev-parse", f"{pr.head_sha}^") == moved  # cut from the base as it is now
