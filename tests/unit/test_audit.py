"""The forge audit counts what a retried write or a fault leaves behind, read through the Forge port (the fake)."""

from pathlib import Path

from audit import audit
from forge_fixtures import commit_and_push, hypothesis

from senpai.ledger import transitions
from senpai.ledger.blocks import Evidence, Hypothesis, PrimaryResult


def _hypothesis(base: str) -> Hypothesis:
    return hypothesis(base, "h-audit-1", {"lr": 0.2}, "val_accuracy", attempts=2)


def test_audit_counts_a_reposted_record_and_an_infra_closure(fake_forge, tmp_path: Path):
    forge, _ = fake_forge
    head = commit_and_push(forge, tmp_path / "seed", "senpai/ada/h-audit-1", {"params.yaml": "lr: 0.2\n"}, start="advisor")
    pr = transitions.open_experiment(forge, _hypothesis(forge.branch_sha("advisor")), "senpai/ada/h-audit-1", "advisor", "t")
    clean = audit(forge)
    assert clean.duplicates == 0 and clean.counts["not_terminal"] == 1 and clean.experiments == 1

    failed = Evidence(
        pr=pr.number,
        attempt=1,
        student="ada",
        head=head,
        command="senpai job student",
        outcome="failed",
        failure="job died: git clone failed (502)",
        primary=PrimaryResult(name="val_accuracy", value=None, baseline=None, delta=None),
        interpretation="the job died",
    )
    transitions.submit_evidence(forge, forge.get_pull(pr.number), failed)
    posted = [c for c in forge.list_comments(pr.number) if c.user == forge.login]
    forge.create_comment(pr.number, posted[-1].body)  # what a retry does after the forge applied a lost answer
    forge.update_pull(pr.number, state="closed")

    found = audit(forge)
    assert found.duplicates == 2, found.findings
    assert found.counts["duplicate_comments"] == 1 and found.counts["duplicate_evidence"] == 1
    assert found.counts["infra_attempts"] == 2 and found.counts["closed_for_infra"] == 1
    assert found.counts["lost_events"] == 1 and found.counts["not_terminal"] == 0  # closed with no decision
