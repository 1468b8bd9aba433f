"""The verifier against the real local forge, on a tiny target (tests/tiny_target.py): train then
score both sides per seed, with the evaluator from the base revision and the sealed holdout."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from forge_fixtures import BOT_AUTH, TOKEN, as_user, commit_and_push, run_git
from second_python import venv_with
from tiny_target import (
    INTO_EVALUATOR,
    NAN_TRAIN,
    PICKLE_TRAIN,
    SCORE,
    SHADOW_JSON,
    SNOOPED,
    open_candidate,
    sealed_holdout,
    tiny_repo,
    train_py,
)

from senpai import phases
from senpai.agents import review
from senpai.agents.reapply import params_onto_base
from senpai.agents.search.advisor import advisor_turn
from senpai.cli.demo import write_config
from senpai.cli.progress import seed_steps
from senpai.cli.wiring import make_forge, make_tracker
from senpai.config import safe_yaml
from senpai.config.harness import load_harness
from senpai.errors import ConfigError
from senpai.fleet.wall import landlock_abi
from senpai.job.context import prepare_turn
from senpai.ledger import transitions
from senpai.ledger.baseline import current_baseline
from senpai.ledger.blocks import Verification, render
from senpai.ledger.events import Event
from senpai.ledger.labels import ExperimentState, status_of
from senpai.ledger.table import LedgerReader
from senpai.verifier.judge import verify_all
from senpai.verifier.reuse import holdout_id
from senpai.verifier.steps import BaselineFailed, checkout_step

pytestmark = pytest.mark.e2e


@pytest.fixture
def tiny(local_forge, tmp_path, monkeypatch):
    """(make(**holdout) -> (forge, harness config path), holdout dir); secrets set in senpai's env."""
    monkeypatch.setenv("SENPAI_DEMO_TOKEN", TOKEN)
    for name in SNOOPED[:-1]:
        monkeypatch.setenv(name, "fake-secret-value-42")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    holdout = sealed_holdout(tmp_path / "sealed")

    def make(test: str | None = None, **hold):
        forge, settings = tiny_repo(local_forge.base_url, tmp_path / "seed", test, **hold)
        # the tiny target's holdout, never the digits one (whose split would import scikit-learn)
        return forge, write_config(tmp_path / "run", local_forge.base_url, 1, 1, repo=settings.repo, holdout=holdout)

    return make, holdout


def _verify(config: Path, pr: int, work: Path) -> Verification:
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), work)
    v = verify_all(ctx, pr, Path(cfg.fleet.holdout_dir))
    recorded = ctx.ledger.experiment(ctx.forge.get_pull(pr)).verifications
    assert [render(r) for r in recorded] == [render(v)]  # the block on the forge is the one returned (NaN too)
    return v


def test_a_code_change_is_trained_and_scored_and_beats_the_baseline(tiny, tmp_path):
    make, holdout = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    v = _verify(config, pr, tmp_path / "job")
    assert v.passed, v.reason
    assert v.holdout == holdout_id(holdout) and v.resolution == pytest.approx(v.noise_floor)  # what status and the Ladder read
    assert v.seeds == [0, 1] and v.baseline_values == pytest.approx([0.7, 0.702])
    assert v.candidate_values == pytest.approx([0.9, 0.902]) and v.improvement == pytest.approx(0.2)
    assert v.candidate_compute == [100.0, 100.0] and v.compute_ratio == pytest.approx(1.0)
    assert len(v.candidate_seconds) == 2 and all(s > 0 for s in v.candidate_seconds + v.baseline_seconds)
    assert v.guards == {"leak": [0.0, 0.0]}  # the evaluator saw no secret, no PYTHON*, no candidate tree
    logs = sorted((tmp_path / "job").glob("*/artifacts/*-train.log"))
    assert len(logs) == 4 and all("train_leak: 0" in log.read_text() for log in logs)  # nor did the train steps
    steps = {(side, seed, step) for side in ("baseline", "candidate") for seed in (0, 1) for step in ("train", "score")}
    assert seed_steps(tmp_path / "job") == steps  # what `senpai demo`'s heartbeat reads of a running verifier
    # the holdout numbers are a W&B run of the PR's group, named in the block
    cfg = load_harness(config)
    (ref,) = v.runs
    run = make_tracker(cfg).get_run(ref.id)
    assert (run.job_type, run.group, run.state, ref.state, ref.url) == ("verify", f"pr-{pr}", "finished", "finished", None)
    assert run.id.endswith(make_tracker(cfg).installation) and "verifier" in run.tags
    assert (run.git_commit, run.notes) == (v.candidate, forge.get_pull(pr).html_url) and "@" not in run.git_remote
    assert run.summary["candidate_mean"] == pytest.approx(0.901) and run.summary["improvement"] == pytest.approx(0.2)
    (table,) = Path(run.path).glob("files/media/table/holdout_*.table.json")
    rows = json.loads(table.read_text())["data"]
    assert sorted((r[0], r[1]) for r in rows) == [(side, seed) for side in ("baseline", "candidate") for seed in (0, 1)]


@pytest.mark.parametrize(
    "change, words",
    [
        ({"score.py": "print('acc: 1.0')\n"}, ["protected paths score.py"]),
        # which interpreter scores it is the base's to say: senpai.yaml is always protected
        ({"senpai.yaml": "holdout: {python: /tmp/mine/bin/python}\n"}, ["protected paths senpai.yaml"]),
        ({"notes/scratch.txt": "tried\n", "params.json": '{"w": 0.9}\n'}, ["outside the experiment's scope notes/scratch.txt"]),
        # its block would not fit a comment: not listed, not run
        ({f"notes/{i:03}.txt": "x\n" for i in range(301)}, ["changes 301 files (3913 characters of paths), over the 300 files"]),
    ],
)
def test_protected_and_out_of_scope_diffs_are_refused_without_running(tiny, tmp_path, change, words):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", change)
    v = _verify(config, pr, tmp_path / "job")
    assert not v.passed and v.reason.startswith("refused without running") and v.seeds == []
    assert all(w in v.reason for w in words), v.reason
    assert not list((tmp_path / "job").glob("*/artifacts"))  # nothing was trained


@pytest.mark.parametrize(
    "name, change, words",
    [
        ("pickle", {"train.py": PICKLE_TRAIN}, ["model.pkl", "not a safe format"]),
        ("nan", {"train.py": NAN_TRAIN}, ["acc is nan", "NaN"]),
        ("crash", {"train.py": "raise SystemExit(7)\n"}, ["train step of candidate seed 0 exited 7"]),
    ],
)
def test_a_bad_candidate_is_a_failed_verification_with_its_reason(tiny, tmp_path, name, change, words):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", change)
    v = _verify(config, pr, tmp_path / "job")
    assert not v.passed and v.reason.startswith("failed:"), v.reason
    assert all(w in v.reason for w in words), v.reason
    assert math.isnan(v.candidate_values[-1]) and v.candidate_mean is None
    assert not Path("/tmp/senpai-pwned").exists()


@pytest.mark.parametrize(
    "extra",
    [
        {"json.py": SHADOW_JSON, "numpy.py": SHADOW_JSON},  # modules the evaluator imports (or might)
        {"prepare.py": INTO_EVALUATOR, "train.py": "import prepare\n" + train_py()},  # writes into evaluator dirs
    ],
    ids=["shadow-module", "writes-into-evaluator"],
)
def test_the_evaluator_scores_honestly_whatever_the_candidate_tree_holds(tiny, tmp_path, extra):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", extra)
    v = _verify(config, pr, tmp_path / "job")
    assert v.candidate_values == v.baseline_values == pytest.approx([0.7, 0.702])  # not the planted 1.0
    assert not v.passed and v.guards == {"leak": [0.0, 0.0]}


def test_the_score_step_runs_under_holdout_python_of_the_base(tiny, tmp_path):
    make, _ = tiny
    python = venv_with(tmp_path / "venv", {"interp_probe": "BONUS = 0.0\n"})
    forge, config = make(python=str(python))
    probe = SCORE.replace("import json\n", "import json\nimport interp_probe\nprint('interpreter:', sys.executable)\n", 1)
    commit_and_push(forge, tmp_path / "seed", "advisor", {"score.py": "import sys\n" + probe}, start="advisor")
    pr = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    v = _verify(config, pr, tmp_path / "job")
    assert v.passed, v.reason  # senpai's own interpreter has no interp_probe: each score would fail
    assert v.guards == {"leak": [0.0, 0.0]}  # still isolated: no secret, no PYTHON*, no candidate tree
    logs = sorted((tmp_path / "job" / "score").glob("*-score.log"))
    assert len(logs) == 4 and all(f"interpreter: {python}" in log.read_text() for log in logs)


def test_a_holdout_python_that_does_not_run_stops_the_verifier_before_any_train_step(tiny, tmp_path):
    make, _ = tiny
    forge, config = make(python=str(tmp_path / "gone" / "bin" / "python"))
    pr = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "job")
    with pytest.raises(ConfigError, match=r"holdout.python \S+/gone/bin/python does not exist on this machine"):
        verify_all(ctx, pr, Path(cfg.fleet.holdout_dir))
    with pytest.raises(ConfigError, match="does not exist"):  # on Kubernetes: before the train containers
        checkout_step(ctx, pr, tmp_path / "steps", Path(cfg.fleet.holdout_dir))
    assert not list((tmp_path / "job").glob("*/artifacts/*")) and not (tmp_path / "steps").exists()  # nothing trained
    assert ctx.ledger.experiment(ctx.forge.get_pull(pr)).verifications == []


def test_the_train_steps_run_the_train_commands_venv_in_a_folder_the_wall_hides(tiny, tmp_path):
    make, _ = tiny
    python = venv_with(tmp_path / "home" / "venv", {})  # a user's venv in a folder the wall hides (wall.hidden)
    forge, config = make()
    data = yaml.safe_load(config.read_text())
    data["wall"] = {"hidden": [str(tmp_path / "home")]}
    config.write_text(safe_yaml.dump(data))
    target = yaml.safe_load(forge.read_file("senpai.yaml", "advisor"))
    target["train"] = f"{python} train.py"
    commit_and_push(forge, tmp_path / "seed", "advisor", {"senpai.yaml": safe_yaml.dump(target)}, start="advisor")
    pr = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    v = _verify(config, pr, tmp_path / "job")
    assert v.passed, v.reason  # every training ran under the venv's interpreter: granted, not hidden
    assert len(list((tmp_path / "job").glob("*/artifacts/*-train.log"))) == 4


def test_a_train_interpreter_that_does_not_run_stops_the_verifier_before_any_train_step(tiny, tmp_path):
    make, _ = tiny
    forge, config = make()
    target = yaml.safe_load(forge.read_file("senpai.yaml", "advisor"))
    target["train"] = f"{tmp_path / 'gone' / 'bin' / 'python3'} train.py"
    commit_and_push(forge, tmp_path / "seed", "advisor", {"senpai.yaml": safe_yaml.dump(target)}, start="advisor")
    pr = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "job")
    with pytest.raises(
        ConfigError, match=r"^train: \S+/gone/bin/python3 does not exist on this machine: every training would fail"
    ):
        verify_all(ctx, pr, Path(cfg.fleet.holdout_dir))
    with pytest.raises(ConfigError, match="^train: "):  # on Kubernetes: before the train containers
        checkout_step(ctx, pr, tmp_path / "steps", Path(cfg.fleet.holdout_dir))
    assert not list((tmp_path / "job").glob("*/artifacts/*")) and not (tmp_path / "steps").exists()  # nothing trained
    assert ctx.ledger.experiment(ctx.forge.get_pull(pr)).verifications == []


def test_inconclusive_results_get_more_seeds_up_to_the_cap(tiny, tmp_path):
    make, _ = tiny
    forge, config = make(max_seeds=4)
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.505}\n'})  # inside the 0.01 floor
    v = _verify(config, pr, tmp_path / "job")
    assert v.seeds == [0, 1, 2, 3] and len(v.candidate_values) == len(v.baseline_values) == 4
    assert not v.passed and v.improvement == pytest.approx(0.005)


def test_a_decisive_result_stops_at_the_declared_seeds(tiny, tmp_path):
    make, _ = tiny
    forge, config = make(max_seeds=4)
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    v = _verify(config, pr, tmp_path / "job")
    assert v.passed and v.seeds == [0, 1]


def test_a_failing_baseline_fails_the_job_without_a_verdict(tiny, tmp_path):
    make, _ = tiny
    forge, config = make(command="python score.py {artifact} {holdout}/absent")  # the base cannot score
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "job")
    with pytest.raises(BaselineFailed, match="baseline seed 0"):
        verify_all(ctx, pr, Path(cfg.fleet.holdout_dir))
    assert ctx.ledger.experiment(ctx.forge.get_pull(pr)).verifications == []
    assert BaselineFailed.exit_code == 3  # the wrapper's infrastructure retry (policy.infra_failure)


def _job(config: Path, cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cwd.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "senpai", "job", "verify", "--config", str(config), *args]
    return subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=300)


def _result(proc: subprocess.CompletedProcess) -> dict:
    """The job's JSON result: its last line of output but the `senpai-phases:` record every job ends with
    (the job's stderr reaches stdout through the redaction filter)."""
    return json.loads([line for line in proc.stdout.splitlines() if not line.startswith(phases.PREFIX)][-1])


STEPS = [("checkout",), ("train", "--side", "baseline"), ("train", "--side", "candidate"), ("score",)]


def test_the_cli_verifies_in_one_step_and_in_four(tiny, tmp_path):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    work = tmp_path / "work"
    for step in STEPS:
        env_job = _job(config, tmp_path / step[-1], "--pr", str(pr), "--step", *step, "--work", str(work))
        assert env_job.returncode == 0, (step, env_job.stderr)
    for side in ("baseline", "candidate"):
        trained = json.loads((work / side / "train.json").read_text())
        assert len(trained["runs"]) == 2 and {r["side"] for r in trained["runs"]} == {side} == {trained["side"]}
    assert _result(env_job)["passed"] is True
    cfg = load_harness(config)
    (four,) = LedgerReader(make_forge(cfg)).experiment(forge.get_pull(pr)).verifications
    assert four.holdout == holdout_id(Path(cfg.fleet.holdout_dir))  # the score step, where the holdout is mounted

    # the four steps measured both trees: the one-step run reuses them instead of training
    one = _job(config, tmp_path / "all", "--pr", str(pr))
    assert one.returncode == 0, one.stderr
    again = _result(one)
    assert again["passed"] is True and again["reused"] == {"baseline": [0, 1], "candidate": [0, 1]}


# Sets a smudge filter in its own checkout and dirties a file: git runs the filter when the next
# seed's reset rewrites that file, in the verifier's process environment.
FILTERING = """
import subprocess
subprocess.run(["git", "config", "filter.snoop.smudge", "env >> .git/smudged.txt; (env >> ../escaped.txt) 2>&-; cat"], check=True)
os.makedirs(os.path.join(".git", "info"), exist_ok=True)
open(os.path.join(".git", "info", "attributes"), "w").write("* filter=snoop\\n")
open("params.json", "a").write(" ")
"""


def test_a_git_filter_the_candidate_sets_runs_without_any_secret(tiny, tmp_path):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2) + FILTERING})
    job = _job(config, tmp_path / "all", "--pr", str(pr))
    assert job.returncode == 0, job.stderr
    smudged = (tmp_path / "all" / "candidate" / "checkout" / ".git" / "smudged.txt").read_text()
    assert "PATH=" in smudged  # the filter ran, in the verifier's environment as it was then
    assert TOKEN not in smudged and not [n for n in SNOOPED if n != "SENPAI_CONFIG" and f"\n{n}=" in f"\n{smudged}"]
    if landlock_abi():  # and behind the side's wall: it wrote its checkout, nothing beside it
        assert not (tmp_path / "all" / "candidate" / "escaped.txt").exists()


def test_the_score_step_records_a_stale_verification_when_the_head_moved(tiny, tmp_path):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    work = tmp_path / "work"
    for step in STEPS[:3]:
        assert _job(config, tmp_path / step[-1], "--pr", str(pr), "--step", *step, "--work", str(work)).returncode == 0
    planned = json.loads((work / "plan.json").read_text())
    moved = commit_and_push(forge, tmp_path / "seed", forge.get_pull(pr).head_ref, {"params.json": '{"w": 0.6}\n'})
    score = _job(config, tmp_path / "score", "--pr", str(pr), "--step", "score", "--work", str(work))
    assert score.returncode == 0, score.stderr
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "check")
    [v] = ctx.ledger.experiment(ctx.forge.get_pull(pr)).verifications
    assert v.candidate == planned["candidate"] != moved and not v.passed and v.reason.startswith("stale")


def test_a_push_between_the_verifiers_reads_cannot_hide_a_file(tiny, tmp_path):
    """The head moves after the verifier read it: the pair it measures is the one it read, and its
    files are git's for exactly that pair, so the out-of-scope file the new head drops still counts."""
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"notes/scratch.txt": "tried\n", "params.json": '{"w": 0.9}\n'})
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "job")
    base_sha = ctx.forge.branch_sha

    def pushed_meanwhile(branch: str) -> str:
        commit_and_push(forge, tmp_path / "seed", forge.get_pull(pr).head_ref, {"notes/scratch.txt": None})
        return base_sha(branch)

    ctx.forge.branch_sha = pushed_meanwhile  # the race, placed: the adapter and the forge are real
    v = verify_all(ctx, pr, Path(cfg.fleet.holdout_dir))
    assert "notes/scratch.txt" not in forge.pull_files(pr)  # what the forge lists now
    assert v.reason.startswith("refused without running") and "scope notes/scratch.txt" in v.reason
    assert v.files == ["notes/scratch.txt", "params.json"] and not v.passed


def test_a_base_that_moved_after_the_clone_is_the_one_measured(tiny, tmp_path):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "job")
    moved = commit_and_push(forge, tmp_path / "seed", "advisor", {"README.md": "moved\n"}, start="advisor")
    v = verify_all(ctx, pr, Path(cfg.fleet.holdout_dir))
    assert v.baseline == moved and v.passed, v.reason


CHECK = """python -c 'import ast; assert ast.literal_eval(open("params.json").read())["w"] <= 0.6'"""


@pytest.mark.parametrize("w, test_passed", [(0.7, False), (0.6, True)])
def test_the_targets_test_command_must_pass_on_the_candidate(tiny, tmp_path, w, test_passed):
    make, _ = tiny
    forge, config = make(test=CHECK)
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": f'{{"w": {w}}}\n'})
    v = _verify(config, pr, tmp_path / "job")
    assert v.test_passed is test_passed and v.passed is test_passed, v.reason
    if not test_passed:
        assert v.seeds == [] and "test command failed" in v.reason


def _steps_apart(config: Path, pr: int, tmp_path: Path, env: dict[str, str] | None = None, sources: tuple[int, ...] = ()) -> Path:
    """checkout, train --side baseline, train --side candidate as separate processes, each train
    step's --work holding only its own side (as its mounts on Kubernetes: no /work, no other side);
    returns the work dir with everything back in place for score. `env` is the train steps' extra env."""
    work, full = tmp_path / "work", tmp_path / "full"
    hints = [a for pr_ in sources for a in ("--baseline-from", str(pr_))]
    checkout = _job(config, tmp_path / "checkout", "--pr", str(pr), "--step", "checkout", "--work", str(work), *hints)
    assert checkout.returncode == 0, checkout.stderr
    work.rename(full)
    for side in ("baseline", "candidate"):
        work.mkdir()
        (full / side).rename(work / side)
        train = _job(config, tmp_path / side, "--pr", str(pr), "--step", "train", "--side", side, "--work", str(work), env=env)
        assert train.returncode == 0, (side, train.stderr)
        assert _result(train)["side"] == side
        (work / side).rename(full / side)
        work.rmdir()
    full.rename(work)
    return work


def _recorded(config: Path, pr: int, tmp_path: Path) -> list[Verification]:
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "check")
    return ctx.ledger.experiment(ctx.forge.get_pull(pr)).verifications


LOOK = "import os\nprint('seen:', sorted(os.listdir('../..')))\n"  # the work dir, from <work>/candidate/checkout


def test_each_train_step_runs_alone_on_its_own_side_dir_and_score_verifies(tiny, tmp_path):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"train.py": LOOK + train_py(0.2)})
    work = _steps_apart(config, pr, tmp_path, env={"SENPAI_GPUS": "3"})
    assert "seen: ['candidate']" in (work / "candidate" / "artifacts" / "candidate-0-train.log").read_text()
    for side in ("baseline", "candidate"):
        assert not (work / side / "checkout" / ".git").is_file()  # a standalone clone, not a worktree of work/repo
        assert subprocess.run(["git", "-C", str(work / side / "checkout"), "remote"], capture_output=True, text=True).stdout == ""
    score = _job(config, tmp_path / "score", "--pr", str(pr), "--step", "score", "--work", str(work))
    assert score.returncode == 0, score.stderr
    [v] = _recorded(config, pr, tmp_path)
    assert v.passed and v.seeds == [0, 1] and v.improvement == pytest.approx(0.2), v.reason
    assert v.candidate_gpu_seconds == pytest.approx([3 * s for s in v.candidate_seconds])  # the fleet's SENPAI_GPUS
    assert v.baseline_gpu_seconds == pytest.approx([3 * s for s in v.baseline_seconds]) and all(v.baseline_gpu_seconds)


@pytest.mark.parametrize(
    "tamper, words",
    [
        (lambda run, work: {**run, "side": "baseline"}, "candidate/train.json claims a baseline run"),
        (
            lambda run, work: {**run, "artifact": str(work / "baseline" / "artifacts" / "baseline-0")},
            "the artifact of candidate seed 0 lies outside candidate/artifacts",
        ),
    ],
    ids=["baseline-run", "artifact-outside"],
)
def test_the_score_step_takes_each_sides_runs_only_from_its_own_dir(tiny, tmp_path, tamper, words):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    work = _steps_apart(config, pr, tmp_path)
    log = json.loads((work / "candidate" / "train.json").read_text())
    log["runs"][0] = tamper(log["runs"][0], work)
    (work / "candidate" / "train.json").write_text(json.dumps(log))
    score = _job(config, tmp_path / "score", "--pr", str(pr), "--step", "score", "--work", str(work))
    assert score.returncode == 0, score.stderr
    [v] = _recorded(config, pr, tmp_path)
    assert not v.passed and v.reason.startswith("failed:") and words in v.reason, v.reason


def test_a_verification_records_gpu_seconds(tiny, tmp_path, monkeypatch):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    monkeypatch.delenv("SENPAI_GPUS", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # as the local fleet pins a 2-GPU job
    v = _verify(config, pr, tmp_path / "job")
    assert v.passed and len(v.candidate_gpu_seconds) == len(v.baseline_gpu_seconds) == 2, v.reason
    assert v.candidate_gpu_seconds == pytest.approx([2 * s for s in v.candidate_seconds])
    assert v.baseline_gpu_seconds == pytest.approx([2 * s for s in v.baseline_seconds]) and all(v.baseline_gpu_seconds)


@pytest.mark.parametrize(
    "base_change, params, passed",
    [
        # the base regressed after the PR branched: a null edit measured on the old tree "wins", and
        # its merge (the regressed base plus nothing) would land as a verified improvement
        (-0.2, '{"w": 0.5}\n\n', False),
        # the base improved after the PR branched: a real improvement measured without the base's
        # own "loses", for senpai's fault (the base moved), not the hypothesis's
        (0.1, '{"w": 0.6}\n', True),
    ],
    ids=["null-edit-on-an-old-base", "improvement-on-an-old-base"],
)
def test_a_pr_behind_its_base_is_measured_as_it_would_merge(tiny, tmp_path, base_change, params, passed):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": params})
    moved = commit_and_push(forge, tmp_path / "seed", "advisor", {"train.py": train_py(base_change)}, start="advisor")
    v = _verify(config, pr, tmp_path / "job")
    assert v.candidate == forge.get_pull(pr).head_sha and v.baseline == moved
    assert v.passed is passed, v.reason
    assert v.files == ["params.json"]


def test_a_head_with_no_history_in_common_with_its_base_is_refused(tiny, tmp_path):
    """Reading the PR works (the local forge answered HTTP 500 for such a head), and it is not measured."""
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    seed = tmp_path / "seed"
    head = forge.get_pull(pr).head_ref
    for args in (["checkout", "-q", "--orphan", "orphan"], ["commit", "-q", "-m", "unrelated"]):
        subprocess.run(["git", "-C", str(seed), *args], check=True)  # the same tree, none of the history
    subprocess.run(["git", "-C", str(seed), "push", "-q", "-f", "origin", f"orphan:{head}"], env=forge.git_env(), check=True)
    v = _verify(config, pr, tmp_path / "job")
    assert not v.passed and v.reason.startswith("refused without running") and "no history in common" in v.reason
    assert not v.conflict  # not a conflict a re-apply resolves: the advisor closes it


# A smudge filter the candidate sets in its own checkout: git runs it inside the next seed's reset,
# before the train step's clock starts and with no timeout of its own.
FILTER_AT_RESET = """
import subprocess
os.makedirs(os.path.join(".git", "info"), exist_ok=True)
subprocess.run(["git", "config", "filter.work.smudge", "%s"], check=True)
subprocess.run(["git", "config", "filter.work.required", "true"], check=True)  # a failing filter fails the reset
open(os.path.join(".git", "info", "attributes"), "w").write("params.json filter=work\\n")
open("params.json", "a").write(" ")
"""


@pytest.mark.parametrize(
    "filter_command, check",
    [
        # work done in the filter (here 3 s of sleep) is the seed's training time, not free compute
        ("sleep 3; cat", lambda v: v.passed and v.candidate_seconds[1] >= 3),
        # a checkout the candidate broke is its own failed train step, not an error of senpai's job
        ("exit 1", lambda v: not v.passed and "candidate seed 1" in v.reason and "params.json" in v.reason),
    ],
    ids=["untimed-work", "broken-reset"],
)
def test_what_the_candidate_plants_in_its_checkout_runs_on_its_own_clock(tiny, tmp_path, filter_command, check):
    make, _ = tiny
    forge, config = make()
    planted = FILTER_AT_RESET % filter_command
    pr = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2) + planted})
    v = _verify(config, pr, tmp_path / "job")
    assert check(v), v


PROBE = """
import ctypes, ctypes.util, json, sys
from pathlib import Path
from senpai.verifier.steps import train_side
from senpai.job.walls import walls_of
from senpai.config.harness import load_harness
from senpai.errors import ConfigError
from senpai.ledger.redact import PR_GET_DUMPABLE
train_side(Path(sys.argv[1]), "candidate", walls_of(load_harness(sys.argv[2])))
print(json.dumps({"dumpable": ctypes.CDLL(ctypes.util.find_library("c")).prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)}))
"""


def test_the_train_step_that_runs_candidate_code_is_not_dumpable(tiny, tmp_path):
    """The train container holds no secret, but its process writes train.json, the numbers the score
    step takes: the candidate's code (its child, same user) must not ptrace it or write its memory
    through /proc/<pid>/mem, which a non-dumpable process closes to non-root users of its uid."""
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    work = tmp_path / "work"
    assert _job(config, tmp_path / "checkout", "--pr", str(pr), "--step", "checkout", "--work", str(work)).returncode == 0
    probe = subprocess.run([sys.executable, "-c", PROBE, str(work), str(config)], capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr
    assert _result(probe) == {"dumpable": 0}


# Seed 0 plants FIFOs where its train step writes next: the next seed's log and the side's train.json.
PLANT_FIFOS = """
side_dir = os.path.dirname(os.path.dirname(os.environ["SENPAI_ARTIFACT_DIR"]))
if seed == 0:
    for path in (os.path.join(side_dir, "artifacts", "candidate-1-train.log"), os.path.join(side_dir, "train.json")):
        try:
            os.mkfifo(path)
        except OSError:
            print("denied:", path)  # the side's wall: it writes its checkout and its artifact alone
"""


def test_files_the_side_planted_where_the_train_step_writes_are_replaced(tiny, tmp_path):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2) + PLANT_FIFOS})
    work = tmp_path / "work"
    assert _job(config, tmp_path / "checkout", "--pr", str(pr), "--step", "checkout", "--work", str(work)).returncode == 0
    cmd = [sys.executable, "-m", "senpai", "job", "verify", "--config", str(config), "--pr", str(pr), "--work", str(work)]
    train = subprocess.run([*cmd, "--step", "train", "--side", "candidate"], capture_output=True, timeout=120)
    assert train.returncode == 0, train.stderr  # before: blocked for ever opening the FIFO
    trained = json.loads((work / "candidate" / "train.json").read_text())
    assert [r["returncode"] for r in trained["runs"]] == [0, 0]


def test_a_train_json_that_is_not_a_regular_file_fails_the_candidate(tiny, tmp_path):
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    work = _steps_apart(config, pr, tmp_path)
    (work / "candidate" / "train.json").unlink()
    os.mkfifo(work / "candidate" / "train.json")  # or a symlink to /dev/zero: st_size 0, endless to read
    cmd = [sys.executable, "-m", "senpai", "job", "verify", "--config", str(config), "--pr", str(pr)]
    score = subprocess.run([*cmd, "--step", "score", "--work", str(work)], cwd=tmp_path, capture_output=True, timeout=120)
    assert score.returncode == 0, score.stderr  # before: blocked for ever reading it
    [v] = _recorded(config, pr, tmp_path)
    assert not v.passed and "train.json" in v.reason and "not a regular file" in v.reason, v.reason


def _verify_from(config: Path, pr: int, work: Path, sources: tuple[int, ...] = ()) -> Verification:
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), work)
    return verify_all(ctx, pr, Path(cfg.fleet.holdout_dir), sources)


def _baseline_logs(work: Path) -> list[str]:
    return sorted(p.name for p in work.glob("baseline/artifacts/*-train.log"))


def test_a_second_pr_against_the_same_base_reuses_its_baseline_seeds(tiny, tmp_path):
    make, _ = tiny
    forge, config = make()
    first = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    a = _verify(config, first, tmp_path / "a")
    assert (
        a.baseline_reused == {}
        and a.baseline_key
        and _baseline_logs(tmp_path / "a") == ["baseline-0-train.log", "baseline-1-train.log"]
    )
    assert a.baseline_guards == {"leak": [0.0, 0.0]} and len(a.baseline_seconds) == 2
    second = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    b = _verify_from(config, second, tmp_path / "b", (first,))
    assert b.passed, b.reason
    assert b.baseline_reused == {0: first, 1: first} and b.baseline_key == a.baseline_key
    assert b.baseline_values == a.baseline_values and b.baseline_seconds == a.baseline_seconds
    assert _baseline_logs(tmp_path / "b") == []  # no baseline seed trained again
    assert b.candidate_values == pytest.approx([0.9, 0.902])
    # without the hint there is nothing to reuse: the baseline is trained
    third = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.1)})
    c = _verify_from(config, third, tmp_path / "c")
    assert c.baseline_reused == {} and len(_baseline_logs(tmp_path / "c")) == 2


def _logs(work: Path, side: str) -> list[str]:
    return sorted(p.name for p in work.glob(f"{side}/artifacts/*-train.log"))


def test_after_a_merge_the_new_base_and_a_re_applied_tree_are_not_trained_again(tiny, tmp_path):
    """Two params-only PRs off one base; A merges. The new base's tree is the one A's verification
    measured as its candidate, and B re-applied on it (its params written onto the new base) is the
    tree B's first verification measured: B's verification against the new base trains nothing."""
    make, _ = tiny
    forge, config = make()
    a_pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.8}\n'})
    b_pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.75}\n'})
    a = _verify(config, a_pr, tmp_path / "a")
    b = _verify_from(config, b_pr, tmp_path / "b", (a_pr,))
    assert a.passed and b.passed and a.candidate_key and b.candidate_key and a.candidate_key != b.candidate_key
    assert b.baseline_reused == {0: a_pr, 1: a_pr} and _logs(tmp_path / "b", "candidate") != []
    forge.merge_pull(a_pr, "merge A", forge.get_pull(a_pr).head_sha)
    # B's student re-applies it: the new base merged in, its own params kept
    branch = forge.get_pull(b_pr).head_ref
    seed, env = tmp_path / "seed", forge.git_env()
    run_git(seed, "fetch", "-q", "origin", env=env)
    run_git(seed, "checkout", "-q", "-B", branch, f"origin/{branch}")
    with pytest.raises(subprocess.CalledProcessError):  # both changed params.json
        run_git(seed, "merge", "-q", "origin/advisor")
    (seed / "params.json").write_text('{"w": 0.75}\n')
    run_git(seed, "commit", "-q", "-am", "re-apply on the new base")
    run_git(seed, "push", "-q", "origin", branch, env=env)
    again = _verify_from(config, b_pr, tmp_path / "again", (a_pr,))
    assert again.baseline_reused == {0: a_pr, 1: a_pr} and again.candidate_reused == {0: b_pr, 1: b_pr}
    assert _logs(tmp_path / "again", "baseline") == [] and _logs(tmp_path / "again", "candidate") == []
    assert again.baseline_values == a.candidate_values and again.candidate_values == b.candidate_values
    assert again.baseline_key == a.candidate_key and again.candidate_key == b.candidate_key
    assert not again.passed  # 0.75 against the merged 0.8: judged from the numbers already measured
    # a tree nobody measured is trained: C changes the code on the new base
    c_pr = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    c = _verify_from(config, c_pr, tmp_path / "c", (a_pr,))
    assert c.candidate_reused == {} and len(_logs(tmp_path / "c", "candidate")) == 2 and c.baseline_reused == {0: a_pr, 1: a_pr}


def _params(w: float) -> str:
    return json.dumps({"w": w}, indent=2, sort_keys=True) + "\n"  # as `params.write_params` writes it


def test_a_params_only_pr_is_re_applied_by_writing_its_params_onto_the_new_base(tiny, tmp_path):
    """After A merges, B (params only, passed in A's round) conflicts with the new base in
    params.json. In the turn that merged A, the advisor re-applies the round's passes that
    conflict; B's params are written onto the new base as a commit of senpai's: no student attempt, no
    decision, the PR stays verifying, and its tree is the one B's first verification measured, so
    the verification of the new head trains nothing. A code change, or params senpai cannot read,
    goes back to its student."""
    make, _ = tiny
    forge, config = make()
    seed = tmp_path / "seed"
    a_pr = open_candidate(forge, seed, {"params.json": _params(0.75)})
    b_pr = open_candidate(forge, seed, {"params.json": _params(0.8)})  # better than A: not settled by the round's numbers
    code_pr = open_candidate(forge, seed, {"params.json": _params(0.7), "train.py": train_py(0.2)})
    broken_pr = open_candidate(forge, seed, {"params.json": "{not json"})
    _verify(config, a_pr, tmp_path / "a")
    first = _verify_from(config, b_pr, tmp_path / "b", (a_pr,))
    assert first.passed  # B is in A's round
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "advisor")
    round_base, exps = current_baseline([], ctx.forge.branch_sha("advisor")), ctx.ledger.experiments()
    old = ctx.forge.get_pull(b_pr)
    forge.merge_pull(a_pr, "merge A", forge.get_pull(a_pr).head_sha)  # the advisor's merge, this turn
    (line,) = review.reapply_round(ctx, a_pr, round_base, exps)  # only B passed in A's round
    assert line.startswith(f"#{b_pr}: params re-applied onto ") and "no student attempt" in line
    baseline = current_baseline(ctx.ledger.experiments(), ctx.forge.branch_sha("advisor"))
    for pr in (code_pr, broken_pr):  # not params-only, or params it cannot read: its student re-applies it
        pull = ctx.forge.get_pull(pr)
        assert params_onto_base(ctx, pull, ctx.ledger.experiment(pull), baseline.commit) is None
    reader = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "reader")
    new = reader.forge.get_pull(b_pr)
    e = reader.ledger.experiment(new)
    (r,) = e.reapplies
    assert (r.head, r.replaces, r.base) == (new.head_sha, old.head_sha, baseline.commit) and new.head_sha != old.head_sha
    assert e.state == ExperimentState.VERIFYING and e.decisions == [] and e.attempts == 0
    env = forge.git_env()
    run_git(seed, "fetch", "-q", "origin", env=env)
    assert run_git(seed, "show", f"{new.head_sha}:params.json") == _params(0.8).strip()
    run_git(seed, "merge-base", "--is-ancestor", baseline.commit, new.head_sha)  # the forge can merge it
    assert run_git(seed, "rev-parse", f"{old.head_sha}^{{tree}}") == r.tree  # the tree B's verification measured
    again = _verify_from(config, b_pr, tmp_path / "again", (a_pr,))
    assert again.candidate == new.head_sha and again.candidate_reused == {0: b_pr, 1: b_pr}
    assert _logs(tmp_path / "again", "candidate") == [] and again.candidate_values == first.candidate_values
    # the same turn again (a retry after a crash): the same commit, one record
    retry = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "retry")
    assert params_onto_base(retry, old, e, baseline.commit).head == r.head


def test_a_round_pass_the_merged_pick_beats_on_the_same_seeds_is_closed_without_verifying_again(tiny, tmp_path):
    """After A merges, B (passed in A's round, worse than A) is judged on the seeds both measured,
    A's candidate values as the new base's: it is closed in the merge turn with those numbers, and
    no verification against the new base is owed. One the merge leaves better (C) is not closed."""
    make, _ = tiny
    forge, config = make()
    seed = tmp_path / "seed"
    a_pr = open_candidate(forge, seed, {"params.json": _params(0.7)})  # acc ~0.9 (the holdout's target is 0.8)
    b_pr = open_candidate(forge, seed, {"params.json": _params(0.65)})  # acc ~0.85
    c_pr = open_candidate(forge, seed, {"train.py": train_py(0.25)})  # acc ~0.95; no params change: merges after A
    a = _verify(config, a_pr, tmp_path / "a")
    b = _verify_from(config, b_pr, tmp_path / "b", (a_pr,))
    c = _verify_from(config, c_pr, tmp_path / "c", (a_pr,))
    assert a.passed and b.passed and c.passed
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "advisor")
    round_base, exps = current_baseline([], ctx.forge.branch_sha("advisor")), ctx.ledger.experiments()
    pull = ctx.forge.get_pull(a_pr)
    line = review.merge_verified(ctx, pull, ctx.ledger.experiment(pull), round_base, a, "verified")
    assert line.startswith(f"#{a_pr}: merged")
    (closed,) = review.reapply_round(ctx, a_pr, round_base, exps)
    assert closed.startswith(f"#{b_pr}: closed, cannot beat the new base (#{a_pr} merged), judged on the round's seeds [0, 1]")
    reader = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "reader")
    e = reader.ledger.experiment(reader.forge.get_pull(b_pr))
    (d,) = e.decisions
    assert e.state == ExperimentState.CLOSED and d.verdict == "close" and e.verifications == [b]  # no second verification
    assert (d.candidate, d.baseline) == (pytest.approx(b.candidate_mean), pytest.approx(a.candidate_mean))
    assert d.improvement < 0 and d.resolution == pytest.approx(d.noise_floor)
    assert reader.ledger.experiment(reader.forge.get_pull(c_pr)).state == ExperimentState.VERIFYING  # C may beat A


def test_a_changed_holdout_or_config_is_never_scored_with_old_baseline_numbers(tiny, tmp_path):
    make, holdout = tiny
    forge, config = make()
    first = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    a = _verify(config, first, tmp_path / "a")
    (holdout / "target.txt").write_text("0.75\n")  # the operator replaced the data in place
    second = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    b = _verify_from(config, second, tmp_path / "b", (first,))
    assert b.baseline_reused == {} and b.baseline_key != a.baseline_key and len(_baseline_logs(tmp_path / "b")) == 2


def test_a_verification_block_posted_by_a_human_is_never_reused(tiny, local_forge, tmp_path):
    make, _ = tiny
    forge, config = make()
    first = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    a = _verify(config, first, tmp_path / "a")
    second = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    cfg = load_harness(config)
    carol = as_user(local_forge, cfg.forge, "carol", "collaborator")
    forged = a.model_copy(update={"pr": second, "candidate": "0" * 40, "baseline_values": [0.1, 0.1], "reason": "forged"})
    transitions.record_verification(carol, carol.get_pull(second), forged)
    assert any("forged" in c.body for c in forge.list_comments(second))  # posted, with the bot's own rendering
    b = _verify_from(config, second, tmp_path / "b")  # reads its own PR: the forged block is there
    assert b.baseline_reused == {} and b.baseline_values == pytest.approx([0.7, 0.702])


def test_the_four_steps_skip_and_reuse_known_baseline_seeds(tiny, tmp_path):
    make, _ = tiny
    forge, config = make()
    first = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    a = _verify(config, first, tmp_path / "a")
    second = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    work = _steps_apart(config, second, tmp_path, sources=(first,))
    assert json.loads((work / "baseline" / "job.json").read_text())["known"] == [0, 1]
    assert json.loads((work / "baseline" / "train.json").read_text())["runs"] == []
    score = _job(
        config, tmp_path / "score", "--pr", str(second), "--step", "score", "--work", str(work), "--baseline-from", str(first)
    )
    assert score.returncode == 0, score.stderr
    (b,) = _recorded(config, second, tmp_path)
    assert b.passed and b.baseline_reused == {0: first, 1: first} and b.baseline_values == a.baseline_values


def test_a_baseline_seed_the_score_step_cannot_find_again_is_senpais_failure(tiny, tmp_path):
    """job.json is in the baseline's side dir, which the base's code can write: the score step reuses
    only what it reads from the ledger itself, and a skipped seed it cannot find is BaselineFailed."""
    make, _ = tiny
    forge, config = make()
    first = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    _verify(config, first, tmp_path / "a")
    second = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    work = _steps_apart(config, second, tmp_path, sources=(first,))
    score = _job(config, tmp_path / "score", "--pr", str(second), "--step", "score", "--work", str(work))  # no hint
    assert score.returncode == 3 and "no train step recorded for baseline seed 0" in score.stdout + score.stderr
    assert _recorded(config, second, tmp_path) == []


def test_a_candidate_seed_skipped_as_measured_whose_record_is_gone_is_senpais_failure(tiny, local_forge, tmp_path):
    """Checkout skips the candidate's seeds its own earlier block measured; that block is deleted
    before the score step (a maintainer's moderation). The gap is senpai's, not the hypothesis's:
    exit 3 (the wrapper retries), nothing recorded."""
    make, _ = tiny
    forge, config = make()
    first = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n'})
    _verify(config, first, tmp_path / "a")
    second = open_candidate(forge, tmp_path / "seed", {"train.py": train_py(0.2)})
    assert _verify_from(config, second, tmp_path / "b", (first,)).candidate_key
    work = _steps_apart(config, second, tmp_path, sources=(first,))
    assert json.loads((work / "candidate" / "job.json").read_text())["known"] == [0, 1]
    assert json.loads((work / "candidate" / "train.json").read_text())["runs"] == []
    repo = load_harness(config).forge.repo
    for c in forge.list_comments(second):
        if "senpai-verification" in c.body:
            r = httpx.delete(f"{local_forge.base_url}/repos/{repo}/issues/comments/{c.id}", headers=BOT_AUTH, timeout=30)
            assert r.status_code == 204
    assert _recorded(config, second, tmp_path) == []
    score = _job(
        config, tmp_path / "score", "--pr", str(second), "--step", "score", "--work", str(work), "--baseline-from", str(first)
    )
    assert score.returncode == 3 and "no train step recorded for candidate seed 0" in score.stdout + score.stderr
    assert _recorded(config, second, tmp_path) == []


def test_a_pr_that_conflicts_with_a_moved_base_is_sent_back_to_re_apply_not_closed(tiny, tmp_path):
    """Two PRs change the same line of params.json, and this one changes the code too; once the
    base has the other's change, the verifier refuses the pair as a conflict (the hypothesis's own
    merit is unknown), and the advisor asks its student to re-apply it on the new base instead of
    closing it as a failure (a params-only PR senpai re-applies itself: the test above)."""
    make, _ = tiny
    forge, config = make()
    pr = open_candidate(forge, tmp_path / "seed", {"params.json": '{"w": 0.7}\n', "train.py": train_py(0.2)})
    commit_and_push(forge, tmp_path / "seed", "advisor", {"params.json": '{"w": 0.6}\n'}, start="advisor")
    v = _verify(config, pr, tmp_path / "job")
    assert not v.passed and v.conflict and "conflicts with the base" in v.reason and v.seeds == []
    cfg = load_harness(config)
    ctx = prepare_turn(cfg, make_forge(cfg), make_tracker(cfg), tmp_path / "advisor")
    head, base = forge.get_pull(pr).head_sha, forge.branch_sha("advisor")
    lines = advisor_turn(ctx, [Event(id=f"verified:pr-{pr}@{head}..{base}", kind="verified", pr=pr, head=head)])
    assert lines == [f"#{pr}: changes requested (merge conflict)"]
    (d,) = ctx.ledger.experiment(forge.get_pull(pr)).decisions
    assert d.verdict == "changes" and "re-apply on the new base" in d.reason
    assert status_of(forge.get_pull(pr).labels) == ExperimentState.CHANGES
    # the student re-applied, and the base moved under it again: sent back at most budget.attempts
    # times (the tiny hypothesis-less PR: once), then closed, so a base that keeps moving has a cost cap
    forge.set_labels(pr, ["senpai", "student:ada", "status:verifying"])
    lines = advisor_turn(ctx, [Event(id=f"verified:pr-{pr}@{head}..{base}/2", kind="verified", pr=pr, head=head)])
    assert lines == [f"#{pr}: closed, the merge conflicts with the base again after 1 re-applies (budget.attempts 1)"]
    assert forge.get_pull(pr).state == "closed" and ctx.ledger.experiment(forge.get_pull(pr)).decisions[-1].verdict == "close"
