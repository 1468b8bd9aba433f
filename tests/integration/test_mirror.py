"""The base mirror (`senpai.forge.mirror`): the wrapper fetches the base branch next to its jobs, and
a job copies it only if it holds exactly the sha it was handed; anything else clones from the forge.

Against the real local forge and real git. A "student" that writes into the mirror (a moved
branch, a changed object) must never change what a job reads.
"""

import os
import zlib
from pathlib import Path

import pytest
from forge_fixtures import commit_and_push, run_git

from senpai import phases
from senpai.forge import mirror
from senpai.job import workcopy
from senpai.job.workcopy import WorkCopy


@pytest.fixture
def mirrored(forge_repo, tmp_path) -> tuple:
    forge, _ = forge_repo
    path = tmp_path / "state" / mirror.MIRROR_DIR
    sha = mirror.update(path, forge.clone_url, forge.git_env(), "advisor")
    return forge, path, sha


def _clone(forge, mirror_at: tuple[Path, str] | None, dest: Path) -> tuple[WorkCopy, set[str]]:
    phases.start("test")
    wc = WorkCopy.clone(forge.clone_url, dest, forge.git_env(), "advisor", mirror=mirror_at)
    return wc, set(phases.report()["phases"])


def test_update_mirrors_only_the_base_branch_and_follows_it(mirrored, tmp_path):
    forge, path, sha = mirrored
    assert sha == forge.branch_sha("advisor")
    assert run_git(path, "for-each-ref", "--format=%(refname)") == "refs/heads/advisor"
    moved = commit_and_push(forge, tmp_path / "seed", "advisor", {"train.py": "print('v2')\n"})
    assert mirror.update(path, forge.clone_url, forge.git_env(), "advisor", want=moved) == moved
    # a restarted wrapper finds the mirror at the base it read: nothing is fetched (this URL would fail)
    assert mirror.update(path, forge.clone_url + "-gone", forge.git_env(), "advisor", want=moved) == moved
    assert mirror.update(path, forge.clone_url + "-gone", forge.git_env(), "advisor", want=sha) is None


def test_a_job_copies_the_mirror_when_it_holds_the_handed_sha(mirrored, tmp_path):
    forge, path, sha = mirrored
    wc, timed = _clone(forge, (path, sha), tmp_path / "job" / "repo")
    assert "git clone (mirror)" in timed and "git clone" not in timed
    assert wc.head() == sha and wc.git("rev-parse", "origin/advisor") == sha
    assert wc.git("remote", "get-url", "origin") == forge.clone_url  # later fetches and pushes go to the forge
    assert not (wc.path / ".git" / "objects" / "info" / "alternates").exists()  # nothing points back at the mirror
    wc.git("fetch", "--quiet", "origin", "main", network=True)
    assert wc.git("rev-parse", "origin/main") == forge.branch_sha("main")
    wc.git("fetch", "--quiet", "origin", network=True)  # as after a clone from the forge: every branch and tag
    assert wc.git("config", "--get-all", "remote.origin.fetch") == "+refs/heads/*:refs/remotes/origin/*"
    assert "remote.origin.tagopt" not in wc.git("config", "--list", "--local")


def test_a_moved_mirror_branch_sends_the_job_to_the_forge(mirrored, tmp_path):
    forge, path, sha = mirrored
    # what a student's code could do: point the mirror's base at a commit of its own
    tree = run_git(path, "rev-parse", f"{sha}^{{tree}}")
    planted = run_git(path, "commit-tree", tree, "-p", sha, "-m", "protected: []")
    run_git(path, "update-ref", "refs/heads/advisor", planted)
    wc, timed = _clone(forge, (path, sha), tmp_path / "job" / "repo")
    assert "git clone" in timed and wc.head() == sha == forge.branch_sha("advisor")


def test_changed_object_content_in_the_mirror_never_reaches_a_job(forge_repo, tmp_path):
    forge, _ = forge_repo
    path = tmp_path / "mirror.git"
    run_git(tmp_path, "init", "--quiet", "--bare", str(path))
    refspec = "+refs/heads/advisor:refs/heads/advisor"
    run_git(path, "-c", "fetch.unpackLimit=100000", "fetch", "--quiet", forge.clone_url, refspec, env=forge.git_env())
    sha = run_git(path, "rev-parse", "refs/heads/advisor")
    blob = run_git(path, "rev-parse", f"{sha}:train.py")
    loose = path / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    evil = b"print('evil')\n"
    loose.write_bytes(zlib.compress(b"blob %d\0" % len(evil) + evil))  # same name, other content
    assert run_git(path, "cat-file", "blob", blob) == "print('evil')"  # the mirror itself serves it
    wc, timed = _clone(forge, (path, sha), tmp_path / "job" / "repo")
    assert "git clone" in timed  # the copy failed its hash check: cloned from the forge instead
    assert wc.head() == sha and (wc.path / "train.py").read_text() == "print('train')\n"


def test_no_mirror_or_a_failed_update_clones_from_the_forge(forge_repo, tmp_path):
    forge, _ = forge_repo
    sha = forge.branch_sha("advisor")
    wc, timed = _clone(forge, (tmp_path / "missing.git", sha), tmp_path / "job" / "repo")
    assert "git clone" in timed and wc.head() == sha
    broken = tmp_path / "state" / mirror.MIRROR_DIR
    assert mirror.update(broken, forge.clone_url + "-no-such-repo", forge.git_env(), "advisor") is None
    assert not broken.exists()  # the fetch went into a private repository, which is gone
    assert mirror.update(broken, forge.clone_url, forge.git_env(), "advisor") == sha


def test_the_handed_sha_is_read_from_the_environment():
    sha = "a" * 40
    assert mirror.handed_base({mirror.ENV_MIRROR_BASE: sha}) == sha
    assert mirror.handed_base({mirror.ENV_MIRROR_BASE: "HEAD"}) is None
    assert mirror.handed_base({}) is None


def test_a_hook_planted_in_the_mirror_never_runs_in_the_wrapper(mirrored, tmp_path, monkeypatch):
    # a student's code (local fleet: the wrapper's user; Kubernetes: the shared volume) plants a hook
    # that git runs on a fetch's ref update, with the fetching process's environment: the wrapper's
    forge, path, sha = mirrored
    leak = tmp_path / "leak.txt"
    hook = path / "hooks" / "reference-transaction"
    hook.write_text(f"#!/bin/sh\nenv >> {leak}\ncat > /dev/null\n")
    hook.chmod(0o755)
    run_git(path, "config", "core.hooksPath", str(path / "hooks"))
    monkeypatch.setenv("SENPAI_TEST_SECRET", "s3cret")  # what the wrapper's environment holds (the forge token)
    moved = commit_and_push(forge, tmp_path / "seed", "advisor", {"train.py": "print('v2')\n"})
    assert mirror.update(path, forge.clone_url, forge.git_env(), "advisor", want=moved) == moved
    assert not leak.exists()
    wc, timed = _clone(forge, (path, moved), tmp_path / "job" / "repo")
    assert "git clone (mirror)" in timed and wc.head() == moved


def test_refs_and_tags_planted_in_the_mirror_never_reach_a_job(mirrored, tmp_path):
    forge, path, sha = mirrored
    tree = run_git(path, "rev-parse", f"{sha}^{{tree}}")
    planted = run_git(path, "commit-tree", tree, "-p", sha, "-m", "planted")
    run_git(path, "update-ref", "refs/heads/senpai/ada/h-other", planted)
    run_git(path, "update-ref", "refs/tags/v1", planted)
    wc, timed = _clone(forge, (path, sha), tmp_path / "job" / "repo")
    assert "git clone (mirror)" in timed and wc.head() == sha
    assert wc.git("for-each-ref", "--format=%(refname)").split() == ["refs/heads/advisor", "refs/remotes/origin/advisor"]


def test_a_shallow_mirror_sends_the_job_to_the_forge(forge_repo, tmp_path):
    # a shallow copy has the base without its history: a PR cut from an earlier base then shares no
    # history with it, and the verifier would refuse it as unmergeable
    forge, _ = forge_repo
    path = tmp_path / "state" / mirror.MIRROR_DIR
    commit_and_push(forge, tmp_path / "seed", "advisor", {"train.py": "print('v2')\n"})
    sha = mirror.update(path, forge.clone_url, forge.git_env(), "advisor")
    (path / "shallow").write_text(sha + "\n")
    wc, timed = _clone(forge, (path, sha), tmp_path / "job" / "repo")
    assert "git clone" in timed and wc.head() == sha
    assert wc.git("rev-parse", "--is-shallow-repository") == "false"


def test_a_mirror_that_blocks_the_copy_sends_the_job_to_the_forge(mirrored, tmp_path, monkeypatch):
    forge, path, sha = mirrored
    os.mkfifo(path / "objects" / "info" / "alternates")  # git's open of it waits for a writer, forever
    monkeypatch.setattr(workcopy, "MIRROR_COPY_SECONDS", 2.0)
    wc, timed = _clone(forge, (path, sha), tmp_path / "job" / "repo")
    assert "git clone" in timed and wc.head() == sha


@pytest.mark.parametrize("from_mirror", [True, False])
def test_a_clone_ignores_python_bytecode_even_with_an_empty_git_template(mirrored, tmp_path, monkeypatch, from_mirror):
    # a user's git may set an empty template folder (no .git/info): the clone still works, and what
    # running the code leaves (bytecode, where writing it is on) is never committed
    forge, path, sha = mirrored
    (tmp_path / "empty-template").mkdir()
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(tmp_path / "empty-template"))
    wc, _ = _clone(forge, (path, sha) if from_mirror else None, tmp_path / "job" / "repo")
    (wc.path / "__pycache__").mkdir()
    (wc.path / "__pycache__" / "train.cpython-312.pyc").write_bytes(b"\x00")
    (wc.path / "stray.pyc").write_bytes(b"\x00")
    assert wc.commit_all("nothing but bytecode") == sha
