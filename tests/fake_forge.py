"""An in-memory Forge for unit tests, in the adapter's three parts, over a `fake_repo.FakeRepo`.

`FakeReader` holds what one user's adapter keeps (its request count, its conditional pages) and
reads the repository; `FakeWriter` writes into the repository as that user, counting on the
reader's count, and records each write it made (`writes`); `FakeAdmin` is access and labels.
`FakeForge` is the three together: it inherits them, as `GitHubForge` does the adapter's parts (no
name of one part is another's but the repository and user they share), the reader being itself, so
nothing is forwarded by hand. It passes the same contract suite as the PyGithub adapter over the
local forge (tests/contract/test_forge_github.py).

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

import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest
from fake_repo import FakeRepo, _Comment, _etag, _Item
from forge_fixtures import seed_repository

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
from senpai.forge.localforge.git import Conflict, Moved

State = Literal["open", "closed", "all"]
MAX_PULL_FILES = 3000  # as GitHub and the local forge: the files list stops here, `changed_files` does not
DEFAULT_LABEL_COLOR = "ededed"
TRUSTED = tuple(ForgeSettings.model_fields["trusted"].default)  # forge.trusted's default


class FakeReader:
    """`ForgeReader` over a `FakeRepo`, acting as `login`; see the module docstring for what it models."""

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


@dataclass(frozen=True)
class Write:
    """One write a `FakeWriter` made: its method and arguments."""

    method: str
    args: tuple
    kwargs: dict = field(default_factory=dict)


def _recorded(method: Callable) -> Callable:
    """A writer's method that, once it succeeded, appends what it wrote to `writes`."""

    @functools.wraps(method)
    def write(self: "FakeWriter", *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        self.writes.append(Write(method.__name__, args, kwargs))
        return out

    return write


def _require_write(repo: FakeRepo, login: str, author: str | None = None) -> None:
    """Forbidden unless `login` may write on `repo`, or is `author` (of what it edits)."""
    if login != author and repo.permission(login) == "read":
        raise Forbidden(f"{login}: HTTP 403 Must have write access to the repository")


class FakeWriter:
    """`ForgeWriter` into the repository of `reader`, as its user, counting on its `calls` (in
    `FakeForge`, the reader is the forge itself); each write that succeeded is recorded in `writes`,
    in order."""

    def __init__(self, reader: FakeReader) -> None:
        self._reader, self.fake, self.login = reader, reader.fake, reader.login
        self.writes: list[Write] = []

    def recorded(self, method: str) -> list[tuple]:
        """The arguments of each write by `method` (e.g. "set_labels"), in order."""
        return [w.args for w in self.writes if w.method == method]

    def _new(self, title: str, body: str, **pull: str) -> _Item:
        now = self.fake.now()
        item = _Item(number=len(self.fake.items) + 1, user=self.login, title=title, body=body, created=now, updated=now, **pull)
        self.fake.items[item.number] = item
        return item

    def _label(self, item: _Item, labels: list[str]) -> None:
        for name in labels:
            self.fake.labels.setdefault(name, LabelSpec(color=DEFAULT_LABEL_COLOR))
        item.labels, item.updated = list(dict.fromkeys(labels)), self.fake.now()

    @_recorded
    def create_pull(self, title: str, body: str, head: str, base: str, labels: list[str]) -> PullRequest:
        with self.fake.lock:
            self._reader.calls += 1 + bool(labels)
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
                _require_write(self.fake, self.login)
                self._label(item, labels)
            return self.fake.pull(item, branches)

    @_recorded
    def update_pull(self, number: int, *, body: str | None = None, state: Literal["open", "closed"] | None = None) -> PullRequest:
        with self.fake.lock:
            self._reader.calls += 1
            branches = self.fake.sync_heads()
            item = self.fake.item(number, pull=True)
            _require_write(self.fake, self.login, author=item.user)
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

    @_recorded
    def set_labels(self, number: int, labels: list[str]) -> None:
        with self.fake.lock:
            self._reader.calls += 1
            item = self.fake.item(number)
            _require_write(self.fake, self.login)
            self._label(item, labels)

    @_recorded
    def close_with_labels(self, number: int, labels: list[str]) -> None:
        with self.fake.lock:
            self._reader.calls += 1
            branches = self.fake.sync_heads()
            item = self.fake.item(number)
            _require_write(self.fake, self.login)
            if item.state == "open" and item.head_ref is not None:  # a PR keeps the heads it was closed at
                item.head_sha, item.base_sha = self.fake.shas(item, branches)
            item.state = "closed"
            self._label(item, labels)

    @_recorded
    def merge_pull(self, number: int, message: str, sha: str) -> str:
        with self.fake.lock:
            self._reader.calls += 1
            branches = self.fake.sync_heads()
            item = self.fake.item(number, pull=True)
            _require_write(self.fake, self.login)
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

    @_recorded
    def create_comment(self, number: int, body: str) -> Comment:
        with self.fake.lock:
            self._reader.calls += 1
            item = self.fake.item(number)
            self.fake._comment_ids += 1
            now = self.fake.now()
            c = _Comment(id=self.fake._comment_ids, user=self.login, body=body, created=now, updated=now)
            item.comments.append(c)
            item.updated = self.fake.now()
            return self.fake.render_comment(c)

    @_recorded
    def create_issue(self, title: str, body: str, labels: list[str]) -> Issue:
        with self.fake.lock:
            self._reader.calls += 1
            item = self._new(title, body)
            if labels and self.fake.permission(self.login) != "read":  # GitHub drops them silently otherwise
                self._label(item, labels)
            return self.fake.issue(item)

    @_recorded
    def update_issue(self, number: int, body: str) -> None:
        with self.fake.lock:
            self._reader.calls += 1
            _require_write(self.fake, self.login, author=self.fake.item(number).user)
            self.fake.edit_issue(number, body)


class FakeAdmin:
    """`ForgeAdmin` over the repository of `reader`, as its user, counting on its `calls` (in
    `FakeForge`, the reader is the forge itself)."""

    def __init__(self, reader: FakeReader) -> None:
        self._reader, self.fake, self.login = reader, reader.fake, reader.login

    def access(self) -> Access:
        self._reader.calls += 1
        permission = self.fake.permission(self.login)
        return Access(login=self.login, scopes=None, push=permission != "read", admin=permission == "admin")

    def ensure_labels(self, labels: dict[str, LabelSpec]) -> list[str]:
        with self.fake.lock:
            _require_write(self.fake, self.login)
            created = [name for name in labels if name not in self.fake.labels]
            self._reader.calls += 1 + len(created)  # one listing, one create per missing label
            for name in created:
                self.fake.labels[name] = labels[name]
            return created

    def list_labels(self) -> dict[str, LabelSpec]:
        with self.fake.lock:
            self._reader.calls += 1
            return dict(self.fake.labels)


class FakeForge(FakeReader, FakeWriter, FakeAdmin):
    """`Forge` over a `FakeRepo` as `login`: the three parts in one, the writer and admin parts
    counting on the reader that it is (one `calls`); `writes` are its writes, `recorded` their arguments."""

    def __init__(self, repo: FakeRepo, login: str, per_page: int = 100, trusted: Collection[str] = TRUSTED) -> None:
        FakeReader.__init__(self, repo, login, per_page, trusted)
        FakeWriter.__init__(self, self)
        FakeAdmin.__init__(self, self)


@pytest.fixture
def fake_forge(tmp_path: Path) -> tuple[FakeForge, FakeRepo]:
    """A fresh fake repository with `main` and `advisor` (same seed commit), as `forge_repo` makes one on
    the local forge; the seed clone is tmp_path/'seed'. Returns (the bot's FakeForge, its FakeRepo)."""
    repo = FakeRepo(tmp_path / "fake-forge")
    forge = repo.forge()
    seed_repository(forge, tmp_path / "seed")
    return forge, repo
