"""GitHub's primary rate limit, for the local forge: a budget of charged requests per token per window.

With `limit` set, every REST answer carries GitHub's headers (X-RateLimit-Limit, -Remaining,
-Used, -Reset in epoch seconds, -Resource "core"); a 304 is not charged, as on GitHub. Once a
token's budget is spent, requests answer 403 "API rate limit exceeded" until the window resets.
Git smart HTTP (`/git/`) is not limited. Anonymous callers share one budget per client address.
"""

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from senpai.forge.localforge.web import DOCS

WINDOW = 3600.0  # seconds, as GitHub's


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
