"""FastAPI application of the local forge: a GitHub-REST-compatible server for one machine.

`create_app(data_dir)` wires the SQLite store (`<data_dir>/forge.sqlite3`) and the bare git
repositories (`<data_dir>/git/`) to the routes of `api_repos`, `api_issues` and `api_pulls`, and
turns every error into GitHub's JSON envelope `{"message", "documentation_url"[, "errors"]}`.
REST paths sit at the server root, as on api.github.com; git smart HTTP is under `/git/`.
"""

import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email.utils import formatdate
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from senpai.errors import NO_SPACE
from senpai.forge.localforge import api_issues, api_pulls, api_repos, reviews
from senpai.forge.localforge.git import BadName, GitError, GitRepos
from senpai.forge.localforge.merges import recover
from senpai.forge.localforge.ratelimit import NO_WRITE_LIMITS, RateLimited, WriteLimits, WriteRate
from senpai.forge.localforge.store import Store
from senpai.forge.localforge.web import DOCS, ApiError, control_in_target

_log = logging.getLogger(__name__)


FULL_RETRY_SECONDS = 60  # the Retry-After of an answer refused because the forge's volume is full


def _error(status: int, message: str, errors: list | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    body: dict = {"message": message, "documentation_url": DOCS}
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, headers=headers)


def _full(what: str) -> JSONResponse:
    """503 with a Retry-After for a write the forge's full data volume refused: a client waits and
    tries again (senpai: TransientError) instead of taking it for a bug. The log names the folder."""
    _log.error("the local forge's data volume is full: %s", what)
    message = "Service Unavailable: the forge's data volume is full (No space left on device)"
    return _error(503, message, headers={"Retry-After": str(FULL_RETRY_SECONDS)})


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.errors, exc.headers)

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        message = "Not Found" if exc.status_code in (404, 405) else str(exc.detail)
        return _error(404 if exc.status_code == 405 else exc.status_code, message)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"resource": "Request", "field": ".".join(map(str, e.get("loc", ()))), "code": "invalid"} for e in exc.errors()]
        return _error(422, "Validation Failed", errors)

    @app.exception_handler(GitError)
    async def git_error(_: Request, exc: GitError) -> JSONResponse:
        if isinstance(exc, BadName):
            return _error(404, "Not Found")
        if "No space left on device" in str(exc) or "Disk quota exceeded" in str(exc):
            return _full(str(exc))
        _log.error("git failed: %s", exc)  # git's stderr names server paths: it goes to the log, never to a client
        return _error(500, "Internal Server Error")

    @app.exception_handler(sqlite3.OperationalError)
    async def store_error(_: Request, exc: sqlite3.OperationalError) -> JSONResponse:
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL" or "disk is full" in str(exc):
            return _full(str(exc))
        _log.error("the store failed: %s", exc, exc_info=exc)
        return _error(500, "Internal Server Error")

    @app.exception_handler(OSError)
    async def os_error(_: Request, exc: OSError) -> JSONResponse:
        if exc.errno in NO_SPACE:
            return _full(str(exc))
        _log.error("the forge failed: %s", exc, exc_info=exc)
        return _error(500, "Internal Server Error")

    @app.exception_handler(sqlite3.IntegrityError)
    async def duplicate(_: Request, exc: sqlite3.IntegrityError) -> JSONResponse:
        # the unique index on open PRs caught a second PR for one head and base (a lost race or a reopen)
        errors = [{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for this head."}]
        return _error(422, "Validation Failed", errors)


class RefuseControlChars:
    """ASGI middleware: a request whose path or query holds a control character answers 400 before
    any route runs (one check for every route, so no NUL ever reaches a git argument)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and control_in_target(scope):
            await _error(400, "Bad Request: control character in the path or query")(scope, receive, send)
            return
        await self.app(scope, receive, send)


class ForgeDate:
    """ASGI middleware: every answer's `Date` header is the store's clock, the one its `updated_at`
    stamps come from, as GitHub's are one clock (a reader judges how settled a stamp is by it)."""

    def __init__(self, app: ASGIApp, store: Store) -> None:
        self.app, self.store = app, store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def dated(message: Message) -> None:
            if message["type"] == "http.response.start":
                date = formatdate(self.store.now(), usegmt=True).encode()
                message["headers"] = [*[h for h in message.get("headers", []) if h[0].lower() != b"date"], (b"date", date)]
            await send(message)

        await self.app(scope, receive, dated)


DEFAULT_PROTECTED = ("main", "advisor")


def create_app(
    data_dir: Path,
    protected: tuple[str, ...] = DEFAULT_PROTECTED,
    rate_limit: int | None = None,
    write_limits: WriteLimits = NO_WRITE_LIMITS,
    required_approvals: int = 0,
) -> FastAPI:
    """The local forge serving the data under `data_dir` (created if missing; relative is fine).

    `protected` names the branches of every repository that cannot be deleted or force-pushed and
    that only an admin may push to (others merge PRs); a PR into one merges only once
    `required_approvals` users with write access approve it (`reviews`).  Merges a crash
    interrupted are finished first.
    `rate_limit`: charged REST requests per token an hour, as GitHub's primary limit (None: no limit).
    `write_limits`: GitHub's secondary limits, a user's writes a minute and a thread's comments
    (`senpai forge serve` and `senpai demo` set GitHub's; none here, for tests that write fast).
    """
    data_dir = Path(data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    store = Store(data_dir / "forge.sqlite3")
    git = GitRepos(data_dir / "git", tuple(protected))
    recover(store, git)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()

    app = FastAPI(title="senpai local forge", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.data_dir = data_dir
    app.state.store = store
    app.state.git = git
    app.state.write_limits = write_limits
    app.state.write_rate = WriteRate(write_limits.per_minute) if write_limits.per_minute else None
    app.state.required_approvals = required_approvals
    _install_error_handlers(app)
    app.add_middleware(RefuseControlChars)
    app.add_middleware(ForgeDate, store=store)
    if rate_limit is not None:
        app.add_middleware(RateLimited, limit=rate_limit)
    for module in (api_repos, api_issues, api_pulls, reviews):
        app.include_router(module.router)
    return app
