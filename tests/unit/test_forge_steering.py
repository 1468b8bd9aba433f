"""The forge pieces steering relies on, against the real local forge: file contents, GitHub's
author_association rules, and the patience issue opened once for humans."""

import httpx
import pytest
from forge_fixtures import commit_and_push
from test_policy import CFG, exp

from senpai.agents.search.advisor import answer_free_text
from senpai.errors import NotFound
from senpai.forge.github import GitHubForge
from senpai.ledger.blocks import Decision
from senpai.ledger.events import Message
from senpai.ledger.inbox import version
from senpai.ledger.labels import ATTENTION, STEER
from senpai.ledger.steering import reply_to_human
from senpai.ledger.table import LedgerReader
from senpai.wrapper.steer import Steering


def test_read_file_at_a_ref(forge_repo, tmp_path):
    forge, _ = forge_repo
    assert forge.read_file("params.yaml", "advisor") == "lr: 0.1\nepochs: 3\n"
    sha = commit_and_push(forge, tmp_path / "seed", "advisor", {"params.yaml": "lr: 0.3\n"})
    assert forge.read_file("params.yaml", sha) == "lr: 0.3\n"
    assert forge.read_file("params.yaml", "main") == "lr: 0.1\nepochs: 3\n"
    for path, ref in [("nope.txt", "advisor"), ("params.yaml", "no-such-branch"), (".", "advisor")]:
        with pytest.raises(NotFound):
            forge.read_file(path, ref)


def test_author_association_follows_github(forge_repo, local_forge, tmp_path):
    forge, settings = forge_repo
    issue = forge.create_issue("steer", "hello", [STEER]).number
    httpx.put(f"{local_forge.base_url}/repos/{settings.repo}/collaborators/alice").raise_for_status()
    carol = GitHubForge(settings, "carol:x")
    commit_and_push(forge, tmp_path / "seed", "carol-fix", {"README.md": "fix\n"}, start="advisor")
    pr = carol.create_pull("fix", "", "carol-fix", "advisor", [])
    for login in ("alice", "carol", "mallory"):
        GitHubForge(settings, f"{login}:x").create_comment(issue, f"hi from {login}")
    forge.merge_pull(pr.number, "merge carol's fix")
    GitHubForge(settings, "carol:x").create_comment(issue, "merged now")
    assoc = [(c.user, c.author_association) for c in forge.list_comments(issue)]
    assert assoc == [("alice", "COLLABORATOR"), ("carol", "CONTRIBUTOR"), ("mallory", "NONE"), ("carol", "CONTRIBUTOR")]
    assert forge.list_issues(STEER)[0].author_association == "OWNER"
    assert httpx.get(f"{local_forge.base_url}/repos/{settings.repo}/collaborators/carol").status_code == 404


def test_patience_opens_one_issue_for_humans(forge_repo, tmp_path):
    forge, _ = forge_repo
    cfg = CFG.model_copy(update={"patience": 2})
    closed = []
    for pr in (1, 2):
        e = exp(pr, "closed")
        d = Decision(pr=pr, head=e.head, verdict="close", reason=f"no improvement {pr}")
        closed.append(e.model_copy(update={"decisions": [d]}))
    for _ in range(2):  # a second wrapper (restart, no cache) finds the issue and opens none
        steering = Steering(cfg, forge, fleet=None, ledger=LedgerReader(forge))
        steering.read()
        line = steering.patience_issue(closed)
        assert steering.patience_issue(closed) is None
    (issue,) = forge.list_issues(STEER, "all")
    assert set(issue.labels) == {STEER, ATTENTION} and line is None
    assert "/senpai resume" in issue.body and "no improvement 1" in issue.body and "no improvement 2" in issue.body
    assert issue.user == forge.login  # the bot's own issue body is never read as a message
    steering.read()
    assert steering.view.commands == [] and steering.view.free_text == []


def test_one_ack_and_one_answer_per_message_version(forge_repo):
    forge, settings = forge_repo
    alice = GitHubForge(settings, "alice:x")
    issue = alice.create_issue("steer", "please try deeper nets", [STEER]).number
    body = "please try deeper nets"
    m = Message(number=issue, comment_id=None, author="alice", association="OWNER", body=body, version=version(body))
    assert reply_to_human(forge, m, "Delivered to the advisor (job x).", kind="ack") is not None
    assert reply_to_human(forge, m, "Delivered again?", kind="ack") is None
    assert answer_free_text(forge, m).endswith("answered @alice")
    assert answer_free_text(forge, m).endswith("(already answered)")
    edited = m.model_copy(update={"body": body + "!", "version": version(body + "!")})
    assert reply_to_human(forge, edited, "Delivered to the advisor (job y).", kind="ack") is not None
    bodies = [c.body for c in forge.list_comments(issue)]
    assert len(bodies) == 3 and "cannot act on free text" in bodies[1] and "/senpai try key=value" in bodies[1]
