"""The local forge under races and hostile input: one merge and one PR however many ask at once, and
4xx (never 5xx) for bad ids, pages, JSON, types and paths."""

import http.client
import os
import shutil
import threading
import uuid
from collections import Counter
from urllib.parse import urlsplit

import httpx
import pytest
from forge_fixtures import BOT_AUTH, clone, collaborator_token, commit_and_push, outsider_token, run_git

BRANCH = "senpai/ada/race"
THREADS = 16


def _at_once(n: int, request) -> list[httpx.Response]:
    """`request()` from `n` threads released together; their answers."""
    barrier, answers = threading.Barrier(n), []

    def go() -> None:
        barrier.wait()
        answers.append(request())

    threads = [threading.Thread(target=go) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return answers


def test_concurrent_merges_of_one_pr_make_one_merge_commit(forge_repo, tmp_path):
    forge, settings = forge_repo
    commit_and_push(forge, tmp_path / "seed", BRANCH, {"params.yaml": "lr: 0.2\n"}, start="advisor")
    pr = forge.create_pull("race", "", BRANCH, "advisor", [])
    base = forge.branch_sha("advisor")
    url = f"{settings.base_url}/repos/{settings.repo}/pulls/{pr.number}/merge"
    answers = _at_once(THREADS, lambda: httpx.put(url, json={"sha": pr.head_sha}, headers=BOT_AUTH, timeout=120))
    assert Counter(a.status_code for a in answers) == {200: 1, 405: THREADS - 1}
    run_git(tmp_path / "seed", "fetch", "-q", "origin", env=forge.git_env())
    merges = run_git(tmp_path / "seed", "rev-list", "--merges", f"{base}..origin/advisor").split()
    assert merges == [forge.get_pull(pr.number).merge_commit_sha]


def test_concurrent_pr_creation_for_one_branch_makes_one_pr(forge_repo, tmp_path):
    forge, settings = forge_repo
    commit_and_push(forge, tmp_path / "seed", BRANCH, {"params.yaml": "lr: 0.3\n"}, start="advisor")
    url = f"{settings.base_url}/repos/{settings.repo}/pulls"
    body = {"title": "race", "head": BRANCH, "base": "advisor"}
    answers = _at_once(THREADS, lambda: httpx.post(url, json=body, headers=BOT_AUTH, timeout=120))
    assert Counter(a.status_code for a in answers) == {201: 1, 422: THREADS - 1}
    assert [p.head_ref for p in forge.list_pulls("all")] == [BRANCH]


def test_reopening_a_second_pr_for_an_open_head_is_refused(forge_repo, tmp_path):
    forge, _ = forge_repo
    commit_and_push(forge, tmp_path / "seed", BRANCH, {"params.yaml": "lr: 0.4\n"}, start="advisor")
    first = forge.create_pull("one", "", BRANCH, "advisor", [])
    forge.update_pull(first.number, state="closed")
    forge.create_pull("two", "", BRANCH, "advisor", [])
    with httpx.Client(base_url=forge.settings.base_url, headers=BOT_AUTH) as api:
        again = api.patch(f"/repos/{forge.settings.repo}/pulls/{first.number}", json={"state": "open"})
    assert again.status_code == 422 and [p.title for p in forge.list_pulls("open")] == ["two"]


def _deep(n: int) -> bytes:
    return b'{"title": ' + b"[" * n + b"]" * n + b"}"


# (method, path under the repository or "/!" for the root, raw body or JSON, expected status)
BAD = [
    ("GET", "/issues/99999999999999999999999", None, 404),
    ("GET", f"/issues/{2**63}", None, 404),
    ("GET", "/pulls/123456789012345678901234567890/files", None, 404),
    ("PUT", "/pulls/99999999999999999999999/merge", {}, 404),
    ("GET", "/issues/comments/99999999999999999999999", None, 404),
    ("GET", "/issues?page=99999999999", None, 422),
    ("GET", f"/issues?page={10**40}", None, 422),
    ("GET", "/issues?per_page=lots", None, 400),
    ("GET", "/issues?page=" + "9" * 5000, None, 400),
    ("GET", "/issues?since=yesterday", None, 422),
    ("POST", "/issues", _deep(100_000), 400),
    ("POST", "/issues", b'{"title": "\\ud800"}', 400),
    ("POST", "/issues", b'{"title": "ok", "body": "\\udfff"}', 400),
    ("POST", "/issues", b"{not json", 400),
    ("POST", "/issues", b'{"title": "' + b"x" * (2 << 20) + b'"}', 413),
    ("POST", "/issues", {"title": 5}, 422),
    ("POST", "/issues", {"title": "t", "body": ["x"]}, 422),
    ("POST", "/issues", {"title": "t", "labels": "senpai"}, 422),
    ("POST", "/issues", ["not", "an", "object"], 400),
    ("PATCH", "/issues/1", {"state": 5}, 422),
    ("PATCH", "/issues/1", {"state": "closed", "state_reason": {"x": 1}}, 422),
    ("PATCH", "/issues/1", {"title": None}, 422),
    ("POST", "/issues/1/comments", {"body": {"x": 1}}, 422),
    ("POST", "/issues/1/labels", {"labels": [1, 2]}, 422),
    ("POST", "/labels", {"name": 5}, 422),
    ("POST", "/labels", {"name": "x", "color": "zzzzzz"}, 422),
    ("POST", "/pulls", {"title": "t", "head": 5, "base": "advisor"}, 422),
    ("PATCH", "/pulls/1", {"base": 7}, 422),
    ("PUT", "/pulls/1/merge", {"merge_method": 5}, 422),
    ("PUT", "/pulls/1/merge", {"sha": 5}, 422),
    ("PUT", "/pulls/1/merge", {"commit_title": ["x"]}, 422),
    ("PUT", "/pulls/1/merge", {"merge_method": "rebase"}, 405),
    ("POST", "/!/orgs/%2e%2e/repos", {"name": "escape"}, 422),
    ("POST", "/!/user/repos", {"name": ".."}, 422),
    ("POST", "/!/user/repos", {"name": "a/b"}, 422),
    ("GET", "/!/git/senpai/%2e%2e.git/info/refs?service=git-upload-pack", None, 404),
    ("GET", "/!/git/{repo}.git/%2e%2e/%2e%2e/forge.sqlite3", None, 404),
    ("GET", "/!/git/{repo}.git/objects/../../../forge.sqlite3", None, 404),
    ("GET", "/!/git/{repo}.git/HEAD", None, 404),
    ("GET", "/!/users/%2e%2e", None, 404),
    ("GET", "/contents/README.md?ref=--output=/tmp/x", None, 404),
    ("GET", "/contents/../../forge.sqlite3?ref=advisor", None, 404),
    # control characters (git refuses NUL in any argument) in a path, a query or a JSON string
    ("GET", "/contents/README.md?ref=%00", None, 400),
    ("GET", "/contents/READ%00ME.md", None, 400),
    ("GET", "/contents/README.md?ref=ma%01in", None, 400),
    ("GET", "/branches/ma%00in", None, 400),
    ("GET", "/git/ref/heads/ma%00in", None, 400),
    ("GET", "/issues?labels=a%00b", None, 400),
    ("GET", "/!/git/{repo}.git/info/refs?service=git-upload%00pack", None, 400),
    ("POST", "/pulls", {"title": "t", "head": "a\u0000b", "base": "advisor"}, 400),
    ("POST", "/issues", {"title": "t", "body": "x\u0000y"}, 400),
    ("POST", "/issues", {"title": "t", "labels": ["a\u0000"]}, 400),
    ("PATCH", "/pulls/1", {"base": "ad\u0000visor"}, 400),
    ("PUT", "/pulls/1/merge", {"commit_title": "a\u0000b"}, 400),
    ("PUT", "/pulls/1/merge", {"commit_message": "a\u0000b"}, 400),
    ("POST", "/labels", {"name": "x", "nested": {"k\u0000": 1}}, 400),
]


@pytest.fixture
def target(forge_repo, tmp_path):
    forge, settings = forge_repo
    commit_and_push(forge, tmp_path / "seed", BRANCH, {"params.yaml": "lr: 0.5\n"}, start="advisor")
    forge.create_pull("bad input target", "", BRANCH, "advisor", [])
    return settings


def _send(base_url: str, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
    """One raw request (no client-side normalisation of the path) with the bot's token."""
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    try:
        headers = {**BOT_AUTH, "Content-Type": "application/json"}
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


@pytest.mark.parametrize(("method", "path", "body", "status"), BAD, ids=[f"{m} {p[:60]}" for m, p, _, s in BAD])
def test_bad_input_answers_4xx(target, method, path, body, status):
    raw = body if isinstance(body, bytes) or body is None else httpx.Request("POST", "http://x", json=body).content
    path = path[2:].format(repo=target.repo) if path.startswith("/!") else f"/repos/{target.repo}{path}"
    code, reply = _send(target.base_url, method, path, raw)
    assert code == status, reply[:300]
    assert b"fatal" not in reply and b"git" not in reply.lower().split(b'"documentation_url"')[0], reply[:300]


def test_an_org_named_dot_dot_creates_nothing_outside_the_data_folder(local_forge):
    payload = httpx.Request("POST", "http://x", json={"name": "escape"}).content
    for org in ("%2e%2e", "..", "%2E%2E%2F%2E%2E", ".", "a%2F..%2F.."):
        code, _ = _send(local_forge.base_url, "POST", f"/orgs/{org}/repos", payload)
        assert 400 <= code < 500, org
    assert not list(local_forge.data_dir.parent.rglob("escape.git"))


def test_concurrent_creation_of_one_repository_is_one_201_and_422s(local_forge):
    body = {"name": f"c-{uuid.uuid4().hex[:8]}", "auto_init": True}
    url = f"{local_forge.base_url}/user/repos"
    answers = _at_once(8, lambda: httpx.post(url, json=body, headers=BOT_AUTH, timeout=120))
    assert Counter(a.status_code for a in answers) == {201: 1, 422: 7}


def test_a_pull_with_a_non_utf8_file_name_reads(forge_repo, tmp_path):
    forge, settings = forge_repo
    work = clone(forge, tmp_path / "w")
    run_git(work, "checkout", "-q", "-b", BRANCH, "origin/advisor")
    with open(os.path.join(bytes(work), b"out-\xe9t\xe9.txt"), "w") as f:  # a latin-1 name, as `git add -A` takes it
        f.write("x")
    run_git(work, "add", "-A")
    run_git(work, "commit", "-q", "-m", "outputs")
    run_git(work, "push", "-q", "origin", BRANCH, env=forge.git_env())
    with httpx.Client(base_url=f"{settings.base_url}/repos/{settings.repo}", headers=BOT_AUTH, timeout=120) as api:
        created = api.post("/pulls", json={"title": "t", "head": BRANCH, "base": "advisor"})
        files = api.get("/pulls/1/files")
        assert (created.status_code, api.get("/pulls/1").status_code, files.status_code) == (201, 200, 200)
    assert [f["filename"] for f in files.json()] == ["out-\ufffdt\ufffd.txt"]


@pytest.mark.parametrize(
    ("case", "patch"),
    [("merged", {"base": "other"}), ("closed", {"base": "other"}), ("open", {"base": "other", "title": None})],
)
def test_a_refused_pr_edit_changes_nothing(local_forge, forge_repo, tmp_path, case, patch):
    """GitHub answers 422 to retargeting a merged or closed PR, even to its author; a request with
    any bad field writes no field."""
    forge, settings = forge_repo
    commit_and_push(forge, tmp_path / "seed", BRANCH, {"params.yaml": "lr: 0.6\n"}, start="advisor")
    commit_and_push(forge, tmp_path / "seed", "other", {"other.txt": "x\n"}, start="advisor")
    author = {"Authorization": f"token {outsider_token(local_forge)}"}  # read role: may edit only its own PR
    with httpx.Client(base_url=f"{settings.base_url}/repos/{settings.repo}", timeout=120) as api:
        pr = api.post("/pulls", json={"title": "retarget", "head": BRANCH, "base": "advisor"}, headers=author).json()
        if case == "merged":
            assert api.put(f"/pulls/{pr['number']}/merge", json={}, headers=BOT_AUTH).status_code == 200
        elif case == "closed":
            assert api.patch(f"/pulls/{pr['number']}", json={"state": "closed"}, headers=author).status_code == 200
        answer = api.patch(f"/pulls/{pr['number']}", json=patch, headers=author)
        after = api.get(f"/pulls/{pr['number']}", headers=BOT_AUTH).json()
    assert answer.status_code == 422, answer.text
    assert (after["base"]["ref"], after["title"]) == ("advisor", "retarget")


@pytest.mark.parametrize(
    ("who", "rest", "status"),
    [
        (None, "", 404),
        ("outsider", "", 404),
        ("outsider", "/issues", 404),
        ("outsider", "/contents/README.md", 404),
        (None, ".git/info/refs?service=git-upload-pack", 401),
        ("outsider", ".git/info/refs?service=git-upload-pack", 404),
        ("collaborator", "", 200),
        ("collaborator", ".git/info/refs?service=git-upload-pack", 200),
        ("bot", "/contents/README.md", 200),
    ],
)
def test_a_private_repository_is_hidden_from_all_but_its_writers(local_forge, who, rest, status):
    name = f"p-{uuid.uuid4().hex[:8]}"
    created = httpx.post(
        f"{local_forge.base_url}/user/repos", json={"name": name, "auto_init": True, "private": True}, headers=BOT_AUTH
    )
    assert created.status_code == 201
    tokens = {None: None, "bot": BOT_AUTH["Authorization"].split()[1]}
    tokens["outsider"] = outsider_token(local_forge) if who == "outsider" else None
    tokens["collaborator"] = collaborator_token(local_forge) if who == "collaborator" else None
    headers = {"Authorization": f"token {tokens[who]}"} if tokens[who] else {}
    where = f"/git/senpai/{name}{rest}" if rest.startswith(".git") else f"/repos/senpai/{name}{rest}"
    assert httpx.get(f"{local_forge.base_url}{where}", headers=headers, timeout=120).status_code == status


def test_a_git_failure_never_shows_git_stderr(local_forge):
    """A repository lost on disk is the forge's fault (500), and its answer names no server path."""
    name = f"gone-{uuid.uuid4().hex[:8]}"
    assert httpx.post(f"{local_forge.base_url}/user/repos", json={"name": name}, headers=BOT_AUTH).status_code == 201
    shutil.rmtree(local_forge.data_dir / "git" / "senpai" / f"{name}.git")
    answer = httpx.get(f"{local_forge.base_url}/repos/senpai/{name}/branches", headers=BOT_AUTH, timeout=120)
    assert (answer.status_code, answer.json()["message"]) == (500, "Internal Server Error")


def test_a_head_or_base_written_as_a_revision_is_no_branch(forge_repo, tmp_path):
    """Red team. GitHub takes a PR's head and base, and a ref read, as branch names: `advisor~0` is no branch
    (422, 404). The forge resolved `refs/heads/<name>^{commit}`, so a PR could be opened on a
    revision: its diff then shows the head frozen at creation (no branch of that name moves) while
    a merge without `sha` takes what the revision names when it runs."""
    forge, settings = forge_repo
    commit_and_push(forge, tmp_path / "seed", BRANCH, {"params.yaml": "lr: 0.5\n"}, start="advisor")
    with httpx.Client(base_url=f"{settings.base_url}/repos/{settings.repo}", headers=BOT_AUTH) as api:
        head = api.post("/pulls", json={"title": "t", "head": f"{BRANCH}~0", "base": "advisor"})
        base = api.post("/pulls", json={"title": "t", "head": BRANCH, "base": "advisor~0"})
        ref = api.get("/git/ref/heads/advisor~0")
    assert (head.status_code, base.status_code, ref.status_code) == (422, 422, 404)
