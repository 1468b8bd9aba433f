"""Human approval bound to a fingerprint, through the Forge port (the fake): a merge that senpai.yaml's
`approval` names waits for a trusted `/senpai approve <fingerprint>` of exactly its (head, base,
verification); the advisor's merge path asks once, the wrapper wakes the advisor again only when the
approval arrives, and `/senpai reject <fingerprint> reason` closes the PR with the human's reason."""

from datetime import UTC, datetime

import pytest
import steering_tick
import yaml
from forge_fixtures import commit_and_push, hypothesis, target_yaml
from policy_world import CFG

from senpai.agents import review
from senpai.config.harness import TrackerSettings
from senpai.config.target import TargetConfig
from senpai.errors import ApprovalRequired
from senpai.job.context import TurnContext
from senpai.ledger import transitions
from senpai.ledger.baseline import Baseline
from senpai.ledger.blocks import ApprovalRequest, Decision, Verification
from senpai.ledger.gate import approval_reasons, fingerprint
from senpai.ledger.labels import ExperimentState, with_status
from senpai.ledger.records import read_record
from senpai.ledger.table import LedgerReader
from senpai.report.summary import row
from senpai.tracker.wandb import WandbTracker
from senpai.wrapper.policy import advisor_events
from senpai.wrapper.status import LastTick, build_status
from senpai.wrapper.world import World

TARGET = target_yaml({"rule": "welch"}, approval={"always": True})
BRANCH = "senpai/ada/h-wide"


def _win(pr: int, head: str, base: str, top: float = 0.95) -> Verification:
    """Clearly better on the holdout, at the baseline's compute."""
    return Verification(
        pr=pr, candidate=head, baseline=base, metric="acc", direction="maximize", seeds=[0, 1, 2],
        candidate_values=[top, top + 0.002, top + 0.001], baseline_values=[0.80, 0.81, 0.799], candidate_mean=top + 0.001,
        baseline_mean=0.803, improvement=top - 0.802, noise_floor=None, rule="welch", statistic=40.0, p_value=1e-5,
        candidate_seconds=[10.0, 10.0, 10.0], baseline_seconds=[10.0, 10.0, 10.0], compute_ratio=1.0,
        passed=True, reason="acc better",
    )  # fmt: skip


def _verified_pr(forge, tmp_path) -> tuple[int, str, str]:
    """A PR in verifying whose head passed verification against the base: (number, head, base)."""
    base = commit_and_push(forge, tmp_path / "seed", "advisor", {"senpai.yaml": TARGET, "params.json": '{"width": 32}\n'})
    head = commit_and_push(forge, tmp_path / "seed", BRANCH, {"params.json": '{"width": 128}\n'}, start="advisor")
    pull = transitions.open_experiment(forge, hypothesis(base, "h-wide", {"width": 128}), BRANCH, "advisor", "wider")
    forge.set_labels(pull.number, with_status(pull.labels, ExperimentState.VERIFYING))
    transitions.record_verification(forge, forge.get_pull(pull.number), _win(pull.number, head, base))
    return pull.number, head, base


def _advise(forge, pr: int, tmp_path) -> str:
    """The advisor's merge path for a verified PR (`review.merge_verified`, both runtimes use it)."""
    target = TargetConfig.model_validate(yaml.safe_load(forge.read_file("senpai.yaml", "advisor")))
    ledger = LedgerReader(forge)
    tracker = WandbTracker(TrackerSettings(dir=str(tmp_path / "wandb"), mode="offline"))  # offline: tagging writes nothing
    ctx = TurnContext(CFG, forge, tracker, ledger, target, None, tmp_path, None)
    pull, base = forge.get_pull(pr), forge.branch_sha("advisor")
    exp = ledger.experiment(pull)
    baseline = Baseline(commit=base, pr=None, run_id=None, value=None, params=None)
    return review.merge_verified(ctx, pull, exp, baseline, exp.verification_for(pull.head_sha, base), "verified")


def _merge(forge, pr: int) -> None:
    """A merge verdict straight through `transitions.decide` (the gate), as an LLM advisor's tool would."""
    pull = forge.get_pull(pr)
    exp = LedgerReader(forge).experiment(pull)
    target = TargetConfig.model_validate(yaml.safe_load(forge.read_file("senpai.yaml", "advisor")))
    d = Decision(pr=pr, head=pull.head_sha, verdict="merge", reason="verified", metric="acc")
    transitions.decide(forge, pull, exp, d, target, forge.branch_sha("advisor"), trusted=CFG.forge.trusted)


def _steer(forge) -> list[str]:
    """One wrapper refresh of the steering: apply and acknowledge the new commands."""
    done, failed = steering_tick.act(forge, CFG, steering_tick.read(forge, CFG))
    assert not failed, failed
    return done


def _bot(forge, pr: int, needle: str) -> list[str]:
    return [c.body for c in forge.list_comments(pr) if c.user == forge.login and needle in c.body]


def _advisor_event_ids(forge) -> list[str]:
    """The advisor events a wrapper tick would see now (`policy.advisor_events`)."""
    _, exps, view = steering_tick.read(forge, CFG)
    w = World(exps, forge.branch_sha("advisor"), [], datetime.now(UTC), steer=view.state)
    return [ev.id for ev in advisor_events(w, CFG) if ev.kind == "verified"]


def _current_fp(forge, pr: int) -> str:
    pull, base = forge.get_pull(pr), forge.branch_sha("advisor")
    return fingerprint(pull.head_sha, base, LedgerReader(forge).experiment(pull).verification_for(pull.head_sha, base))


def test_an_approval_required_merge_waits_for_the_fingerprint_then_merges(fake_forge, tmp_path):
    forge, fake = fake_forge
    fake.add_collaborator("alice")
    pr, head, base = _verified_pr(forge, tmp_path)
    fp = fingerprint(head, base, _win(pr, head, base))
    events = _advisor_event_ids(forge)

    # the advisor's merge waits: the PR stays verifying, and one request names the fingerprint
    assert _advise(forge, pr, tmp_path) == f"#{pr}: waiting for a human's `/senpai approve {fp}`"
    assert _advise(forge, pr, tmp_path).endswith(f"{fp}`")
    (request,) = _bot(forge, pr, "Approval needed")
    assert read_record(request) == ApprovalRequest(
        pr=pr, head=head, base=base, fingerprint=fp, reasons=["senpai.yaml asks for an approval of every merge"]
    )
    assert f"/senpai approve {fp}" in request and forge.get_pull(pr).state == "open"
    # the advisor is not woken again for it: a pass waiting for a human is not its round's pick (`rounds.held`)
    assert events and _advisor_event_ids(forge) == []

    _, exps, view = steering_tick.read(forge, CFG)
    status = build_status(CFG, exps, [], view.state, datetime.now(UTC), LastTick(at=None, source="none"), None)
    assert [(a.pr, a.fingerprint, a.approved_by) for a in status.approvals] == [(pr, fp, None)]
    assert f"`/senpai approve {fp}`" in status.markdown()
    (waiting,) = [row(e) for e in exps if e.pr == pr]
    assert waiting.reason.startswith(f"waiting for a human's `/senpai approve {fp}`")

    fake.forge("alice").create_comment(pr, f"/senpai approve {fp}")
    (done,) = _steer(forge)
    assert f"approved the merge of PR #{pr} (fingerprint `{fp}`)" in done and _steer(forge) == []
    (woken,) = _advisor_event_ids(forge)
    assert woken not in events and f"/ok{fp}" in woken  # a new event: the advisor is woken once more
    _, exps, view = steering_tick.read(forge, CFG)
    status = build_status(CFG, exps, [], view.state, datetime.now(UTC), LastTick(at=None, source="none"), None)
    assert [(a.pr, a.fingerprint, a.approved_by) for a in status.approvals] == [(pr, fp, "alice")]

    assert _advise(forge, pr, tmp_path).startswith(f"#{pr}: merged")
    assert forge.get_pull(pr).merged
    merged = LedgerReader(forge).experiment(forge.get_pull(pr))
    assert merged.decision.approval == fp and merged.pending_approval() is None
    assert row(merged).reason.endswith(f"(approved by a human: fingerprint {fp})")


def test_a_stale_fingerprint_does_not_approve_the_moved_head(fake_forge, tmp_path):
    forge, fake = fake_forge
    fake.add_collaborator("alice")
    alice = fake.forge("alice")
    pr, head, base = _verified_pr(forge, tmp_path)
    _advise(forge, pr, tmp_path)
    old = _current_fp(forge, pr)
    alice.create_comment(pr, f"/senpai approve {old}")
    _steer(forge)

    # the student pushes again and the new head is verified: the old approval names another merge
    moved = commit_and_push(forge, tmp_path / "seed", BRANCH, {"params.json": '{"width": 120}\n'})
    transitions.record_verification(forge, forge.get_pull(pr), _win(pr, moved, base, top=0.94))
    new = _current_fp(forge, pr)
    assert new != old
    with pytest.raises(ApprovalRequired, match=f"/senpai approve {new}"):
        _merge(forge, pr)
    assert _advise(forge, pr, tmp_path).endswith(f"{new}`") and len(_bot(forge, pr, "Approval needed")) == 2

    # approving the old fingerprint now is refused outright, naming the current one
    alice.create_comment(pr, f"/senpai approve {old}")
    _steer(forge)
    (refused,) = _bot(forge, pr, "Nothing was applied")
    assert f"`{old}` is not the fingerprint of PR #{pr}'s merge as it is now (the current one is `{new}`)" in refused
    assert not forge.get_pull(pr).merged


def test_an_untrusted_approval_counts_for_nothing(fake_forge, tmp_path):
    forge, fake = fake_forge
    fake.add_collaborator("alice")
    pr, head, base = _verified_pr(forge, tmp_path)
    _advise(forge, pr, tmp_path)
    fp = _current_fp(forge, pr)
    fake.forge("mallory").create_comment(pr, f"/senpai approve {fp}\nI own this repository")
    issue = fake.forge("alice").create_issue("steer", f"/senpai approve {fp}", ["senpai:steer"]).number
    _steer(forge)
    assert _bot(forge, pr, "<!-- senpai:ack:") == []
    (rejected,) = [c.body for c in forge.list_comments(issue) if c.user == forge.login]
    assert "works in a comment on the experiment PR that asks for it" in rejected
    with pytest.raises(ApprovalRequired):
        _merge(forge, pr)
    assert _advise(forge, pr, tmp_path).endswith(f"{fp}`") and not forge.get_pull(pr).merged


def test_an_approval_is_single_use(fake_forge, tmp_path):
    forge, fake = fake_forge
    fake.add_collaborator("alice")
    alice = fake.forge("alice")
    pr, head, base = _verified_pr(forge, tmp_path)
    fp = _current_fp(forge, pr)
    # an agent's decision that names the approval records nothing: only the merge it allows does
    pull = forge.get_pull(pr)
    forged = Decision(pr=pr, head=head, verdict="changes", reason="one more seed", metric="acc", approval=fp)
    transitions.decide(forge, pull, LedgerReader(forge).experiment(pull), forged, None, base)
    assert LedgerReader(forge).experiment(forge.get_pull(pr)).decision.approval is None
    forge.set_labels(pr, with_status(forge.get_pull(pr).labels, ExperimentState.VERIFYING))
    alice.create_comment(pr, f"/senpai approve {fp}")
    _steer(forge)
    _merge(forge, pr)
    assert LedgerReader(forge).experiment(forge.get_pull(pr)).decision.approval == fp

    # the same approval on the next PR approves nothing there: it names the merge that is done
    base2 = forge.branch_sha("advisor")
    branch2 = "senpai/ada/h-narrow"
    head2 = commit_and_push(forge, tmp_path / "seed", branch2, {"params.json": '{"width": 16}\n'}, start="advisor")
    pr2 = transitions.open_experiment(forge, hypothesis(base2, "h-narrow", {"width": 16}), branch2, "advisor", "narrower").number
    forge.set_labels(pr2, with_status(forge.get_pull(pr2).labels, ExperimentState.VERIFYING))
    transitions.record_verification(forge, forge.get_pull(pr2), _win(pr2, head2, base2))
    alice.create_comment(pr2, f"/senpai approve {fp}")
    _steer(forge)
    (refused,) = _bot(forge, pr2, "Nothing was applied")
    assert f"`{fp}` is not the fingerprint of PR #{pr2}'s merge" in refused
    with pytest.raises(ApprovalRequired, match=f"/senpai approve {_current_fp(forge, pr2)}"):
        _merge(forge, pr2)
    assert not forge.get_pull(pr2).merged


def test_reject_closes_the_pr_with_the_humans_reason(fake_forge, tmp_path):
    forge, fake = fake_forge
    fake.add_collaborator("alice")
    alice = fake.forge("alice")
    pr, head, base = _verified_pr(forge, tmp_path)
    _advise(forge, pr, tmp_path)
    fp = _current_fp(forge, pr)
    alice.create_comment(pr, "/senpai reject 0123456789ab wrong one")
    alice.create_comment(pr, f"/senpai reject {fp}")  # a reason is required
    _steer(forge)
    assert len(_bot(forge, pr, "Nothing was applied")) == 2 and forge.get_pull(pr).state == "open"

    alice.create_comment(pr, f"/senpai reject {fp} too good to be true: check the data split")
    (done,) = _steer(forge)
    assert "rejected by @alice: too good to be true: check the data split" in done
    pull = forge.get_pull(pr)
    assert pull.state == "closed" and not pull.merged
    d = LedgerReader(forge).experiment(pull).decision
    assert (d.verdict, d.reason) == ("close", "rejected by @alice: too good to be true: check the data split")
    assert _steer(forge) == []


def test_the_approval_rules_name_the_merges_they_cover():
    target = TargetConfig.model_validate(
        yaml.safe_load(
            target_yaml({"rule": "welch"}, approval={"outside_params": True, "improvement_over": 0.1, "paths": ["src/*"]})
        )
    )
    v = _win(1, "h" * 40, "b" * 40, top=0.85)  # improvement 0.048
    assert approval_reasons(target, ["params.json"], v) == []
    other = "the diff changes files other than params.json: `train.py`"
    assert approval_reasons(target, ["params.json", "train.py"], v) == [other]
    assert approval_reasons(target, ["params.json"], _win(1, "h" * 40, "b" * 40))[0].startswith("the verified improvement 0.148")
    assert approval_reasons(target, ["src/model.py"], v)[1] == "the diff changes paths that need an approval: `src/model.py`"
    with pytest.raises(ValueError, match="approval.sometimes"):
        TargetConfig.model_validate(yaml.safe_load(target_yaml({"rule": "welch"}, approval={"always": True, "sometimes": True})))


def test_an_approval_request_names_every_file_it_cut_and_no_file_name_becomes_a_link():
    from senpai.ledger.gate import listed

    files = [f"a{i:02}.py" for i in range(10)] + ["[Approve here](https://evil.example/approve).py", "zz/steal_tokens.py"]
    text = listed(sorted(files))
    assert text.endswith("and 2 more (see the diff)") and "`a00.py`" in text
    assert listed(["[Approve](https://evil.example).py"]) == "`[Approve](https://evil.example).py`"  # a code span: no link
    assert listed(["x`y.py"]) == "`x'y.py`"
