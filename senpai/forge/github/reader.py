"""The GitHub adapter's reading part: every read of the port's `ForgeReader`, most of them conditional.

Listings are read as the pages' JSON itself (`_listing`), each page asked for again with its ETag
and reused on a 304 (free on GitHub); an object (a PR, a branch, a permission) likewise (`_read`).
The cached pages are also what `memo` hands a later adapter, and what `recall` starts from.  A write
(`senpai.forge.github.writer`) calls `written` first, so that no cached page hides it.
"""

import base64
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar
from urllib.parse import quote, unquote, urlsplit

import requests

from senpai.errors import FileListTruncated, NotFound
from senpai.forge.base import WRITERS, Comment, ForgeMemo, Issue, IssuesPage, PullRequest, PullsPage, RateLimit
from senpai.forge.github.http import GitHubHttp, _comment, _is_pull, _issue, _pull

T = TypeVar("T")
GITHUB_MAX_PULL_FILES = 3000  # "Responses include a maximum of 3000 files" (GET .../pulls/{n}/files)
State = Literal["open", "closed", "all"]
MAX_PAGES = 20_000  # list pages whose items a forge keeps for 304s: a comments page per PR, 100 PRs a page


def _permission(data: Any) -> str:
    """The `permission` of a collaborator-permission answer; "none" for anything else (hostile text too)."""
    value = data.get("permission") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else "none"


def _issue_only(raw: dict) -> Issue | None:
    """The Issue of an issues-list item, or None for a PR (the issues endpoint lists PRs too)."""
    return None if _is_pull(raw) else _issue(raw)


class GitHubReader:
    """`ForgeReader` over the repository of `http`: its reads, and the pages it keeps for conditional ones."""

    def __init__(self, http: GitHubHttp) -> None:
        self.settings = http.settings
        self._http, self._repo = http, http.repo
        self._pages: dict[str, tuple[str, list, str]] = {}  # page URL -> (ETag, converted items, Link header)
        self._unvalidated: set[str] = set()  # keys of `_pages` whose next read sends no validator (`revalidate`)

    @property
    def login(self) -> str:
        """The authenticated user (GET /user), fetched once."""
        return self._http.login

    @property
    def clone_url(self) -> str:
        """The repository's `clone_url` (GET /repos/{o}/{r}), fetched once; no credentials in it."""
        return self._http.clone_url

    @property
    def calls(self) -> int:
        """Requests sent so far by any part of the adapter (one count: `GitHubHttp.calls`)."""
        return self._http.calls

    @property
    def not_modified(self) -> int:
        """Of `calls`, those answered 304 (free on GitHub)."""
        return self._http.not_modified

    @property
    def answered_at(self) -> datetime | None:
        """The forge's clock (Date header) at its last conditional answer; None: none yet."""
        return self._http.answered_at

    def git_env(self) -> dict[str, str]:
        """GIT_TERMINAL_PROMPT=0, plus an `http.<origin>.extraHeader` with the token (Basic auth).

        The header is scoped to the clone URL's origin, so the token never goes to another host, and it
        travels in the environment, never in argv or in the URL.
        """
        env = {"GIT_TERMINAL_PROMPT": "0"}
        if self._http.token:
            parts = urlsplit(self.clone_url)
            basic = base64.b64encode(f"x-access-token:{self._http.token}".encode()).decode()
            env.update(
                {
                    "GIT_CONFIG_COUNT": "1",
                    "GIT_CONFIG_KEY_0": f"http.{parts.scheme}://{parts.netloc}/.extraHeader",
                    "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
                }
            )
        return env

    def rate_limit(self) -> RateLimit | None:
        """The core rate limit as the forge's last answer gave it (X-RateLimit-Remaining, -Limit,
        -Reset); None before any answer that had them (the local forge sends none). No request."""
        remaining, limit = self._http.gh.requester.rate_limiting
        reset = self._http.gh.requester.rate_limiting_resettime
        if limit <= 0 or remaining < 0:
            return None
        try:  # a header is hostile text too: a reset past year 9999 is no reset time
            reset_at = datetime.fromtimestamp(reset, UTC) if reset else None
        except (OverflowError, OSError, ValueError):
            reset_at = None
        return RateLimit(remaining=remaining, limit=limit, reset_at=reset_at)

    def list_pulls(self, state: State = "open") -> list[PullRequest]:
        """GitHub REST: GET .../pulls?state=<state>, every page (see `_listing`)."""
        url = f"/repos/{self.settings.repo}/pulls"
        return self._http.call("list pulls", lambda: self._listing(url, {"state": state}, _pull))

    def memo(self, comments_of: Collection[int] = ()) -> ForgeMemo:
        """The login and clone URL if fetched, the ETag and sha of each branch read, and the ETag and
        comments of each of `comments_of` (issue or PR numbers) whose comments were read and fit one
        page. No request."""
        prefix = f"/repos/{self.settings.repo}/branches/"
        pages = self._pages.items()
        branches = {unquote(url[len(prefix) :]): (etag, items[0]) for url, (etag, items, _) in pages if url.startswith(prefix)}
        comments = {}
        for number in comments_of:
            page = self._pages.get(self._comments_key(number))
            if page and 'rel="next"' not in page[2]:
                comments[number] = (page[0], page[1])
        login, clone_url = self._http.__dict__.get("login"), self._http.__dict__.get("clone_url")
        return ForgeMemo(login=login, clone_url=clone_url, branches=branches, comments=comments)

    def recall(self, memo: ForgeMemo) -> None:
        """Start from `memo` (an adapter's `memo()` for the same token and repository). No request."""
        # `login` and `clone_url` are the client's cached_property: a value in its __dict__ is the cached answer
        for name in ("login", "clone_url"):
            if getattr(memo, name) and name not in self._http.__dict__:
                self._http.__dict__[name] = getattr(memo, name)
        for branch, (etag, sha) in memo.branches.items():
            self._pages.setdefault(f"/repos/{self.settings.repo}/branches/{quote(branch, safe='')}", (etag, [sha], ""))
        for number, (etag, comments) in memo.comments.items():
            self._pages.setdefault(self._comments_key(number), (etag, list(comments), ""))

    def revalidate(self) -> None:
        """Send no cached validator (If-None-Match) on the next read of each page and object read so
        far, so that a stuck 304 (a stale ETag, a caching proxy) cannot hide a change from the
        wrapper's periodic full refresh; each is cached again from its answer. No request."""
        self._unvalidated = set(self._pages)

    def pulls_updated(self, since: datetime | None, etag: str | None) -> PullsPage:
        """PRs of every state, most recently updated first, down to the first page that reaches back
        past `since` (every PR if None). Page 1 is conditional on `etag`: a 304 gives `changed` False
        and no PRs. GitHub REST: GET /repos/{o}/{r}/pulls?state=all&sort=updated&direction=desc&per_page=100."""
        url = f"/repos/{self.settings.repo}/pulls"
        reached = lambda batch: since is not None and batch[-1].updated_at < since  # noqa: E731
        changed, first, pulls = self._updated("list updated pulls", url, {}, etag, _pull, reached)
        return PullsPage(changed=changed, etag=first, pulls=pulls)

    def issues_updated(self, label: str, etag: str | None) -> IssuesPage:
        """Every issue labelled `label`, any state, most recently updated first (PRs left out). Page 1
        is conditional on `etag`: a 304 gives `changed` False and no issues. GitHub REST: GET
        /repos/{o}/{r}/issues?labels=<label>&state=all&sort=updated&direction=desc&per_page=100."""
        url = f"/repos/{self.settings.repo}/issues"
        changed, first, issues = self._updated(f"list issues labelled {label}", url, {"labels": label}, etag, _issue_only)
        return IssuesPage(changed=changed, etag=first, issues=[i for i in issues if i is not None])

    def _updated(
        self,
        what: str,
        url: str,
        params: dict[str, Any],
        etag: str | None,
        convert: Callable[[Any], T],
        reached: Callable[[list[T]], bool] = lambda batch: False,
    ) -> tuple[bool, str | None, list[T]]:
        """(changed, page 1's ETag, items) of a listing by `updated`, newest first: page 1 conditional
        on `etag` (a 304: not changed, no items), then page by page until one is `reached`."""
        params = {**params, "state": "all", "sort": "updated", "direction": "desc", "per_page": self._http.per_page}
        status, headers, data = self._http.call(what, lambda: self._http.get(url, {**params, "page": 1}, etag))
        if status == 304:
            return False, headers.get("etag") or etag, []
        first, items, page = headers.get("etag"), [], 1
        while True:
            batch = [convert(raw) for raw in data or []]
            items += batch
            if not batch or reached(batch) or 'rel="next"' not in str(headers.get("link", "")):
                return True, first, items
            page += 1
            status, headers, data = self._http.call(what, lambda p=page: self._http.get(url, {**params, "page": p}))

    def get_pull(self, number: int) -> PullRequest:
        """GitHub REST: GET /repos/{o}/{r}/pulls/{n}, with the ETag of its last answer (a 304 reuses it)."""
        return self._read(f"get pull #{number}", f"/repos/{self.settings.repo}/pulls/{number}", _pull)

    def pull_files(self, number: int) -> list[str]:
        def run() -> list[str]:
            pull, paths, listed = self._repo.get_pull(number), [], 0
            for f in pull.get_files():
                listed += 1
                paths += [f.filename] + ([f.previous_filename] if f.previous_filename else [])
            # GitHub stops listing at 3,000 files, silently; below that the list is whole, and the
            # PR's `changed_files` (one more GET: `pull` is lazy) is read only when it could be short
            if listed >= GITHUB_MAX_PULL_FILES and listed < pull.changed_files:
                raise FileListTruncated(f"PR #{number} changes {pull.changed_files} files; the forge lists only {listed}")
            return list(dict.fromkeys(paths))

        return self._http.call(f"files of pull #{number}", run)

    def list_comments(self, number: int) -> list[Comment]:
        """GitHub REST: GET .../issues/{n}/comments, every page (see `_listing`). A body is kept only
        where its author may steer (the bot, `forge.trusted`, WRITERS); the others are dropped as each
        page is read, before anything keeps or parses them (REST cannot leave them out of the answer)."""
        url = f"/repos/{self.settings.repo}/issues/{number}/comments"
        bot, steer = self.login, WRITERS | set(self.settings.trusted)
        keeps = lambda user, association: user == bot or association in steer  # noqa: E731
        return self._http.call(f"comments of #{number}", lambda: self._listing(url, {}, lambda raw: _comment(raw, keeps)))

    def _comments_key(self, number: int) -> str:
        """The `_pages` key of the first page of `list_comments(number)`."""
        return self._page_key(f"/repos/{self.settings.repo}/issues/{number}/comments", {"per_page": self._http.per_page})

    @staticmethod
    def _page_key(url: str, params: dict[str, Any] | None) -> str:
        return f"{url}?{sorted((params or {}).items())}"

    def written(self, number: int | None, comments: bool = False) -> None:
        """Before a write to issue or PR `number` (None: a new one): the cached pages it changes
        (the issue and PR listings, PR `number`, and with `comments` its comment pages) are read next
        without a validator. On an honest forge that read is a 200 anyway; a stale 304 must not hide
        senpai's own write from the idempotency read before its next one (a duplicate post)."""
        repo = self.settings.repo
        inside = (f"/repos/{repo}/issues?", f"/repos/{repo}/pulls?") + ((f"/issues/{number}/comments?",) if comments else ())
        exact = f"/repos/{repo}/pulls/{number}"
        self._unvalidated |= {k for k in self._pages if k == exact or any(part in k for part in inside)}

    def _validator(self, key: str, cached: tuple[str, list, str] | None) -> str | None:
        """The ETag to send for the page `key` whose cache is `cached`: none after `revalidate`."""
        if key in self._unvalidated:
            self._unvalidated.discard(key)
            return None
        return cached[0] if cached else None

    def _listing(self, url: str, params: dict[str, Any], convert: Callable[[Any], T]) -> list[T]:
        """Every item of a paginated REST list, each page's JSON `convert`ed, following `Link: rel="next"`.

        Each page is asked for with the ETag of its last answer; a 304 (which GitHub does not charge
        to the rate limit) reuses that page's converted items.  PyGithub objects are not built:
        they cost ~1 ms of CPU per PR (its repositories and users are objects too), which a ledger of
        1,000 PRs would pay on every re-read.  Cached pages: at most MAX_PAGES, the oldest dropped."""
        out: list[T] = []
        next_url: str | None = url
        next_params: dict[str, Any] | None = {**params, "per_page": self._http.per_page}
        first, later = self._page_key(url, next_params), False
        while next_url:
            # a later page is keyed under its listing's first page: `written` finds a listing's pages
            # by that one's URL, and GitHub's Link headers name the repository by id (/repositories/N/...)
            key = f"{first} {next_url}" if later else first
            cached = self._pages.pop(key, None)
            status, headers, page = self._http.get(next_url, next_params, self._validator(key, cached))
            if status == 304 and cached:
                etag, items, link = cached
            else:
                etag, items, link = headers.get("etag"), [convert(x) for x in page], str(headers.get("link", ""))
            if etag:
                self._pages[key] = (etag, items, link)
                if len(self._pages) > MAX_PAGES:
                    oldest = next(iter(self._pages))
                    del self._pages[oldest]
                    self._unvalidated.discard(oldest)
            out += items
            links = requests.utils.parse_header_links(link) if link else []
            next_url, next_params, later = next((x["url"] for x in links if x.get("rel") == "next"), None), None, True
        return out

    def list_issues(self, label: str, state: State = "open") -> list[Issue]:
        """GitHub REST: GET .../issues?labels=<label>&state=<state>, every page (see `_listing`); PRs left out."""
        url = f"/repos/{self.settings.repo}/issues"
        params = {"state": state, "labels": label}
        issues = self._http.call(
            f"list issues labelled {label}", lambda: self._listing(url, params, lambda x: None if _is_pull(x) else _issue(x))
        )
        return [i for i in issues if i is not None]

    def read_file(self, path: str, ref: str) -> str:
        def run() -> str:
            content = self._repo.get_contents(path, ref=ref)
            if isinstance(content, list):  # a directory
                raise NotFound(f"{path} at {ref} is a directory")
            return content.decoded_content.decode()

        return self._http.call(f"read {path}@{ref}", run)

    def branch_sha(self, branch: str) -> str:
        """GitHub REST: GET /repos/{o}/{r}/branches/{branch}, with the ETag of its last answer (a 304 reuses it)."""
        url = f"/repos/{self.settings.repo}/branches/{quote(branch, safe='')}"
        return self._read(f"get branch {branch}", url, lambda data: data["commit"]["sha"])

    def _read(self, what: str, url: str, convert: Callable[[Any], T]) -> T:
        """One object's GET, `convert`ed, asked for with the ETag of its last answer: a 304 (free on
        GitHub) reuses that answer. Raises as `_call`."""
        cached = self._pages.pop(url, None)
        status, headers, data = self._http.call(what, lambda: self._http.get(url, None, self._validator(url, cached)))
        item = cached[1][0] if status == 304 and cached else convert(data)
        if etag := headers.get("etag"):
            self._pages[url] = (etag, [item], "")
        return item

    def commit_parents(self, sha: str) -> list[str]:
        return self._http.call(f"get commit {sha[:8]}", lambda: [c.sha for c in self._repo.get_commit(sha).parents])

    def permission(self, login: str) -> str:
        """`login`'s base role on the repository (`permission`: admin, write, read or none), asked with
        the ETag of its last answer (a 304, free, reuses it). GitHub REST: GET
        /repos/{o}/{r}/collaborators/{username}/permission. Raises NotFound if there is no such user."""
        url = f"/repos/{self.settings.repo}/collaborators/{quote(login, safe='')}/permission"
        return self._read(f"permission of {login}", url, _permission)
