"""The search advisor's review of evidence, by the cause of what went wrong, over HTTP against the
local forge with real git: a head someone else pushed while a student measured another is run again
(and blocked once it keeps moving); a verified PR whose re-apply failed is blocked, never closed."""

from pathlib import Path

import yaml
from forge_fixtures import clone, commit_and_push, hypothesis, target_yaml
from test_merge_refusals import CFG, _win

from senpai.agents.review import REAPPLY
from senpai.agents.search.advisor import advisor_turn
from senpai.config.harness import TrackerSettings
from senpai.config.target import TargetConfig
from senpai.config.time_limits import HEAD_MOVES
from senpai.job.context import TurnContext
from senpai.ledger import transitions
from senpai.ledger.blocks import Decision, Evidence
from senpai.ledger.events import pr_event
from senpai.ledger.labels import ExperimentState, with_status
from senpai.ledger.table import LedgerReader
from senpai.tracker.wandb import WandbTracker
from senpai.wrapper.policy import evidence_version

BRANCH = "senpai/ada/h-moved"


def _review(forge, pr: int, tmp_path: Path) -> list[str]:
    """One search advisor turn over PR `pr`'s `review` event, as the wrapper would hand it."""
    ledger = LedgerReader(forge)
    exp = ledger.experiment(forge.get_pull(pr))
    target = TargetConfig.model_validate(yaml.safe_load(forge.read_file("senpai.yaml", "advisor")))
    tracker = WandbTracker(TrackerSettings(dir=str(tmp_path / "wandb"), mode="offline"))
    ctx = TurnContext(CFG, forge, tracker, ledger, target, None, tmp_path, None)
    return advisor_turn(ctx, [pr_event("review", pr, exp.head, evidence_version(exp))])


def _measured(forge, pr: int, attempt: int, failure: str | None = None) -> str:
    """The student's evidence for attempt `attempt`, measured at the PR's head now; the PR goes to review."""
    pull = forge.get_pull(pr)
    h = LedgerReader(forge).experiment(pull).hypothesis
    ev = Evidence.of(
        h, metric="acc", value=None if failure else 0.9, failure=failure, interpretation="i", pr=pr, attempt=attempt,
        student="ada", head=pull.head_sha, command="python train.py",
    )  # fmt: skip
    transitions.submit_evidence(forge, pull, ev)
    return pull.head_sha


def _experiment(forge, tmp_path: Path) -> tuple[int, Path]:
    work = clone(forge, tmp_path / "work", "advisor")
    base = commit_and_push(
        forge, work, "advisor", {"senpai.yaml": target_yaml({"rule": "welch"}), "params.json": '{"width": 32}\n'}
    )
    commit_and_push(forge, work, BRANCH, {"params.json": '{"width": 64}\n'}, start="advisor")
    pr = transitions.open_experiment(forge, hypothesis(base, "h-moved", {"width": 64}), BRANCH, "advisor", "moved").number
    return pr, work


def test_a_head_a_human_moved_during_training_is_run_again_then_blocked_when_it_keeps_moving(forge_repo, tmp_path):
    forge, _ = forge_repo
    pr, work = _experiment(forge, tmp_path)
    for k in range(1, HEAD_MOVES + 2):
        measured = _measured(forge, pr, k)
        pushed = commit_and_push(forge, work, BRANCH, {"notes.md": f"a human's push {k}\n"})  # while the job trained
        lines = _review(forge, pr, tmp_path)
        exp = LedgerReader(forge).experiment(forge.get_pull(pr))
        assert exp.state != "closed", lines  # never the hypothesis's "useful failure"
        if k <= HEAD_MOVES:  # run again on the new head, and the PR says why
            assert lines == [f"#{pr}: changes requested (the head moved)"] and exp.state == "changes"
            d = exp.decisions[-1]
            assert (d.verdict, d.head) == ("changes", pushed) and f"({k} of {HEAD_MOVES})" in d.reason
            assert f"{pushed[:8]} was pushed by someone other than senpai while attempt {k} measured {measured[:8]}" in d.reason
            forge.set_labels(pr, with_status(forge.get_pull(pr).labels, ExperimentState.WIP))  # the student's next attempt
    assert lines == [f"#{pr}: blocked, the head keeps moving"] and exp.state == "blocked"
    assert [d.verdict for d in exp.decisions] == ["changes"] * HEAD_MOVES
    (block,) = [c.body for c in forge.list_comments(pr) if c.user == forge.login and "keeps moving" in c.body]
    assert f"pushed to `{BRANCH}` under senpai's jobs {HEAD_MOVES + 1} times" in block


def test_a_verified_prs_failed_reapply_blocks_it_instead_of_closing_it(forge_repo, tmp_path):
    forge, _ = forge_repo
    pr, _ = _experiment(forge, tmp_path)
    head = _measured(forge, pr, 1)
    base = forge.branch_sha("advisor")
    pull = forge.get_pull(pr)
    forge.set_labels(pr, with_status(pull.labels, ExperimentState.VERIFYING))
    transitions.record_verification(forge, forge.get_pull(pr), _win(pr, head, base))
    d = Decision(pr=pr, head=head, verdict="changes", reason=REAPPLY)  # its merge conflicted with a moved base
    transitions.decide(forge, forge.get_pull(pr), LedgerReader(forge).experiment(forge.get_pull(pr)), d, None, base)
    forge.set_labels(pr, with_status(forge.get_pull(pr).labels, ExperimentState.WIP))
    _measured(forge, pr, 2, failure="train command killed after 600 s (budget or job deadline)")  # the re-apply hung

    assert _review(forge, pr, tmp_path) == [f"#{pr}: blocked, the re-apply of a verified PR failed"]
    pull = forge.get_pull(pr)
    exp = LedgerReader(forge).experiment(pull)
    assert pull.state == "open" and exp.state == "blocked" and [d.verdict for d in exp.decisions] == ["changes"]
    (block,) = [c.body for c in forge.list_comments(pr) if c.user == forge.login and "re-apply" in c.body and "Blocked" in c.body]
    assert "train command killed after 600 s" in block and "after it passed verification" in block
