"""The one forge adapter: GitHub REST through PyGithub, for github.com, GHES and the local forge.

This package is the only code that imports `github`. It is split along the port's seam, its parts
sharing one client (`http.GitHubHttp`: one request count, retries, error translation, converters):

    reader.GitHubReader  ForgeReader: conditional GETs with ETag pages, memo/recall, listings, reads
    writer.GitHubWriter  ForgeWriter: PyGithub writes with idempotent retries; each tells the reader
                         first (`GitHubReader.written`), so that no cached page hides it
    admin.GitHubAdmin    ForgeAdmin: access and labels; `create_repository`

`GitHubForge` is the three over one client, the `Forge` the wiring builds.
"""

import time
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Literal

from senpai import __version__
from senpai.config.harness import ForgeSettings
from senpai.config.time_limits import FORGE
from senpai.forge.base import Access, Comment, ForgeMemo, Issue, IssuesPage, LabelSpec, PullRequest, PullsPage, RateLimit
from senpai.forge.github.admin import GitHubAdmin
from senpai.forge.github.http import GitHubHttp
from senpai.forge.github.reader import GitHubReader, State
from senpai.forge.github.writer import GitHubWriter


class GitHubForge:
    """`Forge` over one repository (`settings.repo`): a reader, a writer and an admin part over one
    client. The arguments are `GitHubHttp`'s; `reader`, `writer` and `admin` are the parts, each a
    port part of its own."""

    def __init__(
        self,
        settings: ForgeSettings,
        token: str | None = None,
        *,
        attempts: int = FORGE.attempts,
        backoff: float = FORGE.backoff_seconds,
        max_wait: float = FORGE.max_wait_seconds,
        timeout: int = FORGE.timeout_seconds,
        sleep: Callable[[float], None] = time.sleep,
        per_page: int = 100,
        user_agent: str = f"senpai/{__version__}",
    ) -> None:
        self.settings = settings
        self.http = GitHubHttp(
            settings,
            token,
            attempts=attempts,
            backoff=backoff,
            max_wait=max_wait,
            timeout=timeout,
            sleep=sleep,
            per_page=per_page,
            user_agent=user_agent,
        )
        self.reader = GitHubReader(self.http)
        self.writer = GitHubWriter(self.http, self.reader.written)
        self.admin = GitHubAdmin(self.http)

    # ---------------------------------------------------------------- ForgeReader

    @property
    def login(self) -> str:
        """The authenticated user (GET /user), fetched once."""
        return self.http.login

    @property
    def clone_url(self) -> str:
        """The repository's `clone_url` (GET /repos/{o}/{r}), fetched once; no credentials in it."""
        return self.http.clone_url

    @property
    def calls(self) -> int:
        """Requests sent so far, by every part."""
        return self.http.calls

    @property
    def not_modified(self) -> int:
        """Of `calls`, those answered 304 (free on GitHub)."""
        return self.http.not_modified

    @property
    def answered_at(self) -> datetime | None:
        """The forge's clock (Date header) at its last conditional answer; None: none yet."""
        return self.http.answered_at

    def git_env(self) -> dict[str, str]:
        return self.reader.git_env()

    def rate_limit(self) -> RateLimit | None:
        return self.reader.rate_limit()

    def list_pulls(self, state: State = "open") -> list[PullRequest]:
        return self.reader.list_pulls(state)

    def pulls_updated(self, since: datetime | None, etag: str | None) -> PullsPage:
        return self.reader.pulls_updated(since, etag)

    def issues_updated(self, label: str, etag: str | None) -> IssuesPage:
        return self.reader.issues_updated(label, etag)

    def memo(self, comments_of: Collection[int] = ()) -> ForgeMemo:
        return self.reader.memo(comments_of)

    def recall(self, memo: ForgeMemo) -> None:
        self.reader.recall(memo)

    def revalidate(self) -> None:
        self.reader.revalidate()

    def get_pull(self, number: int) -> PullRequest:
        return self.reader.get_pull(number)

    def pull_files(self, number: int) -> list[str]:
        return self.reader.pull_files(number)

    def list_comments(self, number: int) -> list[Comment]:
        return self.reader.list_comments(number)

    def list_issues(self, label: str, state: State = "open") -> list[Issue]:
        return self.reader.list_issues(label, state)

    def read_file(self, path: str, ref: str) -> str:
        return self.reader.read_file(path, ref)

    def branch_sha(self, branch: str) -> str:
        return self.reader.branch_sha(branch)

    def commit_parents(self, sha: str) -> list[str]:
        return self.reader.commit_parents(sha)

    def permission(self, login: str) -> str:
        return self.reader.permission(login)

    # ---------------------------------------------------------------- ForgeWriter

    def create_pull(self, title: str, body: str, head: str, base: str, labels: list[str]) -> PullRequest:
        return self.writer.create_pull(title, body, head, base, labels)

    def update_pull(self, number: int, *, body: str | None = None, state: Literal["open", "closed"] | None = None) -> PullRequest:
        return self.writer.update_pull(number, body=body, state=state)

    def set_labels(self, number: int, labels: list[str]) -> None:
        self.writer.set_labels(number, labels)

    def close_with_labels(self, number: int, labels: list[str]) -> None:
        self.writer.close_with_labels(number, labels)

    def merge_pull(self, number: int, message: str, sha: str) -> str:
        return self.writer.merge_pull(number, message, sha)

    def create_comment(self, number: int, body: str) -> Comment:
        return self.writer.create_comment(number, body)

    def create_issue(self, title: str, body: str, labels: list[str]) -> Issue:
        return self.writer.create_issue(title, body, labels)

    def update_issue(self, number: int, body: str) -> None:
        self.writer.update_issue(number, body)

    # ---------------------------------------------------------------- ForgeAdmin

    def access(self) -> Access:
        return self.admin.access()

    def ensure_labels(self, labels: dict[str, LabelSpec]) -> list[str]:
        return self.admin.ensure_labels(labels)

    def list_labels(self) -> dict[str, LabelSpec]:
        return self.admin.list_labels()
