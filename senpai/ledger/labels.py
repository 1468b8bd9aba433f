"""Every label senpai reads or writes, and the experiment states the status labels name, in one
place (no scattered string literals)."""

from enum import StrEnum

SENPAI = "senpai"
STEER = "senpai:steer"  # issues humans steer through (slash commands, free text)
ATTENTION = "senpai:attention"  # issues senpai opened for humans (patience); also labelled STEER
STUDENT_PREFIX = "student:"


class ExperimentState(StrEnum):
    """An experiment's state (`Experiment.state`). An open PR's state is its status label
    (`status:<state>`, `label`); merged and closed are the PR's own states, never labels; an open
    senpai PR with no status label is unlabelled."""

    WIP = "wip"
    REVIEW = "review"
    VERIFYING = "verifying"
    CHANGES = "changes"
    BLOCKED = "blocked"
    MERGED = "merged"
    CLOSED = "closed"
    UNLABELLED = "unlabelled"

    @property
    def label(self) -> str:
        """The status label `status:<state>` (only the LABELLED states are ever set)."""
        return f"status:{self.value}"


LABELLED = frozenset(
    {ExperimentState.WIP, ExperimentState.REVIEW, ExperimentState.VERIFYING, ExperimentState.CHANGES, ExperimentState.BLOCKED}
)
_BY_LABEL = {s.label: s for s in LABELLED}
ASSIGNED = frozenset({ExperimentState.WIP, ExperimentState.CHANGES})  # the student works on it (or will)
DECIDED = frozenset({ExperimentState.MERGED, ExperimentState.CLOSED})


def student_label(name: str) -> str:
    return f"{STUDENT_PREFIX}{name}"


def student_of(labels: list[str]) -> str | None:
    """The student named by a `student:<name>` label, or None."""
    for label in labels:
        if label.startswith(STUDENT_PREFIX):
            return label[len(STUDENT_PREFIX) :]
    return None


def status_of(labels: list[str]) -> ExperimentState | None:
    """The state a PR's status label names; `blocked` wins if several are present (a human must look)."""
    found = [_BY_LABEL[label] for label in labels if label in _BY_LABEL]
    if ExperimentState.BLOCKED in found:
        return ExperimentState.BLOCKED
    return found[0] if found else None


def with_status(labels: list[str], status: ExperimentState | None) -> list[str]:
    """`labels` with every status label replaced by `status`'s (None: just removed), order kept."""
    kept = [label for label in labels if label not in _BY_LABEL]
    return kept + ([status.label] if status else [])


def with_student(labels: list[str], name: str) -> list[str]:
    """`labels` with exactly one student label, `student:<name>` (others removed, order kept)."""
    kept = [label for label in labels if not label.startswith(STUDENT_PREFIX)]
    return kept + [student_label(name)]
