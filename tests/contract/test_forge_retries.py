"""Retries and error translation of the PyGithub adapter, against a local forge that fails on cue.

The failures are injected here, by an ASGI wrapper around the real app, not by production code.
Waits go through an injected `sleep`, so the tests check the backoff without sleeping it.
"""

import json
import re
import socket
import time
from collections.abc import Iterator

import pytest
from forge_fixtures import OWNER, TOKEN, new_repository, wait_healthy
from starlette.types import ASGIApp, Receive, Scope, Send

from senpai.config.harness import ForgeSettings
from senpai.errors import TransientError
from senpai.forge.github import GitHubForge
from senpai.forge.localforge.app import create_app
from senpai.forge.localforge.server import LocalForgeServer


class Flaky:
    """ASGI wrapper: the next requests whose path matches `pattern` get the queued failures."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.pattern = ""
        self.failures: list[tuple[int, dict[str, str], str]] = []

    def fail(self, pattern: str, *failures: tuple[int, dict[str, str], str]) -> None:
        self.pattern, self.failures = pattern, list(failures)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.failures and re.search(self.pattern, scope["path"]):
            status, headers, message = self.failures.pop(0)
            raw = [(b"content-type", b"application/json")] + [(k.encode(), v.encode()) for k, v in headers.items()]
            await send({"type": "http.response.start", "status": status, "headers": raw})
            await send({"type": "http.response.body", "body": json.dumps({"message": message}).encode()})
            return
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def flaky(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Flaky, ForgeSettings]]:
    data_dir = tmp_path_factory.mktemp("flakyforge")
    inner = create_app(data_dir)
    inner.state.store.add_token(OWNER, "owner", TOKEN)
    app = Flaky(inner)
    server = LocalForgeServer(data_dir, app=app)
    try:
        server.start()
        wait_healthy(server.url)
        _, settings = new_repository(server.url, data_dir / "seed")
        yield app, settings
    finally:
        server.stop()


def forge_with_clock(settings: ForgeSettings, **kwargs) -> tuple[GitHubForge, list[float]]:
    sleeps: list[float] = []
    return GitHubForge(settings, TOKEN, sleep=sleeps.append, **kwargs), sleeps


def test_a_503_is_retried_after_retry_after(flaky):
    app, settings = flaky
    app.fail(r"/pulls$", (503, {"Retry-After": "1"}, "Service Unavailable"))
    forge, sleeps = forge_with_clock(settings)
    assert forge.list_pulls() == []
    assert (forge.calls, sleeps) == (2, [1.0])


def test_poll_is_retried_too(flaky):
    app, settings = flaky
    app.fail(r"/issues$", (502, {}, "Bad Gateway"))
    forge, sleeps = forge_with_clock(settings, backoff=0.25)
    assert forge.poll(None).changed
    assert (forge.calls, sleeps) == (2, [0.25])


def test_retries_run_out_into_a_transient_error(flaky):
    app, settings = flaky
    app.fail(r"/pulls$", *[(500, {}, "boom")] * 3)
    forge, sleeps = forge_with_clock(settings, attempts=3, backoff=0.1)
    with pytest.raises(TransientError, match="HTTP 500"):
        forge.list_pulls()
    assert (forge.calls, sleeps) == (3, [0.1, 0.2])


def test_a_long_retry_after_is_left_to_the_caller(flaky):
    app, settings = flaky
    app.fail(r"/pulls$", (429, {"Retry-After": "120"}, "Too Many Requests"))
    forge, sleeps = forge_with_clock(settings, max_wait=30)
    with pytest.raises(TransientError) as caught:
        forge.list_pulls()
    assert caught.value.retry_after == 120 and (forge.calls, sleeps) == (1, [])


def test_a_rate_limit_waits_for_the_reset(flaky):
    app, settings = flaky
    reset = str(int(time.time()) + 3)
    app.fail(
        r"/pulls$", (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}, "API rate limit exceeded for user ID 1.")
    )
    forge, sleeps = forge_with_clock(settings)
    assert forge.list_pulls() == []
    assert forge.calls == 2 and len(sleeps) == 1 and 0 < sleeps[0] <= 3


def test_connection_errors_are_transient_and_counted():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before use: nothing listens there
    settings = ForgeSettings(base_url=f"http://127.0.0.1:{port}", repo="senpai/nothing")
    forge, sleeps = forge_with_clock(settings, attempts=2, backoff=0.01)
    with pytest.raises(TransientError, match="ConnectionError"):
        forge.get_pull(1)
    assert (forge.calls, sleeps) == (2, [0.01])
