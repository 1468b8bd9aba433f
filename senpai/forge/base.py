"""Forge port: the values its parts speak in (senpai's own models of GitHub's objects).

The port is three Protocols, each in a module of its own so that an import contract can keep a
module to the parts it uses: `senpai.forge.read.ForgeReader`, `senpai.forge.write.ForgeWriter` and
`senpai.forge.admin.ForgeAdmin`; `senpai.forge.port` joins them (`Forge`, and the pairs a consumer
that needs two takes). No PyGithub type crosses the port.  Timestamps are timezone-aware UTC datetimes.  Every method may
raise TransientError (retries exhausted), NotFound, or PermanentError.
"""

from datetime import datetime
from typing import Literal

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
