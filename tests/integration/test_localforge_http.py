"""The local forge's HTTP surface: ETags and 304s, pagination, error shapes, GitHub-shaped JSON.

Raw HTTP with httpx, and PyGithub itself where its behaviour (pagination) is the point.
"""

import httpx
import pytest
from forge_fixtures import OWNER, TOKEN, add_token, commit_and_push, new_repository, run_git
from github import Auth, Github

from senpai.forge.localforge.git import MEMO_FILES, GitRepos

BRANCH = "senpai/alice/x"


def client_for(base_url: str, repo: str) -> httpx.Client:
    return httpx.Client(base_url=f"{base_url}/repos/{repo}", headers={"Authorization": f"token {TOKEN}"})


@pytest.fixture
def api(forge_repo, local_forge):
    with client_for(local_forge.base_url, forge_repo[1].repo) as client:
        yield client


@pytest.fixture(scope="module")
def shared(local_forge, tmp_path_factory):
    """One repository with one PR, for read-only tests."""
    work = tmp_path_factory.mktemp("shared") / "seed"
    forge, settings = new_repository(local_forge.base_url, work)
    commit_and_push(forge, work, BRANCH, {"a.txt": "a\n"}, start="advisor")
    number = forge.create_pull("t", "b", BRANCH, "advisor", ["senpai"]).number
    with client_for(local_forge.base_url, settings.repo) as client:
        yield client, number


@pytest.fixture
def pull_number(forge_repo, tmp_path):
    forge, _ = forge_repo
    commit_and_push(forge, tmp_path / "seed", BRANCH, {"a.txt": "a\n"}, start="advisor")
    return forge.create_pull("t", "b", BRANCH, "advisor", ["senpai"]).number


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/pulls",
        "/pulls/{n}",
        "/pulls/{n}/files",
        "/issues",
        "/issues/{n}",
        "/issues/{n}/comments",
        "/issues/{n}/labels",
        "/labels",
        "/branches",
        "/branches/advisor",
        "/git/ref/heads/advisor",
    ],
)
def test_every_get_has_a_strong_etag_and_answers_304(shared, path):
    api, pull_number = shared
    url = path.format(n=pull_number) or str(api.base_url).rstrip("/")
    first = api.get(url)
    assert first.status_code == 200, first.text
    etag = first.headers["etag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    again = api.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag


def test_issue_list_includes_pulls_and_changes_bump_updated_at(api, pull_number, forge_repo):
    forge, _ = forge_repo
    issue = api.post("/issues", json={"title": "steer", "labels": ["senpai:steer"]}).json()
    items = api.get("/issues", params={"state": "all", "sort": "updated"}).json()
    assert [i["number"] for i in items] == [issue["number"], pull_number]
    assert "pull_request" in items[1] and "pull_request" not in items[0]
    assert items[1]["pull_request"]["url"].endswith(f"/pulls/{pull_number}")

    etag = api.get("/issues", params={"state": "all", "sort": "updated", "per_page": 1}).headers["etag"]
    for change in (
        lambda: api.post(f"/issues/{pull_number}/labels", json=["x"]),
        lambda: api.post(f"/issues/{pull_number}/comments", json={"body": "hi"}),
        lambda: api.patch(f"/pulls/{pull_number}", json={"body": "new"}),
    ):
        assert change().status_code in (200, 201)
        latest = api.get("/issues", params={"state": "all", "sort": "updated", "per_page": 1})
        assert latest.json()[0]["number"] == pull_number and latest.headers["etag"] != etag
        etag = latest.headers["etag"]
        api.patch(f"/issues/{issue['number']}", json={"body": "bump the issue back on top"})


def test_comment_edit_and_label_removal(api, pull_number):
    comment = api.post(f"/issues/{pull_number}/comments", json={"body": "v1"}).json()
    assert comment["issue_url"].endswith(f"/issues/{pull_number}") and comment["author_association"] == "OWNER"
    edited = api.patch(f"/issues/comments/{comment['id']}", json={"body": "v2"}).json()
    assert edited["body"] == "v2" and api.get(f"/issues/{pull_number}/comments").json()[0]["body"] == "v2"
    assert [x["name"] for x in api.delete(f"/issues/{pull_number}/labels/senpai").json()] == []
    assert api.delete(f"/issues/{pull_number}/labels/senpai").status_code == 404


def test_link_pagination_works_with_pygithub(forge_repo, local_forge, api):
    _, settings = forge_repo
    for i in range(5):
        api.post("/issues", json={"title": f"issue {i}"})
    page = api.get("/issues", params={"per_page": 2, "page": 2})
    assert 'rel="next"' in page.headers["link"] and 'rel="prev"' in page.headers["link"]
    assert page.headers["link"].startswith(f"<{local_forge.base_url}/repos/")
    gh = Github(
        base_url=local_forge.base_url,
        auth=Auth.Token(TOKEN),
        per_page=2,
        retry=0,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )
    issues = gh.get_repo(settings.repo).get_issues(state="all")
    assert issues.totalCount == 5
    assert [i.title for i in issues] == [f"issue {i}" for i in reversed(range(5))]


def test_errors_are_github_shaped(api, pull_number, local_forge, forge_repo):
    for response, status in (
        (api.get("/pulls/999"), 404),
        (httpx.get(f"{local_forge.base_url}/repos/{OWNER}/nope"), 404),
        (api.post("/pulls", json={"title": "t", "head": "nope", "base": "advisor"}), 422),
        (api.post("/pulls", json={"title": "t", "head": BRANCH, "base": "advisor"}), 422),
        (api.post("/labels", json={"name": "senpai"}), 422),
        (api.post("/issues", json={}), 422),
    ):
        body = response.json()
        assert response.status_code == status and body["message"] and body["documentation_url"], body
    exists = api.post(f"{local_forge.base_url}/user/repos", json={"name": forge_repo[1].repo.split("/")[1]})
    assert exists.status_code == 422 and exists.json()["message"] == "Repository creation failed."


def test_pull_json_has_what_pygithub_needs(shared):
    api, pull_number = shared
    pull = api.get(f"/pulls/{pull_number}").json()
    for key in (
        "url",
        "html_url",
        "issue_url",
        "number",
        "state",
        "labels",
        "author_association",
        "merged",
        "mergeable",
        "merge_commit_sha",
        "created_at",
        "updated_at",
    ):
        assert key in pull
    assert pull["user"]["login"] == OWNER and pull["head"]["label"] == f"{OWNER}:{BRANCH}"
    assert pull["mergeable"] is True and pull["changed_files"] == 1 and pull["commits"] == 1
    assert pull["created_at"].endswith("Z") and len(pull["created_at"]) == 20
    assert "merged" not in api.get("/pulls").json()[0]  # the list shape, as on GitHub


def test_tokens_name_their_user_in_every_header_form(local_forge):
    """`token X`, `Bearer X` and `Basic base64(user:X)` all act as X's user; an unknown token is 401."""
    import base64

    token = add_token(local_forge, "dora")
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    for header in (f"token {token}", f"Bearer {token}", f"Basic {basic}"):
        me = httpx.get(f"{local_forge.base_url}/user", headers={"Authorization": header})
        assert me.status_code == 200 and me.json()["login"] == "dora", header
    for header in ("token dora:1", "token ../evil:1", "Basic !!!", "Digest x"):
        answer = httpx.get(f"{local_forge.base_url}/user", headers={"Authorization": header})
        assert (answer.status_code, answer.json()["message"]) == (401, "Bad credentials"), header
    anonymous = httpx.get(f"{local_forge.base_url}/user")
    assert (anonymous.status_code, anonymous.json()["message"]) == (401, "Requires authentication")


def test_health(local_forge):
    assert httpx.get(f"{local_forge.base_url}/health").json() == {"status": "ok"}


def test_list_filters(shared):
    api, number = shared
    assert [p["number"] for p in api.get("/pulls", params={"head": f"{OWNER}:{BRANCH}"}).json()] == [number]
    assert api.get("/pulls", params={"base": "main"}).json() == []
    assert [i["number"] for i in api.get("/issues", params={"labels": "senpai"}).json()] == [number]
    assert api.get("/issues", params={"labels": "senpai,other"}).json() == []
    assert api.get("/issues", params={"since": "2999-01-01T00:00:00Z"}).json() == []
    assert api.get("/issues", params={"since": "2000-01-01T00:00:00Z"}).json()[0]["number"] == number
    assert api.get("/issues", params={"since": "yesterday"}).status_code == 422


def test_a_prs_diff_commits_and_mergeability_follow_every_push_and_merge(api, forge_repo, tmp_path):
    """The forge remembers what a pair of shas gives (diff, commit count, mergeable); a push to the
    head or the base, or a merge into the base, is a new pair: each read after it sees it."""
    forge, _ = forge_repo
    seed = tmp_path / "seed"

    def pull(number: int) -> tuple[str, str, list[str], int, bool | None]:
        twice = [api.get(f"/pulls/{number}").json() for _ in range(2)]  # the second read is a remembered one
        assert twice[0] == twice[1]
        files = [f["filename"] for f in api.get(f"/pulls/{number}/files").json()]
        p = twice[1]
        assert p["changed_files"] == len(files)
        return p["head"]["sha"], p["base"]["sha"], sorted(files), p["commits"], p["mergeable"]

    first = commit_and_push(forge, seed, BRANCH, {"a.txt": "a\n"}, start="advisor")
    number = forge.create_pull("t", "b", BRANCH, "advisor", ["senpai"]).number
    base = run_git(seed, "rev-parse", "origin/advisor")
    assert pull(number) == (first, base, ["a.txt"], 1, True)
    second = commit_and_push(forge, seed, BRANCH, {"b.txt": "b\n"})  # the head moves
    assert pull(number) == (second, base, ["a.txt", "b.txt"], 2, True)
    moved = commit_and_push(forge, seed, "advisor", {"a.txt": "not a\n"}, start="advisor")  # the base moves: a conflict
    assert pull(number) == (second, moved, ["a.txt", "b.txt"], 2, False)
    other = "senpai/alice/y"
    head = commit_and_push(forge, seed, other, {"c.txt": "c\n"}, start="advisor")
    merged = forge.merge_pull(forge.create_pull("t2", "b", other, "advisor", ["senpai"]).number, "m", head)
    assert pull(number) == (second, merged, ["a.txt", "b.txt"], 2, False)  # a merge moved the base: read again
    fixed = commit_and_push(forge, seed, BRANCH, {"a.txt": "not a\n"})  # the head makes the base's change too
    assert pull(number) == (fixed, merged, ["a.txt", "b.txt"], 3, True)


def test_a_pushed_replace_ref_changes_nothing_the_forge_diffs_or_merges(api, forge_repo, tmp_path):
    """git reads through `refs/replace/*` unless told not to, and whoever may push a branch may push
    one. GitHub ignores them; so does the forge: a PR's diff and the merge it builds are the PR's
    own commits, whatever a replace ref says the head is."""
    forge, _ = forge_repo
    seed = tmp_path / "seed"
    head = commit_and_push(forge, seed, BRANCH, {"a.txt": "a\n"}, start="advisor")
    forged = commit_and_push(forge, seed, "senpai/mallory/forged", {"evil.txt": "pwned\n"}, start="advisor")
    run_git(seed, "push", "-q", "origin", f"{forged}:refs/replace/{head}", env=forge.git_env())
    number = forge.create_pull("t", "b", BRANCH, "advisor", ["senpai"]).number
    assert [f["filename"] for f in api.get(f"/pulls/{number}/files").json()] == ["a.txt"]
    merged = forge.merge_pull(number, "m", head)
    run_git(seed, "fetch", "-q", "origin", env=forge.git_env())
    tree = run_git(seed, "-c", "core.useReplaceRefs=false", "ls-tree", "--name-only", merged).split()
    assert "a.txt" in tree and "evil.txt" not in tree


def test_a_failed_merge_base_is_never_remembered_as_a_diff_of_the_whole_tree(api, forge_repo, tmp_path, monkeypatch):
    """Red team: `git merge-base` that fails (a killed git, a missing object) is not "no common
    history": the diff from the empty tree it gave was remembered for the sha pair for ever, so
    every later read of the PR showed every file of the repository as changed."""
    import subprocess

    from senpai.forge.localforge.git import GitRepos

    forge, _ = forge_repo
    commit_and_push(forge, tmp_path / "seed", BRANCH, {"a.txt": "a\n"}, start="advisor")
    number = forge.create_pull("t", "b", BRANCH, "advisor", ["senpai"]).number
    commit_and_push(forge, tmp_path / "seed", BRANCH, {"a.txt": "b\n"})  # a sha pair no read has seen yet
    real, failed = GitRepos._git, []

    def flaky(self, path, *args, **kw):
        if args[0] == "merge-base" and "--is-ancestor" not in args and not failed:
            failed.append(args)  # once: the next request runs git again
            return subprocess.CompletedProcess(["git", *args], 128, b"", b"fatal: killed")
        return real(self, path, *args, **kw)

    monkeypatch.setattr(GitRepos, "_git", flaky)
    first, again = api.get(f"/pulls/{number}/files"), api.get(f"/pulls/{number}/files")
    assert failed and [f["filename"] for f in again.json()] == ["a.txt"]  # not the first read's answer, remembered
    assert api.get(f"/pulls/{number}").json()["changed_files"] == 1
    assert first.status_code >= 500  # and a failed git is an error, never a 200 with every file as changed


def test_a_diff_of_many_files_is_read_again_not_remembered(tmp_path):
    """The memo keeps answers of a few KB: a pushed commit changing more than MEMO_FILES files is
    diffed again on each read (4096 remembered diffs of 100,000 files each would be gigabytes)."""
    repos = GitRepos(tmp_path / "git")
    bare = repos.init("o", "r", readme="r\n")
    work = tmp_path / "work"
    run_git(tmp_path, "clone", "-q", str(bare), str(work))
    base = run_git(work, "rev-parse", "HEAD")
    for i in range(MEMO_FILES + 1):
        (work / f"f{i}.txt").write_text(f"{i}\n")
    run_git(work, "add", "-A")
    run_git(work, "commit", "-q", "-m", "many")
    run_git(work, "push", "-q", "origin", "HEAD:refs/heads/many")
    head = run_git(work, "rev-parse", "HEAD")
    first = repos.changed_files(bare, base, head)
    assert len(first) == MEMO_FILES + 1 and repos.changed_files(bare, base, head) == first
    assert repos.count_commits(bare, base, head) == 1
    assert all(not isinstance(v, tuple) or len(v) <= MEMO_FILES for v in repos._memo.values()) and repos._memo
