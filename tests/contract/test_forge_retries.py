"""Retries and error translation of the PyGithub adapter, against a local forge that fails on cue.

The failures are injected by an ASGI wrapper around the real app (`tests/flaky.py`), not by production code.
Waits go through an injected `sleep`, so the tests check the backoff without sleeping it.
"""

import socket
import time
from collections.abc import Iterator

import pytest
from flaky import DROP, Flaky, flaky_forge
from forge_fixtures import TOKEN, clone, commit_and_push, new_repository

from senpai.config.harness import ForgeSettings
from senpai.config.time_limits import GIT
from senpai.errors import Forbidden, PermanentError, TransientError
from senpai.forge.github import GitHubForge
from senpai.job.workcopy import WorkCopy


@pytest.fixture(scope="module")
def flaky(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Flaky, ForgeSettings]]:
    data_dir = tmp_path_factory.mktemp("flakyforge")
    with flaky_forge(data_dir) as (app, url):
        _, settings = new_repository(url, data_dir / "seed")
        yield app, settings


def forge_with_clock(settings: ForgeSettings, **kwargs) -> tuple[GitHubForge, list[float]]:
    sleeps: list[float] = []
    return GitHubForge(settings, TOKEN, sleep=sleeps.append, **kwargs), sleeps


def test_a_503_is_retried_after_retry_after(flaky):
    app, settings = flaky
    app.fail(r"/pulls$", (503, {"Retry-After": "1"}, "Service Unavailable"))
    forge, sleeps = forge_with_clock(settings)
    assert forge.list_pulls() == []
    assert (forge.calls, sleeps) == (2, [1.0])


def test_a_conditional_listing_is_retried_too(flaky):
    app, settings = flaky
    app.fail(r"/issues$", (502, {}, "Bad Gateway"))
    forge, sleeps = forge_with_clock(settings, backoff=0.25)
    assert forge.list_issues("senpai:steer", "all") == []
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
    with pytest.raises(
        TransientError, match=rf"cannot reach http://127\.0\.0\.1:{port}: connection refused: is the forge running\?"
    ):
        forge.get_pull(1)
    assert (forge.calls, sleeps) == (2, [0.01])


def _comment_bodies(forge: GitHubForge, number: int) -> list[str]:
    return [c.body for c in GitHubForge(forge.settings, TOKEN).list_comments(number)]


def test_a_comment_whose_answer_was_lost_is_not_posted_again(flaky):
    app, settings = flaky
    forge, sleeps = forge_with_clock(settings)
    number = forge.create_issue("drops", "an issue to comment on\n\n<!-- senpai:test:drops -->", []).number
    for i in range(3):
        app.fail(rf"/issues/{number}/comments$", DROP, method="POST")
        body = f"evidence {i}\n\n<!-- senpai:evidence:{i} -->"
        posted = forge.create_comment(number, body)
        assert posted.body == body and app.failures == []
    bodies = _comment_bodies(forge, number)
    assert len(bodies) == 3 and len(set(bodies)) == 3  # one comment per write, no duplicate
    assert len(sleeps) == 3  # each write was retried once, and the retry found the first one


def test_a_pull_whose_answer_was_lost_is_not_opened_again(flaky, tmp_path):
    app, settings = flaky
    forge, _ = forge_with_clock(settings)
    work = clone(forge, tmp_path / "work", "main")
    commit_and_push(forge, work, "senpai/ada/dropped", {"notes.md": "x\n"}, start="main")
    app.fail(r"/pulls$", DROP, method="POST")
    pr = forge.create_pull("t", "body", head="senpai/ada/dropped", base="main", labels=["senpai"])
    assert pr.head_ref == "senpai/ada/dropped" and "senpai" in pr.labels and app.failures == []
    assert [p.number for p in forge.list_pulls() if p.head_ref == "senpai/ada/dropped"] == [pr.number]


def test_an_issue_whose_answer_was_lost_is_not_opened_again(flaky):
    app, settings = flaky
    forge, _ = forge_with_clock(settings)
    app.fail(r"/issues$", DROP, method="POST")
    issue = forge.create_issue("help", "a human must look\n\n<!-- senpai:escalate:dropped -->", ["senpai"])
    assert app.failures == []
    same = [i for i in forge.list_issues("senpai", "all") if "senpai:escalate:dropped" in i.body]
    assert [i.number for i in same] == [issue.number]


@pytest.mark.parametrize(
    "failure",
    [
        (429, {"Retry-After": "2"}, "Too Many Requests"),
        (403, {"Retry-After": "2"}, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."),
        (403, {"Retry-After": "2"}, "secondary limit with a message PyGithub does not know"),
    ],
)
def test_rate_limited_writes_wait_and_post_once(flaky, failure):
    app, settings = flaky
    forge, sleeps = forge_with_clock(settings)
    number = forge.create_issue("limits", f"rate limits\n\n<!-- senpai:test:{failure[1]}{failure[2][:20]} -->", []).number
    app.fail(rf"/issues/{number}/comments$", failure, method="POST")
    forge.create_comment(number, "once\n\n<!-- senpai:evidence:limit -->")
    assert sleeps == [2.0] and len(_comment_bodies(forge, number)) == 1


def test_a_403_without_a_rate_limit_is_forbidden_and_not_retried(flaky):
    app, settings = flaky
    app.fail(r"/pulls$", (403, {}, "Resource not accessible by integration"))
    forge, sleeps = forge_with_clock(settings)
    with pytest.raises(Forbidden):
        forge.list_pulls()
    assert (forge.calls, sleeps) == (1, [])


# ------------------------------------------------------------------ git over smart HTTP


def test_git_clone_is_retried_after_retry_after(flaky, tmp_path):
    app, settings = flaky
    forge = GitHubForge(settings, TOKEN)
    app.fail(r"^/git/.*/info/refs$", *[(503, {"Retry-After": "2"}, "Service Unavailable")] * 2)
    sleeps: list[float] = []
    wc = WorkCopy.clone(forge.clone_url, tmp_path / "repo", forge.git_env(), "main", sleep=sleeps.append)
    assert (wc.path / "README.md").exists() and sleeps == [2.0, 2.0] and app.failures == []


def test_git_fetch_and_push_faults_are_retried_and_the_push_lands_once(flaky, tmp_path):
    app, settings = flaky
    forge = GitHubForge(settings, TOKEN)
    sleeps: list[float] = []
    wc = WorkCopy.clone(forge.clone_url, tmp_path / "repo", forge.git_env(), "main", sleep=sleeps.append)
    (wc.path / "notes.md").write_text("retried\n")
    head = wc.commit_all("a change")
    app.fail(r"/git-receive-pack$", (502, {}, "Bad Gateway"), DROP, method="POST")  # then applied, answer lost
    wc.push("senpai/ada/retried")
    assert forge.branch_sha("senpai/ada/retried") == head and app.failures == []
    app.fail(r"/git-upload-pack$", (429, {"Retry-After": "3"}, "Too Many Requests"), method="POST")
    wc.checkout_remote_branch("senpai/ada/retried")
    assert sleeps == [1.0, 2.0, 3.0]  # backoff without Retry-After, then the server's 3 s


def test_git_faults_that_outlast_the_retries_are_transient(flaky, tmp_path):
    app, settings = flaky
    forge = GitHubForge(settings, TOKEN)
    app.fail(r"^/git/.*/info/refs$", *[(503, {}, "Service Unavailable")] * 9)
    sleeps: list[float] = []
    with pytest.raises(TransientError, match="503"):
        WorkCopy.clone(forge.clone_url, tmp_path / "repo", forge.git_env(), "main", sleep=sleeps.append)
    assert len(sleeps) == GIT.attempts - 1 and len(app.seen) == GIT.attempts
    app.fail(r"^/git/.*/info/refs$", (503, {"Retry-After": "600"}, "Service Unavailable"))
    with pytest.raises(TransientError) as caught:  # too long to sleep in a job: exit 3, relaunched later
        WorkCopy.clone(forge.clone_url, tmp_path / "repo2", forge.git_env(), "main", sleep=sleeps.append)
    assert caught.value.retry_after == 600 and len(sleeps) == GIT.attempts - 1


def test_a_rejected_push_is_permanent_and_not_retried(flaky, tmp_path):
    _, settings = flaky
    forge = GitHubForge(settings, TOKEN)
    sleeps: list[float] = []
    wc = WorkCopy.clone(forge.clone_url, tmp_path / "repo", forge.git_env(), "main", sleep=sleeps.append)
    (wc.path / "other.md").write_text("diverged\n")
    wc.commit_all("diverge")
    other = WorkCopy.clone(forge.clone_url, tmp_path / "other", forge.git_env(), "main", sleep=sleeps.append)
    (other.path / "x.md").write_text("first\n")
    other.commit_all("first")
    other.push("senpai/ada/raced")
    with pytest.raises(PermanentError, match="rejected"):
        wc.push("senpai/ada/raced")
    assert sleeps == []
