"""The forge's rate limit, as GitHub states it, and the wrapper slowing before it is reached.

The local forge runs with `rate_limit` (GitHub's primary limit: charged requests per token an
hour, X-RateLimit-* headers on every answer, 403 once spent); everything talks to it over HTTP.
"""

from datetime import UTC, datetime, timedelta

import pytest
from forge_fixtures import TOKEN, new_repository, register_bot

from senpai.errors import TransientError
from senpai.forge.base import RateLimit
from senpai.forge.github import GitHubForge
from senpai.forge.localforge.server import LocalForgeServer
from senpai.wrapper.pace import tick_wait

LIMIT = 40


@pytest.fixture
def limited(tmp_path):
    server = register_bot(LocalForgeServer(tmp_path / "forge", rate_limit=LIMIT)).start()
    try:
        forge, settings = new_repository(server.base_url, tmp_path / "seed")
        yield GitHubForge(settings, TOKEN, attempts=1)
    finally:
        server.stop()


def test_the_forge_states_its_limit_a_304_is_free_and_a_spent_rate_limit_is_senpais_transient_failure(limited):
    assert limited.rate_limit() is None or limited.rate_limit().limit == LIMIT  # nothing asked yet by this client
    sha = limited.branch_sha("advisor")
    first = limited.rate_limit()
    assert first is not None and first.limit == LIMIT and 0 < first.remaining < LIMIT
    assert first.reset_at is not None
    assert timedelta(minutes=59) < first.reset_at - datetime.now(UTC) <= timedelta(hours=1, seconds=1)
    assert limited.branch_sha("advisor") == sha and limited.not_modified == 1
    assert limited.rate_limit().remaining == first.remaining  # the 304 was not charged
    with pytest.raises(TransientError) as caught:
        for _ in range(LIMIT + 1):
            limited.commit_parents(sha)  # never conditional: each one is charged
    assert caught.value.retry_after is not None and caught.value.retry_after > 3000  # until the window resets
    assert limited.rate_limit().remaining == 0
    limited._http.gh.requester.rate_limiting_resettime = 10**18  # as PyGithub keeps a hostile X-RateLimit-Reset
    assert limited.rate_limit().reset_at is None and limited.rate_limit().remaining == 0  # no crash out of the loop


def test_the_wrapper_slows_before_the_limit_and_waits_for_the_reset_once_at_the_reserve():
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    hour = now + timedelta(hours=1)
    assert tick_wait(5.0, None, 100, now) == 5.0  # no stated limit: the period
    assert tick_wait(5.0, RateLimit(remaining=4900, limit=5000, reset_at=hour), 3, now) == 5.0  # far from it
    assert tick_wait(5.0, RateLimit(remaining=600, limit=5000, reset_at=hour), 0, now) == 5.0  # idle ticks are 304s
    # 100 left above the 500 reserve, 10 a tick: ten more ticks spread over the hour
    assert tick_wait(5.0, RateLimit(remaining=600, limit=5000, reset_at=hour), 10, now) == pytest.approx(360.0)
    assert tick_wait(5.0, RateLimit(remaining=500, limit=5000, reset_at=hour), 1, now) == 3601.0  # at the reserve
    assert tick_wait(5.0, RateLimit(remaining=0, limit=5000, reset_at=now - timedelta(seconds=9)), 1, now) == 5.0
    far = RateLimit(remaining=0, limit=5000, reset_at=now + timedelta(days=400))  # a bad header or clock
    assert tick_wait(5.0, far, 1, now) == 3601.0  # never past GitHub's one-hour window
