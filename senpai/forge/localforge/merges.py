"""Merging a PR on the local forge, atomically with its database record, and recovery at startup.

A merge runs under the repository lock and re-reads the PR there, so concurrent merges of one PR
make one merge commit.  Order: build the merge commit, journal it (`pending_merges`), move the
base branch with a compare-and-swap, then mark the PR merged and clear the journal in one
transaction.  `recover` (called when the forge starts) finishes a journalled merge whose commit
reached the base, drops one that did not, and marks merged any open PR whose head is already in
its base (as GitHub does when a PR's commits reach its base by a push).
"""

import os
import signal
from pathlib import Path
from typing import Any

from senpai.forge.localforge.context import Ctx
from senpai.forge.localforge.git import Conflict, GitRepos, Moved
from senpai.forge.localforge.reviews import blocked
from senpai.forge.localforge.store import Store
from senpai.forge.localforge.web import ApiError, invalid

# Test-only crash point: kill the forge between the git update and the database write.
CRASH_ENV = "SENPAI_LOCALFORGE_CRASH_AFTER_MERGE_REF"


def _message(repo: dict, row: dict, payload: dict[str, Any], squash: bool) -> str:
    for key in ("commit_title", "commit_message"):
        if payload.get(key) is not None and not isinstance(payload[key], str):
            raise invalid("PullRequest", key)
    default_title = (
        f"{row['title']} (#{row['number']})"
        if squash
        else f"Merge pull request #{row['number']} from {repo['owner']}/{row['head_ref']}"
    )
    title = payload.get("commit_title") or default_title
    body = payload.get("commit_message")
    if body is None and not squash:
        body = row["title"]
    return f"{title}\n\n{body}\n" if body else f"{title}\n"


def merge(ctx: Ctx, repo: dict, number: int, payload: dict[str, Any]) -> str:
    """Merge PR `number` (payload: GitHub's merge_method, sha, commit_title, commit_message); return the commit sha.

    Raises ApiError 405 (not open, approvals the protected base asks for are missing, conflict,
    method), 409 (head is not `sha`, base moved), 422 (types).
    """
    method, expected = payload.get("merge_method", "merge"), payload.get("sha")
    if not isinstance(method, str) or (expected is not None and not isinstance(expected, str)):
        raise invalid("PullRequest", "merge_method" if not isinstance(method, str) else "sha")
    if method not in ("merge", "squash"):
        raise ApiError(405, "Merge method is not allowed on this repository.")
    path = ctx.path(repo)
    with ctx.git.lock(path):
        row = ctx.pull(repo, number)  # re-read under the lock: a concurrent merge may have finished
        head_sha = ctx.git.branch_sha(path, row["head_ref"])
        if row["state"] != "open" or head_sha is None:
            raise ApiError(405, "Pull Request is not mergeable")
        if expected and expected != head_sha:
            raise ApiError(409, "Head branch was modified. Review and try the merge again.")
        if refused := blocked(ctx, repo, row):  # the base's protection: a human must approve first
            raise ApiError(405, refused)
        base_sha = ctx.git.branch_sha(path, row["base_ref"])
        message = _message(repo, row, payload, method == "squash")
        try:
            commit = ctx.git.merge_commit(path, row["base_ref"], head_sha, message, _author(ctx.user), method == "squash")
        except Conflict as exc:
            raise ApiError(405, "Merge conflict") from exc
        ctx.store.begin_merge(row["id"], commit, ctx.user, head_sha, base_sha)
        try:
            ctx.git.move_branch(path, row["base_ref"], commit, base_sha)
        except Moved as exc:
            ctx.store.drop_merge(row["id"])
            raise ApiError(409, "Base branch was modified. Review and try the merge again.") from exc
        if os.environ.get(CRASH_ENV):
            os.kill(os.getpid(), signal.SIGKILL)
        ctx.store.finish_merge(row["id"], commit, ctx.user, head_sha, base_sha)
    return commit


def _author(login: str) -> tuple[str, str]:
    return login, f"{login}@users.noreply.localhost"


def recover(store: Store, git: GitRepos) -> int:
    """Reconcile merges with git after a crash; return how many PRs were marked merged."""
    done = 0
    pending = {row["issue_id"]: row for row in store.pending_merges()}
    for row in store.all_open_pulls():
        path = git.path(row["owner"], row["name"])
        base = git.branch_sha(path, row["base_ref"]) if (path / "HEAD").exists() else None
        if base is None:
            continue
        journal = pending.pop(row["id"], None)
        if journal and git.is_ancestor(path, journal["commit_sha"], base):
            store.finish_merge(row["id"], journal["commit_sha"], journal["merged_by"], journal["head_sha"], journal["base_sha"])
            done += 1
            continue
        if journal:  # the crash came before the base moved: nothing was merged
            store.drop_merge(row["id"])
        done += _merged_by_push(store, git, path, row, base)
    for issue_id in pending:  # journal rows of PRs no longer open
        store.drop_merge(issue_id)
    return done


def _merged_by_push(store: Store, git: GitRepos, path: Path, row: dict, base: str) -> int:
    head = git.branch_sha(path, row["head_ref"]) or row["head_sha"]
    if not head or head == row["base_sha"] or not git.is_ancestor(path, head, base):
        return 0
    commit = git.first_descendant(path, head, base) or base
    store.finish_merge(row["id"], commit, None, head, row["base_sha"] or base)  # the pusher is not known
    return 1
