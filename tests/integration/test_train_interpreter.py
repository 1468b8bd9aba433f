"""The train command's own interpreter (`walls.train_python`): a venv named by its absolute path in
a folder the wall hides (a user's home) is granted to the train steps, as `holdout.python` is to the
score step; a program that is not Python is granted nothing; one named Python that does not run as
Python 3 stops the step before anything trains, naming `train`. Against the real wall (Landlock, and
the view where namespaces can be made) and a real venv."""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from forge_fixtures import TOKEN, commit_and_push, run_git
from second_python import venv_with
from tiny_target import tiny_repo
from walled import harness_at

from senpai.agents import student_steps as steps
from senpai.cli.demo import write_config
from senpai.config import safe_yaml
from senpai.config.roles import Role
from senpai.errors import ConfigError, TransientError
from senpai.fleet.wall import landlock_abi
from senpai.job.measure import run_command
from senpai.job.walls import isolation, train_python, walls_of
from senpai.job.workcopy import standalone_clone
from senpai.verifier.evaluate import step_env, train_step

pytestmark = pytest.mark.skipif(not (isolation() or landlock_abi()), reason="no wall can be built on this machine")

TRAIN = """import os, sys
import interp_probe  # in the venv's site-packages alone
print("interpreter:", sys.executable)
print("acc:", interp_probe.ACC)
with open(os.path.join(os.environ.get("SENPAI_ARTIFACT_DIR", "."), "model.json"), "w") as f:
    f.write("{}")
"""


@pytest.fixture
def setup(tmp_path: Path):
    """(a harness config whose wall hides tmp_path/home, as a user's home folder is hidden;
    a venv under that home whose site-packages alone hold interp_probe: its bin/python; a git repo
    holding train.py; its head)."""
    home = tmp_path / "home"
    python = venv_with(home / "proj" / ".venv", {"interp_probe": "ACC = 0.75\n"})
    cfg = harness_at(tmp_path / "senpai").model_copy(deep=True)
    cfg.wall.hidden.append(str(home))
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text(TRAIN)
    run_git(repo, "add", ".")
    run_git(repo, "commit", "-q", "-m", "seed")
    return cfg, python, repo, run_git(repo, "rev-parse", "HEAD")


def test_a_verifier_train_step_runs_the_train_commands_venv_the_wall_would_hide(setup, tmp_path):
    cfg, python, repo, sha = setup
    walls = walls_of(cfg)
    command = f"CUDA_VISIBLE_DEVICES= {python} train.py"
    checkout = standalone_clone(repo, sha, tmp_path / "checkout")
    assert train_python(command) == str(python)
    granted = walls([checkout], [], train_python(command))
    assert str(python.parent.parent) in granted.readable  # the venv's prefix, as python_paths grants holdout.python

    own, env = step_env(tmp_path / "bare")
    bare = run_command(command, checkout, env, 60, wall=walls([checkout, *own], []))  # no grant: hidden
    assert bare.returncode != 0, bare.output

    trained = train_step(command, checkout, sha, "candidate", 0, tmp_path / "artifacts", 60, None, walls)
    log = (tmp_path / "artifacts" / "candidate-0-train.log").read_text()
    assert trained.returncode == 0, log
    assert f"interpreter: {python}" in log and "acc: 0.75" in log


def test_the_students_train_step_runs_it_too(setup, tmp_path):
    cfg, python, repo, sha = setup
    walls = walls_of(cfg)
    train = tmp_path / "work" / steps.TRAIN
    standalone_clone(repo, sha, train / "arm-0" / "checkout")
    arm = steps.ArmJob(name=None, params={}, run_id="r1", env={"SEED": "0"})
    job = steps.TrainJob(command=f"{python} train.py", train_seconds=60, post_seconds=5, params_file="p.json", arms=[arm])
    (train / "job.json").write_text(job.model_dump_json())
    (ran,) = steps.train(train, walls).arms
    assert ran.returncode == 0, ran.tail
    assert ran.values["acc"] == "0.75"
    assert f"interpreter: {python}" in (train / "arm-0" / "train.log").read_text()


def test_a_program_that_is_not_python_is_granted_nothing(setup, tmp_path):
    cfg, python, repo, sha = setup
    walls = walls_of(cfg)
    script = python.parent / "train.sh"  # in the hidden venv, beside its python
    script.write_text(f"#!/bin/sh\nexec {python} train.py\n")
    script.chmod(0o755)
    command = f"{script} --fast"
    assert train_python(command) is None
    checkout = standalone_clone(repo, sha, tmp_path / "checkout")
    assert str(script.parent) not in walls([checkout], [], train_python(command)).readable
    trained = train_step(command, checkout, sha, "candidate", 0, tmp_path / "artifacts", 60, None, walls)
    assert trained.returncode != 0  # hidden: wall.readable would grant its folder (`senpai validate` says so)


def test_the_student_agents_shell_may_run_it_and_the_advisors_editor_gets_nothing(setup, tmp_path):
    from senpai.agents.openhands.turn import walled_tools  # the agents extra

    cfg, python, _, _ = setup
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    ctx = SimpleNamespace(harness=cfg, workdir=tmp_path, target=SimpleNamespace(train=f"{python} train.py"))
    shell = walled_tools(ctx, workspace, Role.STUDENT)["terminal"]
    probe = f"{python} -c 'import interp_probe; print(interp_probe.ACC)'"
    ran = subprocess.run([shell["shell_path"], "-c", probe], cwd=workspace, env=shell["env"], capture_output=True, text=True)
    assert (ran.returncode, ran.stdout.strip()) == (0, "0.75"), ran.stderr
    editor = walled_tools(ctx, workspace, Role.ADVISOR)["file_editor"]
    assert str(python.parent.parent) not in editor["wall"]


@pytest.mark.parametrize("text", ["#!/bin/sh\necho not python\n", '#!/bin/sh\necho \'["2.7", "/usr/bin/python2.7"]\'\n'])
def test_an_interpreter_named_python_that_does_not_run_as_python_3_trains_nothing(setup, tmp_path, text):
    cfg, _, repo, sha = setup
    walls = walls_of(cfg)
    fake = tmp_path / "opt" / "bin" / "python3"
    fake.parent.mkdir(parents=True)
    fake.write_text(text)
    fake.chmod(0o755)
    command = f"{fake} train.py"
    with pytest.raises(ConfigError, match=rf"^train: {fake}.*: every training would fail; point train in senpai\.yaml"):
        train_python(command)
    train = tmp_path / "work" / steps.TRAIN
    standalone_clone(repo, sha, train / "arm-0" / "checkout")
    arm = steps.ArmJob(name=None, params={}, run_id="r1", env={"SEED": "0"})
    job = steps.TrainJob(command=command, train_seconds=60, post_seconds=5, params_file="p.json", arms=[arm])
    (train / "job.json").write_text(job.model_dump_json())
    with pytest.raises(steps.TrainPythonFailed, match="^train: ") as failed:
        steps.train(train, walls)
    assert isinstance(failed.value, TransientError) and failed.value.exit_code == 3  # senpai's: no attempt spent
    assert not (train / "train.json").exists() and not (train / "arm-0" / "train.log").exists()  # nothing trained


def test_a_student_job_whose_train_interpreter_does_not_run_exits_3_before_its_turn(local_forge, tmp_path):
    """senpai's failure, not the hypothesis's: the wrapper relaunches it and spends no attempt
    (`policy.infra_failure`); the job says why in a sentence naming train, before any LLM turn."""
    forge, settings = tiny_repo(local_forge.base_url, tmp_path / "seed")
    target = yaml.safe_load(forge.read_file("senpai.yaml", "advisor"))
    gone = tmp_path / "gone" / "bin" / "python3"
    target["train"] = f"{gone} train.py"
    commit_and_push(forge, tmp_path / "seed", "advisor", {"senpai.yaml": safe_yaml.dump(target)}, start="advisor")
    config = write_config(tmp_path / "run", local_forge.base_url, 1, 1, repo=settings.repo)
    job = ["job", "student", "--config", str(config), "--pr", "1", "--attempt", "1", "--work", str(tmp_path / "work")]
    env = {**os.environ, "SENPAI_DEMO_TOKEN": TOKEN}
    proc = subprocess.run([sys.executable, "-m", "senpai", *job], capture_output=True, text=True, env=env, timeout=300)
    out = proc.stdout + proc.stderr  # the job's log
    assert proc.returncode == TransientError.exit_code, out
    assert f"train: {gone} does not exist on this machine" in out and "every training would fail" in out
    assert "Traceback" not in out
    assert not (tmp_path / "work" / "plan.json").exists()  # no turn, no plan


@pytest.mark.parametrize("landlock", [True, False], ids=["landlock", "view-only"])
def test_an_interpreter_whose_folders_hold_a_hidden_one_is_refused_never_granted(tmp_path, monkeypatch, landlock):
    """An interpreter named by a link in the home folder (`~/python3 -> ~/proj/.venv/bin/python`)
    reports that folder as its own: granting it would put the whole home folder back in the view
    (its secrets, senpai's folders under it; Landlock skips a hidden folder under the fresh /tmp).
    The wall refuses it, naming both, and the student job stops before any arm (exit 3)."""
    if not landlock:
        monkeypatch.setattr("senpai.job.walls._landlock", lambda: 0)  # a kernel without Landlock: the view alone
    elif not landlock_abi():
        pytest.skip("no Landlock here")
    if not isolation():
        pytest.skip("no view of its own here")
    home = tmp_path / "home"
    python = venv_with(home / "proj" / ".venv", {})
    (home / ".netrc").write_text("machine forge password SECRET\n")
    link = home / "python3"
    link.symlink_to(python)
    cfg = harness_at(tmp_path / "senpai").model_copy(deep=True)
    cfg.wall.hidden.append(str(home))
    walls = walls_of(cfg)
    work = tmp_path / "work"
    work.mkdir()
    command = f"{link} -c \"print(open('{home / '.netrc'}').read())\""
    try:
        wall = walls([work], [], train_python(command))
    except ConfigError as e:
        assert f"{link} reads {home}, which holds {home}" in str(e) and "fix senpai.yaml" in str(e)
    else:
        out = run_command(command, work, {"HOME": str(work)}, 60, wall=wall)
        assert "SECRET" not in out.tail(5), "the interpreter's grant un-hid the home folder"
        pytest.fail(f"the wall was built around a grant that holds the hidden home folder (exit {out.returncode})")
    train = tmp_path / "train" / steps.TRAIN
    train.mkdir(parents=True)
    arm = steps.ArmJob(name=None, params={}, run_id="r1", env={"SEED": "0"})
    (train / "job.json").write_text(
        steps.TrainJob(command=command, train_seconds=60, post_seconds=5, params_file="p.json", arms=[arm]).model_dump_json()
    )
    with pytest.raises(steps.TrainPythonFailed, match=f"which holds {home}"):
        steps.train(train, walls)
    assert not (train / "arm-0" / "train.log").exists()  # nothing ran


def test_only_absolute_folders_an_interpreter_reports_are_granted(setup, tmp_path):
    """A relative folder in its answer ('.', senpai's own cwd when asked) would make every wall
    unreadable to the launcher (exit 126 for every training, charged to the hypothesis)."""
    cfg, _, _, _ = setup
    fake = _fake_python(tmp_path / "opt" / "bin" / "python3", f'["3.12", "{sys.executable}", ".", "lib"]')
    work = tmp_path / "w"
    work.mkdir()
    wall = walls_of(cfg)([work], [], train_python(f"{fake} train.py"))
    assert all(os.path.isabs(p) for p in wall.readable), wall.readable
    out = run_command("true", work, {"HOME": str(work)}, 60, wall=wall)
    assert out.returncode == 0, out.tail(5)


def _fake_python(path: Path, answer: str) -> Path:
    path.parent.mkdir(parents=True)
    path.write_text(f"#!/bin/sh\necho '{answer}'\n")
    path.chmod(0o755)
    return path
