"""Every label senpai reads or writes, the experiment states the status labels name, and how the
labels look on the forge (`LABELS`), in one place (no scattered string literals).

`student:<name>` is a view of the hypothesis's student (else the branch's `senpai/<student>/...`):
the wrapper puts it back when a human removes or changes it (`RestoreStudent`), so a removed label
neither strands an experiment nor frees its student.  `senpai:attention` marks the issues senpai
opens for humans (also labelled `senpai:steer`, so replies reach the advisor).  `senpai preflight`
creates the missing labels (`Forge.ensure_labels`).  Job roles are `senpai.config.roles.Role`."""

from enum import StrEnum

from senpai.forge.base import LabelSpec

SENPAI = "senpai"
STEER = "senpai:steer"  # issues humans steer through (slash commands, free text)
ATTENTION = "senpai:attention"  # issues senpai opened for humans (patience); also labelled STEER
STUDENT_PREFIX = "student:"


class ExperimentState(StrEnum):
    """An experiment's state (`Experiment.state`). An open PR's state is its status label
    (`status:<state>`, `label`); an open senpai PR with no status label is unlabelled.  Merged and
    closed are the PR's own states: senpai labels a PR it merged `status:merged` and one it closed
    by a decision `status:closed` (FINAL) so a closed PR still shows how it ended, but readers take
    those two from the PR (`experiment.pr_state`), never from a label; on an open PR (a human
    reopened it) a final label names no state (`status_of`: None)."""

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
        """The status label `status:<state>` (only the LABELLED and FINAL states are ever set)."""
        return f"status:{self.value}"


LABELLED = frozenset(
    {ExperimentState.WIP, ExperimentState.REVIEW, ExperimentState.VERIFYING, ExperimentState.CHANGES, ExperimentState.BLOCKED}
)
_BY_LABEL = {s.label: s for s in LABELLED}
ASSIGNED = frozenset({ExperimentState.WIP, ExperimentState.CHANGES})  # the student works on it (or will)
DECIDED = frozenset({ExperimentState.MERGED, ExperimentState.CLOSED})
FINAL = DECIDED  # the states whose label a PR keeps once senpai merged or closed it
_STATUS_LABELS = {s.label for s in LABELLED | FINAL}

# How senpai's labels look on the forge (created by `senpai preflight`, `Forge.ensure_labels`).
LABELS: dict[str, LabelSpec] = {
    SENPAI: LabelSpec(color="5319e7", description="An experiment or issue of the senpai research harness"),
    STEER: LabelSpec(color="fbca04", description="Humans steer senpai here: /senpai commands or free text"),
    ATTENTION: LabelSpec(color="e99695", description="senpai needs a human's answer"),
    ExperimentState.WIP.label: LabelSpec(color="c5def5", description="A student is working on it"),
    ExperimentState.REVIEW.label: LabelSpec(color="0e8a16", description="Evidence posted: the advisor reviews it"),
    ExperimentState.VERIFYING.label: LabelSpec(color="1d76db", description="The verifier re-measures it before a merge"),
    ExperimentState.CHANGES.label: LabelSpec(color="d93f0b", description="The advisor asked for another attempt"),
    ExperimentState.BLOCKED.label: LabelSpec(color="b60205", description="A human must look: see the last comment"),
    ExperimentState.MERGED.label: LabelSpec(color="6f42c1", description="Verified and merged into the research base"),
    ExperimentState.CLOSED.label: LabelSpec(color="cfd3d7", description="Closed by a decision: a negative result, kept"),
}


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
    """`labels` with every status label (final ones too) replaced by `status`'s (None: just
    removed), order kept."""
    kept = [label for label in labels if label not in _STATUS_LABELS]
    return kept + ([status.label] if status else [])


def with_student(labels: list[str], name: str) -> list[str]:
    """`labels` with exactly one student label, `student:<name>` (others removed, order kept)."""
    kept = [label for label in labels if not label.startswith(STUDENT_PREFIX)]
    return kept + [student_label(name)]
