"""Forge port, reading part: what reading one repository needs. Every method may raise
TransientError (retries exhausted), NotFound, or PermanentError."""

from collections.abc import Collection
from datetime import datetime
from typing import Literal, Protocol

from senpai.forge.base import Comment, ForgeMemo, Issue, IssuesPage, PullRequest, PullsPage, RateLimit


class ForgeReader(Protocol):
    """What reading one repository on a GitHub-compatible forge needs: the ledger, the humans' reader,
    the wrapper's observe step and every job read through it (conditional reads, the memo a job
    starts from). It writes nothing on the forge."""

    login: str  # the authenticated user; blocks are trusted only from this author
    clone_url: str  # git URL to clone/push, credentials NOT embedded
    calls: int  # forge API calls made so far (the wrapper reports calls per tick)
    not_modified: int  # of `calls`, those answered 304 (free on GitHub)
    answered_at: datetime | None  # the forge's own clock (its Date header) at its last read's answer; None: unknown

    def git_env(self) -> dict[str, str]:
        """Env vars that let `git` authenticate to `clone_url` without putting the token in argv."""
        ...

    def list_pulls(self, state: Literal["open", "closed", "all"] = "open") -> list[PullRequest]:
        """GitHub REST: GET /repos/{o}/{r}/pulls?state=...  (all pages)."""
        ...

    def pulls_updated(self, since: datetime | None, etag: str | None) -> PullsPage:
        """PRs of every state, most recently updated first, down to the first page that reaches back
        past `since` (every PR if None); page 1 conditional on `etag` (a 304: `changed` False).

        GitHub REST: GET /repos/{o}/{r}/pulls?state=all&sort=updated&direction=desc&per_page=100.
        """
        ...

    def issues_updated(self, label: str, etag: str | None) -> IssuesPage:
        """Every issue labelled `label` (any state, no PRs), most recently updated first; page 1
        conditional on `etag` (a 304: `changed` False).

        GitHub REST: GET /repos/{o}/{r}/issues?labels=<label>&state=all&sort=updated&direction=desc&per_page=100.
        """
        ...

    def rate_limit(self) -> RateLimit | None:
        """The rate limit the forge's last answer stated; None if none did. Makes no request."""
        ...

    def memo(self, comments_of: Collection[int] = ()) -> ForgeMemo:
        """What this adapter learned so far (`ForgeMemo`), with the comments read of `comments_of`
        (issue or PR numbers). Makes no request."""
        ...

    def recall(self, memo: ForgeMemo) -> None:
        """Start from `memo`, the `memo()` of an adapter for the same token and repository: its login
        and clone URL are not asked for again, its branch and comment reads are conditional. Makes no
        request."""
        ...

    def revalidate(self) -> None:
        """Send no cached validator on the next read of each page or object read so far (the
        wrapper's periodic full refresh: a stuck 304 cannot hide a change from it). Makes no request."""
        ...

    def get_pull(self, number: int) -> PullRequest:
        """GitHub REST: GET /repos/{o}/{r}/pulls/{n}, conditional on its last answer. Raises NotFound."""
        ...

    def pull_files(self, number: int) -> list[str]:
        """Paths the PR changes (both sides of renames). GitHub REST: GET .../pulls/{n}/files.

        Raises FileListTruncated if the forge lists fewer files than the PR's `changed_files`
        (GitHub lists 3,000 at most).
        """
        ...

    def list_comments(self, number: int) -> list[Comment]:
        """Every comment of issue or PR `number`, oldest first. A body is kept only where its author
        may steer: the bot, and an author_association in `forge.trusted` or WRITERS; any other
        comment comes with body "" and `withheld` (a flood of outsiders' comments costs no memory,
        and no code ever parses it). GitHub REST: GET /repos/{o}/{r}/issues/{n}/comments (all pages)."""
        ...

    def list_issues(self, label: str, state: Literal["open", "closed", "all"] = "open") -> list[Issue]:
        """Issues (PRs excluded) with `label`. GitHub REST: GET /repos/{o}/{r}/issues?labels=..."""
        ...

    def read_file(self, path: str, ref: str) -> str:
        """Text of file `path` at branch or commit `ref`. GitHub REST: GET /repos/{o}/{r}/contents/{path}?ref=.
        Raises NotFound if the file or ref does not exist."""
        ...

    def branch_sha(self, branch: str) -> str:
        """Head commit of `branch`. GitHub REST: GET /repos/{o}/{r}/branches/{branch}. Raises NotFound."""
        ...

    def commit_parents(self, sha: str) -> list[str]:
        """Parent shas of commit `sha`, first parent first. GitHub REST: GET /repos/{o}/{r}/commits/{sha}.
        Raises NotFound if there is no such commit."""
        ...

    def permission(self, login: str) -> str:
        """`login`'s base role on the repository: admin, write (maintain too), read (triage too) or
        none; a custom role counts as the role it is based on. Only admin and write (WRITE) may change
        senpai's state. GitHub REST: GET /repos/{o}/{r}/collaborators/{username}/permission (its
        `permission`), conditional on the last answer for `login` (a 304 is free). Raises NotFound
        if there is no such user."""
        ...
