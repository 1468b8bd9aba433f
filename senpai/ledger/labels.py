"""Every label senpai reads or writes, in one place (no scattered string literals)."""

from enum import StrEnum

SENPAI = "senpai"
STEER = "senpai:steer"  # issues humans steer through (slash commands, free text)
ATTENTION = "senpai:attention"  # issues senpai opened for humans (patience); also labelled STEER
STUDENT_PREFIX = "student:"


class Status(StrEnum):
    """Experiment state labels. Merged/closed are PR states, not labels."""

    WIP = "status:wip"
    REVIEW = "status:review"
    VERIFYING = "status:verifying"
    CHANGES = "status:changes"
    BLOCKED = "status:blocked"


def student_label(name: str) -> str:
    return f"{STUDENT_PREFIX}{name}"


def student_of(labels: list[str]) -> str | None:
    """The student named by a `student:<name>` label, or None."""
    for label in labels:
        if label.startswith(STUDENT_PREFIX):
            return label[len(STUDENT_PREFIX) :]
    return None


def status_of(labels: list[str]) -> Status | None:
    """The status label on a PR; `blocked` wins if several are present (a human must look)."""
    found = [Status(label) for label in labels if label in Status._value2member_map_]
    if Status.BLOCKED in found:
        return Status.BLOCKED
    return found[0] if found else None


def with_status(labels: list[str], status: Status | None) -> list[str]:
    """`labels` with every status label replaced by `status` (None: just removed), order kept."""
    kept = [label for label in labels if label not in Status._value2member_map_]
    return kept + ([status.value] if status else [])


def with_student(labels: list[str], name: str) -> list[str]:
    """`labels` with exactly one student label, `student:<name>` (others removed, order kept)."""
    kept = [label for label in labels if not label.startswith(STUDENT_PREFIX)]
    return kept + [student_label(name)]
