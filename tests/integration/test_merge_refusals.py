"""A refused merge is told by its cause, over HTTP against the local forge and real git.

A base whose protection asks for an approving review (`senpai forge serve --require-approvals 1`)
refuses the merge of a verified PR the way GitHub does (405, `mergeable_state: blocked`): that is
MergeBlocked, not a conflict. The advisor then blocks the PR and opens one issue for humans; it
neither re-applies nor retrains it. A real conflict stays a MergeConflict (re-applied on the base).
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml
from forge_fixtures import commit_and_push, hypothesis, new_repository, register_bot, target_yaml, user_token

from senpai.agents import review
from senpai.config.harness import HarnessConfig, TrackerSettings
from senpai.config.target import TargetConfig
from senpai.errors import MergeBlocked, MergeConflict
from senpai.forge.localforge.server import LocalForgeServer
from senpai.job.context import TurnContext
from senpai.ledger import transitions
from senpai.ledger.baseline import Baseline
from senpai.ledger.blocks import Verification
from senpai.ledger.labels import SENPAI, ExperimentState, with_status
from senpai.ledger.table import LedgerReader
from senpai.tracker.wandb import WandbTracker

CFG = HarnessConfig.model_validate(
    {
        "forge": {"repo": "o/r"},
        "tracker": {"dir": "/tmp/w"},
        "fleet": {"dir": "/tmp/f"},
        "state_dir": "/tmp/s",
        "students": [{"name": "ada"}],
    }
)
REFUSAL = "At least 1 approving review is required by reviewers with write access."


@pytest.fixture(scope="module")
def protected_forge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalForgeServer]:
    """A local forge whose protected branches (main, advisor) need one approving review to merge into."""
    server = register_bot(LocalForgeServer(tmp_path_factory.mktemp("protected"), required_approvals=1)).start()
    try:
        yield server
    finally:
        server.stop()


def _win(pr: int, head: str, base: str) -> Verification:
    return Verification(
        pr=pr, candidate=head, baseline=base, metric="acc", direction="maximize", seeds=[0, 1, 2],
        candidate_values=[0.95, 0.951, 0.952], baseline_values=[0.80, 0.81, 0.799], candidate_mean=0.951,
        baseline_mean=0.803, improvement=0.148, noise_floor=None, rule="welch", statistic=40.0, p_value=1e-5,
        candidate_seconds=[10.0] * 3, baseline_seconds=[10.0] * 3, compute_ratio=1.0, passed=True, reason="acc better",
    )  # fmt: skip


def _verified_pr(forge, work: Path, branch: str, width: int) -> int:
    """A PR in verifying whose head passed verification against the base."""
    base = commit_and_push(
        forge, work, "advisor", {"senpai.yaml": target_yaml({"rule": "welch"}), "params.json": '{"width": 32}\n'}
    )
    head = commit_and_push(forge, work, branch, {"params.json": f'{{"width": {width}}}\n'}, start="advisor")
    hid = branch.rsplit("/", 1)[1]
    pull = transitions.open_experiment(forge, hypothesis(base, hid, {"width": width}), branch, "advisor", hid)
    forge.set_labels(pull.number, with_status(pull.labels, ExperimentState.VERIFYING))
    transitions.record_verification(forge, forge.get_pull(pull.number), _win(pull.number, head, base))
    return pull.number


def _advise(forge, pr: int, tmp_path: Path) -> str:
    """The advisor's merge path for a verified PR (`review.merge_verified`, both runtimes use it)."""
    target = TargetConfig.model_validate(yaml.safe_load(forge.read_file("senpai.yaml", "advisor")))
    ledger = LedgerReader(forge)
    tracker = WandbTracker(TrackerSettings(dir=str(tmp_path / "wandb"), mode="offline"))
    ctx = TurnContext(CFG, forge, tracker, ledger, target, None, tmp_path, None)
    pull, base = forge.get_pull(pr), forge.branch_sha("advisor")
    exp = ledger.experiment(pull)
    baseline = Baseline(commit=base, pr=None, run_id=None, value=None, params=None)
    return review.merge_verified(ctx, pull, exp, baseline, exp.verification_for(pull.head_sha, base), "verified")


def _api(server: LocalForgeServer, method: str, path: str, login: str, role: str = "read", **body) -> requests.Response:
    """One REST request as `login` (the bot: `senpai`), straight over HTTP."""
    headers = {"Authorization": f"token {user_token(server, login, role)}"}
    return requests.request(method, f"{server.url}{path}", json=body or None, headers=headers, timeout=30)


def test_a_protected_base_refuses_a_merge_until_a_writer_approves(protected_forge, tmp_path):
    forge, settings = new_repository(protected_forge.url, tmp_path / "seed")
    pr = _verified_pr(forge, tmp_path / "seed", "senpai/ada/h-a", 64)
    head, base = forge.get_pull(pr).head_sha, forge.branch_sha("advisor")
    with pytest.raises(MergeBlocked, match=f"HTTP 405 {REFUSAL} \\(mergeable_state blocked\\)"):
        forge.merge_pull(pr, "merge", head)
    assert forge.branch_sha("advisor") == base and forge.get_pull(pr).state == "open"
    raw = _api(protected_forge, "GET", f"/repos/{settings.repo}/pulls/{pr}", "senpai").json()
    assert (raw["mergeable"], raw["mergeable_state"]) == (True, "blocked")

    # the bot cannot approve its own PR, and a reader's approval does not count; a writer's does
    reviews = f"/repos/{settings.repo}/pulls/{pr}/reviews"
    assert _api(protected_forge, "POST", reviews, "senpai", event="APPROVE").status_code == 422
    for login, role in (("rita", "read"), ("carol", "collaborator")):
        answer = _api(protected_forge, "POST", reviews, login, role, event="APPROVE", body="ok").json()
        assert (answer["state"], answer["commit_id"], answer["user"]["login"]) == ("APPROVED", head, login)
        if role == "read":
            with pytest.raises(MergeBlocked):
                forge.merge_pull(pr, "merge", head)
    assert [r["user"]["login"] for r in _api(protected_forge, "GET", reviews, "senpai").json()] == ["rita", "carol"]
    merged = forge.merge_pull(pr, "merge", head)
    assert forge.branch_sha("advisor") == merged and forge.get_pull(pr).merged


def test_a_real_conflict_stays_a_conflict_on_a_protected_base(protected_forge, tmp_path):
    forge, settings = new_repository(protected_forge.url, tmp_path / "seed")
    pr = _verified_pr(forge, tmp_path / "seed", "senpai/ada/h-b", 64)
    commit_and_push(forge, tmp_path / "seed", "advisor", {"params.json": '{"width": 16}\n'})  # the base moves: a conflict
    _api(protected_forge, "POST", f"/repos/{settings.repo}/pulls/{pr}/reviews", "carol", "collaborator", event="APPROVE")
    with pytest.raises(MergeConflict):
        forge.merge_pull(pr, "merge", forge.get_pull(pr).head_sha)


def test_the_advisor_blocks_a_verified_pr_the_base_refuses_with_one_issue(protected_forge, tmp_path):
    forge, _ = new_repository(protected_forge.url, tmp_path / "seed")
    pr = _verified_pr(forge, tmp_path / "seed", "senpai/ada/h-c", 64)
    assert _advise(forge, pr, tmp_path).startswith(f"#{pr}: blocked, the base refuses the merge (issue #")
    pull = forge.get_pull(pr)
    assert pull.state == "open" and ExperimentState.BLOCKED.label in pull.labels
    # a turn that died between the issue and the block is run again: it blocks, and opens no second issue
    forge.set_labels(pr, with_status(pull.labels, ExperimentState.VERIFYING))
    assert _advise(forge, pr, tmp_path).startswith(f"#{pr}: blocked")
    exp = LedgerReader(forge).experiment(forge.get_pull(pr))
    assert exp.decisions == [] and exp.state == "blocked"  # no `changes`: nothing retrains or re-applies it
    (comment,) = [c.body for c in forge.list_comments(pr) if c.user == forge.login and "refuses" in c.body]
    (issue,) = [i for i in forge.list_issues(SENPAI, "all") if i.user == forge.login]
    assert issue.title == f"senpai: the base refuses to merge #{pr}" and REFUSAL in issue.body
    assert REFUSAL in comment and f"#{issue.number}" in comment
