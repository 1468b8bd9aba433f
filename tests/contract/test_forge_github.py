"""Contract of the Forge port: one suite run against the real PyGithub adapter over the real local
forge (HTTP to a live server, pushes with real git; nothing mocked) and against the in-memory fake
(tests/fake_forge.py) that unit tests use instead.  Tests of what only HTTP has (request counts,
tokens, repository creation) run against the adapter alone.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fake_repo import FakeRepo
from forge_fixtures import (
    OWNER,
    TOKEN,
    add_collaborator,
    as_user,
    clone,
    commit_and_push,
    new_repository,
    run_git,
    seed_repository,
)

from senpai.errors import FileListTruncated, Forbidden, MergeConflict, NotFound
from senpai.forge.base import IssuesPage, LabelSpec, PullsPage
from senpai.forge.github import GitHubForge
from senpai.forge.github.admin import create_repository
from senpai.forge.port import Forge

BRANCH = "senpai/alice/lr-sweep"


@dataclass
class Side:
    """One implementation of the port over a fresh repository seeded with `main` and `advisor` (the
    seed clone is tmp_path/'seed'), and what tests do beside the port."""

    forge: Forge  # the bot's, owner of the repository
    repo: str  # owner/name
    fresh: Callable[..., Forge]  # fresh(per_page=100): a new adapter of the bot, nothing cached
    as_user: Callable[..., Forge]  # as_user(login, role="read"): the port as another user
    add_collaborator: Callable[[str], None]  # write access to the repository


@pytest.fixture(params=["github", "fake"])
def side(request: pytest.FixtureRequest, tmp_path: Path) -> Side:
    if request.param == "fake":
        fake = FakeRepo(tmp_path / "fake-forge")
        seed_repository(fake.forge(), tmp_path / "seed")
        fresh = lambda per_page=100: fake.forge(per_page=per_page)  # noqa: E731
        return Side(fake.forge(), fake.repo, fresh, fake.forge, fake.add_collaborator)
    local = request.getfixturevalue("local_forge")
    forge, settings = new_repository(local.base_url, tmp_path / "seed")
    return Side(
        forge,
        settings.repo,
        lambda per_page=100: GitHubForge(settings, TOKEN, per_page=per_page),
        lambda login, role="read": as_user(local, settings, login, role),
        lambda login: add_collaborator(local.base_url, settings.repo, login),
    )


def open_pull(
    forge: Forge,
    workdir: Path,
    branch: str = BRANCH,
    files: dict | None = None,
    labels: tuple[str, ...] = ("senpai", "student:alice"),
):
    commit_and_push(forge, workdir, branch, files or {"params.yaml": "lr: 0.2\nepochs: 3\n"}, start="advisor")
    return forge.create_pull("Try lr 0.2", "hypothesis body", branch, "advisor", list(labels))


def test_adapter_satisfies_the_port(side):
    port: Forge = side.forge  # structural: the attributes and methods the port names exist
    assert port.login == OWNER
    assert port.clone_url.endswith(f"/git/{side.repo}.git")


def test_create_pull_with_labels_then_list_and_get(side, tmp_path):
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed")
    assert pr.labels == ["senpai", "student:alice"]
    assert (pr.state, pr.merged, pr.head_ref, pr.base_ref) == ("open", False, BRANCH, "advisor")
    assert pr.head_sha == forge.branch_sha(BRANCH)
    assert (pr.user, pr.author_association, pr.merge_commit_sha) == (OWNER, "OWNER", None)
    assert pr.html_url.endswith(f"/{side.repo}/pull/{pr.number}")
    assert pr.created_at.tzinfo is not None and pr.created_at <= datetime.now(UTC)

    listed = forge.list_pulls("open")
    assert [p.number for p in listed] == [pr.number]
    assert listed[0].labels == ["senpai", "student:alice"]
    got = forge.get_pull(pr.number)
    assert (got.title, got.body, got.labels) == ("Try lr 0.2", "hypothesis body", ["senpai", "student:alice"])
    assert forge.list_pulls("closed") == []


def test_listed_pulls_across_pages_equal_each_pull_read_alone(side, tmp_path):
    """list_pulls reads the pages' JSON itself (no PyGithub objects): the same PRs, merged ones too."""
    forge = side.forge
    for i in range(4):
        pr = open_pull(forge, tmp_path / "seed", f"senpai/alice/b{i}", {f"note-{i}.txt": "x\n"})
        if i == 1:
            forge.merge_pull(pr.number, "merge", pr.head_sha)
        elif i < 3:
            forge.update_pull(pr.number, state="closed")
    paged = side.fresh(per_page=3)
    listed = sorted(paged.list_pulls("all"), key=lambda p: p.number)
    assert paged.calls == 2  # two pages of three and one
    assert listed == [forge.get_pull(p.number) for p in listed] and len(listed) == 4
    assert [(p.state, p.merged) for p in listed] == [("closed", False), ("closed", True), ("closed", False), ("open", False)]
    assert listed[1].merge_commit_sha and listed[0].updated_at.tzinfo is not None
    assert [p.number for p in paged.list_pulls("open")] == [listed[3].number]
    calls = paged.calls
    assert sorted(paged.list_pulls("all"), key=lambda p: p.number) == listed  # both pages answered 304
    assert paged.calls == calls + 2
    forge.set_labels(listed[0].number, ["senpai", "status:review"])
    again = {p.number: p for p in paged.list_pulls("all")}
    assert again[listed[0].number].labels == ["senpai", "status:review"] and again[listed[2].number] == listed[2]


def test_listed_comments_follow_edits_across_pages(side, tmp_path):
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed")
    made = [forge.create_comment(pr.number, f"note {i}") for i in range(3)]  # each read from its POST's answer
    paged = side.fresh(per_page=2)
    first = paged.list_comments(pr.number)
    assert first == made
    assert paged.list_comments(pr.number) == first
    forge.create_comment(pr.number, "note 3")
    assert [c.body for c in paged.list_comments(pr.number)] == ["note 0", "note 1", "note 2", "note 3"]


def test_comments_are_listed_oldest_first(side, tmp_path):
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed")
    first = forge.create_comment(pr.number, "```senpai-evidence\nmetric: 0.9\n```")
    second = forge.create_comment(pr.number, "second")
    comments = forge.list_comments(pr.number)
    assert [c.id for c in comments] == [first.id, second.id]
    assert (comments[0].user, comments[0].author_association) == (OWNER, "OWNER")
    assert comments[0].body.startswith("```senpai-evidence")


def test_set_labels_update_body_close_and_reopen(side, tmp_path):
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed")
    forge.set_labels(pr.number, ["senpai", "status:review"])
    assert forge.get_pull(pr.number).labels == ["senpai", "status:review"]
    forge.set_labels(pr.number, [])
    assert forge.get_pull(pr.number).labels == []

    assert forge.update_pull(pr.number, body="new body").body == "new body"
    closed = forge.update_pull(pr.number, state="closed")
    assert (closed.state, closed.merged) == ("closed", False)
    assert forge.list_pulls("open") == [] and [p.number for p in forge.list_pulls("all")] == [pr.number]
    assert forge.update_pull(pr.number, state="open").state == "open"


def test_a_read_says_when_the_forge_answered_by_its_own_clock(side, tmp_path):
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed")
    forge.list_comments(pr.number)
    answered = forge.answered_at
    assert answered is not None and answered.utcoffset() == timedelta(0)
    assert abs((answered - pr.updated_at).total_seconds()) < 60  # the clock that stamped the PR


def test_close_with_labels_closes_and_relabels_in_one_request(side, tmp_path):
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed")
    forge.set_labels(pr.number, ["senpai", "status:review"])
    calls = forge.calls
    forge.close_with_labels(pr.number, ["senpai"])
    assert forge.calls - calls == 1
    closed = forge.get_pull(pr.number)
    assert (closed.state, closed.merged, closed.labels) == ("closed", False, ["senpai"])


def test_merge_makes_a_real_merge_commit(side, tmp_path):
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed", files={"params.yaml": "lr: 0.2\nepochs: 3\n", "notes.md": "n\n"})
    base_before = forge.branch_sha("advisor")
    sha = forge.merge_pull(pr.number, "merge: lr 0.2 beats the baseline", pr.head_sha)

    merged = forge.get_pull(pr.number)
    assert (merged.state, merged.merged, merged.merge_commit_sha) == ("closed", True, sha)
    assert forge.branch_sha("advisor") == sha
    assert [p.number for p in forge.list_pulls("closed") if p.merged] == [pr.number]
    fresh = clone(forge, tmp_path / "fresh", branch="advisor")
    assert (fresh / "params.yaml").read_text() == "lr: 0.2\nepochs: 3\n"
    assert (fresh / "notes.md").exists()
    assert run_git(fresh, "rev-parse", "HEAD^1", "HEAD^2").split() == [base_before, pr.head_sha]
    assert "merge: lr 0.2 beats the baseline" in run_git(fresh, "log", "-1", "--format=%B")
    assert forge.merge_pull(pr.number, "again", pr.head_sha) == sha  # replaying a merge is harmless


def test_a_merge_names_the_verified_head_so_a_later_push_does_not_land(side, tmp_path):
    """Item 15: a commit pushed between verification and merge makes the merge fail; nothing lands."""
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed", files={"params.yaml": "lr: 0.2\nepochs: 3\n"})
    verified, base = pr.head_sha, forge.branch_sha("advisor")
    late = commit_and_push(forge, tmp_path / "seed", pr.head_ref, {"params.yaml": "lr: 9.9\n"}, "unverified")
    with pytest.raises(MergeConflict):
        forge.merge_pull(pr.number, "merge what was verified", verified)
    after = forge.get_pull(pr.number)
    assert (after.state, after.merged, after.head_sha, forge.branch_sha("advisor")) == ("open", False, late, base)
    assert forge.merge_pull(pr.number, "merge the new head", late) == forge.branch_sha("advisor")


def test_merge_conflict_raises_merge_conflict(side, tmp_path):
    forge = side.forge
    work = tmp_path / "seed"
    a = open_pull(forge, work, "senpai/alice/a", {"params.yaml": "lr: 0.3\n"})
    b = open_pull(forge, work, "senpai/bob/b", {"params.yaml": "lr: 0.4\n"})
    forge.merge_pull(a.number, "first", a.head_sha)
    with pytest.raises(MergeConflict):
        forge.merge_pull(b.number, "second", b.head_sha)
    assert forge.get_pull(b.number).state == "open"


def test_pull_files_lists_both_sides_of_renames(side, tmp_path):
    forge = side.forge
    work = tmp_path / "seed"
    commit_and_push(
        forge, work, BRANCH, {"params.yaml": "lr: 0.5\nepochs: 3\n", "new.py": "x = 1\n", "README.md": None}, start="advisor"
    )
    run_git(work, "mv", "train.py", "train2.py")
    run_git(work, "commit", "-q", "-m", "rename")
    run_git(work, "push", "-q", "origin", BRANCH, env=forge.git_env())
    pr = forge.create_pull("files", "", BRANCH, "advisor", [])
    before = forge.calls
    assert sorted(forge.pull_files(pr.number)) == ["README.md", "new.py", "params.yaml", "train.py", "train2.py"]
    assert forge.calls - before == 1  # one page of files; the PR itself is read only when the list could be short


def test_pull_files_refuses_a_list_the_forge_truncates(side, tmp_path):
    """GitHub lists at most 3,000 files of a PR and says nothing; `changed_files` counts them all."""
    forge = side.forge
    work = tmp_path / "seed"
    commit_and_push(forge, work, BRANCH, {f"scratch/{i:04}.txt": f"{i}\n" for i in range(2999)}, start="advisor")
    pr = forge.create_pull("many files", "", BRANCH, "advisor", [])
    commit_and_push(forge, work, BRANCH, {"params.yaml": "lr: 0.5\n"})
    assert len(forge.pull_files(pr.number)) == 3000  # the most the forge lists: still whole
    commit_and_push(forge, work, BRANCH, {"protected.py": "x = 1\n"})
    with pytest.raises(FileListTruncated, match="changes 3001 files; the forge lists only 3000"):
        forge.pull_files(pr.number)


def test_the_updated_pulls_listing_answers_304_until_a_pull_changes(side, tmp_path):
    """The wrapper's change detector: a comment, a label and a push each move the listing."""
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed")
    first = forge.pulls_updated(None, None)
    assert first.changed and first.etag and [p.number for p in first.pulls] == [pr.number]
    assert forge.pulls_updated(None, first.etag) == PullsPage(changed=False, etag=first.etag, pulls=[])

    etag = first.etag
    for change in (
        lambda: forge.create_comment(pr.number, "a comment"),
        lambda: forge.set_labels(pr.number, ["senpai", "review"]),
        lambda: commit_and_push(forge, tmp_path / "seed", BRANCH, {"train.py": "print('v2')\n"}),
    ):
        before = forge.get_pull(pr.number)
        change()
        page = forge.pulls_updated(None, etag)
        assert page.changed and page.etag != etag and page.pulls[0].updated_at >= before.updated_at
        etag = page.etag
        assert forge.pulls_updated(None, etag).changed is False


def test_the_updated_issues_listing_answers_304_until_an_issue_changes(side, tmp_path):
    """The wrapper's steering detector: every comment changes the answer, even one in the same second
    as the last change (the listed fields are then all as they were: only the answer tells)."""
    forge = side.forge
    issue = forge.create_issue("steer", "/senpai pause", ["senpai:steer"])
    pr = open_pull(forge, tmp_path / "seed")
    forge.set_labels(pr.number, ["senpai:steer"])  # a PR is not a steering issue
    first = forge.issues_updated("senpai:steer", None)
    assert first.changed and first.etag and [i.number for i in first.issues] == [issue.number]
    assert forge.issues_updated("senpai:steer", first.etag) == IssuesPage(changed=False, etag=first.etag, issues=[])
    etag = first.etag
    for i in range(3):  # quicker than the forge's clock ticks: some share a second
        forge.create_comment(issue.number, f"message {i}")
        page = forge.issues_updated("senpai:steer", etag)
        assert page.changed and page.etag != etag
        etag = page.etag


def test_single_reads_are_conditional(side, tmp_path):
    """A PR, a branch and a comment thread read again unchanged cost a 304 each (free on GitHub)."""
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed")
    reads = (lambda: forge.get_pull(pr.number), lambda: forge.branch_sha(BRANCH), lambda: forge.list_comments(pr.number))
    first = [read() for read in reads]
    free = forge.not_modified
    assert [read() for read in reads] == first and forge.not_modified == free + 3
    forge.create_comment(pr.number, "news")  # within the same second, too: the PR is read again
    assert forge.get_pull(pr.number).updated_at >= first[0].updated_at and forge.not_modified == free + 3


def test_after_revalidate_each_read_is_sent_once_without_its_etag(side, tmp_path):
    """The wrapper's full refresh: no cached page answers for it (a stuck 304 cannot fool it)."""
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed")
    reads = (lambda: forge.get_pull(pr.number), lambda: forge.branch_sha(BRANCH), lambda: forge.list_comments(pr.number))
    first = [read() for read in reads]
    forge.revalidate()
    free = forge.not_modified
    assert [read() for read in reads] == first and forge.not_modified == free  # three 200s
    assert [read() for read in reads] == first and forge.not_modified == free + 3  # conditional again


def test_update_issue_replaces_the_body(side):
    issue = side.forge.create_issue("lease", "before", ["senpai:steer"])
    side.forge.update_issue(issue.number, "after")
    (listed,) = [i for i in side.forge.list_issues("senpai:steer") if i.number == issue.number]
    assert listed.body == "after" and listed.user == side.forge.login


def test_missing_objects_raise_not_found(side):
    forge = side.forge
    for call in (
        lambda: forge.get_pull(999),
        lambda: forge.branch_sha("no-such-branch"),
        lambda: forge.list_comments(999),
        lambda: forge.set_labels(999, ["x"]),
    ):
        with pytest.raises(NotFound):
            call()


def test_calls_are_counted(forge_repo, tmp_path):
    forge, settings = forge_repo
    fresh = GitHubForge(settings, TOKEN)
    commit_and_push(fresh, tmp_path / "seed", BRANCH, {"params.yaml": "lr: 0.7\n"}, start="advisor")
    assert fresh.calls == 1  # GET /repos/{o}/{r} for clone_url (only needed because a token is set)
    pr = fresh.create_pull("t", "b", BRANCH, "advisor", ["senpai"])
    assert fresh.calls == 3  # POST pulls + POST labels
    fresh.list_pulls("all")
    fresh.get_pull(pr.number)
    fresh.list_comments(pr.number)
    assert fresh.calls == 7  # one request each (and GET /user once: the bot's own comments keep their bodies)
    etag = fresh.pulls_updated(None, None).etag
    fresh.pulls_updated(None, etag)
    assert fresh.calls == 9


def test_non_owner_is_not_trusted_until_added_as_collaborator(side, tmp_path):
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed")
    mallory = side.as_user("mallory")
    assert mallory.login == "mallory"
    comment = mallory.create_comment(pr.number, "merge everything")
    assert (comment.user, comment.author_association) == ("mallory", "NONE")
    for write in (
        lambda: mallory.set_labels(pr.number, ["status:review"]),
        lambda: mallory.merge_pull(pr.number, "m", pr.head_sha),
    ):
        with pytest.raises(Forbidden):
            write()
    assert mallory.create_issue("idea", "bigger batches?", ["senpai:steer"]).labels == []  # dropped, as GitHub does
    side.add_collaborator("mallory")
    assert mallory.list_comments(pr.number)[0].author_association == "COLLABORATOR"


def test_author_association_follows_github(side, tmp_path):
    """OWNER, COLLABORATOR (write access), CONTRIBUTOR (authored a merged PR), else NONE."""
    forge = side.forge
    issue = forge.create_issue("steer", "hello", ["senpai:steer"]).number
    side.add_collaborator("alice")
    carol = side.as_user("carol")
    commit_and_push(forge, tmp_path / "seed", "carol-fix", {"README.md": "fix\n"}, start="advisor")
    pr = carol.create_pull("fix", "", "carol-fix", "advisor", [])
    for login in ("alice", "carol", "mallory"):
        side.as_user(login).create_comment(issue, f"hi from {login}")
    forge.merge_pull(pr.number, "merge carol's fix", pr.head_sha)
    carol.create_comment(issue, "merged now")
    assoc = [(c.user, c.author_association) for c in forge.list_comments(issue)]
    assert assoc == [("alice", "COLLABORATOR"), ("carol", "CONTRIBUTOR"), ("mallory", "NONE"), ("carol", "CONTRIBUTOR")]
    assert forge.list_issues("senpai:steer")[0].author_association == "OWNER"


def test_an_org_member_is_member_whatever_their_permission(side):
    """MEMBER is GitHub's association for any member of the owning organisation: it says nothing of
    write access (`permission` does)."""
    issue = side.forge.create_issue("steer", "hello", ["senpai:steer"]).number
    side.as_user("mona", "member").create_comment(issue, "read-only member")
    side.as_user("tess", "member").create_comment(issue, "member with write")
    side.add_collaborator("tess")
    assoc = [(c.user, c.author_association) for c in side.forge.list_comments(issue)]
    assert assoc == [("mona", "MEMBER"), ("tess", "MEMBER")]
    assert (side.forge.permission("mona"), side.forge.permission("tess")) == ("read", "write")


def test_permission_is_the_base_role_read_conditionally(side):
    forge = side.forge
    side.as_user("rita", "read").create_issue("hi", "", [])
    side.as_user("carl", "collaborator").create_issue("hi", "", [])
    side.as_user("alice", "read").create_issue("hi", "", [])
    side.add_collaborator("alice")
    roles = {login: forge.permission(login) for login in (OWNER, "carl", "alice", "rita")}
    assert roles == {OWNER: "admin", "carl": "write", "alice": "write", "rita": "read"}
    free = forge.not_modified
    assert forge.permission("alice") == "write" and forge.not_modified == free + 1  # a 304: free on GitHub
    with pytest.raises(NotFound):
        forge.permission("nobody-at-all")


def test_only_the_bodies_of_authors_who_may_steer_are_kept(side, tmp_path):
    """The bot, forge.trusted (OWNER, COLLABORATOR) and MEMBER (who may write) keep their bodies; an
    outsider's or a contributor's comment comes without one, and no adapter cache holds it."""
    forge = side.forge
    issue = forge.create_issue("steer", "hello", ["senpai:steer"]).number
    side.add_collaborator("alice")
    forge.create_comment(issue, "the bot's record")
    side.as_user("alice").create_comment(issue, "alice: /senpai pause")
    side.as_user("mona", "member").create_comment(issue, "mona: /senpai pause")
    side.as_user("mallory").create_comment(issue, "FLOOD " * 1000)
    for reader in (forge, side.fresh()):
        comments = reader.list_comments(issue)
        assert [(c.user, c.body[:6], c.withheld) for c in comments] == [
            (OWNER, "the bo", False),
            ("alice", "alice:", False),
            ("mona", "mona: ", False),
            ("mallory", "", True),
        ]
        assert "FLOOD" not in reader.memo([issue]).model_dump_json()


def test_read_file_at_a_ref(side, tmp_path):
    forge = side.forge
    assert forge.read_file("params.yaml", "advisor") == "lr: 0.1\nepochs: 3\n"
    sha = commit_and_push(forge, tmp_path / "seed", "advisor", {"params.yaml": "lr: 0.3\n"})
    assert forge.read_file("params.yaml", sha) == "lr: 0.3\n"
    assert forge.read_file("params.yaml", "main") == "lr: 0.1\nepochs: 3\n"
    assert forge.commit_parents(sha) == [forge.branch_sha("main")]
    for path, ref in [("nope.txt", "advisor"), ("params.yaml", "no-such-branch"), (".", "advisor")]:
        with pytest.raises(NotFound):
            forge.read_file(path, ref)


def test_a_recalled_memo_makes_the_first_reads_conditional(side, tmp_path):
    """What a wrapper hands its jobs: a job's first read of a branch and of a thread costs a 304 each."""
    forge = side.forge
    pr = open_pull(forge, tmp_path / "seed")
    forge.create_comment(pr.number, "evidence")
    sha, comments = forge.branch_sha(BRANCH), forge.list_comments(pr.number)
    memo = forge.memo([pr.number])
    assert memo.branches[BRANCH][1] == sha and memo.comments[pr.number][1] == comments
    job = side.fresh()
    job.recall(memo)
    assert (job.branch_sha(BRANCH), job.list_comments(pr.number), job.not_modified) == (sha, comments, 2)
    forge.create_comment(pr.number, "news")
    assert len(job.list_comments(pr.number)) == 2 and job.not_modified == 2


def test_access_states_the_tokens_rights(side):
    assert side.forge.access().model_dump(exclude={"scopes"}) == {"login": OWNER, "push": True, "admin": True}
    outsider = side.as_user("mallory").access()
    assert (outsider.login, outsider.push, outsider.admin) == ("mallory", False, False)


def test_labels_are_created_once_with_their_colour_and_description(side, tmp_path):
    specs = {"senpai": LabelSpec(color="5319e7", description="An experiment"), "status:merged": LabelSpec(color="6f42c1")}
    assert side.forge.ensure_labels(specs) == list(specs)
    calls = side.forge.calls
    assert side.forge.ensure_labels({"senpai": LabelSpec(color="000000", description="restyled?")}) == []  # left alone
    assert side.forge.calls - calls == 1  # one listing: nothing to create
    listed = side.forge.list_labels()
    assert {name: listed[name] for name in specs} == specs
    open_pull(side.forge, tmp_path / "seed", labels=("by-hand",))  # a label a PR names is made as GitHub does
    assert side.forge.list_labels()["by-hand"] == LabelSpec(color="ededed")


def test_list_issues_excludes_pulls_and_filters_state(side, tmp_path):
    forge = side.forge
    issue = forge.create_issue("Try dropout", "please", ["senpai:steer", "student:alice"])
    assert (issue.state, issue.labels, issue.author_association) == ("open", ["senpai:steer", "student:alice"], "OWNER")
    open_pull(forge, tmp_path / "seed", labels=("senpai:steer",))
    forge.create_issue("Other", "", ["unrelated"])
    assert [i.number for i in forge.list_issues("senpai:steer")] == [issue.number]
    assert forge.list_issues("senpai:steer", state="closed") == []


def test_create_repository_is_idempotent(local_forge, forge_repo):
    _, settings = forge_repo
    name = settings.repo.split("/")[1]
    assert create_repository(settings, TOKEN, name) == create_repository(settings, TOKEN, name)


def test_git_env_keeps_the_token_out_of_urls_and_argv(forge_repo):
    forge, _ = forge_repo
    env = forge.git_env()
    assert TOKEN not in forge.clone_url and TOKEN not in json.dumps(env)
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_CONFIG_KEY_0"].startswith(f"http.{forge.settings.base_url}/")
    assert env["GIT_CONFIG_VALUE_0"].startswith("Authorization: Basic ")
