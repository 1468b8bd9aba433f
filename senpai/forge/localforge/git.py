"""Bare git repositories of the local forge: branches, real merges, PR diffs and smart HTTP.

Repositories live at `<data_dir>/git/<owner>/<name>.git` (bare, default branch `main`,
`http.receivepack` on).  Merges are real merge commits built with `git merge-tree --write-tree`
(git >= 2.38), `commit-tree` and a compare-and-swap `update-ref`, so no work tree is needed.
Clone, fetch and push go through git's own CGI, `git http-backend`.

What depends only on commits named by full sha (a PR's diff, its commit count, whether it merges)
is remembered per repository: a sha names the same commit for ever, so a push or a merge, which
moves branches, never makes a remembered answer stale; branches themselves are read live each time.
"""

import os
import re
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"
COMMITTER = ("Local Forge", "forge@localhost")
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# git reads commits through refs/replace/* unless told not to, and whoever may push a branch may push
# one: the forge's diffs, merges and branch protection read the commits themselves, as GitHub does
NO_REPLACE = {"GIT_NO_REPLACE_OBJECTS": "1"}
MEMO_SIZE = 4096  # answers remembered per forge
MEMO_FILES = 300  # a diff of more changed files is not remembered: 4096 of them could hold gigabytes
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_T = TypeVar("_T")
# what `git check-ref-format --branch` refuses in a branch name, where a revision's syntax starts (~ ^ : @{ ..)
_NOT_BRANCH = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^[-/.]|/\.|\.lock(?:/|$)|[/.]$|^@$")


class GitError(Exception):
    """A git command failed; `stderr` holds its message."""


class Conflict(GitError):
    """The head cannot be merged into the base without conflicts."""


class BadName(GitError):
    """A repository name that would leave the forge's folder."""


class Moved(GitError):
    """A branch moved while we were updating it (lost a compare-and-swap)."""


@dataclass(frozen=True)
class ChangedFile:
    """One entry of a PR diff: GitHub status, paths, blob sha and line counts."""

    status: str
    filename: str
    previous_filename: str | None
    sha: str
    additions: int
    deletions: int


_SAFE = re.compile(r"[A-Za-z0-9_.-]{1,100}")

# Branch protection, run by `git receive-pack` before it updates any ref (objects are quarantined but
# readable).  A protected branch may be created, never deleted or rewound (old not an ancestor of
# new = a force-push); only an admin may move it at all: others merge through the API.
PRE_RECEIVE = """#!/bin/sh
zero=0000000000000000000000000000000000000000
status=0
while read -r old new ref; do
  branch=${ref#refs/heads/}
  case ",$SENPAI_FORGE_PROTECTED," in *",$branch,"*) ;; *) continue ;; esac
  [ "$old" = "$zero" ] && continue
  if [ "$new" = "$zero" ]; then
    echo "protected branch $branch cannot be deleted"; status=1
  elif ! git merge-base --is-ancestor "$old" "$new"; then
    echo "protected branch $branch cannot be force-pushed"; status=1
  elif [ -z "$SENPAI_FORGE_ADMIN" ]; then
    echo "protected branch $branch changes only by merging a pull request"; status=1
  fi
done
exit $status
"""

_STATUS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed", "C": "copied", "T": "changed"}


class GitRepos:
    """All bare repositories under one root folder."""

    def __init__(self, root: Path, protected: tuple[str, ...] = ()) -> None:
        self.root = Path(root).resolve()  # absolute: git -C and http-backend must agree on it
        self.root.mkdir(parents=True, exist_ok=True)
        self.protected = protected
        self.hooks = self.root.parent / "hooks"
        self.hooks.mkdir(exist_ok=True)
        hook = self.hooks / "pre-receive"
        hook.write_text(PRE_RECEIVE)
        hook.chmod(0o755)
        self._locks: dict[Path, threading.Lock] = {}
        self._guard = threading.Lock()
        self._memo: OrderedDict[tuple[str, ...], object] = OrderedDict()  # least recently used first

    def path(self, owner: str, name: str) -> Path:
        """`<root>/<owner>/<name>.git`; raises GitError for a name that would leave the root."""
        path = self.root / owner / f"{name}.git"
        if path.resolve().parent.parent != self.root or not _SAFE.fullmatch(owner) or not _SAFE.fullmatch(name):
            raise BadName(f"invalid repository name {owner}/{name}")
        return path

    def lock(self, path: Path) -> threading.Lock:
        """A per-repository lock that serialises merges."""
        with self._guard:
            return self._locks.setdefault(path, threading.Lock())

    def _by_shas(self, what: str, path: Path, shas: tuple[str, ...], compute: Callable[[], _T]) -> _T:
        """`compute()`, remembered under (`what`, `path`, `shas`) when every one of `shas` is a full
        sha (a branch name or a short sha can name another commit tomorrow: never remembered).
        Only answers are remembered: an error is raised again on the next call, and a diff of
        more than MEMO_FILES files is computed again each time."""
        if not all(_FULL_SHA.fullmatch(sha) for sha in shas):
            return compute()
        key = (what, str(path), *shas)
        with self._guard:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]  # type: ignore[return-value]
        value = compute()
        if isinstance(value, tuple) and len(value) > MEMO_FILES:
            return value  # a pushed commit may change 100,000 files: the memo stays a few KB an answer
        with self._guard:
            self._memo[key] = value
            if len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)
        return value

    def _git(
        self, path: Path, *args: str, input: bytes | None = None, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        full_env = {**os.environ, **NO_REPLACE, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
        proc = subprocess.run(["git", "-C", str(path), *args], input=input, capture_output=True, env=full_env)
        if check and proc.returncode != 0:
            raise GitError(text(proc.stderr).strip() or f"git {args[0]} failed")
        return proc

    def _out(self, path: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
        return text(self._git(path, *args, input=input, env=env).stdout).strip()

    def init(self, owner: str, name: str, readme: str | None = None) -> Path:
        """Create the bare repository (idempotent); with `readme`, an initial commit on main."""
        path = self.path(owner, name)
        if not (path / "HEAD").exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            self._git(self.root, "init", "--bare", "--quiet", "--initial-branch=main", str(path))
            self._git(path, "config", "http.receivepack", "true")
        if readme is not None and not self.branches(path):
            blob = self._out(path, "hash-object", "-w", "--stdin", input=readme.encode())
            tree = self._out(path, "mktree", input=f"100644 blob {blob}\tREADME.md\n".encode())
            commit = self._out(path, "commit-tree", tree, "-m", "Initial commit", env=_people(COMMITTER))
            self._git(path, "update-ref", "refs/heads/main", commit, "0" * 40)
        return path

    def branches(self, path: Path) -> dict[str, str]:
        """Branch name -> head sha, sorted by name."""
        out = self._out(path, "for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/heads/")
        pairs = (line.rsplit(" ", 1) for line in out.splitlines() if line)
        return dict(sorted((name, sha) for name, sha in pairs))

    def branch_sha(self, path: Path, branch: str) -> str | None:
        """The head of branch `branch`; None if there is none, or `branch` is no branch name at all
        (`_NOT_BRANCH`: `advisor~1`, `main^{/fix}` name commits, not branches, as GitHub reads them)."""
        if _NOT_BRANCH.search(branch):
            return None
        proc = self._git(path, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}", check=False)
        return text(proc.stdout).strip() or None

    def has_commit(self, path: Path, sha: str) -> bool:
        """True if full sha `sha` names a commit of the repository."""
        return self._git(path, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0

    def file_blob(self, path: Path, ref: str, file: str) -> tuple[str, bytes] | None:
        """(blob sha, content) of `file` at branch or commit `ref`; None if either does not exist or it is not a file."""
        spec = f"{ref}:{file}"
        kind = self._git(path, "cat-file", "-t", spec, check=False)
        if kind.returncode != 0 or text(kind.stdout).strip() != "blob":
            return None
        return self._out(path, "rev-parse", spec), self._git(path, "cat-file", "blob", spec).stdout

    def commit_info(self, path: Path, sha: str) -> dict:
        """sha, tree, parents, author/committer names, emails and times (epoch seconds), message."""
        fmt = "%H%x00%T%x00%P%x00%an%x00%ae%x00%at%x00%cn%x00%ce%x00%ct%x00%B"
        keys = [
            "sha",
            "tree",
            "parents",
            "author_name",
            "author_email",
            "author_time",
            "committer_name",
            "committer_email",
            "committer_time",
            "message",
        ]
        info = dict(zip(keys, self._out(path, "show", "-s", f"--format={fmt}", sha).split("\0", 9), strict=True))
        info["parents"] = info["parents"].split()
        info["author_time"], info["committer_time"] = int(info["author_time"]), int(info["committer_time"])
        return info

    def count_commits(self, path: Path, base_sha: str, head_sha: str) -> int:
        count = lambda: int(self._out(path, "rev-list", "--count", f"{base_sha}..{head_sha}") or 0)  # noqa: E731
        return self._by_shas("count", path, (base_sha, head_sha), count)

    def is_ancestor(self, path: Path, ancestor: str, descendant: str) -> bool:
        return self._git(path, "merge-base", "--is-ancestor", ancestor, descendant, check=False).returncode == 0

    def merge_base(self, path: Path, a: str, b: str) -> str | None:
        """The best common ancestor of `a` and `b`; None when they have none (git exits 1). Any other
        failure (a missing object, a killed git) raises GitError: it is no answer about the two
        commits, and `changed_files` remembers what it gives for the pair."""
        proc = self._git(path, "merge-base", a, b, check=False)
        if proc.returncode not in (0, 1):
            raise GitError(text(proc.stderr).strip() or "git merge-base failed")
        return text(proc.stdout).strip() or None

    def _merge_tree(self, path: Path, base_sha: str, head_sha: str) -> str:
        proc = self._git(path, "merge-tree", "--write-tree", "--no-messages", base_sha, head_sha, check=False)
        # a head pushed with none of the base's history cannot merge either: GitHub shows it as not
        # mergeable, never as a server error on every read of the PR
        if proc.returncode == 1 or b"unrelated histories" in proc.stderr:
            raise Conflict("Merge conflict")
        if proc.returncode != 0:
            raise GitError(text(proc.stderr).strip())
        return text(proc.stdout).split("\n", 1)[0].strip()

    def mergeable(self, path: Path, base_sha: str, head_sha: str) -> bool:
        return self._by_shas("mergeable", path, (base_sha, head_sha), lambda: self._mergeable(path, base_sha, head_sha))

    def _mergeable(self, path: Path, base_sha: str, head_sha: str) -> bool:
        try:
            self._merge_tree(path, base_sha, head_sha)
        except Conflict:
            return False
        return True

    def merge_commit(
        self, path: Path, base: str, head_sha: str, message: str, author: tuple[str, str], squash: bool = False
    ) -> str:
        """Build (not publish) the commit merging `head_sha` into branch `base`; return its sha.

        Raises Conflict when the trees conflict, GitError when `base` does not exist.
        """
        base_sha = self.branch_sha(path, base)
        if base_sha is None:
            raise GitError(f"no branch {base}")
        tree = self._merge_tree(path, base_sha, head_sha)
        parents = ["-p", base_sha] if squash else ["-p", base_sha, "-p", head_sha]
        return self._out(path, "commit-tree", tree, *parents, "-F", "-", input=message.encode(), env=_people(author))

    def move_branch(self, path: Path, branch: str, new: str, old: str) -> None:
        """Compare-and-swap `branch` from `old` to `new`. Raises Moved if it is not at `old`."""
        if self._git(path, "update-ref", f"refs/heads/{branch}", new, old, check=False).returncode != 0:
            raise Moved(f"{branch} moved during the merge")

    def first_descendant(self, path: Path, ancestor: str, tip: str) -> str | None:
        """The oldest commit between `ancestor` and `tip` that descends from `ancestor` (its merge)."""
        out = self._out(path, "rev-list", "--ancestry-path", "--reverse", f"{ancestor}..{tip}")
        return out.split("\n", 1)[0] or None

    def changed_files(self, path: Path, base_sha: str, head_sha: str) -> list[ChangedFile]:
        """Files changed by `head_sha` since its merge base with `base_sha` (GitHub's PR diff); a new list each call."""
        files = self._by_shas("files", path, (base_sha, head_sha), lambda: tuple(self._changed_files(path, base_sha, head_sha)))
        return list(files)

    def _changed_files(self, path: Path, base_sha: str, head_sha: str) -> list[ChangedFile]:
        start = self.merge_base(path, base_sha, head_sha) or EMPTY_TREE
        raw = text(self._git(path, "diff", "--raw", "-z", "-M", "--no-abbrev", start, head_sha).stdout)
        counts = self._numstat(path, start, head_sha)
        fields = raw.split("\0")
        files, i = [], 0
        while i < len(fields) - 1:
            meta = fields[i].lstrip(":").split()
            letter, sha = meta[4][0], meta[3]
            if letter in "RC":
                old, new, i = fields[i + 1], fields[i + 2], i + 3
            else:
                old, new, i = None, fields[i + 1], i + 2
            adds, dels = counts.get(new, (0, 0))
            files.append(ChangedFile(_STATUS.get(letter, "modified"), new, old, sha if letter != "D" else meta[2], adds, dels))
        return files

    def _numstat(self, path: Path, start: str, head_sha: str) -> dict[str, tuple[int, int]]:
        out = text(self._git(path, "diff", "--numstat", "-z", "-M", start, head_sha).stdout)
        fields, counts, i = out.split("\0"), {}, 0
        while i < len(fields) - 1:
            adds, dels, name = fields[i].split("\t", 2)
            if name:
                i += 1
            else:  # a rename: the old and new names follow as their own fields
                name, i = fields[i + 2], i + 3
            counts[name] = (int(adds) if adds.isdigit() else 0, int(dels) if dels.isdigit() else 0)
        return counts

    def http_backend(
        self, path_info: str, method: str, query: str, headers: dict[str, str], body: bytes, user: str, admin: bool
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Run `git http-backend` as CGI for one smart-HTTP request; return (status, headers, body).

        Pushes run the forge's pre-receive hook (branch protection) with the pusher's rights.
        """
        env = {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "core.hooksPath",
            "GIT_CONFIG_VALUE_0": str(self.hooks),
            "SENPAI_FORGE_PROTECTED": ",".join(self.protected),
            "SENPAI_FORGE_ADMIN": "1" if admin else "",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            **NO_REPLACE,  # the pre-receive hook's ancestry check too
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REQUEST_METHOD": method,
            "PATH_INFO": path_info,
            "QUERY_STRING": query,
            "REMOTE_USER": user,
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_TYPE": headers.get("content-type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": headers.get("content-encoding", ""),
            "HTTP_GIT_PROTOCOL": headers.get("git-protocol", ""),
        }
        proc = subprocess.run([HTTP_BACKEND], input=body, capture_output=True, env=env)
        head, sep, payload = proc.stdout.partition(b"\r\n\r\n")
        if not sep:
            head, _, payload = proc.stdout.partition(b"\n\n")
        status, out_headers = 200, []
        for line in text(head).splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                out_headers.append((key.strip(), value.strip()))
        return status, out_headers, payload


def text(raw: bytes) -> str:
    """git output as text: undecodable bytes (a latin-1 file name) become U+FFFD, never an error.

    Every byte string the forge reads from git goes through here, so no name can make a route raise.
    """
    return raw.decode("utf-8", errors="replace")


def _people(author: tuple[str, str]) -> dict[str, str]:
    """Env for commit-tree: `author` authors, the forge commits (as GitHub's web-flow does)."""
    return {
        "GIT_AUTHOR_NAME": author[0],
        "GIT_AUTHOR_EMAIL": author[1],
        "GIT_COMMITTER_NAME": COMMITTER[0],
        "GIT_COMMITTER_EMAIL": COMMITTER[1],
    }
