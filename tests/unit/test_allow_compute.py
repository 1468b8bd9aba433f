"""`/senpai allow compute` through the Forge port (the fake): a win that trains with more compute than
senpai.yaml's tolerance is refused by the merge gate until a trusted human allows that PR; the
wrapper acknowledges the command like any other, and the gate reads the allowance from the ledger."""

import pytest
import steering_tick
import yaml
from forge_fixtures import commit_and_push, hypothesis, target_yaml
from policy_world import CFG

from senpai.config.target import TargetConfig
from senpai.errors import MergeRefused
from senpai.ledger import transitions
from senpai.ledger.blocks import Decision, Hypothesis, Verification
from senpai.ledger.inbox import pr_steer, trust_of
from senpai.ledger.labels import ExperimentState, with_status
from senpai.ledger.records import read_record
from senpai.ledger.table import LedgerReader

TARGET = target_yaml({"rule": "welch", "compute": {"tolerance": 0.25}})


def _hypothesis(base: str) -> Hypothesis:
    return hypothesis(base, "h-wide", {"width": 128})


def _slow_win(pr: int, head: str, base: str) -> Verification:
    """Clearly better on the holdout, but trained for twice the baseline's seconds."""
    return Verification(
        pr=pr, candidate=head, baseline=base, metric="acc", direction="maximize", seeds=[0, 1, 2],
        candidate_values=[0.95, 0.952, 0.951], baseline_values=[0.80, 0.81, 0.799], candidate_mean=0.951,
        baseline_mean=0.803, improvement=0.148, noise_floor=None, rule="welch", statistic=40.0, p_value=1e-5,
        candidate_seconds=[20.0, 21.0, 19.0], baseline_seconds=[10.0, 10.0, 10.0], compute_ratio=2.0,
        passed=True, reason="acc 0.951 vs 0.803: +0.148",
    )  # fmt: skip


def _apply_steering(forge) -> list[str]:
    """One wrapper refresh: read the ledger and steering, apply the unacknowledged commands."""
    done, failed = steering_tick.act(forge, CFG, steering_tick.read(forge, CFG))
    assert not failed, failed
    return done


def _merge(forge, pr: int, trusted: list[str] | None) -> None:
    """The advisor's merge verdict, through `transitions.decide` and so the merge gate."""
    pull = forge.get_pull(pr)
    exp = LedgerReader(forge).experiment(pull)
    d = Decision(pr=pr, head=pull.head_sha, verdict="merge", reason="verified", metric="acc")
    target = TargetConfig.model_validate(yaml.safe_load(forge.read_file("senpai.yaml", "advisor")))
    transitions.decide(forge, pull, exp, d, target, forge.branch_sha("advisor"), trusted=trusted)


def test_allow_compute_lets_a_slow_win_merge_only_after_a_trusted_human_says_so(fake_forge, tmp_path):
    forge, fake = fake_forge
    fake.add_collaborator("alice")
    alice, mallory = fake.forge("alice"), fake.forge("mallory")
    base = commit_and_push(forge, tmp_path / "seed", "advisor", {"senpai.yaml": TARGET, "params.json": '{"width": 32}\n'})
    head = commit_and_push(forge, tmp_path / "seed", "senpai/ada/h-wide", {"params.json": '{"width": 128}\n'}, start="advisor")
    pull = transitions.open_experiment(forge, _hypothesis(base), "senpai/ada/h-wide", "advisor", "wider")
    forge.set_labels(pull.number, with_status(pull.labels, ExperimentState.VERIFYING))
    transitions.record_verification(forge, forge.get_pull(pull.number), _slow_win(pull.number, head, base))

    with pytest.raises(MergeRefused, match=r"training seconds 20 vs 10 is x2.00.*`/senpai allow compute`"):
        _merge(forge, pull.number, CFG.forge.trusted)

    # an outsider's allowance, and a trusted one written on an issue, change nothing
    mallory.create_comment(pull.number, "/senpai allow compute\nI own this repository")
    issue = alice.create_issue("steer", "/senpai allow compute", ["senpai:steer"]).number
    _apply_steering(forge)
    (rejected,) = [c.body for c in forge.list_comments(issue) if c.user == forge.login]
    assert "Nothing was applied" in rejected and "works in a comment on the experiment PR it allows" in rejected
    assert [c for c in forge.list_comments(pull.number) if c.user == forge.login and "<!-- senpai:ack:" in c.body] == []
    with pytest.raises(MergeRefused, match="compute is not matched"):
        _merge(forge, pull.number, CFG.forge.trusted)

    # alice allows it on the PR: acknowledged once (a steer record), and the gate reads it from the ledger
    allowed = alice.create_comment(pull.number, "/senpai allow compute")
    done = _apply_steering(forge)
    assert len(done) == 1 and f"allowed PR #{pull.number} more compute" in done[0] and _apply_steering(forge) == []
    (ack,) = [c.body for c in forge.list_comments(pull.number) if c.user == forge.login and "<!-- senpai:ack:" in c.body]
    assert ack.startswith("@alice") and read_record(ack).commands[0].verb == "allow"
    comments = forge.list_comments(pull.number)
    steer = pr_steer(forge.get_pull(pull.number), comments, trust_of(forge, CFG.forge.trusted, comments))
    assert steer.compute_allowed == {pull.number: "alice"}

    # deleting the command withdraws it, as for every steering command
    fake.delete_comment(allowed.id)
    with pytest.raises(MergeRefused, match="compute is not matched"):
        _merge(forge, pull.number, CFG.forge.trusted)

    alice.create_comment(pull.number, "/senpai allow compute\nthe extra epochs are the point of this one")
    _apply_steering(forge)
    with pytest.raises(MergeRefused, match="compute is not matched"):
        _merge(forge, pull.number, None)  # a caller that names no trusted associations gets no allowance
    _merge(forge, pull.number, CFG.forge.trusted)
    assert forge.get_pull(pull.number).merged
