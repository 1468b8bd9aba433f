"""One experiment as read from the ledger: a PR, its blocks, and its tracker runs."""

import math

from pydantic import BaseModel, ConfigDict, Field

from senpai.errors import LedgerFormatError
from senpai.forge.base import Comment, PullRequest
from senpai.ledger.blocks import (
    ApprovalRequest,
    Block,
    BudgetReport,
    Decision,
    Evidence,
    Hypothesis,
    Reapply,
    TurnCost,
    Verification,
)
from senpai.ledger.labels import DECIDED, ExperimentState, status_of, student_of
from senpai.ledger.records import by_bot, edited, read_record


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
    state: ExperimentState
    updated_at: str = Field(description="PR updated_at, ISO8601 UTC, from the forge.")
    hypothesis: Hypothesis | None
    evidence: list[Evidence]
    verifications: list[Verification]
    decisions: list[Decision]
    budget_reports: list[BudgetReport] = Field(default_factory=list, description="Agent turns stopped by their budget.")
    runs: list[RunSummary] = Field(default_factory=list)
    approval_requests: list[ApprovalRequest] = Field(default_factory=list, description="The bot's requests for a human approval.")
    turn_costs: list[TurnCost] = Field(
        default_factory=list, description="What the openhands advisor's turns about this PR (or that opened it) spent."
    )
    reapplies: list[Reapply] = Field(
        default_factory=list, description="Heads senpai pushed to re-apply the PR's params onto a moved base."
    )
    error: str | None = Field(None, description="Why a block could not be read (PR is blocked).")

    @property
    def decision(self) -> Decision | None:
        return self.decisions[-1] if self.decisions else None

    @property
    def decided(self) -> bool:
        return self.state in DECIDED

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

    def pending_approval(self) -> ApprovalRequest | None:
        """The human approval this PR's merge waits for: its latest `senpai-approval` request, if it
        names the current head and no decision consumed it (None once decided)."""
        r = self.approval_requests[-1] if self.approval_requests else None
        if self.decided or r is None or r.head != self.head or any(d.approval == r.fingerprint for d in self.decisions):
            return None
        return r

    def primary_value(self) -> float | None:
        """Primary metric of the latest ok evidence, if finite."""
        ok = [e for e in self.evidence if e.outcome == "ok"]
        return finite_or_none(ok[-1].primary.value if ok else None)


def verdicts_by_holdout(exps: list[Experiment]) -> dict[str | None, int]:
    """Holdout (`Verification.holdout`; None: not recorded) -> the verdicts it served: the
    verifications in `exps` that judged at least one finite holdout value (refusals that measured
    nothing are not counted; a verdict from reused seeds is), the latest verdict's holdout last
    (by `Verification.at`; records without it count as older, in ledger order). Each verdict tells
    the search a little about its holdout, so a long search on one holdout overfits it (Blum &
    Hardt, 2015, "The Ladder")."""
    judged = [v for e in exps for v in e.verifications if any(math.isfinite(x) for x in v.candidate_values)]
    out: dict[str | None, int] = {}
    for v in sorted(judged, key=lambda v: v.at.timestamp() if v.at else -math.inf):  # stable: ledger order within
        out[v.holdout] = out.pop(v.holdout, 0) + 1
    return out


def holdout_verdicts(exps: list[Experiment]) -> int:
    """Verdicts the current holdout (the latest verdict's) has served (`verdicts_by_holdout`): what
    `senpai status` and the report show; a holdout refreshed with new sealed data starts again at 1."""
    served = verdicts_by_holdout(exps)
    return served[next(reversed(served))] if served else 0


def finite_or_none(x: float | None) -> float | None:
    """`x` if it is a finite number, else None (a NaN or an infinity from the ledger shows as no value)."""
    return x if x is not None and math.isfinite(x) else None


def pr_state(pr: PullRequest) -> ExperimentState:
    """Merged or closed (the PR's own state), else its status label's state, else unlabelled."""
    if pr.merged:
        return ExperimentState.MERGED
    if pr.state == "closed":
        return ExperimentState.CLOSED
    return status_of(pr.labels) or ExperimentState.UNLABELLED


def own_pull(pr: PullRequest, bot: str) -> bool:
    """True if the bot (login `bot`) opened `pr` from a branch of the repository itself (not a fork)."""
    return by_bot(pr, bot) and pr.head_repo is not None and pr.head_repo == pr.base_repo


def _student(pr: PullRequest, h: Hypothesis | None) -> str | None:
    """The hypothesis block's student, else the branch's (`senpai/<student>/...`), else the label's:
    a label is a view anyone with triage rights can change; the wrapper puts it back."""
    if h is not None:
        return h.student
    parts = pr.head_ref.split("/")
    return parts[1] if len(parts) == 3 and parts[0] == "senpai" and parts[1] else student_of(pr.labels)


def read_experiment(pr: PullRequest, comments: list[Comment], bot: str) -> Experiment:
    """Parse `pr` and its `comments` into an Experiment.

    Only records count (`records.read_record`): the hypothesis from the body of a PR the bot
    opened from this repository (`own_pull`), evidence, verifications, decisions and turn-limit
    reports and advisor turn costs from comments the bot (`bot`, the forge identity senpai writes as) wrote and nobody
    edited since (GitHub lets a repository's writers edit any comment; senpai never edits its
    own), each kind only from the comment that renders it.  A fence anywhere else is text.  An invalid record, or a
    senpai-labelled PR the bot did not open, is reported in `error` instead of raising, so one bad
    PR never stops the ledger.
    """
    blocks: list[Block] = []
    errors = []
    if own_pull(pr, bot):
        sources = [("PR body", pr.body, (Hypothesis,))]
    else:
        errors.append(f"PR #{pr.number} was not opened by {bot} from this repository: its body is not a hypothesis")
        sources = []
    for c in (c for c in comments if by_bot(c, bot)):
        if edited(c):  # a record rewritten, or one made into text
            errors.append(f"comment {c.id}: edited after {bot} posted it (senpai never edits its comments)")
        else:
            sources.append((f"comment {c.id}", c.body, _COMMENT_KINDS))
    for where, text, kinds in sources:
        try:
            block = read_record(text)
        except LedgerFormatError as e:
            errors.append(f"{where}: {e}")
            continue
        if isinstance(block, kinds):
            blocks.append(block)
    hyps = [b for b in blocks if isinstance(b, Hypothesis)]
    return Experiment(
        pr=pr.number,
        title=pr.title,
        url=pr.html_url,
        branch=pr.head_ref,
        head=pr.head_sha,
        merge_commit=pr.merge_commit_sha if pr.merged else None,
        student=_student(pr, hyps[0] if hyps else None),
        state=pr_state(pr),
        updated_at=pr.updated_at.isoformat(),
        hypothesis=hyps[0] if hyps else None,
        evidence=[b for b in blocks if isinstance(b, Evidence)],
        verifications=[b for b in blocks if isinstance(b, Verification)],
        decisions=[b for b in blocks if isinstance(b, Decision)],
        budget_reports=[b for b in blocks if isinstance(b, BudgetReport)],
        approval_requests=[b for b in blocks if isinstance(b, ApprovalRequest)],
        turn_costs=[b for b in blocks if isinstance(b, TurnCost)],
        reapplies=[b for b in blocks if isinstance(b, Reapply)],
        error="; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "") or None,
    )


_COMMENT_KINDS = (Evidence, Verification, Decision, BudgetReport, ApprovalRequest, TurnCost, Reapply)
