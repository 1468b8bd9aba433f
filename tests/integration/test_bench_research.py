"""bench/research_senpai.py's ledger counts: trainings per side (reused seeds left out), verifications
refused unrun, and passes a merge did not use, read from experiments built of real blocks."""

import sys
from pathlib import Path

from forge_fixtures import experiment, merged

from senpai.ledger.blocks import Evidence, PrimaryResult, RunRef, Verification

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from research_senpai import ledger_counts, merges  # noqa: E402


def evidence(pr: int, attempt: int, trained: bool) -> Evidence:
    """A student attempt: `trained` gives it a W&B run, else it failed before training (an infra fault)."""
    runs = [RunRef(id=f"r{pr}-{attempt}", url=None, state="finished")] if trained else []
    return Evidence(
        pr=pr, attempt=attempt, student="ada", head=f"head-{pr}", command="python train.py",
        outcome="ok" if trained else "failed", runs=runs, interpretation="",
        primary=PrimaryResult(name="acc", value=None, baseline=None, delta=None),
    )  # fmt: skip


def verification(pr: int, base: str, values: list[float], passed: bool, **fields) -> Verification:
    """Seeds 0..2 of both sides measured as `values` (empty: refused before any training)."""
    return Verification(
        pr=pr, candidate=f"head-{pr}", baseline=base, metric="acc", direction="maximize", seeds=[0, 1, 2],
        candidate_values=values, baseline_values=values, candidate_mean=None, baseline_mean=None, improvement=None,
        noise_floor=None, passed=passed, reason="", **fields,
    )  # fmt: skip


def test_counts_trainings_refusals_and_discarded_passes():
    # #1 merged onto base-0: 1 student run; its verification trained its one seed on each side.
    first = merged(1, 0.9, "base-0", evidence=[evidence(1, 1, True)])
    # #2 passed against base-0, the base moved, re-verified against merge-1 reusing 2 baseline seeds,
    # then merged; its first attempt failed before training.
    stale = verification(2, "base-0", [0.9, 0.9, 0.9], True)
    fresh = verification(2, "merge-1", [0.9, 0.9, 0.9], True, baseline_reused={0: 1, 1: 1})
    second = merged(2, 0.95, "merge-1", evidence=[evidence(2, 1, False), evidence(2, 2, True)], verifications=[stale, fresh])
    # #3 touched a protected path: refused without training, then closed.
    third = experiment(3, "closed", evidence=[evidence(3, 1, True)], verifications=[verification(3, "merge-2", [], False)])
    counts = ledger_counts([first, second, third])
    assert counts == {
        "decided": 3, "merged": 2, "student_trainings": 3, "verifier_trainings": 2 + 6 + 4, "verifications": 4,
        "refused_unrun": 1, "passed_discarded": 1,
    }  # fmt: skip
    assert merges([first, second, third]) == [
        {"pr": 1, "before": "base-0", "after": "merge-1"},
        {"pr": 2, "before": "merge-1", "after": "merge-2"},
    ]
