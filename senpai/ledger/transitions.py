"""The label state machine, as functions with explicit preconditions.

    (new) ──open_experiment──▶ wip ──submit_evidence──▶ review ──request_verification──▶ verifying
                                ▲                          │                                │
                                └──── start_work ── changes ◀──────── decide(changes) ──────┤
    any open ──block──▶ blocked                    decide(close) ──▶ closed                 │
                                                   decide(merge) ──▶ merged ◀── gate ───────┘

A PR senpai merged keeps the label `status:merged`, one it closed `status:closed` (labels.FINAL),
so the forge's PR list shows how each experiment ended.

Every function re-reads nothing it is not given, checks its precondition, and is idempotent:
replaying it after a crash (comment posted, label not yet set) finishes the step without
posting twice.  A precondition that does not hold raises TransitionError.

Every comment is redacted and ends with a marker `<!-- senpai:<kind>:<key> -->` (`_post_once` posts
only if none of the bot's comments ends with it).  A record's key is `records.record_key` (an
evidence's `pr:attempt`, a verification's `candidate:baseline`, a decision's `pr:head:verdict`...);
a block comment's is its reason.  Labels are set by replacing the whole list, so a repeated label
write is harmless.  Accepted states: `submit_evidence` wip, changes or review; `start_work` wip or
changes; `request_verification` review or verifying; `record_verification` verifying; `block` any,
or none; `decide(close)` any status label (the LLM advisor's `decide` tool is narrower);
`decide(merge|changes)` review or verifying, at the PR's current head.
"""

from senpai.config.target import TargetConfig
from senpai.errors import FileListTruncated, MergeRefused, TransientError, TransitionError
from senpai.forge.base import PullRequest
from senpai.forge.port import ForgeReadWrite
from senpai.ledger.blocks import (
    ApprovalRequest,
    BudgetReport,
    Decision,
    Evidence,
    Hypothesis,
    Reapply,
    TurnCost,
    Verification,
)
from senpai.ledger.comments import prose
from senpai.ledger.escalation import marked, open_issue_once
from senpai.ledger.experiment import Experiment, own_pull
from senpai.ledger.gate import check_merge
from senpai.ledger.inbox import SteerState, pr_steer, trust_of
from senpai.ledger.labels import (
    ASSIGNED,
    LABELLED,
    SENPAI,
    STEER,
    ExperimentState,
    status_of,
    student_label,
    with_status,
    with_student,
)
from senpai.ledger.ladder import for_proposer
from senpai.ledger.records import by_bot, digest, hashed, marker, marker_of, record_marker, record_text
from senpai.ledger.redact import redact


def _require(pr: PullRequest, allowed: set[ExperimentState | None], action: str) -> None:
    if pr.state != "open":
        raise TransitionError(f"PR #{pr.number} is {'merged' if pr.merged else 'closed'}; cannot {action}")
    status = status_of(pr.labels)
    if status not in allowed:
        names = ", ".join(sorted(s.label if s else "no status" for s in allowed))
        raise TransitionError(f"PR #{pr.number} is {status and status.label}; {action} needs one of {names}")


def _set_status(forge: ForgeReadWrite, pr: PullRequest, status: ExperimentState | None) -> None:
    labels = with_status(pr.labels, status)
    if set(labels) != set(pr.labels):  # the forge's order is its own: a reordering is no change
        forge.set_labels(pr.number, labels)


def hypothesis_body(h: Hypothesis) -> str:
    """PR body for a hypothesis: prose for humans (`templates/hypothesis.md.j2`: the metric table,
    the slash commands that steer it), then the collapsed block and its marker."""
    return record_text(h, prose("hypothesis.md.j2", h=h))


def open_experiment(
    forge: ForgeReadWrite, h: Hypothesis, branch: str, base: str, title: str, pulls: list[PullRequest] | None = None
) -> PullRequest:
    """Open the hypothesis PR for `branch` (which must exist on the forge) in state wip. `pulls`:
    the repository's PRs as just listed, any state (`LedgerReader.list_pulls`); None lists the open
    ones now (GET .../pulls?state=open).

    Idempotent: an open PR from `branch` that the bot opened from this repository is returned
    (labels completed).  An open PR from `branch` that anyone else opened is never adopted: it is
    closed with one short comment (a collaborator may close any PR), then the bot opens its own.
    A fork's branch of the same name is ignored.  GitHub REST: POST .../pulls, PATCH
    .../pulls/{n} (state closed), POST .../issues/{n}/comments.
    """
    labels = [SENPAI, student_label(h.student), ExperimentState.WIP.label]
    for pr in forge.list_pulls("open") if pulls is None else pulls:
        # a fork's branch of the same name does not hold ours
        if pr.state != "open" or pr.head_ref != branch or pr.head_repo != pr.base_repo:
            continue
        if not own_pull(pr, forge.login):
            _close_foreign(forge, pr.number, branch)
            continue
        if not set(labels) <= set(pr.labels):
            forge.set_labels(pr.number, sorted(set(pr.labels) | set(labels)))
        return pr
    return forge.create_pull(redact(title), hypothesis_body(h), head=branch, base=base, labels=labels)


def _close_foreign(forge: ForgeReadWrite, number: int, branch: str) -> None:
    """Close PR `number`, opened by someone else from senpai's own `branch`, saying why."""
    forge.create_comment(number, prose("foreign.md.j2", branch=branch))
    forge.update_pull(number, state="closed")


def _post_once(forge: ForgeReadWrite, pr: int, mark: str, body: str, existing: list[str]) -> None:
    """Post `body` (already ending in `mark`) unless a bot comment already ends in `mark`."""
    if not any(marker_of(b) == mark for b in existing):
        forge.create_comment(pr, body)


def _marker(kind: str, key: str) -> str:
    return marker(kind, hashed(key))


def _comment_bodies(forge: ForgeReadWrite, pr: int) -> list[str]:
    return [c.body for c in forge.list_comments(pr) if by_bot(c, forge.login)]


def submit_evidence(forge: ForgeReadWrite, pr: PullRequest, ev: Evidence, to_review: bool = True) -> None:
    """Post evidence for attempt `ev.attempt` and (if `to_review`) move wip/changes → review."""
    _require(pr, {*ASSIGNED, ExperimentState.REVIEW}, "submit evidence")
    text = record_text(ev, prose("evidence.md.j2", ev=ev))
    _post_once(forge, pr.number, record_marker(ev), text, _comment_bodies(forge, pr.number))
    if to_review:
        _set_status(forge, pr, ExperimentState.REVIEW)


def start_work(forge: ForgeReadWrite, pr: PullRequest) -> None:
    """changes → wip, when a student picks the PR up again. No-op if already wip."""
    _require(pr, set(ASSIGNED), "start work")
    _set_status(forge, pr, ExperimentState.WIP)


def restore_student(forge: ForgeReadWrite, pr: PullRequest, student: str) -> None:
    """Put `student:<student>` back on open PR `pr` (a human removed it while the student still
    holds the PR). No-op if the PR is closed or already carries it."""
    labels = with_student(pr.labels, student)
    if pr.state == "open" and labels != pr.labels:
        forge.set_labels(pr.number, labels)


def request_verification(forge: ForgeReadWrite, pr: PullRequest) -> None:
    """review → verifying: the wrapper launches the verifier for (head, base)."""
    _require(pr, {ExperimentState.REVIEW, ExperimentState.VERIFYING}, "request verification")
    _set_status(forge, pr, ExperimentState.VERIFYING)


def record_verification(forge: ForgeReadWrite, pr: PullRequest, v: Verification) -> None:
    """Post the verifier's block for (candidate, baseline), once: on a PR in verifying, or on a merged
    PR whose merge landed on a moved base (`consistency.reverify`: its merge commit measured again)."""
    if not (pr.merged and v.candidate == pr.merge_commit_sha):
        _require(pr, {ExperimentState.VERIFYING}, "record a verification")
    text = record_text(v, prose("verification.md.j2", v=for_proposer(v)))
    _post_once(forge, pr.number, record_marker(v), text, _comment_bodies(forge, pr.number))


def block(forge: ForgeReadWrite, pr: PullRequest, reason: str) -> None:
    """Any open state, or none (a senpai PR whose labels are gone) → blocked, with a comment saying
    what is wrong (posted once per reason)."""
    _require(pr, {*LABELLED, None}, "block")
    mark = _marker("blocked", reason)
    body = f"{prose('blocked.md.j2', reason=reason)}\n\n{mark}"
    _post_once(forge, pr.number, mark, body, _comment_bodies(forge, pr.number))
    _set_status(forge, pr, ExperimentState.BLOCKED)


def _decision_text(d: Decision) -> str:
    return record_text(d, prose("decision.md.j2", d=for_proposer(d)))


def _pinned(forge: ForgeReadWrite, d: Decision, base_sha: str, merge_commit: str | None) -> Decision:
    """`d` with the verified base and the base the merge landed on (the merge commit's first parent).

    GitHub's merge API pins the head (`sha`) but not the base: a commit that reaches the base
    between the gate and the merge makes a merge onto code no verification measured, so the
    decision records both and `consistency.verified_merge` tells them apart.  GitHub REST: GET
    /repos/{o}/{r}/commits/{sha}.
    """
    parents = forge.commit_parents(merge_commit) if merge_commit else []
    return d.model_copy(update={"base": base_sha, "merged_onto": parents[0] if parents else None})


def decide(
    forge: ForgeReadWrite,
    pr: PullRequest,
    exp: Experiment,
    d: Decision,
    target: TargetConfig | None,
    base_sha: str,
    *,
    trusted: list[str] | None = None,
    rivals: dict[int, float] | None = None,
) -> None:
    """Apply the advisor's verdict on `pr` at head `d.head`.

    merge: passes the merge gate (raises MergeRefused), then a real merge (raises MergeConflict),
    then the decision comment, then the label `status:merged`.  close: comment, then close with
    the label `status:closed`.  changes: comment, then → changes.
    Preconditions: PR open in review or verifying and `d.head` is its current head; a merge needs
    `target` (its protected paths); close and changes do not read it.  For a merge, the acknowledged
    `/senpai allow compute` and `/senpai approve` on the PR count if their authors may still write
    (`inbox.trust_of`: one permission read each; `trusted` is `forge.trusted`, None: nobody's count;
    a permission that cannot be read raises TransientError: the merge waits, the approval stands),
    and `rivals` are the p-values of competing verifications
    (`gate.rival_p_values`).  A merge that senpai.yaml's `approval` names raises ApprovalRequired
    without a valid approval; the decision records the approval it consumed (`Decision.approval`,
    which only a merge made here sets: whatever `d.approval` the caller gave is dropped), and the
    digest of the hypothesis record it decides on (`Decision.hypothesis`, from `exp`).
    Replay after a crash finishes the step (a merged PR with no decision gets its comment).
    """
    # the record it decides on, for `consistency.check` (a body edited later no longer holds it)
    d = d.model_copy(update={"approval": None, "hypothesis": digest(exp.hypothesis) if exp.hypothesis else None})
    mark = record_marker(d)
    if pr.merged and d.verdict == "merge":
        d = _pinned(forge, d, base_sha, pr.merge_commit_sha)
        _post_once(forge, pr.number, mark, _decision_text(d), _comment_bodies(forge, pr.number))
        _set_status(forge, pr, ExperimentState.MERGED)
        return
    allowed = set(LABELLED) if d.verdict == "close" else {ExperimentState.REVIEW, ExperimentState.VERIFYING}
    _require(pr, allowed, f"decide {d.verdict}")
    if d.head != pr.head_sha:
        raise TransitionError(f"decision is for {d.head[:8]} but PR #{pr.number} head is {pr.head_sha[:8]}")
    if d.verdict == "merge":
        if target is None:
            raise TransitionError(f"merging PR #{pr.number} needs the target's senpai.yaml (protected paths)")
        verification = exp.verification_for(pr.head_sha, base_sha)
        steer = _standing_steer(forge, pr, trusted) if trusted is not None else SteerState()
        try:
            files = forge.pull_files(pr.number)
        except FileListTruncated as e:
            raise MergeRefused(f"{e}, so its scope cannot be checked") from None
        approval = check_merge(
            target, pr.head_sha, base_sha, files, verification, rivals=rivals,
            compute_allowed_by=steer.compute_allowed.get(pr.number), approved=steer.approvals.get(pr.number),
            arms=exp.hypothesis.arm_count() if exp.hypothesis else 1,
        )  # fmt: skip
        d = d.model_copy(update={"approval": approval})
        # the head that was verified: a commit pushed since then makes the forge refuse (MergeConflict)
        merged = forge.merge_pull(pr.number, f"senpai: merge #{pr.number} ({d.reason})", pr.head_sha)
        d = _pinned(forge, d, base_sha, merged)
        _post_once(forge, pr.number, mark, _decision_text(d), _comment_bodies(forge, pr.number))
        _set_status(forge, pr, ExperimentState.MERGED)
        return
    _post_once(forge, pr.number, mark, _decision_text(d), _comment_bodies(forge, pr.number))
    if d.verdict == "close":
        forge.close_with_labels(pr.number, with_status(pr.labels, ExperimentState.CLOSED))
    else:
        _set_status(forge, pr, ExperimentState.CHANGES)


def _standing_steer(forge: ForgeReadWrite, pr: PullRequest, trusted: list[str]) -> SteerState:
    """`pr`'s own steering state, counting only acks whose authors may write now. Raises TransientError
    if a permission could not be read (senpai's failure: the merge is tried again, nothing is refused)."""
    comments = forge.list_comments(pr.number)
    trust = trust_of(forge, trusted, comments)
    unknown = sorted(login for login, may in trust.writers.items() if may is None)
    if unknown:
        raise TransientError(f"merge of PR #{pr.number} waits: the permission of {', '.join(unknown)} could not be read")
    return pr_steer(pr, comments, trust)


def request_approval(forge: ForgeReadWrite, pr: PullRequest, r: ApprovalRequest) -> None:
    """Post the request that a trusted human approve the merge `r` names, once per fingerprint (the
    PR stays as it is: the wrapper wakes the advisor again when an approval of it is acknowledged).
    GitHub REST: GET and POST .../issues/{n}/comments."""
    _require(pr, {ExperimentState.VERIFYING, ExperimentState.REVIEW}, "request an approval")
    text = record_text(r, prose("approval.md.j2", r=r))
    _post_once(forge, pr.number, record_marker(r), text, _comment_bodies(forge, pr.number))


def record_reapply(forge: ForgeReadWrite, pr: PullRequest, r: Reapply) -> None:
    """Post the record of a head senpai pushed to re-apply a params-only PR onto a moved base, once
    (the PR stays verifying: the wrapper launches the verifier for the new head).
    GitHub REST: GET and POST .../issues/{n}/comments."""
    _require(pr, {ExperimentState.VERIFYING}, "record a re-apply")
    text = record_text(r, prose("reapply.md.j2", r=r))
    _post_once(forge, pr.number, record_marker(r), text, _comment_bodies(forge, pr.number))


BUDGET_ISSUE_TITLE = "senpai: an advisor turn ran out of its turn limits"


def report_budget(forge: ForgeReadWrite, r: BudgetReport) -> int:
    """Post the turn-limit report `r` (`senpai-budget`) once per (role, PR, revision); returns the issue/PR number used.

    On PR `r.pr` if set (any state: it is a record, labels are not touched), else on an issue
    labelled `senpai` (`escalation.open_issue_once`: found again by its marker on replay).  GitHub
    REST: POST .../issues/{n}/comments, or GET .../issues and POST .../issues.
    """
    mark = record_marker(r)
    body = record_text(r, prose("budget.md.j2", r=r))
    if r.pr is not None:
        _post_once(forge, r.pr, mark, body, _comment_bodies(forge, r.pr))
        return r.pr
    return open_issue_once(forge, mark, BUDGET_ISSUE_TITLE, body, [SENPAI])[0]


TURNS_ISSUE_TITLE = "senpai: what the advisor's turns spent"
TURNS_ISSUE_MARKER = marker("turns", "advisor")
# comments on one turns issue before the next record opens another: GitHub refuses any comment on an
# issue past 2,500 (403), and humans' comments and acks there count too
TURNS_PER_ISSUE = 1_000


def record_turn(forge: ForgeReadWrite, t: TurnCost, opened: list[int]) -> int:
    """Post what an openhands advisor turn spent (`t`), once per record (`records.record_key`: the
    turn's key and its LLM calls, so a replay posts nothing new); returns the issue/PR number used.

    Where `senpai.ledger.spend` finds it: on PR `t.pr` (the turn was about that one PR), else on the
    first PR the turn opened (`opened`, in order), else as a comment on the newest of the bot's
    issues carrying TURNS_ISSUE_MARKER and labelled `senpai:steer` (a new one once it holds
    TURNS_PER_ISSUE comments): the wrapper already reads the bot's comments of every steering issue
    each refresh (`wrapper.humans`), so no new listing is needed and no PR's thread gets a turn that
    was not about it.  Any state of the PR or issue (a record: labels are not touched).  GitHub
    REST: GET and POST .../issues/{n}/comments, and GET .../issues?labels=senpai:steer and at times
    POST .../issues.
    """
    number = t.pr if t.pr is not None else opened[0] if opened else None
    mark = record_marker(t)
    number, bodies = _turns_issue(forge, mark) if number is None else (number, _comment_bodies(forge, number))
    _post_once(forge, number, mark, record_text(t, prose("turn.md.j2", t=t)), bodies)
    return number


def _turns_issue(forge: ForgeReadWrite, mark: str) -> tuple[int, list[str]]:
    """The newest turns issue and the bot's comment bodies on it; a new issue (no comment) when that
    one holds TURNS_PER_ISSUE comments and not the record `mark` already (a replay)."""
    found = marked(forge.list_issues(STEER, "all"), TURNS_ISSUE_MARKER, forge.login)
    if found:
        newest = max(found, key=lambda i: i.number)
        comments = forge.list_comments(newest.number)
        bodies = [c.body for c in comments if by_bot(c, forge.login)]
        if len(comments) < TURNS_PER_ISSUE or any(marker_of(b) == mark for b in bodies):
            return newest.number, bodies
    body = f"{prose('turns_issue.md.j2')}\n\n{TURNS_ISSUE_MARKER}"
    return forge.create_issue(TURNS_ISSUE_TITLE, body, [STEER, SENPAI]).number, []
