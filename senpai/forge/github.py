"""The one forge adapter: GitHub REST through PyGithub, for github.com, GHES and the local forge.

This is the only module that imports `github`.  It turns PyGithub objects (and, for listings,
the pages' JSON itself: `_listing`, which asks again for a page with its ETag and reuses the page
on a 304) into the port's models and PyGithub/requests errors into senpai's error tree:

    HTTP 5xx, 429, connection error              -> retried, then TransientError (with retry_after)
    HTTP 403 of a primary or secondary rate limit -> the same (message, Retry-After or remaining 0)
    HTTP 401/403 otherwise                       -> Forbidden
    HTTP 404                                     -> NotFound
    HTTP 405/409 on merge                        -> MergeConflict, MergeBlocked or TransientError,
                                                    by the PR's `mergeable` and `mergeable_state`
    any other HTTP error                         -> PermanentError

Retries use tenacity with exponential backoff, honouring `Retry-After` (and the rate-limit reset)
up to `max_wait` seconds; a longer wait is not slept here but raised as TransientError(retry_after)
for the caller to schedule.  PyGithub's own retry is off (`retry=0`: it would re-POST blindly), so
`calls` counts each HTTP request actually sent, retries included.

Writes that are not idempotent (POST a comment, a PR, an issue) may have been applied even when
their answer was lost (a reset, a 5xx after the commit).  Before such a write is retried, the
forge is searched for it by its identity: a comment or issue by its `<!-- senpai:... -->` marker
(or its whole body if it has none) among the bot's own, a PR by its head branch.  If found, that
object is the answer and nothing is posted again.  Against a local forge (127.0.0.1/localhost) PyGithub's
request throttling (0.25 s per request, 1 s per write) is off too.
"""

import base64
import email.utils
import json
import re
import time
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal, TypeVar
from urllib.parse import quote, unquote, urlsplit

import requests
from github import Auth, Github, GithubException, RateLimitExceededException
from github.Issue import Issue as GhIssue
from github.IssueComment import IssueComment as GhComment
from github.PullRequest import PullRequest as GhPull
from github.Requester import Requester
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from senpai import __version__
from senpai.config.harness import ForgeSettings
from senpai.config.time_limits import FORGE
from senpai.errors import (
    FileListTruncated,
    Forbidden,
    MergeBlocked,
    MergeConflict,
    NotFound,
    PermanentError,
    SenpaiError,
    TransientError,
)
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

T = TypeVar("T")
GITHUB_MAX_PULL_FILES = 3000  # "Responses include a maximum of 3000 files" (GET .../pulls/{n}/files)
MARKER = re.compile(r"<!-- senpai:[^>]{1,200} -->")
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
State = Literal["open", "closed", "all"]
MAX_PAGES = 20_000  # list pages whose items a forge keeps for 304s: a comments page per PR, 100 PRs a page


class _CountingAuth(Auth.Auth):
    """Token auth (or none) that counts requests: PyGithub calls `authentication` once per request."""

    def __init__(self, token: str | None, on_request: Callable[[], None]) -> None:
        self._token = token
        self._on_request = on_request

    @property
    def token_type(self) -> str:
        return "token"

    @property
    def token(self) -> str:
        return self._token or ""

    def authentication(self, headers: dict) -> None:
        self._on_request()
        if self._token:
            headers["Authorization"] = f"token {self._token}"

    @property
    def _masked_token(self) -> str:
        return "token (removed)"


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, requests.exceptions.RequestException):
        return True
    if isinstance(exc, GithubException):
        return exc.status >= 500 or exc.status == 429 or _rate_limited(exc)
    return False


def _network_error(base_url: str, exc: requests.exceptions.RequestException) -> str:
    """A sentence for a request that got no answer: a refused or failed connection names the forge
    and how to start a local one; other errors (a timeout mid-answer) keep requests' own words."""
    if isinstance(exc, requests.exceptions.ConnectionError) and not isinstance(exc, requests.exceptions.ReadTimeout):
        why = "connection refused" if "refused" in str(exc).lower() else f"{type(exc).__name__}"
        return (
            f"cannot reach {base_url}: {why}: is the forge running? "
            "Start a local one with `senpai forge serve --data DIR`, or check forge.base_url"
        )
    return f"{type(exc).__name__}: {exc}"


def _rate_limited(exc: GithubException) -> bool:
    """GitHub's primary and secondary rate limits: 403 (or 429) with a rate-limit message, a
    Retry-After header, or X-RateLimit-Remaining: 0."""
    if isinstance(exc, RateLimitExceededException):
        return True
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    return exc.status in (403, 429) and ("retry-after" in headers or headers.get("x-ratelimit-remaining") == "0")


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait: Retry-After (seconds or HTTP date), or the rate-limit reset."""
    headers = {k.lower(): v for k, v in ((getattr(exc, "headers", None) or {}).items())}
    value = headers.get("retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            moment = email.utils.parsedate_to_datetime(value)
            return max(0.0, moment.timestamp() - time.time())
    if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
        return max(0.0, float(headers["x-ratelimit-reset"]) - time.time())
    return None


def _identity(body: str) -> str:
    """What identifies a comment or issue body on the forge: its last senpai marker, else the body."""
    markers = MARKER.findall(body)
    return markers[-1] if markers else body.strip()


def _same(body: str | None, key: str) -> bool:
    """True if `body` is the text `_identity` named `key`: it ends in that marker (senpai's texts end
    in theirs; a marker's text elsewhere, such as a model's words quoted raw in a record's YAML, is
    not it), or it is that text without a marker."""
    text = (body or "").strip()
    return text.endswith(key) if MARKER.fullmatch(key) else text == key


def _translate(what: str, exc: GithubException, merge: bool = False) -> SenpaiError:
    message = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
    text = f"{what}: HTTP {exc.status} {message or ''}".strip()
    if _is_transient(exc):
        return TransientError(text, retry_after=_retry_after(exc))
    if exc.status == 401:  # the usual cause is a missing or wrong token: say where it comes from
        return Forbidden(
            f"{text} (the bot's token is read from the env var named by forge.token_env; "
            "on the local forge `senpai forge token --data DIR` makes one)"
        )
    if exc.status == 403:
        return Forbidden(text)
    if exc.status == 404:
        return NotFound(text)
    if merge and exc.status in (405, 409):
        return MergeConflict(text)
    return PermanentError(text)


def _date(header: str | None) -> datetime | None:
    """An HTTP `Date` header as an aware UTC datetime; None if absent or not a date (hostile text too)."""
    try:
        when = email.utils.parsedate_to_datetime(header) if header else None
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return when.astimezone(UTC) if when is not None and when.tzinfo is not None else None


def _field(obj: Any, *path: str) -> Any:
    """`obj.a.b` of a PyGithub object, or `obj["a"]["b"]` of the REST JSON it is built from; None
    once a step is missing.  An ISO 8601 time string becomes an aware datetime, as PyGithub makes it."""
    for key in path:
        if obj is None:
            return None
        obj = obj.get(key) if isinstance(obj, dict) else getattr(obj, key)
    return datetime.fromisoformat(obj) if path[-1].endswith("_at") and isinstance(obj, str) else obj


def _pull(pr: GhPull | dict) -> PullRequest:
    """The port's PullRequest of a PyGithub PR, or of a PR's REST JSON (a list item)."""
    # `merged` is absent from list answers (reading it would cost a GET per PR); merged_at is not.
    merged = _field(pr, "merged_at") is not None
    return PullRequest(
        number=_field(pr, "number"),
        title=_field(pr, "title"),
        body=_field(pr, "body") or "",
        state=_field(pr, "state"),
        merged=merged,
        head_ref=_field(pr, "head", "ref"),
        head_sha=_field(pr, "head", "sha"),
        base_ref=_field(pr, "base", "ref"),
        labels=[_field(x, "name") for x in _field(pr, "labels") or []],
        user=_field(pr, "user", "login"),
        author_association=_field(pr, "author_association"),
        html_url=_field(pr, "html_url"),
        created_at=_field(pr, "created_at"),
        updated_at=_field(pr, "updated_at"),
        # GitHub fills merge_commit_sha with a test merge while a PR is open: only trust it once merged.
        merge_commit_sha=_field(pr, "merge_commit_sha") if merged else None,
        head_repo=_field(pr, "head", "repo", "full_name"),
        base_repo=_field(pr, "base", "repo", "full_name"),
    )


def _issue(issue: GhIssue | dict) -> Issue:
    """The port's Issue of a PyGithub issue, or of an issue's REST JSON (a list item)."""
    return Issue(
        number=_field(issue, "number"),
        title=_field(issue, "title"),
        body=_field(issue, "body") or "",
        state=_field(issue, "state"),
        labels=[_field(x, "name") for x in _field(issue, "labels") or []],
        user=_field(issue, "user", "login"),
        author_association=_field(issue, "author_association"),
        created_at=_field(issue, "created_at"),
        updated_at=_field(issue, "updated_at"),
    )


def _comment(comment: GhComment | dict, keeps: Callable[[str, str], bool] = lambda user, association: True) -> Comment:
    """The port's Comment of a PyGithub comment, or of a comment's REST JSON (a list item); its body
    is dropped (`withheld`) unless `keeps(login, author_association)`."""
    user, association = _field(comment, "user", "login"), _field(comment, "author_association")
    kept = keeps(user, association)
    return Comment(
        id=_field(comment, "id"),
        body=(_field(comment, "body") or "") if kept else "",
        user=user,
        author_association=association,
        created_at=_field(comment, "created_at"),
        updated_at=_field(comment, "updated_at"),
        withheld=not kept,
    )


def _permission(data: Any) -> str:
    """The `permission` of a collaborator-permission answer; "none" for anything else (hostile text too)."""
    value = data.get("permission") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else "none"


def _is_pull(issue: GhIssue | dict) -> bool:
    # The `pull_request` key marks PRs, but PyGithub fetches the whole issue again when asked for a
    # missing attribute; PR html_urls end in /pull/<n> on GitHub, GHES and the local forge alike.
    return "/pull/" in _field(issue, "html_url")


def _issue_only(raw: dict) -> Issue | None:
    """The Issue of an issues-list item, or None for a PR (the issues endpoint lists PRs too)."""
    return None if _is_pull(raw) else _issue(raw)


class GitHubForge:
    """Forge port over one repository (`settings.repo`) through PyGithub.

    Args:
        settings: base_url and owner/name of the repository.
        token: API token; None reads `settings.token_env` (may be unset for the local forge).
        attempts: tries per operation for transient failures (>= 1).
        backoff: first backoff in seconds, doubled each retry, capped at `max_wait`.
        max_wait: longest wait (seconds) slept here; a longer Retry-After raises TransientError.
        timeout: per-request timeout, seconds.
        sleep: how to wait between retries (tests inject a fake clock).
        per_page: items per page of a listing (GitHub allows at most 100).
    """

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
        self.calls = 0
        self.not_modified = 0  # of `calls`, answered 304: free on GitHub
        self.answered_at: datetime | None = None  # the forge's clock (Date header) at its last conditional answer
        self._token = token if token is not None else settings.token()
        self._attempts, self._backoff, self._max_wait, self._sleep = max(1, attempts), backoff, max_wait, sleep
        self._per_page = per_page
        self._pages: dict[str, tuple[str, list, str]] = {}  # page URL -> (ETag, converted items, Link header)
        self._unvalidated: set[str] = set()  # keys of `_pages` whose next read sends no validator (`revalidate`)
        local = urlsplit(settings.base_url).hostname in LOCAL_HOSTS
        throttle = {"seconds_between_requests": None, "seconds_between_writes": None} if local else {}
        self._gh = Github(
            base_url=settings.base_url.rstrip("/"),
            auth=_CountingAuth(self._token, self._count),
            retry=0,
            timeout=timeout,
            per_page=per_page,
            lazy=True,
            user_agent=user_agent,  # GitHub asks for one naming the app; senpai's names the role too
            **throttle,
        )
        self._repo = self._gh.get_repo(settings.repo)  # lazy: no request

    def _count(self) -> None:
        self.calls += 1

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = _retry_after(exc) if exc else None
        if after is not None:
            return after
        return min(self._max_wait, self._backoff * 2 ** (state.attempt_number - 1))

    def _should_retry(self, exc: BaseException) -> bool:
        after = _retry_after(exc)
        return _is_transient(exc) and (after is None or after <= self._max_wait)

    def _call(self, what: str, fn: Callable[[], T], merge: bool = False) -> T:
        """Run `fn` (PyGithub calls) with retries, translating failures into senpai errors."""
        retrying = Retrying(
            stop=stop_after_attempt(self._attempts),
            wait=self._wait,
            sleep=self._sleep,
            retry=retry_if_exception(self._should_retry),
            reraise=True,
        )
        try:
            return retrying(fn)
        except GithubException as exc:
            raise _translate(what, exc, merge) from exc
        except requests.exceptions.RequestException as exc:
            raise TransientError(f"{what}: {_network_error(self.settings.base_url, exc)}") from exc

    def _write(self, what: str, create: Callable[[], T], find: Callable[[], T | None]) -> T:
        """A non-idempotent write (POST): before each retry, `find` looks for what an earlier try
        may have applied although its answer was lost; if it finds it, that is the answer."""
        tried = False

        def once() -> T:
            nonlocal tried
            if tried and (found := find()) is not None:
                return found
            tried = True
            return create()

        return self._call(what, once)

    # ---------------------------------------------------------------- identity and git

    @cached_property
    def login(self) -> str:
        """The authenticated user (GET /user), fetched once."""
        return self._call("get user", lambda: self._gh.get_user().login)

    @cached_property
    def clone_url(self) -> str:
        """The repository's `clone_url` (GET /repos/{o}/{r}), fetched once; no credentials in it."""
        return self._call("get repository", lambda: self._repo.clone_url)

    def git_env(self) -> dict[str, str]:
        """GIT_TERMINAL_PROMPT=0, plus an `http.<origin>.extraHeader` with the token (Basic auth).

        The header is scoped to the clone URL's origin, so the token never goes to another host, and it
        travels in the environment, never in argv or in the URL.
        """
        env = {"GIT_TERMINAL_PROMPT": "0"}
        if self._token:
            parts = urlsplit(self.clone_url)
            basic = base64.b64encode(f"x-access-token:{self._token}".encode()).decode()
            env.update(
                {
                    "GIT_CONFIG_COUNT": "1",
                    "GIT_CONFIG_KEY_0": f"http.{parts.scheme}://{parts.netloc}/.extraHeader",
                    "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
                }
            )
        return env

    # ---------------------------------------------------------------- polling

    def rate_limit(self) -> RateLimit | None:
        """The core rate limit as the forge's last answer gave it (X-RateLimit-Remaining, -Limit,
        -Reset); None before any answer that had them (the local forge sends none). No request."""
        remaining, limit = self._gh.requester.rate_limiting
        reset = self._gh.requester.rate_limiting_resettime
        if limit <= 0 or remaining < 0:
            return None
        try:  # a header is hostile text too: a reset past year 9999 is no reset time
            reset_at = datetime.fromtimestamp(reset, UTC) if reset else None
        except (OverflowError, OSError, ValueError):
            reset_at = None
        return RateLimit(remaining=remaining, limit=limit, reset_at=reset_at)

    # ---------------------------------------------------------------- pull requests

    def list_pulls(self, state: State = "open") -> list[PullRequest]:
        """GitHub REST: GET .../pulls?state=<state>, every page (see `_listing`)."""
        url = f"/repos/{self.settings.repo}/pulls"
        return self._call("list pulls", lambda: self._listing(url, {"state": state}, _pull))

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
        login, clone_url = self.__dict__.get("login"), self.__dict__.get("clone_url")
        return ForgeMemo(login=login, clone_url=clone_url, branches=branches, comments=comments)

    def recall(self, memo: ForgeMemo) -> None:
        """Start from `memo` (an adapter's `memo()` for the same token and repository). No request."""
        # `login` and `clone_url` are cached_property: a value in the instance's __dict__ is the cached answer
        for name in ("login", "clone_url"):
            if getattr(memo, name) and name not in self.__dict__:
                self.__dict__[name] = getattr(memo, name)
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
        params = {**params, "state": "all", "sort": "updated", "direction": "desc", "per_page": self._per_page}
        status, headers, data = self._call(what, lambda: self._get(url, {**params, "page": 1}, etag))
        if status == 304:
            return False, headers.get("etag") or etag, []
        first, items, page = headers.get("etag"), [], 1
        while True:
            batch = [convert(raw) for raw in data or []]
            items += batch
            if not batch or reached(batch) or 'rel="next"' not in str(headers.get("link", "")):
                return True, first, items
            page += 1
            status, headers, data = self._call(what, lambda p=page: self._get(url, {**params, "page": p}))

    def get_pull(self, number: int) -> PullRequest:
        """GitHub REST: GET /repos/{o}/{r}/pulls/{n}, with the ETag of its last answer (a 304 reuses it)."""
        return self._read(f"get pull #{number}", f"/repos/{self.settings.repo}/pulls/{number}", _pull)

    def create_pull(self, title: str, body: str, head: str, base: str, labels: list[str]) -> PullRequest:
        """GitHub REST: POST /repos/{o}/{r}/pulls, then POST .../issues/{n}/labels.  A retry first looks
        for an open PR from `head` (GET .../pulls?head=owner:head), so a lost answer opens no second PR."""
        self._written(None)

        def find() -> PullRequest | None:
            owner = self.settings.repo.split("/", 1)[0]
            found = [p for p in self._repo.get_pulls(state="open", head=f"{owner}:{head}", base=base) if p.head.ref == head]
            return _pull(found[0]) if found else None

        pr = self._write(
            f"create pull {head}->{base}",
            lambda: _pull(self._repo.create_pull(base=base, head=head, title=title, body=body)),
            find,
        )
        if not labels:
            return pr
        self._call(f"label pull #{pr.number}", lambda: self._repo.get_issue(pr.number).add_to_labels(*labels))
        return pr.model_copy(update={"labels": list(dict.fromkeys([*pr.labels, *labels]))})

    def update_pull(self, number: int, *, body: str | None = None, state: Literal["open", "closed"] | None = None) -> PullRequest:
        changes = {key: value for key, value in (("body", body), ("state", state)) if value is not None}
        self._written(number)

        def run() -> PullRequest:
            pr = self._repo.get_pull(number)
            if changes:
                pr.edit(**changes)  # PATCH; PyGithub refreshes the object from the answer
            return _pull(pr)

        return self._call(f"update pull #{number}", run)

    def set_labels(self, number: int, labels: list[str]) -> None:
        self._written(number)
        self._call(f"set labels of #{number}", lambda: self._repo.get_issue(number).set_labels(*labels))

    def close_with_labels(self, number: int, labels: list[str]) -> None:
        self._written(number)
        self._call(f"close #{number}", lambda: self._repo.get_issue(number).edit(state="closed", labels=labels))

    def merge_pull(self, number: int, message: str, sha: str) -> str:
        """Merge commit sha of merging head `sha` (GitHub's `sha` parameter: a moved head is refused).

        Idempotent: a PR already merged at `sha` (e.g. by a retried request) returns its merge sha.
        A refusal (HTTP 405/409) is told by its cause (`_refusal`).
        """
        self._written(number)
        try:
            status = self._call(
                f"merge pull #{number}",
                lambda: self._repo.get_pull(number).merge(commit_message=message, merge_method="merge", sha=sha),
                merge=True,
            )
        except MergeConflict as refused:
            return self._refusal(number, sha, refused)
        return status.sha

    def _refusal(self, number: int, sha: str, refused: MergeConflict) -> str:
        """The merge of PR `number` at `sha` was refused: read the PR again (GitHub REST: GET
        /repos/{o}/{r}/pulls/{n}, its `mergeable` and `mergeable_state`) to say why. Returns the merge
        sha of a PR already merged at `sha`. Raises MergeConflict if the PR is no longer open at `sha`
        or its trees conflict with the base (`mergeable: false`, state `dirty`); MergeBlocked if the
        base's protection refuses it (state `blocked`: a required review or status check; `behind`:
        the base asks for an up-to-date head); TransientError otherwise (GitHub still computing
        `mergeable`, or the base moved during the merge): trying again later may merge it."""
        _, _, data = self._call(f"get pull #{number}", lambda: self._get(f"/repos/{self.settings.repo}/pulls/{number}", None))
        pr = _pull(data)
        if pr.merged and pr.merge_commit_sha and pr.head_sha == sha:
            return pr.merge_commit_sha
        mergeable, state = data.get("mergeable"), data.get("mergeable_state")
        if pr.state != "open" or pr.head_sha != sha or mergeable is False or state == "dirty":
            raise refused
        if state in ("blocked", "behind"):
            raise MergeBlocked(f"{refused} (mergeable_state {state})") from refused
        raise TransientError(f"{refused} (mergeable {mergeable}, mergeable_state {state}): try again later") from refused

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

        return self._call(f"files of pull #{number}", run)

    # ---------------------------------------------------------------- issues and comments

    def list_comments(self, number: int) -> list[Comment]:
        """GitHub REST: GET .../issues/{n}/comments, every page (see `_listing`). A body is kept only
        where its author may steer (the bot, `forge.trusted`, WRITERS); the others are dropped as each
        page is read, before anything keeps or parses them (REST cannot leave them out of the answer)."""
        url = f"/repos/{self.settings.repo}/issues/{number}/comments"
        bot, steer = self.login, WRITERS | set(self.settings.trusted)
        keeps = lambda user, association: user == bot or association in steer  # noqa: E731
        return self._call(f"comments of #{number}", lambda: self._listing(url, {}, lambda raw: _comment(raw, keeps)))

    def _comments_key(self, number: int) -> str:
        """The `_pages` key of the first page of `list_comments(number)`."""
        return self._page_key(f"/repos/{self.settings.repo}/issues/{number}/comments", {"per_page": self._per_page})

    @staticmethod
    def _page_key(url: str, params: dict[str, Any] | None) -> str:
        return f"{url}?{sorted((params or {}).items())}"

    def _get(self, url: str, params: dict[str, Any] | None, etag: str | None = None) -> tuple[int, dict, Any]:
        """One GET, with If-None-Match `etag` if given: (status, headers, JSON; None for a 304).
        Raises PyGithub's GithubException for a status >= 400."""
        headers = {"If-None-Match": etag} if etag else {}
        status, out_headers, body = self._gh.requester.requestJson("GET", url, params, headers)
        self.not_modified += status == 304
        self.answered_at = _date(out_headers.get("date")) or self.answered_at
        try:
            data = json.loads(body) if body and status != 304 else None
        except ValueError:
            data = {"message": body}
        if status >= 400:
            raise Requester.createException(status, out_headers, data if isinstance(data, dict) else {})
        return status, out_headers, data

    def _written(self, number: int | None, comments: bool = False) -> None:
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
        next_params: dict[str, Any] | None = {**params, "per_page": self._per_page}
        while next_url:
            key = self._page_key(next_url, next_params)
            cached = self._pages.pop(key, None)
            status, headers, page = self._get(next_url, next_params, self._validator(key, cached))
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
            next_url, next_params = next((x["url"] for x in links if x.get("rel") == "next"), None), None
        return out

    def create_comment(self, number: int, body: str) -> Comment:
        """GitHub REST: POST .../issues/{n}/comments.  A retry first looks among the bot's comments on
        #number (GET .../issues/{n}/comments) for the body's marker, so a lost answer posts no duplicate."""
        key = _identity(body)
        self._written(number, comments=True)

        def find() -> Comment | None:
            mine = [c for c in self._repo.get_issue(number).get_comments() if c.user.login == self.login and _same(c.body, key)]
            return _comment(mine[-1]) if mine else None

        return self._write(f"comment on #{number}", lambda: _comment(self._repo.get_issue(number).create_comment(body)), find)

    def list_issues(self, label: str, state: State = "open") -> list[Issue]:
        """GitHub REST: GET .../issues?labels=<label>&state=<state>, every page (see `_listing`); PRs left out."""
        url = f"/repos/{self.settings.repo}/issues"
        params = {"state": state, "labels": label}
        issues = self._call(
            f"list issues labelled {label}", lambda: self._listing(url, params, lambda x: None if _is_pull(x) else _issue(x))
        )
        return [i for i in issues if i is not None]

    def create_issue(self, title: str, body: str, labels: list[str]) -> Issue:
        """GitHub REST: POST /repos/{o}/{r}/issues.  A retry first looks among the bot's issues (GET
        .../issues?state=all&creator=) for the body's marker, so a lost answer opens no second issue."""
        key = _identity(body)
        self._written(None)

        def find() -> Issue | None:
            issues = self._repo.get_issues(state="all", creator=self.login)
            mine = [i for i in issues if not _is_pull(i) and i.user.login == self.login and _same(i.body, key)]
            return _issue(mine[0]) if mine else None

        return self._write("create issue", lambda: _issue(self._repo.create_issue(title=title, body=body, labels=labels)), find)

    def update_issue(self, number: int, body: str) -> None:
        """GitHub REST: PATCH /repos/{o}/{r}/issues/{n} with `body` (idempotent: a retry writes the same)."""
        self._written(number)
        self._call(f"update issue #{number}", lambda: self._repo.get_issue(number).edit(body=body))

    def read_file(self, path: str, ref: str) -> str:
        def run() -> str:
            content = self._repo.get_contents(path, ref=ref)
            if isinstance(content, list):  # a directory
                raise NotFound(f"{path} at {ref} is a directory")
            return content.decoded_content.decode()

        return self._call(f"read {path}@{ref}", run)

    def branch_sha(self, branch: str) -> str:
        """GitHub REST: GET /repos/{o}/{r}/branches/{branch}, with the ETag of its last answer (a 304 reuses it)."""
        url = f"/repos/{self.settings.repo}/branches/{quote(branch, safe='')}"
        return self._read(f"get branch {branch}", url, lambda data: data["commit"]["sha"])

    def _read(self, what: str, url: str, convert: Callable[[Any], T]) -> T:
        """One object's GET, `convert`ed, asked for with the ETag of its last answer: a 304 (free on
        GitHub) reuses that answer. Raises as `_call`."""
        cached = self._pages.pop(url, None)
        status, headers, data = self._call(what, lambda: self._get(url, None, self._validator(url, cached)))
        item = cached[1][0] if status == 304 and cached else convert(data)
        if etag := headers.get("etag"):
            self._pages[url] = (etag, [item], "")
        return item

    def commit_parents(self, sha: str) -> list[str]:
        return self._call(f"get commit {sha[:8]}", lambda: [c.sha for c in self._repo.get_commit(sha).parents])

    def permission(self, login: str) -> str:
        """`login`'s base role on the repository (`permission`: admin, write, read or none), asked with
        the ETag of its last answer (a 304, free, reuses it). GitHub REST: GET
        /repos/{o}/{r}/collaborators/{username}/permission. Raises NotFound if there is no such user."""
        url = f"/repos/{self.settings.repo}/collaborators/{quote(login, safe='')}/permission"
        return self._read(f"permission of {login}", url, _permission)

    # ---------------------------------------------------------------- beyond the port

    def access(self) -> Access:
        """Who the token is and what it may do on the repository.

        GitHub REST: GET /repos/{o}/{r} (its `permissions`, and the X-OAuth-Scopes response header
        that classic tokens get; fine-grained tokens and the local forge send none). Raises
        NotFound if the repository does not exist or the token cannot see it.
        """

        def run() -> Access:
            perms = self._gh.get_repo(self.settings.repo, lazy=False).permissions
            return Access(
                login=self.login,
                scopes=self._gh.oauth_scopes,
                push=bool(perms and perms.push),
                admin=bool(perms and perms.admin),
            )

        return self._call("get repository", run)

    def ensure_labels(self, labels: dict[str, LabelSpec]) -> list[str]:
        """Create each missing repository label (name -> colour and description); existing ones are
        left alone.

        Returns the names it created. GitHub REST: GET /repos/{o}/{r}/labels (`list_labels`), then
        POST /repos/{o}/{r}/labels for each missing one (422 = created meanwhile).
        """
        existing = self.list_labels()

        def create(name: str, spec: LabelSpec) -> bool:
            try:
                self._repo.create_label(name, spec.color, spec.description)
            except GithubException as exc:
                if exc.status != 422:  # 422: already exists
                    raise
                return False
            return True

        missing = {name: spec for name, spec in labels.items() if name not in existing}
        return [name for name, spec in missing.items() if self._call(f"create label {name}", lambda n=name, s=spec: create(n, s))]

    def list_labels(self) -> dict[str, LabelSpec]:
        """The repository's labels. GitHub REST: GET /repos/{o}/{r}/labels (every page)."""

        def run() -> dict[str, LabelSpec]:
            return {x.name: LabelSpec(color=x.color.lower(), description=x.description or "") for x in self._repo.get_labels()}

        return self._call("list labels", run)


def create_repository(settings: ForgeSettings, token: str | None, name: str, private: bool = False) -> str:
    """Create `name` under the owner of `settings.repo` (a user or an org) and return its clone URL.

    GitHub REST: POST /user/repos (or POST /orgs/{org}/repos).  "Already exists" (422) counts as
    success.  Raises TransientError, PermanentError.
    """
    owner = settings.repo.split("/", 1)[0]
    forge = GitHubForge(settings.model_copy(update={"repo": f"{owner}/{name}"}), token)

    def create() -> str:
        try:
            if forge.login == owner:
                return forge._gh.get_user().create_repo(name, private=private).clone_url
            return forge._gh.get_organization(owner).create_repo(name, private=private).clone_url
        except GithubException as exc:
            if exc.status != 422:
                raise
            return forge._repo.clone_url

    return forge._call(f"create repository {owner}/{name}", create)
