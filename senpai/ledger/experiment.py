"""One experiment as read from the ledger: a PR, its blocks, and its tracker runs."""

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from senpai.errors import LedgerFormatError
from senpai.forge.base import Comment, PullRequest
from senpai.ledger.blocks import Block, BudgetReport, Decision, Evidence, Hypothesis, Verification, parse_blocks
from senpai.ledger.labels import status_of, student_of

State = Literal["wip", "review", "verifying", "changes", "blocked", "merged", "closed", "unlabelled"]


class RunSummary(BaseModel):
    """A tracker run referenced by evidence, as read back from the tracker."""

    model_config = ConfigDict(frozen=True)
    id: str
    state: str
    metric: float | None = Field(description="Primary metric from the run's summary; None if absent.")
    url: str | None


class Experiment(BaseModel):
    """A row of the ledger. Built only from the forge (PR, comments) and the tracker (runs)."""

    model_config = ConfigDict(frozen=True)
    pr: int
    title: str
    url: str
    branch: str
    head: str
    merge_commit: str | None = None
    student: str | None
    state: State
    updated_at: str = Field(description="PR updated_at, ISO8601 UTC, from the forge.")
    hypothesis: Hypothesis | None
    evidence: list[Evidence]
    verifications: list[Verification]
    decisions: list[Decision]
    budget_reports: list[BudgetReport] = Field(default_factory=list, description="Agent turns stopped by their budget.")
    runs: list[RunSummary] = Field(default_factory=list)
    error: str | None = Field(None, description="Why a block could not be read (PR is blocked).")

    @property
    def decision(self) -> Decision | None:
        return self.decisions[-1] if self.decisions else None

    @property
    def decided(self) -> bool:
        return self.state in ("merged", "closed")

    @property
    def attempts(self) -> int:
        """Attempts spent: distinct attempt numbers among the evidence (a duplicated post counts once)."""
        return len({e.attempt for e in self.evidence})

    def evidence_for(self, head: str) -> Evidence | None:
        found = [e for e in self.evidence if e.head == head]
        return found[-1] if found else None

    def verification_for(self, head: str, base: str) -> Verification | None:
        found = [v for v in self.verifications if v.candidate == head and v.baseline == base]
        return found[-1] if found else None

    def primary_value(self) -> float | None:
        """Primary metric of the latest ok evidence, if finite."""
        ok = [e for e in self.evidence if e.outcome == "ok"]
        value = ok[-1].primary.value if ok else None
        return value if value is not None and math.isfinite(value) else None


def pr_state(pr: PullRequest) -> State:
    if pr.merged:
        return "merged"
    if pr.state == "closed":
        return "closed"
    status = status_of(pr.labels)
    return status.value.split(":", 1)[1] if status else "unlabelled"  # type: ignore[return-value]


def read_experiment(pr: PullRequest, comments: list[Comment], bot: str) -> Experiment:
    """Parse `pr` and its `comments` into an Experiment.

    Blocks count only in the PR body and in comments authored by `bot` (the forge identity
    senpai writes as), so nobody else can forge evidence or decisions.  An invalid block is
    reported in `error` instead of raising, so one bad PR never stops the ledger.
    """
    blocks: list[Block] = []
    errors = []
    sources = [("PR body", pr.body)] + [(f"comment {c.id}", c.body) for c in comments if c.user == bot]
    for where, text in sources:
        try:
            blocks += parse_blocks(text)
        except LedgerFormatError as e:
            errors.append(f"{where}: {e}")
    hyps = [b for b in blocks if isinstance(b, Hypothesis)]
    return Experiment(
        pr=pr.number,
        title=pr.title,
        url=pr.html_url,
        branch=pr.head_ref,
        head=pr.head_sha,
        merge_commit=pr.merge_commit_sha if pr.merged else None,
        student=student_of(pr.labels),
        state=pr_state(pr),
        updated_at=pr.updated_at.isoformat(),
        hypothesis=hyps[0] if hyps else None,
        evidence=[b for b in blocks if isinstance(b, Evidence)],
        verifications=[b for b in blocks if isinstance(b, Verification)],
        decisions=[b for b in blocks if isinstance(b, Decision)],
        budget_reports=[b for b in blocks if isinstance(b, BudgetReport)],
        error="; ".join(errors) or None,
    )
