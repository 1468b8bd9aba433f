"""A 3-arm experiment end to end on the tiny target (tests/tiny_target.py) over the real local forge,
real git, wandb offline and the verifier's train and score steps: the search advisor proposes a
control and two neighbours, the search student trains each under the same seed and commits the
best arm's params only, the verifier measures that head against the base corrected for 3 arms, and
the merge lands the winner alone while the other arms are recorded as findings."""

import json

import pytest
import yaml
from forge_fixtures import TOKEN, commit_and_push
from tiny_target import sealed_holdout, tiny_repo, train_py

from senpai.agents.search.advisor import advisor_turn
from senpai.agents.search.student import student_turn
from senpai.agents.student_steps import run_attempt
from senpai.cli.demo import write_config
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.job.context import prepare_turn
from senpai.job.walls import walls_of
from senpai.ledger import stats
from senpai.ledger.events import idle_event, pr_event
from senpai.verifier.judge import verify_all

pytestmark = pytest.mark.e2e


# the tiny train.py, also runnable as a student's run: no artifact dir, and its own W&B run logged
STUDENT_TRAIN = train_py().replace('os.environ["SENPAI_ARTIFACT_DIR"]', 'os.environ.get("SENPAI_ARTIFACT_DIR", ".")') + (
    "if 'SENPAI_ARTIFACT_DIR' not in os.environ:\n"
    "    import wandb\n"
    "    run = wandb.init()\n"
    "    run.summary['val'] = w\n"
    "    run.finish()\n"
)


@pytest.fixture
def arms_config(local_forge, tmp_path, monkeypatch):
    """(forge, harness config) of a tiny target whose search runtime proposes 3 arms."""
    monkeypatch.setenv("SENPAI_DEMO_TOKEN", TOKEN)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    forge, settings = tiny_repo(local_forge.base_url, tmp_path / "seed")
    commit_and_push(forge, tmp_path / "seed", "advisor", {"train.py": STUDENT_TRAIN}, start="advisor")
    config = write_config(tmp_path / "run", local_forge.base_url, 1, 1, repo=settings.repo)
    data = yaml.safe_load(config.read_text())
    data["fleet"]["holdout_dir"] = str(sealed_holdout(tmp_path / "sealed"))
    data["runtime"] = {**data.get("runtime", {}), "arms": 3}
    config.write_text(yaml.safe_dump(data))
    return forge, config


def _ctx(config, work):
    cfg = load_harness(config)
    return prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), work)


def test_three_arms_run_under_one_seed_and_only_the_best_merges(arms_config, tmp_path):
    forge, config = arms_config
    base = forge.branch_sha("advisor")
    # ada measures the base first (the measured start: tests/e2e/test_measured_start.py), bo gets the arms
    measuring, opened = advisor_turn(_ctx(config, tmp_path / "a1"), [idle_event("ada", base, 0), idle_event("bo", base, 0)])
    assert "measurement of the base" in measuring
    pr = int(opened.split(":")[0].lstrip("#"))
    exp = _ctx(config, tmp_path / "read").ledger.experiment(forge.get_pull(pr))
    h = exp.hypothesis
    assert [(a.name, a.control) for a in h.arms] == [("control", True), ("arm-1", False), ("arm-2", False)]
    points = [h.arm_params(a)["w"] for a in h.arms]
    assert len(set(points)) == 3 and all(0.0 <= w <= 1.0 for w in points)
    wall = _ctx(config, tmp_path / "read").target.budget.wall_seconds
    assert h.budget.wall_seconds == 3 * wall  # the student job holds a full training run per arm

    ctx = _ctx(config, tmp_path / "s1")
    ev = run_attempt(ctx, student_turn(ctx, pr, 1), walls_of(ctx.harness))
    assert ev.outcome == "ok", ev.failure
    assert [r.name for r in ev.arms] == ["control", "arm-1", "arm-2"]
    # the tiny target's validation value is w: each arm reported its own point, under SEED=0
    assert [r.value for r in ev.arms] == pytest.approx(points)
    best = max(ev.arms, key=lambda r: r.value)
    assert best.name == "arm-1"  # the seeded proposal: w=0.417 (control), 0.517, 0.317
    assert ev.arm == best.name and ev.primary.value == pytest.approx(best.value)
    assert ev.runs[0] == best.run and len({r.run.id for r in ev.arms}) == 3  # one run per arm, the winner's first
    ctx = _ctx(config, tmp_path / "read2")
    runs = [ctx.tracker.get_run(r.run.id) for r in ev.arms]
    assert {r.group for r in runs} == {f"pr-{pr}"} and [r.config["senpai_arm"] for r in runs] == ["control", "arm-1", "arm-2"]
    # the PR head carries the winner's params only, and nothing the arms' training wrote
    head = forge.get_pull(pr).head_sha
    assert ev.head == head and sorted(forge.pull_files(pr)) == ["params.json"]
    ctx.repo.git("fetch", "--quiet", "origin", head, network=True)
    assert json.loads(ctx.repo.git("show", f"{head}:params.json"))["w"] == pytest.approx(best.value)

    (sent,) = advisor_turn(_ctx(config, tmp_path / "a2"), [pr_event("review", pr, head, "/a1d0")])
    assert "verification requested" in sent
    vctx = _ctx(config, tmp_path / "v")
    v = verify_all(vctx, pr, tmp_path / "sealed")
    assert v.arms == 3 and v.candidate == head
    # the rule was corrected for 3 arms: the floor is wider than a single arm's
    hold = vctx.target.holdout
    single = stats.judge(hold, "maximize", v.candidate_values, v.baseline_values)
    assert v.noise_floor == pytest.approx(single.noise_floor * stats.for_arms(hold, 3).min_floor / hold.min_floor)
    assert v.noise_floor > single.noise_floor

    (decided,) = advisor_turn(_ctx(config, tmp_path / "a3"), [pr_event("verified", pr, head, "/a1d0", base)])
    final = _ctx(config, tmp_path / "read3").ledger.experiment(forge.get_pull(pr))
    d = final.decision
    losers = [r for r in ev.arms if r.name != best.name]
    assert len(d.findings) == 2 and all(f"arm {r.name}" in f for r, f in zip(losers, d.findings, strict=True))
    assert all(f"winner: {best.name}" in f for f in d.findings)
    # the seeded proposal is w=0.417 with neighbours 0.517 and 0.317: the best arm (0.517) is nearer
    # the sealed 0.8 than the base's 0.5, by more than the corrected floor
    assert v.passed and d.verdict == "merge" and forge.get_pull(pr).merged, decided
    merged = forge.branch_sha("advisor")
    vctx.repo.git("fetch", "--quiet", "origin", merged, network=True)
    assert json.loads(vctx.repo.git("show", f"{merged}:params.json"))["w"] == pytest.approx(best.value)
