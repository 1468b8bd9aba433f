"""The fault proxy itself: faithful forwarding (REST, ETag 304s, Authorization, chunked git pushes)
and each fault kind as a client sees it, against the real local forge."""

import http.client
import json
import secrets
from pathlib import Path

import pytest
from fault_proxy import KINDS, FaultProxy
from forge_fixtures import TOKEN, clone, commit_and_push, run_git

from senpai.config.harness import ForgeSettings
from senpai.forge.github import GitHubForge


def _through(proxy: FaultProxy, settings: ForgeSettings) -> GitHubForge:
    return GitHubForge(settings.model_copy(update={"base_url": proxy.url}), TOKEN, backoff=0.01)


def _raw(proxy: FaultProxy, method: str, path: str, body: dict | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]), timeout=30)
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"})
    return conn.getresponse()


def test_forwards_rest_etags_auth_and_chunked_git(forge_repo, local_forge, tmp_path: Path):
    direct, settings = forge_repo
    with FaultProxy(local_forge.base_url, rate=0.0) as proxy:
        forge = _through(proxy, settings)
        work = clone(forge, tmp_path / "work")
        run_git(work, "config", "http.postBuffer", "70000")  # a larger pack is sent chunked (git's floor is 64 KiB)
        sha = commit_and_push(forge, work, "big", {"blob.txt": secrets.token_hex(100_000)}, start="main")
        assert direct.branch_sha("big") == sha
        pr = forge.create_pull("t", "body", head="big", base="main", labels=["senpai"])
        assert forge.pull_files(pr.number) == ["blob.txt"]
        comment = forge.create_comment(pr.number, "hello through the proxy")
        assert comment.user == direct.login  # the Authorization header reached the forge
        assert [c.body for c in direct.list_comments(pr.number)] == ["hello through the proxy"]
        first = forge.pulls_updated(None, None)
        assert first.changed and first.etag
        assert forge.pulls_updated(None, first.etag).changed is False  # If-None-Match in, 304 and ETag out
        assert proxy.counts()["forwarded"] >= 8 and sum(proxy.injected.values()) == 0


@pytest.mark.parametrize("kind", ["500", "502", "503", "429"])
def test_error_faults_never_reach_the_forge(forge_repo, local_forge, kind: str):
    direct, settings = forge_repo
    pr = direct.create_issue("t", "b", [])
    with FaultProxy(local_forge.base_url, rate=1.0, weights={kind: 1}, retry_after=2) as proxy:
        resp = _raw(proxy, "POST", f"/repos/{settings.repo}/issues/{pr.number}/comments", {"body": "x"})
        assert resp.status == int(kind)
        assert resp.getheader("Retry-After") == ("2" if kind in ("503", "429") else None)
        assert proxy.injected[kind] == 1 and proxy.forwarded == 0
    assert direct.list_comments(pr.number) == []


@pytest.mark.parametrize("kind,applied", [("reset_before", 0), ("reset_after", 1)])
def test_resets_before_and_after_forwarding(forge_repo, local_forge, kind: str, applied: int):
    direct, settings = forge_repo
    pr = direct.create_issue("t", "b", [])
    with FaultProxy(local_forge.base_url, rate=1.0, weights={kind: 1}) as proxy:
        with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected)):
            _raw(proxy, "POST", f"/repos/{settings.repo}/issues/{pr.number}/comments", {"body": "x"})
        assert proxy.injected == {kind: 1}
    assert len(direct.list_comments(pr.number)) == applied  # after: the forge applied what the client never saw


def test_slow_answers_arrive_and_the_retrying_client_survives_every_kind(forge_repo, local_forge):
    direct, settings = forge_repo
    with FaultProxy(local_forge.base_url, rate=1.0, weights={"slow": 1}, slow_seconds=0.2) as proxy:
        assert _raw(proxy, "GET", f"/repos/{settings.repo}").status == 200
        assert proxy.injected == {"slow": 1} and proxy.forwarded == 1
    with FaultProxy(local_forge.base_url, rate=0.3, seed=3, retry_after=0) as proxy:
        forge = _through(proxy, settings)
        for _ in range(15):  # the adapter retries 5xx, 429 and resets of reads
            assert forge.branch_sha("main") == direct.branch_sha("main")
        assert sum(proxy.injected.values()) > 0


def test_seeded_choices_repeat_and_match_the_rate():
    def sequence(seed: int) -> list[str | None]:
        proxy = FaultProxy("http://127.0.0.1:9", rate=0.2, seed=seed)
        try:
            return [proxy.choose("/git/a/b.git/info/refs" if i % 2 else "/repos/a/b") for i in range(2000)]
        finally:
            proxy.stop()

    a, b = sequence(7), sequence(7)
    assert a == b and a != sequence(8)
    faults = [k for k in a if k]
    assert 300 < len(faults) < 500  # 20% of 2000, within a wide binomial margin
    assert set(faults) == set(KINDS)


def test_surfaces_limit_injection_to_rest_or_git():
    proxy = FaultProxy("http://127.0.0.1:9", rate=1.0, surfaces=("git",))
    try:
        assert proxy.choose("/repos/a/b/pulls") is None
        assert proxy.choose("/git/a/b.git/git-upload-pack") in KINDS
        assert list(proxy.injected_by_surface) == [("git", next(iter(proxy.injected)))]
    finally:
        proxy.stop()
