"""Forge port: the GitHub operations senpai needs, over senpai's own models.

No PyGithub type crosses this port.  Timestamps are timezone-aware UTC datetimes.  Every method may
raise TransientError (retries exhausted), NotFound, or PermanentError.
"""

from collections.abc import Collection
from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

# The only author_association values GitHub gives a user who may hold write permission on the
# repository (the owner, an org member through a team or the org's base role, a collaborator): the
# authors whose permission is worth asking (`Forge.permission`), whose bodies are worth keeping.
WRITERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
WRITE = frozenset({"admin", "write"})  # `Forge.permission` answers that may write (maintain counts as write)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class Comment(_Model):
    """An issue or PR conversation comment. GitHub REST: /repos/{o}/{r}/issues/{n}/comments."""

    id: int
    body: str
    user: str = Field(description="Author login.")
    author_association: str = Field(description="OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, ...")
    created_at: datetime
    updated_at: datetime
    withheld: bool = Field(
        False, description='The body was not kept ("" here): its author may not steer (`Forge.list_comments`).'
    )


class PullRequest(_Model):
    """A pull request. GitHub REST: /repos/{o}/{r}/pulls/{n}."""

    number: int
    title: str
    body: str
    state: Literal["open", "closed"]
    merged: bool
    head_ref: str
    head_sha: str
    base_ref: str
    labels: list[str]
    user: str
    author_association: str
    html_url: str
    created_at: datetime
    updated_at: datetime
    merge_commit_sha: str | None = None
    head_repo: str | None = Field(None, description="`owner/name` holding the head branch (a fork PR: the fork); None: deleted.")
    base_repo: str | None = Field(None, description="`owner/name` of the repository the PR targets.")


class Issue(_Model):
    """An issue (not a PR). GitHub REST: /repos/{o}/{r}/issues/{n}."""

    number: int
    title: str
    body: str
    state: Literal["open", "closed"]
    labels: list[str]
    user: str
    author_association: str
    created_at: datetime
    updated_at: datetime


class PullsPage(_Model):
    """Result of `Forge.pulls_updated`: `changed` is False (and `pulls` empty) when the forge answered 304."""

    changed: bool
    etag: str | None
    pulls: list[PullRequest]


class IssuesPage(_Model):
    """Result of `Forge.issues_updated`: `changed` is False (and `issues` empty) when the forge answered 304."""

    changed: bool
    etag: str | None
    issues: list[Issue]


class RateLimit(_Model):
    """The forge's core rate limit as its last answer stated it (GitHub: X-RateLimit-* headers)."""

    remaining: int = Field(description="Requests left in the window.")
    limit: int = Field(description="Requests per window (GitHub: 5,000 an hour for a token).")
    reset_at: datetime | None = Field(description="When the window resets, UTC.")


class ForgeMemo(_Model):
    """What a forge adapter learned that a later adapter for the same token and repository may start
    from, to skip requests whose answers do not change: the wrapper hands it to its jobs in the
    ledger snapshot (authenticated under the token), so a job does not ask again who it is."""

    login: str | None = Field(None, description="The authenticated user (GET /user).")
    clone_url: str | None = Field(None, description="The repository's clone URL (GET /repos/{o}/{r}).")
    branches: dict[str, tuple[str, str]] = Field(
        default_factory=dict, description="Branch name -> (ETag, head sha) of its last read: a re-read is conditional."
    )
    comments: dict[int, tuple[str, list[Comment]]] = Field(
        default_factory=dict,
        description="Issue or PR number -> (ETag, comments) of its comments' one page: a re-read is conditional.",
    )


class Access(_Model):
    """What the token may do on the repository. GitHub REST: GET /repos/{o}/{r} `permissions`."""

    login: str = Field(description="The authenticated user (GET /user).")
    scopes: list[str] | None = Field(description="X-OAuth-Scopes of a classic token; None for fine-grained tokens.")
    push: bool
    admin: bool


class LabelSpec(_Model):
    """A repository label's looks. GitHub REST: a label's `color` and `description`."""

    color: str = Field(pattern=r"^[0-9a-f]{6}$", description="6 lowercase hex digits, no `#`.")
    description: str = Field("", max_length=100, description="Shown where GitHub lists or offers the label.")


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


class ForgeWriter(Protocol):
    """What changes one repository: PRs, labels, merges, comments and issues. Called only by
    `senpai.ledger.transitions`, `replies` and `escalation`, and the wrapper's Dispatcher (an import
    contract keeps the wrapper's decide step from them)."""

    def create_pull(self, title: str, body: str, head: str, base: str, labels: list[str]) -> PullRequest:
        """GitHub REST: POST /repos/{o}/{r}/pulls, then POST .../issues/{n}/labels."""
        ...

    def update_pull(self, number: int, *, body: str | None = None, state: Literal["open", "closed"] | None = None) -> PullRequest:
        """GitHub REST: PATCH /repos/{o}/{r}/pulls/{n}."""
        ...

    def set_labels(self, number: int, labels: list[str]) -> None:
        """Replace the labels of issue/PR `number`. GitHub REST: PUT /repos/{o}/{r}/issues/{n}/labels."""
        ...

    def close_with_labels(self, number: int, labels: list[str]) -> None:
        """Close issue/PR `number` and replace its labels, in one request (a close and its final labels
        land together). GitHub REST: PATCH /repos/{o}/{r}/issues/{n} with state and labels."""
        ...

    def merge_pull(self, number: int, message: str, sha: str) -> str:
        """Merge (a real merge commit) of head `sha`, the head that was verified, and return its sha.

        GitHub REST: PUT /repos/{o}/{r}/pulls/{n}/merge with `sha`: a head that moved meanwhile is
        refused (409).  Raises MergeConflict when the head moved or conflicts with the base,
        MergeBlocked when the base's protection refuses the merge (a required review or status
        check: a human must act), TransientError when the forge cannot tell yet.
        """
        ...

    def create_comment(self, number: int, body: str) -> Comment:
        """GitHub REST: POST /repos/{o}/{r}/issues/{n}/comments."""
        ...

    def create_issue(self, title: str, body: str, labels: list[str]) -> Issue:
        """GitHub REST: POST /repos/{o}/{r}/issues."""
        ...

    def update_issue(self, number: int, body: str) -> None:
        """Replace the body of issue `number`. GitHub REST: PATCH /repos/{o}/{r}/issues/{n}."""
        ...


class ForgeAdmin(Protocol):
    """What `senpai preflight`, init and the demo check or set up once: the token's access and the
    labels senpai uses (`create_repository` is the adapter module's own, outside any port)."""

    def access(self) -> Access:
        """The token's login, scopes and repository permissions. Raises NotFound if the repo is not visible."""
        ...

    def ensure_labels(self, labels: dict[str, LabelSpec]) -> list[str]:
        """Create the missing labels (name -> colour and description); returns the names created.
        Existing labels are left as they are (a human may have restyled them).

        GitHub REST: POST /repos/{o}/{r}/labels.
        """
        ...

    def list_labels(self) -> dict[str, LabelSpec]:
        """The repository's labels (name -> colour and description; no description is "").

        GitHub REST: GET /repos/{o}/{r}/labels (every page).
        """
        ...


class Forge(ForgeReader, ForgeWriter, ForgeAdmin, Protocol):
    """Port over one repository on a GitHub-compatible forge: the three parts above, as the one adapter
    (`senpai.forge.github.GitHubForge`) implements them and the wiring builds it. A consumer that only
    reads is typed with `ForgeReader`."""
