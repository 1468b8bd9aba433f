"""The fake forge's side of one repository, for unit tests: the local forge's state and rules with
no HTTP, no SQLite and no server.

Issues, PRs, comments, labels and who may do what live in Python objects; branches, commits and
merges live in a real bare git repository, driven by the local forge's own git layer
(`senpai.forge.localforge.git.GitRepos`: real merge commits, PR diffs).  `FakeRepo.forge` is the
port over it as one user sees it (`fake_forge.FakeForge`), `FakeRepo.reader` its reading part alone.
"""

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from senpai.errors import NotFound
from senpai.forge.base import Comment, Issue, LabelSpec, PullRequest
from senpai.forge.localforge.git import GitRepos

if TYPE_CHECKING:
    from fake_forge import FakeForge, FakeReader


@dataclass
class _Comment:
    id: int
    user: str
    body: str
    created: float
    updated: float


@dataclass
class _Item:
    """An issue, or a PR (`head_ref` set). Shas are recorded at creation, on a push seen, and when closed."""

    number: int
    user: str
    title: str
    body: str
    created: float
    updated: float
    state: Literal["open", "closed"] = "open"
    labels: list[str] = field(default_factory=list)
    comments: list[_Comment] = field(default_factory=list)
    head_ref: str | None = None
    base_ref: str | None = None
    head_sha: str | None = None
    base_sha: str | None = None
    merged: bool = False
    merge_commit_sha: str | None = None


class FakeRepo:
    """One repository (`owner/name`) of the fake forge; its bare git repository lives under `root`."""

    def __init__(self, root: Path, repo: str = "senpai/target", clock: Callable[[], float] = time.time) -> None:
        self.repo = repo
        self.clock = clock  # epoch seconds; a test may move it on instead of sleeping
        self.owner, name = repo.split("/", 1)
        self.git = GitRepos(Path(root) / "git")
        self.path = self.git.init(self.owner, name)
        self.items: dict[int, _Item] = {}
        self.labels: dict[str, LabelSpec] = {}
        self.roles: dict[str, str] = {self.owner: "owner"}  # login -> site-wide role: owner, collaborator, member, read
        self.collaborators: set[str] = set()
        self.lock = threading.RLock()
        self._last = 0.0
        self._comment_ids = 0

    def now(self) -> float:
        """Strictly increasing wall-clock seconds, so two changes never share an `updated`."""
        self._last = max(self.clock(), self._last + 1e-6)
        return self._last

    def forge(self, login: str | None = None, role: str | None = None, per_page: int = 100) -> "FakeForge":
        """The port as `login` (default: the owner, the bot), given site-wide `role` if named."""
        from fake_forge import FakeForge  # the port over this repository: it imports this module

        login = login or self.owner
        if role is not None:
            self.roles[login] = role
        return FakeForge(self, login, per_page)

    def reader(self, login: str | None = None, per_page: int = 100) -> "FakeReader":
        """The port's reading part alone as `login` (default: the owner, the bot): it can write nothing."""
        from fake_forge import FakeReader

        return FakeReader(self, login or self.owner, per_page)

    def add_collaborator(self, login: str) -> None:
        """Write access to this repository (GitHub: PUT /repos/{o}/{r}/collaborators/{login})."""
        if login != self.owner:
            self.collaborators.add(login)

    def permission(self, login: str) -> str:
        """The access `login` has: admin, write or read, as the local forge grants it."""
        role = self.roles.get(login, "read")
        if login == self.owner or role == "owner":
            return "admin"
        return "write" if role == "collaborator" or login in self.collaborators else "read"

    def association(self, login: str) -> str:
        """OWNER, MEMBER (role member), COLLABORATOR (write access), CONTRIBUTOR (authored a merged PR), else NONE."""
        if login == self.owner:
            return "OWNER"
        if self.roles.get(login) == "member":
            return "MEMBER"
        if self.permission(login) != "read":
            return "COLLABORATOR"
        merged = any(i.merged and i.user == login for i in self.items.values())
        return "CONTRIBUTOR" if merged else "NONE"

    def item(self, number: int, pull: bool = False) -> _Item:
        found = self.items.get(number)
        if found is None or (pull and found.head_ref is None):
            raise NotFound(f"#{number}: HTTP 404 Not Found")
        return found

    def comment(self, comment_id: int) -> tuple[_Item, _Comment]:
        for item in self.items.values():
            for c in item.comments:
                if c.id == comment_id:
                    return item, c
        raise NotFound(f"comment {comment_id}: HTTP 404 Not Found")

    def sync_heads(self) -> dict[str, str]:
        """The branches; an open PR whose head moved since last seen records it and is updated (a push)."""
        branches = self.git.branches(self.path)
        for item in self.items.values():
            live = branches.get(item.head_ref or "")
            if item.state == "open" and live is not None and live != item.head_sha:
                item.head_sha, item.updated = live, self.now()
        return branches

    def shas(self, item: _Item, branches: dict[str, str]) -> tuple[str | None, str | None]:
        """(head, base) of a PR: live branch tips while open, frozen once closed."""
        if item.state != "open":
            return item.head_sha, item.base_sha
        return branches.get(item.head_ref or "", item.head_sha), branches.get(item.base_ref or "", item.base_sha)

    # ------------------------------------------------------------ rendering, as the local forge renders

    def pull(self, item: _Item, branches: dict[str, str]) -> PullRequest:
        head, base = self.shas(item, branches)
        return PullRequest(
            number=item.number, title=item.title, body=item.body, state=item.state, merged=item.merged,
            head_ref=item.head_ref, head_sha=head or "", base_ref=item.base_ref, labels=list(item.labels),
            user=item.user, author_association=self.association(item.user),
            html_url=f"http://fake-forge.invalid/{self.repo}/pull/{item.number}", created_at=_at(item.created),
            updated_at=_at(item.updated), merge_commit_sha=item.merge_commit_sha, head_repo=self.repo, base_repo=self.repo,
        )  # fmt: skip

    def issue(self, item: _Item) -> Issue:
        return Issue(
            number=item.number, title=item.title, body=item.body, state=item.state, labels=list(item.labels),
            user=item.user, author_association=self.association(item.user), created_at=_at(item.created),
            updated_at=_at(item.updated),
        )  # fmt: skip

    def render_comment(self, c: _Comment, keeps: Callable[[str, str], bool] = lambda user, association: True) -> Comment:
        """The port's Comment of `c`; its body dropped (`withheld`) unless `keeps(login, association)`."""
        association = self.association(c.user)
        kept = keeps(c.user, association)
        return Comment(
            id=c.id, body=c.body if kept else "", user=c.user, author_association=association,
            created_at=_at(c.created), updated_at=_at(c.updated), withheld=not kept,
        )  # fmt: skip

    # ------------------------------------------------------------ what tests do beyond the port

    def edit_comment(self, comment_id: int, body: str) -> None:
        """A human edits a comment (GitHub: PATCH .../issues/comments/{id})."""
        with self.lock:
            item, c = self.comment(comment_id)
            c.body, c.updated = body, self.now()
            item.updated = self.now()

    def delete_comment(self, comment_id: int) -> None:
        """A human deletes a comment (GitHub: DELETE .../issues/comments/{id})."""
        with self.lock:
            item, c = self.comment(comment_id)
            item.comments.remove(c)
            item.updated = self.now()

    def edit_issue(self, number: int, body: str) -> None:
        """The author edits an issue's body (GitHub: PATCH .../issues/{n})."""
        with self.lock:
            item = self.item(number)
            item.body, item.updated = body, self.now()


def _at(moment: float) -> datetime:
    """Whole seconds, UTC: what GitHub's ISO 8601 timestamps carry."""
    return datetime.fromtimestamp(int(moment), UTC)


def _etag(models: list, salt: list[float]) -> str:
    """What the local forge's ETag depends on: the answer, and the full-precision times behind it."""
    answer = json.dumps([m.model_dump(mode="json") if isinstance(m, BaseModel) else m for m in models])
    return '"' + hashlib.sha256(f"{answer}|{salt!r}".encode()).hexdigest() + '"'
