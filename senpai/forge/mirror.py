"""The research base branch, mirrored beside the ledger snapshot, for jobs to clone instead of the forge.

Every job starts with a clone of the base branch (`senpai.job.context.prepare_turn`). From the
forge that is git's smart HTTP: two requests, a pack built on the server and a few processes each
side, 0.1-0.25 s for the 180 KB demo repository and seconds for a large one, in every job. The
wrapper already knows when the base moves, so it keeps a copy of it next to its jobs.

- **The mirror** is a bare repository at `<state_dir>/mirror.git` (the folder the wrapper leaves
  its ledger snapshot in, which its jobs read) holding only the base branch. On a refresh that
  finds the base elsewhere than the mirror has it, the wrapper fetches it (`update`: one try, with
  a timeout, no retries: a failed update only sends jobs to the forge) into a private repository
  and copies that over the mirror, and hands every job it launches the sha it mirrored, in
  ENV_MIRROR_BASE.
- **A job copies it** (`WorkCopy.clone(mirror=...)`) through git's pack protocol (a `file://`
  URL), not with hard links or `--reference`/`--shared` alternates: every object is copied and
  hashed again by `index-pack`, and nothing in the job's clone points back at the mirror. Code a
  student wrote can write into the mirror (on the local fleet every job runs as the wrapper's user;
  on Kubernetes student pods mount the shared volume writable), but cannot change what another job
  reads through it, nor run anything in the wrapper: changed object content fails the copy's hash
  check, a branch moved to another commit or a shallow file fails the check that the copy is whole
  at the sha the wrapper handed over, planted refs and tags are not copied, and the wrapper's git
  never runs in the mirror with credentials or hooks. Only then does the job keep the copy; it
  points `origin` at the forge and goes on as if it had cloned from there. Anything else (no
  mirror, no sha handed over, a failed or timed-out copy, another sha) and it clones from the
  forge, as before.
"""

import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from senpai.config.time_limits import MIRROR_UPDATE_SECONDS

log = logging.getLogger(__name__)

ENV_MIRROR_BASE = "SENPAI_MIRROR_BASE"
MIRROR_DIR = "mirror.git"
_SHA = re.compile(r"^[0-9a-f]{40}$|^[0-9a-f]{64}$")


def mirror_path(state_dir: str) -> Path:
    return Path(state_dir) / MIRROR_DIR


def handed_base(env: Mapping[str, str] = os.environ) -> str | None:
    """The base sha the wrapper mirrored for this job (ENV_MIRROR_BASE), or None."""
    sha = env.get(ENV_MIRROR_BASE, "").strip()
    return sha if _SHA.match(sha) else None


def update(path: Path, url: str, env: Mapping[str, str], branch: str, want: str | None = None) -> str | None:
    """Bring the bare mirror at `path` to `branch` of `url` and return the sha it then holds; a
    mirror already at `want` (a restarted wrapper's) is not fetched again. None (logged) if git
    failed or took over MIRROR_UPDATE_SECONDS; the mirror is then left as it was (jobs are handed
    no sha). `env` carries the forge credentials (`Forge.git_env`).

    Code a student wrote can write into the mirror (a hook, a config that runs a command or names a
    proxy), so no git ever runs there with the credentials or hooks: the fetch goes into a fresh
    private repository in the wrapper's temporary directory, whose files are then copied next to the
    mirror and renamed over it. Only `rev-parse`, with no credentials, reads the mirror itself."""
    head = ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}"]
    bare = {"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    if want is not None and (path / "HEAD").is_file() and _git(path, bare, head, quiet=True) == want:
        return want
    full = {**os.environ, **env}  # no git identity: a fetch into a bare repository writes no commit or reflog
    with tempfile.TemporaryDirectory(prefix="senpai-mirror-") as private:
        fetch = ["fetch", "--quiet", "--no-tags", url, f"+refs/heads/{branch}:refs/heads/{branch}"]
        out = None
        if _git(Path(private), full, ["init", "--quiet", "--bare"]) is not None and _git(Path(private), full, fetch) is not None:
            out = _git(Path(private), full, head)
        if not (out and _SHA.match(out)):
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        staged = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
        shutil.copytree(private, staged, dirs_exist_ok=True, symlinks=True)
    old = path.with_name(f"{staged.name}.old")
    if path.exists() or path.is_symlink():
        os.rename(path, old)  # what a job copies in between is missing: it clones from the forge
    os.rename(staged, path)
    if old.is_symlink():  # planted in place of the mirror: the link goes, not what it points at
        old.unlink()
    shutil.rmtree(old, ignore_errors=True)
    return out


def _git(path: Path, env: dict[str, str], args: list[str], quiet: bool = False) -> str | None:
    """stdout of `git ARGS` in `path`, or None (logged unless `quiet`) if it failed or timed out."""
    try:
        proc = subprocess.run(["git", *args], cwd=path, env=env, capture_output=True, text=True, timeout=MIRROR_UPDATE_SECONDS)
        problem = proc.stderr.strip()[-300:] if proc.returncode != 0 else None
    except (OSError, subprocess.TimeoutExpired) as e:
        problem = str(e)
    if problem is not None:
        if not quiet:
            log.warning("base mirror %s not updated (jobs clone from the forge): git %s: %s", path, args[0], problem)
        return None
    return proc.stdout.strip()
