"""Seed a target on a forge: the repository, and the target's files pushed as `main` and the research
base branch. `senpai demo` seeds its example this way, and `senpai forge seed` any target."""

import os
import shutil
import subprocess
from pathlib import Path

from senpai.cli.wiring import forge_from
from senpai.config.harness import ForgeSettings
from senpai.errors import PermanentError
from senpai.job.workcopy import IDENTITY

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "digits"  # the bundled target


def seed_target(forge: ForgeSettings, example: Path, seed: Path) -> str:
    """Create the forge repo, push the example's files as `main` plus the research base branch; return its clone URL.

    "Already exists" counts as success for the repository. A git step that fails (e.g. a push that is
    not a fast-forward) raises PermanentError with git's message. `seed` is the scratch clone.
    """
    from senpai.forge.github.admin import create_repository

    clone_url = create_repository(forge, forge.token(), forge.repo.split("/")[1])
    git_env = forge_from(forge).git_env()
    # the example's files, not its history: a target that is a git repository seeds its working tree
    ignore = shutil.ignore_patterns(".git", "__pycache__", "wandb", "*.pyc")
    shutil.copytree(example, seed, ignore=ignore, dirs_exist_ok=True)
    # fixed dates make the seed commit a pure function of the files: seeding again pushes the same sha
    fixed = {"GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}
    env = {**os.environ, **IDENTITY, **fixed, **git_env}
    for args in (
        ["init", "--quiet", "-b", "main"],
        ["add", "-A"],
        ["commit", "--quiet", "-m", f"Target program: {example.name}"],
        ["push", "--quiet", clone_url, "main", f"main:{forge.base_branch}"],
    ):
        proc = subprocess.run(["git", *args], cwd=seed, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            said = (proc.stderr.strip() or proc.stdout.strip())[-500:]  # `git commit` says "nothing to commit" on stdout
            raise PermanentError(f"seeding {forge.repo}: git {args[0]} failed: {said}")
    return clone_url
