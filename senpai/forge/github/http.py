"""What the GitHub adapter's parts share: one PyGithub client over one repository, its request
count, retries and error translation, and the converters from GitHub's objects to the port's models.

It turns PyGithub/requests errors into senpai's error tree:

    HTTP 5xx, 429, connection error              -> retried, then TransientError (with retry_after)
    HTTP 403 of a primary or secondary rate limit -> the same (message, Retry-After or remaining 0)
    HTTP 401/403 otherwise                       -> Forbidden
    HTTP 404                                     -> NotFound
    HTTP 405/409 on merge                        -> MergeConflict, MergeBlocked or TransientError,
                                                    by the PR's `mergeable` and `mergeable_state`
                                                    (`senpai.forge.github.writer`)
    any other HTTP error                         -> PermanentError

Retries use tenacity with exponential backoff, honouring `Retry-After` (and the rate-limit reset)
up to `max_wait` seconds; a longer wait is not slept here but raised as TransientError(retry_after)
for the caller to schedule.  PyGithub's own retry is off (`retry=0`: it would re-POST blindly), so
`calls` counts each HTTP request actually sent, retries included, by whichever part sent it.
Against a local forge (127.0.0.1/localhost) PyGithub's request throttling (0.25 s per request, 1 s
per write) is off too.
"""

import email.utils
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, TypeVar
from urllib.parse import urlsplit

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
from senpai.errors import Forbidden, MergeConflict, NotFound, PermanentError, SenpaiError, TransientError
from senpai.forge.base import Comment, Issue, PullRequest

T = TypeVar("T")
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


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


def _is_pull(issue: GhIssue | dict) -> bool:
    # The `pull_request` key marks PRs, but PyGithub fetches the whole issue again when asked for a
    # missing attribute; PR html_urls end in /pull/<n> on GitHub, GHES and the local forge alike.
    return "/pull/" in _field(issue, "html_url")


class GitHubHttp:
    """One PyGithub client over one repository (`settings.repo`), shared by the adapter's parts: the
    one request count (`calls`, `not_modified`), retries with error translation (`call`), one
    conditional GET (`get`), and who the token is (`login`) and where the repository is (`clone_url`).

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
        self.token = token if token is not None else settings.token()
        self.per_page = per_page
        self._attempts, self._backoff, self._max_wait, self._sleep = max(1, attempts), backoff, max_wait, sleep
        local = urlsplit(settings.base_url).hostname in LOCAL_HOSTS
        throttle = {"seconds_between_requests": None, "seconds_between_writes": None} if local else {}
        self.gh = Github(
            base_url=settings.base_url.rstrip("/"),
            auth=_CountingAuth(self.token, self._count),
            retry=0,
            timeout=timeout,
            per_page=per_page,
            lazy=True,
            user_agent=user_agent,  # GitHub asks for one naming the app; senpai's names the role too
            **throttle,
        )
        self.repo = self.gh.get_repo(settings.repo)  # lazy: no request

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

    def call(self, what: str, fn: Callable[[], T], merge: bool = False) -> T:
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

    @cached_property
    def login(self) -> str:
        """The authenticated user (GET /user), fetched once."""
        return self.call("get user", lambda: self.gh.get_user().login)

    @cached_property
    def clone_url(self) -> str:
        """The repository's `clone_url` (GET /repos/{o}/{r}), fetched once; no credentials in it."""
        return self.call("get repository", lambda: self.repo.clone_url)

    def get(self, url: str, params: dict[str, Any] | None, etag: str | None = None) -> tuple[int, dict, Any]:
        """One GET, with If-None-Match `etag` if given: (status, headers, JSON; None for a 304).
        Raises PyGithub's GithubException for a status >= 400."""
        headers = {"If-None-Match": etag} if etag else {}
        status, out_headers, body = self.gh.requester.requestJson("GET", url, params, headers)
        self.not_modified += status == 304
        self.answered_at = _date(out_headers.get("date")) or self.answered_at
        try:
            data = json.loads(body) if body and status != 304 else None
        except ValueError:
            data = {"message": body}
        if status >= 400:
            raise Requester.createException(status, out_headers, data if isinstance(data, dict) else {})
        return status, out_headers, data
