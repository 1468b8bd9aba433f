"""The local forge's secondary limits, as GitHub's, over real HTTP: a user's writes a minute (403 with
Retry-After past it) and the comments one thread may hold (403 past it); senpai's adapter waits the
rate out, so the bot is slowed, never failed."""

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from forge_fixtures import TOKEN, new_repository, register_bot, user_token

from senpai.errors import Forbidden
from senpai.forge.github import GitHubForge
from senpai.forge.localforge.ratelimit import WriteLimits
from senpai.forge.localforge.server import LocalForgeServer

PER_MINUTE = 30


@pytest.fixture
def forge_with(tmp_path):
    """forge_with(limits) -> (server, the bot's adapter): a forge of its own with `limits`."""
    servers = []

    def start(limits: WriteLimits) -> tuple[LocalForgeServer, GitHubForge]:
        server = register_bot(LocalForgeServer(tmp_path / f"forge{len(servers)}", write_limits=limits)).start()
        servers.append(server)
        forge, _ = new_repository(server.base_url, tmp_path / f"seed{len(servers)}")
        return server, forge

    try:
        yield start
    finally:
        for server in servers:
            server.stop()


def _comment(server: LocalForgeServer, repo: str, token: str, number: int, body: str = "hi") -> httpx.Response:
    url = f"{server.base_url}/repos/{repo}/issues/{number}/comments"
    return httpx.post(url, json={"body": body}, headers={"Authorization": f"token {token}"}, timeout=30)


def test_a_users_writes_past_the_rate_answer_403_with_retry_after_and_others_write_on(forge_with):
    server, bot = forge_with(WriteLimits(per_minute=PER_MINUTE, comments_per_thread=None))
    repo, issue = bot.settings.repo, bot.create_issue("flood", "", []).number
    mallory, carol = user_token(server, "mallory"), user_token(server, "carol")
    started, answers = time.monotonic(), []
    while len(answers) < 3 * PER_MINUTE and (not answers or answers[-1].status_code == 201):
        answers.append(_comment(server, repo, mallory, issue))
    refused, elapsed = answers[-1], time.monotonic() - started
    assert refused.status_code == 403 and "secondary rate limit" in refused.json()["message"]
    assert PER_MINUTE <= len(answers) - 1 <= PER_MINUTE + elapsed * PER_MINUTE / 60 + 1  # the bucket, and what refilled
    assert 1 <= int(refused.headers["retry-after"]) <= 60 / PER_MINUTE + 1
    assert _comment(server, repo, carol, issue).status_code == 201  # per user: carol writes on
    assert httpx.get(f"{server.base_url}/repos/{repo}/issues/{issue}/comments").status_code == 200  # reads are not limited


def test_the_bots_writes_past_the_rate_are_slowed_not_failed(forge_with):
    server, bot = forge_with(WriteLimits(per_minute=PER_MINUTE, comments_per_thread=None))
    issue = bot.create_issue("busy", "", []).number
    calls = bot.calls
    made = [bot.create_comment(issue, f"record {i}") for i in range(PER_MINUTE + 3)]  # the adapter's own retries
    assert [c.body for c in made] == [f"record {i}" for i in range(PER_MINUTE + 3)]
    assert bot.calls - calls > len(made)  # some were refused (403, Retry-After) and sent again after the wait
    assert [c.body for c in bot.list_comments(issue)] == [c.body for c in made]  # none lost, none twice


def test_a_thread_takes_no_comment_past_its_cap(forge_with):
    server, bot = forge_with(WriteLimits(per_minute=None, comments_per_thread=5))
    full, other = (bot.create_issue(title, "", []).number for title in ("full", "other"))
    for i in range(5):
        bot.create_comment(full, f"c{i}")
    refused = _comment(server, bot.settings.repo, TOKEN, full)
    assert refused.status_code == 403
    assert refused.json()["message"] == "Commenting is disabled on issues with more than 5 comments"
    with pytest.raises(Forbidden):  # not a rate limit: no Retry-After, not retried
        bot.create_comment(full, "one more")
    assert bot.create_comment(other, "fine").body == "fine"
    assert len(bot.list_comments(full)) == 5


def test_forge_serve_applies_githubs_secondary_limits_by_default(tmp_path):
    cmd = [sys.executable, "-m", "senpai", "forge", "serve", "--data", str(tmp_path / "forge")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        url = proc.stdout.readline().split(" ", 1)[1].strip()
        lines = dict(proc.stdout.readline().strip().split(": ", 1) for _ in range(3))
        human = {"Authorization": f"token {lines['human_token']}"}
        assert httpx.post(f"{url}/user/repos", json={"name": "t"}, headers=human, timeout=30).status_code == 201
        began = time.monotonic()
        statuses = [httpx.post(f"{url}/repos/human/t/issues", json={"title": "t"}, headers=human, timeout=30).status_code]
        while statuses[-1] == 201 and len(statuses) < 200:
            statuses.append(_comment_at(url, "human/t", human, 1))
        # 80 writes a minute, 2 of them above; the bucket refills 80/60 a second while they are made
        # (a loaded machine makes them slowly)
        refilled = (time.monotonic() - began) * 80 / 60
        assert statuses[-1] == 403 and 78 <= len(statuses) <= 90 + refilled
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=15)


def _comment_at(url: str, repo: str, headers: dict, number: int) -> int:
    return httpx.post(f"{url}/repos/{repo}/issues/{number}/comments", json={"body": "x"}, headers=headers, timeout=30).status_code


def test_a_retried_write_finds_only_the_text_that_ends_in_its_marker(forge_with):
    # a bot comment quoting a model's text raw in its YAML (a student's interpretation, a budget report's
    # tool arguments) can hold the marker of a record senpai posts later; the retry of that post (here
    # after a 403 of the write rate) took the quote for the post and never made it
    server, bot = forge_with(WriteLimits(per_minute=6, comments_per_thread=None))  # one write back each 10 s
    issue = bot.create_issue("pr", "", []).number
    mark = "<!-- senpai:decision:0123456789abcdef -->"
    quoted = f"evidence\n\n```senpai-evidence\ninterpretation: 'done {mark}'\n```\n\n<!-- senpai:evidence:fedcba9876543210 -->"
    bot.create_comment(issue, quoted)
    while _comment(server, bot.settings.repo, TOKEN, issue).status_code == 201:
        pass  # the bot's bucket is empty: its next write is refused once, then retried after the wait
    calls = bot.calls
    made = bot.create_comment(issue, f"merged\n\n{mark}")
    assert bot.calls - calls >= 3  # refused, then the retry's look for it (a GET), then the post
    assert made.body == f"merged\n\n{mark}"
    assert [c.body for c in bot.list_comments(issue)][-1] == f"merged\n\n{mark}"
