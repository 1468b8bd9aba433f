"""A decided PR's hypothesis record, gone from its body or not the one it was decided on, is a
consistency flag (`consistency.record_flags`, counted by `check`)."""

from forge_fixtures import experiment, hypothesis, merged

from senpai.ledger.consistency import check, record_flags
from senpai.ledger.records import digest


def _decided_on(e, h):
    return e.model_copy(update={"decisions": [d.model_copy(update={"hypothesis": digest(h)}) for d in e.decisions]})


def test_a_merge_decided_on_its_record_is_consistent():
    e = merged(1, 0.9, "base")
    e = _decided_on(e, e.hypothesis)
    assert record_flags(e) == [] and check([e], "merge-1").ok


def test_a_record_gone_from_a_decided_pr_is_flagged_even_without_a_digest():
    e = merged(1, 0.9, "base")
    gone = e.model_copy(update={"hypothesis": None})
    (flag,) = record_flags(gone)
    assert "hypothesis record gone" in flag and flag in check([gone], "merge-1").prs[1]


def test_a_record_changed_after_the_decision_is_flagged_and_an_open_pr_is_not():
    e = merged(1, 0.9, "base")
    e = _decided_on(e, e.hypothesis)
    changed = e.model_copy(update={"hypothesis": e.hypothesis.model_copy(update={"params": {"lr": 0.5}})})
    (flag,) = record_flags(changed)
    assert "changed after the decision" in flag and digest(e.hypothesis) in flag
    assert record_flags(experiment(3, "wip")) == []  # not decided: nothing to compare yet
    assert record_flags(experiment(3, "closed", hypothesis=hypothesis("base", "h-3"))) == []  # no digest recorded
