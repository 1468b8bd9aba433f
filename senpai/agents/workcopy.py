"""A job's own git working copy of the target repo, cloned from the forge.

Credentials come from `Forge.git_env()` (environment, never argv or the remote URL).
"""

import os
import subprocess
from pathlib import Path

from senpai.errors import PermanentError, TransientError
from senpai.ledger.redact import redact

IDENTITY = {
    "GIT_AUTHOR_NAME": "senpai",
    "GIT_AUTHOR_EMAIL": "senpai@localhost",
    "GIT_COMMITTER_NAME": "senpai",
    "GIT_COMMITTER_EMAIL": "senpai@localhost",
}


class WorkCopy:
    """A clone at `path`. Every method runs real `git`; failures raise PermanentError, except
    network-ish failures of fetch/push/clone, which raise TransientError."""

    def __init__(self, path: Path, env: dict[str, str]) -> None:
        self.path = path
        self.env = {**os.environ, **IDENTITY, **env}

    @classmethod
    def clone(cls, url: str, path: Path, env: dict[str, str], branch: str) -> "WorkCopy":
        wc = cls(path, env)
        path.parent.mkdir(parents=True, exist_ok=True)
        wc._git(["clone", "--quiet", "--branch", branch, url, str(path)], cwd=path.parent, network=True)
        return wc

    def git(self, *args: str, network: bool = False) -> str:
        """Run `git <args>` in the work copy; returns stdout (stripped)."""
        return self._git(list(args), cwd=self.path, network=network)

    def _git(self, args: list[str], cwd: Path, network: bool = False) -> str:
        proc = subprocess.run(["git", *args], cwd=cwd, env=self.env, capture_output=True, text=True)
        if proc.returncode != 0:
            err = TransientError if network else PermanentError
            raise err(f"git {args[0]} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
        return proc.stdout.strip()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def checkout_remote_branch(self, branch: str) -> None:
        self.git("fetch", "--quiet", "origin", branch, network=True)
        self.git("checkout", "--quiet", "-B", branch, f"origin/{branch}")

    def commit_all(self, message: str, allow_empty: bool = False) -> str:
        """Commit everything; returns the head sha. The message is redacted: commits reach the forge."""
        self.git("add", "-A")
        args = ["commit", "--quiet", "-m", redact(message)] + (["--allow-empty"] if allow_empty else [])
        if allow_empty or self.git("status", "--porcelain"):
            self.git(*args)
        return self.head()

    def push(self, branch: str) -> None:
        self.git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", network=True)

    def worktree(self, commit: str, path: Path) -> Path:
        """A detached worktree of `commit` at `path` (for measuring a commit in isolation)."""
        self.git("worktree", "add", "--quiet", "--detach", str(path), commit)
        return path
