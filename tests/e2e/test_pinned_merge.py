"""A merge lands on the base that was verified, or the ledger says it did not (issue 9, item 8).

GitHub's merge API pins the head (`sha`) but not the base.  Here an admin pushes to the base
between the verification and the merge, through the real local forge: the merge commit's first
parent is then not the verified base.  The decision records both, the merge is not a verified merge
(no baseline value, a consistency flag), and the wrapper's policy owes a verification of the merge
commit against the base it landed on; once that passes, the merge counts.
"""

import json
from pathlib import Path

import pytest
import yaml
from forge_fixtures import as_user, clone, commit_and_push
from research import make_program

from senpai.cli.wiring import make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.config.target import CONFIG_FILE, TargetConfig
from senpai.errors import PermanentError
from senpai.job.context import prepare_turn
from senpai.ledger import transitions
from senpai.ledger.baseline import current_baseline
from senpai.ledger.blocks import BaselineRef, BudgetRef, Decision, Hypothesis, MetricRef, Verification
from senpai.ledger.consistency import check, reverify, verified_merge
from senpai.ledger.labels import SENPAI, ExperimentState, student_label
from senpai.ledger.table import LedgerReader
from senpai.verifier.judge import verify_all

pytestmark = pytest.mark.e2e


def _verification(pr: int, candidate: str, baseline: str) -> Verification:
    cand, base = [0.91, 0.92], [0.80, 0.81]
    return Verification(
        pr=pr, candidate=candidate, baseline=baseline, metric="holdout_accuracy", direction="maximize", seeds=[0, 1],
        candidate_values=cand, baseline_values=base, candidate_mean=0.915, baseline_mean=0.805,
        improvement=0.11, noise_floor=0.02, passed=True, reason="beats the floor",
        candidate_compute=[20.0, 20.0], baseline_compute=[20.0, 20.0], compute_ratio=1.0,
        guards={"holdout_log_loss": [0.4, 0.6]},
    )  # fmt: skip


def _verified_pr(bot, work, base: str, name: str):
    h = Hypothesis(
        id=f"h-{name}", hypothesis="wider", rationale="r", plan="p", params={"hidden_width": 32},
        metric=MetricRef(name="val_accuracy", direction="maximize"), baseline=BaselineRef(commit=base, run_id=None, value=None),
        budget=BudgetRef(wall_seconds=120, attempts=2), stop_condition="2 attempts", student="ada",
    )  # fmt: skip
    params = json.loads((work / "params.json").read_text()) | {"hidden_width": 32}
    branch = f"senpai/ada/{name}"
    commit_and_push(bot, work, branch, {"params.json": json.dumps(params)}, start="advisor")
    pr = transitions.open_experiment(bot, h, branch, "advisor", name)
    bot.set_labels(pr.number, [SENPAI, student_label("ada"), ExperimentState.VERIFYING.label])
    pr = bot.get_pull(pr.number)
    transitions.record_verification(bot, pr, _verification(pr.number, pr.head_sha, base))
    return bot.get_pull(pr.number)


def _merged_onto_a_moved_base(local_forge, tmp_path, name: str):
    """A verified PR merged after an admin pushed to the base: (harness config, bot, PR, verified base, moved base)."""
    config = make_program(local_forge.base_url, tmp_path, name, target="quick")
    cfg = load_harness(config)
    bot = as_user(local_forge, cfg.forge, "senpai")
    owner = make_forge(cfg)  # an admin: the only one the protected base takes a push from
    target = TargetConfig.model_validate(yaml.safe_load(bot.read_file(CONFIG_FILE, "advisor")))
    verified_base = bot.branch_sha("advisor")
    pr = _verified_pr(bot, clone(bot, tmp_path / "bot", "advisor"), verified_base, "moved")

    moved = commit_and_push(owner, clone(owner, tmp_path / "owner", "advisor"), "advisor", {"NOTES.md": "by hand\n"})
    exp = LedgerReader(bot).experiment(pr)
    merge = Decision(pr=pr.number, head=pr.head_sha, verdict="merge", reason="beats the floor")
    transitions.decide(bot, pr, exp, merge, target, verified_base)  # the base the wrapper read before the push
    return cfg, bot, bot.get_pull(pr.number), verified_base, moved


def test_a_merge_onto_a_base_that_moved_is_recorded_and_verified_again(local_forge, tmp_path):
    _, bot, pr, verified_base, moved = _merged_onto_a_moved_base(local_forge, tmp_path, "pinned-merge")
    assert pr.merged and bot.commit_parents(pr.merge_commit_sha)[0] == moved
    exps = LedgerReader(bot).experiments()
    exp = next(e for e in exps if e.pr == pr.number)
    d = exp.decision
    assert (d.base, d.merged_onto) == (verified_base, moved)
    assert not verified_merge(exp, {verified_base, pr.merge_commit_sha})
    assert current_baseline(exps, pr.merge_commit_sha).value is None  # not what any verification measured
    flags = check(exps, pr.merge_commit_sha).prs[pr.number]
    assert any("a base that moved after verification (re-verification pending)" in f for f in flags), flags
    assert reverify(exp) == (pr.merge_commit_sha, moved)
    assert "The base moved" in bot.list_comments(pr.number)[-1].body

    transitions.record_verification(bot, pr, _verification(pr.number, pr.merge_commit_sha, moved))  # the verifier, again
    exps = LedgerReader(bot).experiments()
    exp = next(e for e in exps if e.pr == pr.number)
    assert reverify(exp) is None and verified_merge(exp, {verified_base, pr.merge_commit_sha})
    assert current_baseline(exps, pr.merge_commit_sha).pr == pr.number
    assert pr.number not in check(exps, pr.merge_commit_sha).prs


def test_a_merge_onto_the_verified_base_records_it_and_counts(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "pinned-merge-ok", target="quick")
    cfg = load_harness(config)
    bot = as_user(local_forge, cfg.forge, "senpai")
    target = TargetConfig.model_validate(yaml.safe_load(bot.read_file(CONFIG_FILE, "advisor")))
    base = bot.branch_sha("advisor")
    pr = _verified_pr(bot, clone(bot, tmp_path / "bot", "advisor"), base, "still")
    merge = Decision(pr=pr.number, head=pr.head_sha, verdict="merge", reason="beats the floor")
    transitions.decide(bot, pr, LedgerReader(bot).experiment(pr), merge, target, base)

    exps = LedgerReader(bot).experiments()
    exp = next(e for e in exps if e.pr == pr.number)
    assert (exp.decision.base, exp.decision.merged_onto) == (base, base)
    assert verified_merge(exp, {base}) and reverify(exp) is None
    assert check(exps, exp.merge_commit).ok


def test_the_verifier_measures_the_merge_commit_against_the_base_it_landed_on(local_forge, tmp_path):
    cfg, bot, pr, _, moved = _merged_onto_a_moved_base(local_forge, tmp_path, "pinned-reverify")
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "job")
    v = verify_all(ctx, pr.number, Path(cfg.fleet.holdout_dir))  # the job the policy launches (`reverify`)
    assert (v.candidate, v.baseline) == (pr.merge_commit_sha, moved) and v.seeds == [0, 1], v.reason
    assert v.files == ["params.json"]  # what the merge brought onto the moved base
    exp = LedgerReader(bot).experiment(bot.get_pull(pr.number))
    assert v in exp.verifications and reverify(exp) is None  # recorded: nothing is owed any more
    with pytest.raises(PermanentError, match="owes no verification"):
        verify_all(
            prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "again"), pr.number, Path(cfg.fleet.holdout_dir)
        )
