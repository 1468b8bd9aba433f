"""An in-memory Forge for unit tests: the local forge's rules with no HTTP, no SQLite and no server.

`FakeRepo` is the forge's side of one repository: issues, PRs, comments, labels and who may do
what live in Python objects; branches, commits and merges live in a real bare git repository,
driven by the local forge's own git layer (`senpai.forge.localforge.git.GitRepos`: real merge
commits, PR diffs).  `FakeForge` is the port over it as one user sees it, and passes the same
contract suite as the PyGithub adapter over the local forge (tests/contract/test_forge_github.py).

What it models as the local forge does: live PR heads while open (a push bumps the PR's
`updated_at`, seen at the next read, as the forge's push hook does), ETags of each answer (any
change, even within one second, changes them) and so 304s counted in `not_modified`, `memo` and
`recall`, merges pinned to a head sha (a moved head, a conflict or a moved base raise
MergeConflict), author_association, and the permissions of site-wide roles and collaborators.

What it does not model: HTTP itself (retries, rate limits: `rate_limit()` is None, redirects),
branch protection on push (the clone URL is the bare repository's path, pushed to directly), a
PR marked merged because its head reached the base by a push, forks, squash merges, and the exact
request count of the adapter: `calls` counts one per method and one per page of a listing.
"""

import hashlib
import json
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

import pytest
from forge_fixtures import seed_repository
from pydantic import BaseModel

from senpai.config.harness import ForgeSettings
from senpai.errors import FileListTruncated, Forbidden, MergeConflict, NotFound, PermanentError
from senpai.forge.base import (
    WRITERS,
    Access,
    Comment,
    ForgeMemo,
    Issue,
    IssuesPage,
    LabelSpec,
    PullRequest,
    PullsPage,
    RateLimit,
)
from senpai.forge.localforge.git import Conflict, GitRepos, Moved

T = TypeVar("T", bound=BaseModel)
State = Literal["open", "closed", "all"]
MAX_PULL_FILES = 3000  # as GitHub and the local forge: the files list stops here, `changed_files` does not
DEFAULT_LABEL_COLOR = "ededed"
TRUSTED = tuple(ForgeSettings.model_fields["trusted"].default)  # forge.trusted's default


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
        login = login or self.owner
        if role is not None:
            self.roles[login] = role
        return FakeForge(self, login, per_page)

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


class FakeForge:
    """Forge port over a `FakeRepo`, acting as `login`; see the module docstring for what it models."""

    def __init__(self, repo: FakeRepo, login: str, per_page: int = 100, trusted: Collection[str] = TRUSTED) -> None:
        self.fake = repo
        self.login = login
        self.trusted = frozenset(trusted)  # forge.trusted: with WRITERS, the authors whose comment bodies are kept
        self.clone_url = str(repo.path)
        self.calls = 0
        self.not_modified = 0
        self.answered_at: datetime | None = None  # the fake's clock at its last conditional answer
        self._per_page = per_page
        self._pages: dict[tuple, tuple[str, list]] = {}  # what a conditional read was last answered: (ETag, items)
        self._unvalidated: set[tuple] = set()  # keys whose next read is no 304 (`revalidate`)

    def git_env(self) -> dict[str, str]:
        """GIT_TERMINAL_PROMPT=0: the clone URL is a local path and needs no credentials."""
        return {"GIT_TERMINAL_PROMPT": "0"}

    def rate_limit(self) -> RateLimit | None:
        """None: the fake states no rate limit (as the local forge)."""
        return None

    # ------------------------------------------------------------ reads, conditional as the adapter's

    def _conditional(self, key: tuple, etag: str, items: list) -> list:
        """Count one request; an answer whose ETag is the one cached under `key` is a 304."""
        self.calls += 1
        self.answered_at = datetime.fromtimestamp(int(self.fake.clock()), UTC)  # whole seconds, as an HTTP Date
        cached = self._pages.get(key)
        if cached and cached[0] == etag and key not in self._unvalidated:
            self.not_modified += 1
            return cached[1]
        self._unvalidated.discard(key)
        self._pages[key] = (etag, items)
        return items

    def revalidate(self) -> None:
        self._unvalidated = set(self._pages)

    def _listing(self, key: tuple, rows: list, render: Callable[[list], list]) -> list:
        """Every page of `rows` (sorted), each page conditional: the adapter's `_listing`."""
        out, step = [], self._per_page
        for start in range(0, max(len(rows), 1), step):
            chunk = rows[start : start + step]
            items = render(chunk)
            out += self._conditional((*key, start // step), _etag(items, [r.updated for r in chunk]), items)
        return out

    def _pulls(self, branches: dict[str, str]) -> Callable[[list[_Item]], list[PullRequest]]:
        return lambda chunk: [self.fake.pull(i, branches) for i in chunk]

    def list_pulls(self, state: State = "open") -> list[PullRequest]:
        with self.fake.lock:
            branches = self.fake.sync_heads()
            rows = [i for i in self._sorted("created") if i.head_ref and state in ("all", i.state)]
            return self._listing(("pulls", state), rows, self._pulls(branches))

    def _sorted(self, by: Literal["created", "updated"]) -> list[_Item]:
        return sorted(self.fake.items.values(), key=lambda i: (getattr(i, by), i.number), reverse=True)

    def _updated(self, rows: list[_Item], etag: str | None, render: Callable[[list], list], reached: Callable) -> tuple:
        """(changed, page 1's ETag, items): page 1 conditional on `etag`, then pages until one is `reached`."""
        pages = [rows[i : i + self._per_page] for i in range(0, len(rows), self._per_page)] or [[]]
        first_items = render(pages[0])
        first = _etag(first_items, [r.updated for r in pages[0]])
        self.calls += 1
        if first == etag:
            self.not_modified += 1
            return False, etag, []
        out = list(first_items)
        for page in pages[1:]:
            if not out or reached(out[-1]):
                break
            self.calls += 1
            out += render(page)
        return True, first, out

    def pulls_updated(self, since: datetime | None, etag: str | None) -> PullsPage:
        with self.fake.lock:
            branches = self.fake.sync_heads()
            rows = [i for i in self._sorted("updated") if i.head_ref]
            reached = lambda pr: since is not None and pr.updated_at < since  # noqa: E731
            changed, first, pulls = self._updated(rows, etag, self._pulls(branches), reached)
            return PullsPage(changed=changed, etag=first, pulls=pulls)

    def issues_updated(self, label: str, etag: str | None) -> IssuesPage:
        with self.fake.lock:
            rows = [i for i in self._sorted("updated") if label in i.labels]  # PRs too: the endpoint lists them
            render = lambda chunk: [self.fake.issue(i) if i.head_ref is None else i.number for i in chunk]  # noqa: E731
            changed, first, issues = self._updated(rows, etag, render, lambda item: False)
            return IssuesPage(changed=changed, etag=first, issues=[i for i in issues if isinstance(i, Issue)])

    def list_issues(self, label: str, state: State = "open") -> list[Issue]:
        with self.fake.lock:
            rows = [i for i in self._sorted("created") if label in i.labels and state in ("all", i.state)]
            render = lambda chunk: [self.fake.issue(i) if i.head_ref is None else None for i in chunk]  # noqa: E731
            return [i for i in self._listing(("issues", label, state), rows, render) if i is not None]

    def get_pull(self, number: int) -> PullRequest:
        with self.fake.lock:
            branches = self.fake.sync_heads()
            item = self.fake.item(number, pull=True)
            pr = self.fake.pull(item, branches)
            return self._conditional(("pull", number), _etag([pr], [item.updated]), [pr])[0]

    def list_comments(self, number: int) -> list[Comment]:
        with self.fake.lock:
            item = self.fake.item(number)
            keeps = lambda user, association: user == self.login or association in WRITERS | self.trusted  # noqa: E731
            render = lambda chunk: [self.fake.render_comment(c, keeps) for c in chunk]  # noqa: E731
            return self._listing(("comments", number), list(item.comments), render)

    def permission(self, login: str) -> str:
        """As the adapter: conditional on the last answer for `login`. Raises NotFound for a login the
        fake never saw (no role, no collaborator, no comment, no issue)."""
        with self.fake.lock:
            known = login in self.fake.roles or login in self.fake.collaborators or login == self.fake.owner
            seen = known or any(i.user == login or any(c.user == login for c in i.comments) for i in self.fake.items.values())
            if not seen:
                self.calls += 1
                raise NotFound(f"permission of {login}: HTTP 404 Not Found")
            permission = self.fake.permission(login)
            return self._conditional(("permission", login), _etag([permission], []), [permission])[0]

    def branch_sha(self, branch: str) -> str:
        with self.fake.lock:
            sha = self.fake.git.branch_sha(self.fake.path, branch)
            if sha is None:
                self.calls += 1
                raise NotFound(f"get branch {branch}: HTTP 404 Branch not found")
            return self._conditional(("branch", branch), _etag([branch, sha], []), [sha])[0]

    def read_file(self, path: str, ref: str) -> str:
        self.calls += 1
        blob = self.fake.git.file_blob(self.fake.path, ref, path)
        if blob is None:
            raise NotFound(f"read {path}@{ref}: HTTP 404 Not Found")
        return blob[1].decode()

    def commit_parents(self, sha: str) -> list[str]:
        self.calls += 1
        if not self.fake.git.has_commit(self.fake.path, sha):
            raise NotFound(f"get commit {sha[:8]}: HTTP 404 No commit found for SHA: {sha}")
        return self.fake.git.commit_info(self.fake.path, sha)["parents"]

    def pull_files(self, number: int) -> list[str]:
        with self.fake.lock:
            self.calls += 1
            branches = self.fake.sync_heads()
            head, base = self.fake.shas(self.fake.item(number, pull=True), branches)
            files = self.fake.git.changed_files(self.fake.path, base, head) if head and base else []
            if len(files) > MAX_PULL_FILES:
                raise FileListTruncated(f"PR #{number} changes {len(files)} files; the forge lists only {MAX_PULL_FILES}")
            paths = [p for f in files for p in (f.filename, f.previous_filename) if p]
            return list(dict.fromkeys(paths))

    # ------------------------------------------------------------ memo

    def memo(self, comments_of: Collection[int] = ()) -> ForgeMemo:
        branches = {key[1]: (etag, items[0]) for key, (etag, items) in self._pages.items() if key[0] == "branch"}
        comments = {}
        for number in comments_of:
            page = self._pages.get(("comments", number, 0))
            if page and ("comments", number, 1) not in self._pages:  # one page only, as the adapter
                comments[number] = (page[0], list(page[1]))
        return ForgeMemo(login=self.login, clone_url=self.clone_url, branches=branches, comments=comments)

    def recall(self, memo: ForgeMemo) -> None:
        for branch, (etag, sha) in memo.branches.items():
            self._pages.setdefault(("branch", branch), (etag, [sha]))
        for number, (etag, comments) in memo.comments.items():
            self._pages.setdefault(("comments", number, 0), (etag, list(comments)))

    # ------------------------------------------------------------ writes

    def _require_write(self, author: str | None = None) -> None:
        if self.login != author and self.fake.permission(self.login) == "read":
            raise Forbidden(f"{self.login}: HTTP 403 Must have write access to the repository")

    def _new(self, title: str, body: str, **pull: str) -> _Item:
        now = self.fake.now()
        item = _Item(number=len(self.fake.items) + 1, user=self.login, title=title, body=body, created=now, updated=now, **pull)
        self.fake.items[item.number] = item
        return item

    def _label(self, item: _Item, labels: list[str]) -> None:
        for name in labels:
            self.fake.labels.setdefault(name, LabelSpec(color=DEFAULT_LABEL_COLOR))
        item.labels, item.updated = list(dict.fromkeys(labels)), self.fake.now()

    def create_pull(self, title: str, body: str, head: str, base: str, labels: list[str]) -> PullRequest:
        with self.fake.lock:
            self.calls += 1 + bool(labels)
            branches = self.fake.sync_heads()
            head = head.split(":", 1)[-1]
            head_sha, base_sha = branches.get(head), branches.get(base)
            if head_sha is None or base_sha is None:
                raise PermanentError(f"create pull {head}->{base}: HTTP 422 Validation Failed (no such branch)")
            if any(i.state == "open" and (i.head_ref, i.base_ref) == (head, base) for i in self.fake.items.values()):
                raise PermanentError(f"create pull {head}->{base}: HTTP 422 A pull request already exists for {head}")
            if self.fake.git.is_ancestor(self.fake.path, head_sha, base_sha):
                raise PermanentError(f"create pull {head}->{base}: HTTP 422 No commits between {base} and {head}")
            item = self._new(title, body, head_ref=head, base_ref=base, head_sha=head_sha, base_sha=base_sha)
            if labels:
                self._require_write()
                self._label(item, labels)
            return self.fake.pull(item, branches)

    def update_pull(self, number: int, *, body: str | None = None, state: Literal["open", "closed"] | None = None) -> PullRequest:
        with self.fake.lock:
            self.calls += 1
            branches = self.fake.sync_heads()
            item = self.fake.item(number, pull=True)
            self._require_write(author=item.user)
            if state == "open" and item.state == "closed":
                if item.merged or item.head_ref not in branches:
                    raise PermanentError(f"update pull #{number}: HTTP 422 state cannot be changed")
                item.state = "open"
            elif state == "closed" and item.state == "open":
                item.head_sha, item.base_sha = self.fake.shas(item, branches)
                item.state = "closed"
            if body is not None:
                item.body = body
            item.updated = self.fake.now()
            return self.fake.pull(item, branches)

    def set_labels(self, number: int, labels: list[str]) -> None:
        with self.fake.lock:
            self.calls += 1
            item = self.fake.item(number)
            self._require_write()
            self._label(item, labels)

    def close_with_labels(self, number: int, labels: list[str]) -> None:
        with self.fake.lock:
            self.calls += 1
            branches = self.fake.sync_heads()
            item = self.fake.item(number)
            self._require_write()
            if item.state == "open" and item.head_ref is not None:  # a PR keeps the heads it was closed at
                item.head_sha, item.base_sha = self.fake.shas(item, branches)
            item.state = "closed"
            self._label(item, labels)

    def merge_pull(self, number: int, message: str, sha: str) -> str:
        with self.fake.lock:
            self.calls += 1
            branches = self.fake.sync_heads()
            item = self.fake.item(number, pull=True)
            self._require_write()
            if item.merged and item.head_sha == sha and item.merge_commit_sha:
                return item.merge_commit_sha  # a replayed merge, as the adapter answers it
            head = branches.get(item.head_ref or "")
            if item.state != "open" or head is None or head != sha:
                raise MergeConflict(f"merge pull #{number}: HTTP 409 Head branch was modified or the PR is not open")
            base = branches[item.base_ref or ""]
            text = f"Merge pull request #{number} from {self.fake.owner}/{item.head_ref}\n\n{message}\n"
            author = (self.login, f"{self.login}@users.noreply.localhost")
            try:
                commit = self.fake.git.merge_commit(self.fake.path, item.base_ref or "", head, text, author)
                self.fake.git.move_branch(self.fake.path, item.base_ref or "", commit, base)
            except (Conflict, Moved) as exc:
                raise MergeConflict(f"merge pull #{number}: HTTP 405 {exc}") from exc
            item.state, item.merged, item.merge_commit_sha = "closed", True, commit
            item.head_sha, item.base_sha, item.updated = head, base, self.fake.now()
            return commit

    def create_comment(self, number: int, body: str) -> Comment:
        with self.fake.lock:
            self.calls += 1
            item = self.fake.item(number)
            self.fake._comment_ids += 1
            now = self.fake.now()
            c = _Comment(id=self.fake._comment_ids, user=self.login, body=body, created=now, updated=now)
            item.comments.append(c)
            item.updated = self.fake.now()
            return self.fake.render_comment(c)

    def create_issue(self, title: str, body: str, labels: list[str]) -> Issue:
        with self.fake.lock:
            self.calls += 1
            item = self._new(title, body)
            if labels and self.fake.permission(self.login) != "read":  # GitHub drops them silently otherwise
                self._label(item, labels)
            return self.fake.issue(item)

    def update_issue(self, number: int, body: str) -> None:
        with self.fake.lock:
            self.calls += 1
            self._require_write(author=self.fake.item(number).user)
            self.fake.edit_issue(number, body)

    def access(self) -> Access:
        self.calls += 1
        permission = self.fake.permission(self.login)
        return Access(login=self.login, scopes=None, push=permission != "read", admin=permission == "admin")

    def ensure_labels(self, labels: dict[str, LabelSpec]) -> list[str]:
        with self.fake.lock:
            self._require_write()
            created = [name for name in labels if name not in self.fake.labels]
            self.calls += 1 + len(created)  # one listing, one create per missing label
            for name in created:
                self.fake.labels[name] = labels[name]
            return created

    def list_labels(self) -> dict[str, LabelSpec]:
        with self.fake.lock:
            self.calls += 1
            return dict(self.fake.labels)


@pytest.fixture
def fake_forge(tmp_path: Path) -> tuple[FakeForge, FakeRepo]:
    """A fresh fake repository with `main` and `advisor` (same seed commit), as `forge_repo` makes one on
    the local forge; the seed clone is tmp_path/'seed'. Returns (the bot's FakeForge, its FakeRepo)."""
    repo = FakeRepo(tmp_path / "fake-forge")
    forge = repo.forge()
    seed_repository(forge, tmp_path / "seed")
    return forge, repo
