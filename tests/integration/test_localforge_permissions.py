"""The local forge enforces permissions like GitHub, through real HTTP and real git.

Roles: the bot `senpai` owns the repositories (admin), `carol` is a collaborator (write), `mallory`
is an outsider (a token, no rights beyond opening issues and PRs and commenting), and anonymous
callers only read.  Every refusal is also checked for leaving the data unchanged.
"""

import base64
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from forge_fixtures import OWNER, TOKEN, clone, commit_and_push, run_git, user_token

from senpai.forge.github import GitHubForge

BRANCH = "senpai/ada/h1"


@pytest.fixture
def repo(forge_repo, local_forge, tmp_path):
    """A repository with PR #1 (by the bot), issue #2 (by carol) and a comment of each on issue #2."""
    forge, settings = forge_repo
    commit_and_push(forge, tmp_path / "seed", BRANCH, {"params.yaml": "lr: 0.2\n"}, start="advisor")
    forge.create_pull("h1", "hypothesis", BRANCH, "advisor", ["senpai"])
    carol = GitHubForge(settings, user_token(local_forge, "carol", "collaborator"))
    issue = carol.create_issue("steer", "/senpai pause", ["senpai:steer"]).number
    human = carol.create_comment(issue, "/senpai caps experiments=3").id
    ack = forge.create_comment(issue, "ack: experiments=3").id
    user_token(local_forge, "mallory", "read")
    return {"base": local_forge.base_url, "repo": settings.repo, "issue": issue, "human": human, "ack": ack, "forge": forge}


def call(repo: dict, method: str, path: str, who: str | None, **kwargs) -> httpx.Response:
    """`method path` (relative to the repository) as `who` (a login with a registered token, or None)."""
    headers = {"Authorization": f"token {TOKEN if who == OWNER else f'{who}:local-test-token'}"} if who else {}
    url = f"{repo['base']}/repos/{repo['repo']}{path}" if not path.startswith("/!") else f"{repo['base']}{path[2:]}"
    return httpx.request(method, url, headers=headers, timeout=30, **kwargs)


WRITES = [
    ("POST", "/issues", {"title": "t"}),
    ("PATCH", "/issues/2", {"body": "x"}),
    ("POST", "/issues/2/comments", {"body": "x"}),
    ("PATCH", "/issues/comments/{human}", {"body": "x"}),
    ("DELETE", "/issues/comments/{human}", None),
    ("POST", "/issues/1/labels", ["status:review"]),
    ("PUT", "/issues/1/labels", ["status:review"]),
    ("DELETE", "/issues/1/labels/senpai", None),
    ("POST", "/labels", {"name": "new"}),
    ("POST", "/pulls", {"title": "t", "head": BRANCH, "base": "main"}),
    ("PATCH", "/pulls/1", {"state": "closed"}),
    ("PUT", "/pulls/1/merge", {}),
    ("PUT", "/collaborators/mallory", None),
    ("POST", "/!/user/repos", {"name": "anon"}),
]


@pytest.mark.parametrize(("method", "path", "body"), WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_anonymous_writes_answer_401(repo, method, path, body):
    answer = call(repo, method, path.format(**repo), None, json=body)
    assert (answer.status_code, answer.json()["message"]) == (401, "Requires authentication")


def test_anonymous_reads_work_and_unknown_tokens_are_401(repo):
    assert call(repo, "GET", "/issues/2/comments", None).status_code == 200
    assert call(repo, "GET", "/pulls/1", None).json()["state"] == "open"
    bad = httpx.get(f"{repo['base']}/repos/{repo['repo']}", headers={"Authorization": "token senpai:guess"})
    assert (bad.status_code, bad.json()["message"]) == (401, "Bad credentials")


def _comment_body(repo: dict, key: str) -> str:
    return call(repo, "GET", f"/issues/comments/{repo[key]}", None).json()["body"]


@pytest.mark.parametrize("who", ["mallory", OWNER])
def test_a_human_comment_is_edited_or_deleted_only_by_its_author(repo, who):
    """GitHub lets admins edit others' comments; here even the owner (the bot) cannot rewrite a human's."""
    for method in ("PATCH", "DELETE"):
        answer = call(repo, method, f"/issues/comments/{repo['human']}", who, json={"body": "/senpai resume"})
        assert answer.status_code == 403, answer.text
    assert _comment_body(repo, "human") == "/senpai caps experiments=3"
    assert call(repo, "PATCH", f"/issues/comments/{repo['human']}", "carol", json={"body": "/senpai stop"}).status_code == 200
    assert _comment_body(repo, "human") == "/senpai stop"


@pytest.mark.parametrize("who", ["mallory", "carol"])
def test_the_bots_acknowledgements_cannot_be_rewritten_by_anyone_else(repo, who):
    answer = call(repo, "PATCH", f"/issues/comments/{repo['ack']}", who, json={"body": "ack: experiments=999"})
    assert answer.status_code == 403
    assert call(repo, "DELETE", f"/issues/comments/{repo['ack']}", who).status_code == 403
    assert _comment_body(repo, "ack") == "ack: experiments=3"


LABEL_TAMPERING = [
    ("POST", "/issues/1/labels", ["status:changes"]),
    ("PUT", "/issues/1/labels", []),
    ("DELETE", "/issues/1/labels", None),
    ("DELETE", "/issues/1/labels/senpai", None),
    ("PATCH", "/issues/1", {"labels": ["status:blocked"]}),
    ("POST", "/labels", {"name": "status:evil"}),
]


@pytest.mark.parametrize(("method", "path", "body"), LABEL_TAMPERING, ids=[f"{m} {p}" for m, p, _ in LABEL_TAMPERING])
def test_an_outsider_cannot_change_labels(repo, method, path, body):
    assert call(repo, method, path, "mallory", json=body).status_code == 403
    assert [label["name"] for label in call(repo, "GET", "/issues/1/labels", None).json()] == ["senpai"]


def test_an_outsiders_new_issue_loses_its_labels_as_on_github(repo):
    answer = call(repo, "POST", "/issues", "mallory", json={"title": "x", "labels": ["senpai:steer"]})
    assert answer.status_code == 201 and answer.json()["labels"] == []
    assert answer.json()["author_association"] == "NONE"


def test_an_outsider_cannot_merge_or_close_others_prs_but_a_collaborator_can_merge(repo):
    assert call(repo, "PUT", "/pulls/1/merge", "mallory", json={}).status_code == 403
    assert call(repo, "PATCH", "/pulls/1", "mallory", json={"state": "closed"}).status_code == 403
    assert call(repo, "PATCH", "/issues/2", "mallory", json={"state": "closed"}).status_code == 403
    assert call(repo, "GET", "/pulls/1", None).json()["state"] == "open"
    merged = call(repo, "PUT", "/pulls/1/merge", "carol", json={})
    assert merged.status_code == 200 and call(repo, "GET", "/pulls/1", None).json()["merged_by"]["login"] == "carol"


def test_authors_may_edit_their_own_issue_and_only_admins_add_collaborators(repo):
    own = call(repo, "POST", "/issues", "mallory", json={"title": "mine"}).json()["number"]
    assert call(repo, "PATCH", f"/issues/{own}", "mallory", json={"state": "closed"}).json()["state"] == "closed"
    assert call(repo, "PUT", "/collaborators/mallory", "mallory").status_code == 403
    assert call(repo, "PUT", "/collaborators/mallory", "carol").status_code == 403
    assert call(repo, "GET", "/collaborators/mallory", None).status_code == 404
    assert call(repo, "POST", f"/!/orgs/{OWNER}/repos", "mallory", json={"name": "squat"}).status_code == 403


def test_author_association_reflects_the_role(repo):
    comments = call(repo, "GET", "/issues/2/comments", None).json()
    assert [(c["user"]["login"], c["author_association"]) for c in comments] == [("carol", "COLLABORATOR"), (OWNER, "OWNER")]
    mine = call(repo, "POST", "/issues/2/comments", "mallory", json={"body": "hi"}).json()
    assert mine["author_association"] == "NONE"


# --------------------------------------------------------------------------- git smart HTTP


def _git(work: Path, *args: str, token: str | None) -> subprocess.CompletedProcess:
    """git in `work` sending `token` as GitHubForge does (or none); the completed process, unchecked."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    if token:
        origin = run_git(work, "remote", "get-url", "origin").split("/git/")[0]
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0=f"http.{origin}/.extraHeader")
        env["GIT_CONFIG_VALUE_0"] = f"Authorization: Basic {basic}"
    return subprocess.run(["git", *args], cwd=work, env=env, capture_output=True, text=True)


@pytest.fixture
def work(repo, forge_repo, tmp_path) -> Path:
    """An anonymous clone (anyone may clone) with one new commit on `advisor`, not pushed."""
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", forge_repo[0].clone_url, str(work)], check=True, capture_output=True)
    run_git(work, "checkout", "-q", "advisor")
    (work / "x.txt").write_text("x\n")
    run_git(work, "add", "x.txt")
    run_git(work, "commit", "-q", "-m", "direct")
    return work


def _advisor(repo: dict) -> str:
    return repo["forge"].branch_sha("advisor")


@pytest.mark.parametrize("who", [None, "mallory"])
def test_anonymous_and_outsider_pushes_are_refused(repo, work, who, local_forge):
    before = _advisor(repo)
    token = user_token(local_forge, who) if who else None
    proc = _git(work, "push", "origin", "HEAD:refs/heads/mallory-branch", token=token)
    refusal = "could not read Username" if who is None else "403"  # anonymous: a 401 challenge git cannot answer
    assert proc.returncode != 0 and refusal in proc.stderr, proc.stderr
    assert _advisor(repo) == before and call(repo, "GET", "/branches/mallory-branch", None).status_code == 404


@pytest.mark.parametrize("who", [OWNER, "carol"])
def test_the_base_branch_cannot_be_force_pushed_or_deleted_over_git(repo, work, who, local_forge):
    before = _advisor(repo)
    token = user_token(local_forge, who, "collaborator")
    forced = _git(work, "push", "--force", "origin", f"{_rewound(work, before)}:refs/heads/advisor", token=token)
    assert forced.returncode != 0 and "cannot be force-pushed" in forced.stderr, forced.stderr
    deleted = _git(work, "push", "origin", ":refs/heads/advisor", token=token)
    assert deleted.returncode != 0 and "cannot be deleted" in deleted.stderr, deleted.stderr
    assert _advisor(repo) == before


def _rewound(work: Path, tip: str) -> str:
    """A commit that is not a descendant of `tip`: the same tree as `tip` on `tip`'s parent (or a root)."""
    tree = run_git(work, "rev-parse", f"{tip}^{{tree}}")
    parents = run_git(work, "rev-list", "--parents", "-n", "1", tip).split()[1:]
    args = [a for p in parents for a in ("-p", p)]
    return run_git(work, "commit-tree", tree, *args, "-m", "rewritten")


def test_only_the_owner_pushes_to_the_base_others_merge_through_the_api(repo, work, local_forge):
    before = _advisor(repo)
    carol = _git(work, "push", "origin", "HEAD:refs/heads/advisor", token=user_token(local_forge, "carol", "collaborator"))
    assert carol.returncode != 0 and "changes only by merging a pull request" in carol.stderr, carol.stderr
    assert _advisor(repo) == before
    assert _git(work, "push", "origin", "HEAD:refs/heads/advisor", token=TOKEN).returncode == 0
    assert _advisor(repo) != before


def test_a_collaborator_may_push_and_force_push_an_unprotected_branch(repo, work, local_forge):
    token = user_token(local_forge, "carol", "collaborator")
    assert _git(work, "push", "origin", "HEAD:refs/heads/carol/x", token=token).returncode == 0
    rewound = _rewound(work, run_git(work, "rev-parse", "HEAD"))
    assert _git(work, "push", "--force", "origin", f"{rewound}:refs/heads/carol/x", token=token).returncode == 0
    assert repo["forge"].branch_sha("carol/x") == rewound


def test_a_clone_needs_no_token(repo, forge_repo, tmp_path):
    anonymous = GitHubForge(forge_repo[1], None)
    assert (clone(anonymous, tmp_path / "anon", "advisor") / "params.yaml").exists()
