"""GitHub's rate limits, for the local forge: the primary one (`RateLimited`) and the secondary
limits on writes (`WriteLimits`).

Primary: with `limit` set, every REST answer carries GitHub's headers (X-RateLimit-Limit,
-Remaining, -Used, -Reset in epoch seconds, -Resource "core"); a 304 is not charged, as on GitHub.
Once a token's allowance is spent, requests answer 403 "API rate limit exceeded" until the window
resets. Git smart HTTP (`/git/`) is not limited. Anonymous callers share one allowance per client address.

Secondary: a user's REST writes a minute (`WriteRate`, checked as each request is authenticated)
and the comments one issue or PR holds (checked by the comment route), each answered with 403 as
GitHub answers them; the rate's 403 carries Retry-After, which clients (senpai's adapter too) wait
out, so a steady writer is slowed, not failed.
"""

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from senpai.forge.localforge.web import DOCS, ApiError

WINDOW = 3600.0  # seconds, as GitHub's
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})


@dataclass(frozen=True)
class WriteLimits:
    """GitHub's secondary limits on writes (None: no limit).

    `per_minute`: REST writes (POST, PATCH, PUT, DELETE; git pushes aside) one user may make a minute:
    a bucket that holds that many and refills evenly (GitHub: 80 content-creating requests a minute).
    `comments_per_thread`: the comments an issue or PR may hold; a new one past it is refused
    (GitHub: 2,500)."""

    per_minute: int | None = 80
    comments_per_thread: int | None = 2500

    def __post_init__(self) -> None:
        for name in ("per_minute", "comments_per_thread"):
            if (value := getattr(self, name)) is not None and value < 1:
                raise ValueError(f"{name} {value}: must be at least 1 (None: no limit)")


NO_WRITE_LIMITS = WriteLimits(None, None)


class WriteRate:
    """`per_minute` writes per login, as a token bucket (`clock`: monotonic seconds)."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity, self.per_second, self.clock = float(per_minute), per_minute / 60.0, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # login -> (writes left, when counted); logins hold tokens
        self._lock = threading.Lock()

    def take(self, login: str) -> None:
        """Spend one of `login`'s writes. Raises ApiError 403 with Retry-After (whole seconds until
        the next write is allowed) when none is left; nothing is spent then."""
        with self._lock:
            now = self.clock()
            left, then = self._buckets.get(login, (self.capacity, now))
            left = min(self.capacity, left + (now - then) * self.per_second)
            if left < 1.0:
                self._buckets[login] = (left, now)
                wait = math.ceil((1.0 - left) / self.per_second)
                message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
                raise ApiError(403, message, headers={"Retry-After": str(wait)})
            self._buckets[login] = (left - 1.0, now)


def comment_cap(limits: WriteLimits, comments: int) -> None:
    """Raises ApiError 403 as GitHub does when a thread already holds `limits.comments_per_thread` comments."""
    cap = limits.comments_per_thread
    if cap is not None and comments >= cap:
        raise ApiError(403, f"Commenting is disabled on issues with more than {cap} comments")


class RateLimited:
    """ASGI middleware: `limit` charged requests per token per `window` seconds (`clock`: epoch seconds)."""

    def __init__(self, app: ASGIApp, limit: int, window: float = WINDOW, clock: Callable[[], float] = time.time) -> None:
        if limit < 1:
            raise ValueError(f"rate limit {limit}: must be at least 1")
        self.app, self.limit, self.window, self.clock = app, limit, window, clock
        self._used: dict[str, tuple[float, int]] = {}  # caller -> (window start, charged requests)
        self._lock = threading.Lock()

    def _caller(self, scope: Scope) -> str:
        auth = dict(scope.get("headers") or []).get(b"authorization")
        if auth:
            return hashlib.sha256(auth).hexdigest()
        return "anonymous " + str((scope.get("client") or ("?",))[0])

    def _window(self, caller: str) -> tuple[float, int]:
        start, used = self._used.get(caller, (self.clock(), 0))
        if self.clock() >= start + self.window:
            start, used = self.clock(), 0
        return start, used

    def _headers(self, start: float, used: int) -> list[tuple[bytes, bytes]]:
        values = {"limit": self.limit, "remaining": max(self.limit - used, 0), "used": used,
                  "reset": math.ceil(start + self.window), "resource": "core"}  # fmt: skip
        return [(f"x-ratelimit-{k}".encode(), str(v).encode()) for k, v in values.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/git/"):
            await self.app(scope, receive, send)
            return
        caller = self._caller(scope)
        with self._lock:
            start, used = self._window(caller)
            self._used[caller] = (start, used)
        if used >= self.limit:
            body = json.dumps({"message": "API rate limit exceeded", "documentation_url": DOCS}).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 403, "headers": headers + self._headers(start, used)})
            await send({"type": "http.response.body", "body": body})
            return

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                with self._lock:
                    start, used = self._window(caller)
                    used += message["status"] != 304
                    self._used[caller] = (start, used)
                message = {**message, "headers": [*message.get("headers", []), *self._headers(start, used)]}
            await send(message)

        await self.app(scope, receive, counted)
