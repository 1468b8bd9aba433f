"""A local forge that fails on cue: an ASGI wrapper around the real app, for tests only.

`flaky_forge(data_dir)` serves it over HTTP (REST and git smart HTTP under /git/); `Flaky.fail`
queues the failures the next matching requests get.  Nothing here is in production code.
"""

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from senpai.forge.localforge.app import create_app
from senpai.forge.localforge.server import LocalForgeServer

DROP = (0, {}, "apply, then drop the answer")  # a failure: the forge applies the request, the client sees a reset


class AnswerDropped(Exception):
    """Raised after the response started: uvicorn then closes the connection mid-answer."""


class Flaky:
    """ASGI wrapper: the next requests whose method and path match get the queued failures.

    A failure is (status, headers, message), answered without reaching the app, or DROP: the app
    handles the request (it is applied), then the connection is closed before the answer's body.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.pattern, self.method = "", None
        self.failures: list[tuple[int, dict[str, str], str]] = []
        self.seen: list[str] = []  # "METHOD path" of each request that got a failure since `fail`

    def fail(self, pattern: str, *failures: tuple[int, dict[str, str], str], method: str | None = None) -> None:
        self.pattern, self.method, self.failures, self.seen = pattern, method, list(failures), []

    def _matches(self, scope: Scope) -> bool:
        return (
            scope["type"] == "http"
            and bool(self.failures)
            and re.search(self.pattern, scope["path"]) is not None
            and self.method in (None, scope["method"])
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._matches(scope):
            await self.app(scope, receive, send)
            return
        self.seen.append(f"{scope['method']} {scope['path']}")
        status, headers, message = self.failures.pop(0)
        if status == 0:
            await self._apply_then_drop(scope, receive, send)
            return
        raw = [(b"content-type", b"application/json")] + [(k.encode(), v.encode()) for k, v in headers.items()]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": json.dumps({"message": message}).encode()})

    async def _apply_then_drop(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer: list[dict] = []

        async def keep(message: dict) -> None:
            answer.append(message)

        await self.app(scope, receive, keep)
        await send(answer[0])  # status and headers (with the real Content-Length), then no body
        raise AnswerDropped(f"dropped the answer to {scope['method']} {scope['path']}")


@contextmanager
def flaky_forge(data_dir: Path) -> Iterator[tuple[Flaky, str]]:
    """A running local forge behind a Flaky wrapper; yields (the wrapper, the base URL)."""
    from forge_fixtures import OWNER, TOKEN, wait_healthy

    inner = create_app(data_dir)
    inner.state.store.add_token(OWNER, "owner", TOKEN)  # the bot; the forge refuses anonymous writes
    app = Flaky(inner)
    server = LocalForgeServer(data_dir, app=app)
    try:
        server.start()
        wait_healthy(server.url)
        yield app, server.url
    finally:
        server.stop()
