"""A job's own git working copy of the target repo, cloned from the forge.

Credentials come from `Forge.git_env()` (environment, never argv or the remote URL).

Network commands (clone, fetch, push) are retried with tenacity as `senpai.config.time_limits.GIT`
says: exponential backoff from its backoff_seconds, or the server's `Retry-After` (read from git's
own HTTP trace, where git redacts the Authorization header), at most its attempts and
total_seconds in all.  A Retry-After longer than its max_wait_seconds is not slept: it raises
TransientError(retry_after) at once,
and the job exits 3 so the wrapper relaunches it later.  Each retry is harmless: a failed clone
leaves no directory behind, a fetch is read-only, and a push of the same head is a no-op.  A git
command that fails while the work copy's volume is full raises DiskFull (exit 6) instead.
"""

import contextlib
import logging
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, stop_after_delay

from senpai import phases, trees
from senpai.config.time_limits import GIT, MIRROR_COPY_SECONDS
from senpai.errors import PermanentError, TransientError
from senpai.fleet.disk import full_volume
from senpai.ledger.redact import redact

# Failures no retry can fix: a rejected push, missing credentials or rights, a missing ref or repo.
_PERMANENT = re.compile(
    r"\[rejected\]|non-fast-forward|returned error: 40[134]\b|Authentication failed|couldn't find remote ref"
    r"|Repository not found|not found|already exists and is not an empty directory",
    re.IGNORECASE,
)
_RETRY_AFTER = re.compile(r"<= Recv header: Retry-After: *(\d+)", re.IGNORECASE)
log = logging.getLogger(__name__)


class _GitFault(Exception):
    """A network git command failed in a way a retry may fix."""

    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# what running Python leaves where bytecode writing is on (the default outside senpai's images): every
# clone ignores it, so no commit (`commit_all`, an agent's submitted tree) carries it into a PR
BYTECODE = "__pycache__/\n*.py[cod]\n"
IDENTITY = {
    "GIT_AUTHOR_NAME": "senpai",
    "GIT_AUTHOR_EMAIL": "senpai@localhost",
    "GIT_COMMITTER_NAME": "senpai",
    "GIT_COMMITTER_EMAIL": "senpai@localhost",
}


def _run_bounded(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `argv` in its own process group; the whole group is killed
    after `timeout` seconds (status -9): a git blocked on a FIFO is a child of the git we started."""
    pipe = subprocess.PIPE
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=pipe, stderr=pipe, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return -9, out, f"{err}timed out after {timeout:.0f} s"
    return proc.returncode, out, err


def _wait(state: RetryCallState) -> float:
    """The server's Retry-After if it sent one, else GIT's backoff doubled per try (capped)."""
    exc = state.outcome.exception() if state.outcome else None
    after = getattr(exc, "retry_after", None)
    return after if after is not None else min(GIT.max_wait_seconds, GIT.backoff_seconds * 2 ** (state.attempt_number - 1))


class WorkCopy:
    """A clone at `path`. Every method runs real `git`; failures raise PermanentError, except
    network failures of fetch/push/clone that outlast their retries, which raise TransientError."""

    def __init__(self, path: Path, env: dict[str, str], sleep: Callable[[float], None] = time.sleep) -> None:
        self.path = path
        self.env = {**os.environ, **IDENTITY, **env}
        self._sleep = sleep  # how retries wait (tests inject a fake clock)

    @classmethod
    def clone(
        cls,
        url: str,
        path: Path,
        env: dict[str, str],
        branch: str,
        sleep: Callable[[float], None] = time.sleep,
        mirror: tuple[Path, str] | None = None,
    ) -> "WorkCopy":
        """Clone `branch` of `url` at `path`. With `mirror` (a bare repository, the sha its `branch`
        must be at), copy it from there if it holds exactly that (`senpai.forge.mirror`), else
        clone from `url`; either way `origin` is `url`, and Python bytecode is ignored (`BYTECODE`)."""
        wc = cls(path, env, sleep)
        path.parent.mkdir(parents=True, exist_ok=True)
        if mirror is None or not wc._copy_mirror(*mirror, url, branch):
            wc._git(["clone", "--quiet", "--branch", branch, url, str(path)], cwd=path.parent, network=True)
        (path / ".git" / "info").mkdir(exist_ok=True)  # absent where git's template folder is set to an empty one
        with open(path / ".git" / "info" / "exclude", "a") as f:
            f.write(BYTECODE)
        return wc

    def _copy_mirror(self, mirror: Path, sha: str, url: str, branch: str) -> bool:
        """Clone `branch` of the bare repository `mirror` through git's pack protocol (every object
        copied and hashed again, no alternates), that branch alone and no tags, and keep it only if
        it is whole (not shallow) and its head is `sha`; then point `origin` at `url` (every branch
        and tag fetched from there, as after a clone). False (nothing
        left at `path`) on any failure, another sha, or a step over MIRROR_COPY_SECONDS. The mirror
        is writable by code a student wrote: a planted ref or tag must not reach the copy, a shallow
        file must not cut its history (the base would share none with an earlier PR), and a FIFO
        must not hold the job."""
        steps = [
            ["clone", "--quiet", "--single-branch", "--no-tags", "--branch", branch, mirror.resolve().as_uri(), str(self.path)],
            ["-C", str(self.path), "rev-parse", "--is-shallow-repository", "--verify", "HEAD^{commit}"],
            ["-C", str(self.path), "remote", "set-url", "origin", url],
            # from here on `origin` is fetched as after a clone from the forge: every branch, and tags
            ["-C", str(self.path), "config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"],
            ["-C", str(self.path), "config", "--unset", "remote.origin.tagOpt"],
        ]
        why = None
        with phases.phase("git clone (mirror)"):
            for args in steps:
                code, out, err = _run_bounded(["git", *args], self.path.parent, self.env, MIRROR_COPY_SECONDS)
                if code != 0:
                    why = f"git {args[0] if args[0] != '-C' else args[2]}: {err.strip()[-300:]}"
                    break
                if args[-1] == "HEAD^{commit}" and out.split() != ["false", sha]:
                    why = f"its {branch} is {' '.join(out.split())[:24]}, not whole at {sha[:12]}"
                    break
        if why is None:
            return True
        log.info("not cloning from the base mirror %s (%s): cloning from the forge", mirror, why)
        with contextlib.suppress(OSError):
            trees.remove(self.path)
        return False

    def git(self, *args: str, network: bool = False) -> str:
        """Run `git <args>` in the work copy; returns stdout (stripped)."""
        return self._git(list(args), cwd=self.path, network=network)

    def _git(self, args: list[str], cwd: Path, network: bool = False) -> str:
        with phases.phase(f"git {args[0]}" if network else "git local"):
            return self._git_untimed(args, cwd, network)

    def _git_untimed(self, args: list[str], cwd: Path, network: bool) -> str:
        if not network:
            proc = subprocess.run(["git", *args], cwd=cwd, env=self.env, capture_output=True, text=True)
            if proc.returncode != 0:
                failed = PermanentError(f"git {args[0]} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
                raise full_volume([cwd], f"git {args[0]} failed on it") or failed
            return proc.stdout.strip()
        retrying = Retrying(
            stop=stop_after_attempt(GIT.attempts) | stop_after_delay(GIT.total_seconds),
            wait=_wait,
            sleep=self._sleep,
            retry=retry_if_exception_type(_GitFault),
            reraise=True,
        )
        try:
            return retrying(lambda: self._network(args, cwd))
        except _GitFault as e:
            raise TransientError(str(e), retry_after=e.retry_after) from None

    def _network(self, args: list[str], cwd: Path) -> str:
        """One try of a network command; raises _GitFault (retry), TransientError (a long
        Retry-After: not slept here) or PermanentError."""
        if args[0] == "clone" and self.path.exists():
            trees.remove(self.path)  # what an interrupted try left; git refuses a non-empty target
        with tempfile.TemporaryDirectory(prefix="senpai-git-") as tmp:
            trace = Path(tmp) / "curl.log"
            env = {**self.env, "GIT_TRACE_CURL": str(trace), "GIT_TRACE_CURL_NO_DATA": "1", "GIT_TRACE_REDACT": "1"}
            proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
            traced = trace.read_text(errors="replace") if trace.exists() else ""
        if proc.returncode == 0:
            return proc.stdout.strip()
        message = f"git {args[0]} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}"
        if full := full_volume([cwd, self.path], f"git {args[0]} failed on it"):
            raise full  # the work copy's volume: senpai's failure, and no retry frees it
        if _PERMANENT.search(proc.stderr):
            raise PermanentError(message)
        after = [float(x) for x in _RETRY_AFTER.findall(traced)]
        retry_after = after[-1] if after else None
        if retry_after is not None and retry_after > GIT.max_wait_seconds:
            raise TransientError(message, retry_after=retry_after)
        raise _GitFault(message, retry_after)

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def changed_paths(self, base: str, head: str) -> list[str]:
        """Paths `head` changes since its merge base with `base`, as GitHub's PR file list counts
        them but never truncated: `git diff --name-only --no-renames -z base...head` (a rename
        gives both paths; a name that is not UTF-8 is decoded with U+FFFD). Both commits must be
        in this clone; raises PermanentError with git's message otherwise."""
        proc = self._run("diff", "--name-only", "--no-renames", "--no-ext-diff", "-z", f"{base}...{head}")
        if proc.returncode != 0:
            raise PermanentError(f"git diff failed ({proc.returncode}): {proc.stderr.decode(errors='replace').strip()[-500:]}")
        return [p.decode(errors="replace") for p in proc.stdout.split(b"\0") if p]

    def merged(self, base: str, head: str) -> tuple[str | None, str | None, bool]:
        """(the commit whose tree a merge of `head` into `base` would have, None, False) or (None,
        why not, whether the trees conflict; False: the two share no history):
        `head` itself when `base` is its ancestor, else a commit of the tree `git merge-tree` builds
        (as the forge merges), parents base and head, with a fixed identity and date so that every
        step of one verification builds the same sha. Why not: the trees conflict, or the two share
        no history. Raises PermanentError on any other git failure."""
        if self._run("merge-base", "--is-ancestor", base, head).returncode == 0:
            return head, None, False
        tree = self._run("merge-tree", "--write-tree", "--no-messages", base, head)
        if tree.returncode == 1:
            return None, f"the PR head {head[:8]} conflicts with the base {base[:8]}", True
        if b"unrelated histories" in tree.stderr:
            return None, f"the PR head {head[:8]} has no history in common with the base {base[:8]}", False
        if tree.returncode != 0:
            raise PermanentError(f"git merge-tree failed ({tree.returncode}): {tree.stderr.decode(errors='replace')[-500:]}")
        when = {"GIT_AUTHOR_DATE": "1970-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "1970-01-01T00:00:00Z"}
        message = f"senpai: {head} merged into {base}, as verified"
        tree_sha = tree.stdout.decode().split("\n", 1)[0].strip()
        commit = self._run("commit-tree", tree_sha, "-p", base, "-p", head, "-m", message, env=when)
        if commit.returncode != 0:
            raise PermanentError(f"git commit-tree failed: {commit.stderr.decode(errors='replace')[-500:]}")
        return commit.stdout.decode().strip(), None, False

    def git_env(self, env: dict[str, str], *args: str) -> str:
        """`git <args>` in the work copy with `env` added (an index of its own, fixed dates);
        returns stdout (stripped). Raises PermanentError with git's message if it fails."""
        proc = self._run(*args, env=env)
        if proc.returncode != 0:
            said = proc.stderr.decode(errors="replace").strip()[-500:]
            raise PermanentError(f"git {args[0]} failed ({proc.returncode}): {said}")
        return proc.stdout.decode().strip()

    def _run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        with phases.phase("git local"):
            return subprocess.run(["git", *args], cwd=self.path, env={**self.env, **(env or {})}, capture_output=True)

    def checkout_remote_branch(self, branch: str) -> None:
        self.git("fetch", "--quiet", "origin", branch, network=True)
        self.git("checkout", "--quiet", "-B", branch, f"origin/{branch}")

    def merge_base_in(self, base: str) -> None:
        """Merge the research base `origin/<base>` into the checked-out branch, the branch's side
        winning where both changed a line (`-X ours`): a student's work copy, and the copy its
        evidence is committed from, carry the base's later changes without undoing the student's.
        Raises PermanentError if git cannot merge (a file both deleted and changed)."""
        self.git("merge", "--quiet", "--no-edit", "-X", "ours", f"origin/{base}")

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


def standalone_clone(repo: Path, sha: str, dest: Path) -> Path:
    """A standalone clone of the local repository `repo` at `dest`, detached at `sha`, with no remote
    (nothing in it points back at `repo`, no credential is involved): where code from a PR runs, so
    that nothing it writes there (a hook, a `.git/config` that git would obey) is ever in a copy that
    senpai runs credentialed git in. Its objects are copies, not hard links (a local clone's
    default): a pack the code rewrites in place would change `repo`'s, and every other clone's.
    Raises PermanentError with git's message if it fails."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    steps = [
        ["clone", "--quiet", "--no-checkout", "--no-hardlinks", str(repo), str(dest)],
        ["-C", str(dest), "checkout", "--quiet", "--detach", sha],
        ["-C", str(dest), "remote", "remove", "origin"],
    ]
    for args in steps:
        with phases.phase("git local"):
            proc = subprocess.run(["git", *args], capture_output=True, text=True)
        if proc.returncode != 0:
            raise PermanentError(f"git {args[0] if args[0] != '-C' else args[2]} of {dest}: {proc.stderr.strip()[-300:]}")
    return dest
