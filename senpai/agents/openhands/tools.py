"""senpai's typed tools for OpenHands agents: pydantic Action/Observation pairs whose executors
write the ledger through the same functions as the `search` runtime.

    query_ledger       read-only   the ledger digest, or one experiment's blocks
    query_runs         read-only   tracker runs by id or by PR (W&B text marked untrusted)
    create_hypothesis  advisor     `senpai.agents.hypothesis.open_hypothesis`
    decide             advisor     `senpai.agents.review` (verifier first, merge gate on merge; a PR its
                                   student works on closes only for a stale event or a trusted human)
    reply_to_human     both        `senpai.ledger.replies.reply_to_human`
    submit_evidence    student     commit + push the work copy, as the attempt to train (`senpai.agents.student_steps`)

A refused action (precondition, gate, bad input: a PR number below 1 fails the action's own
validation, one the forge does not know is named with the open PRs) comes back as an error observation the agent can
act on; it never raises out of the conversation.  Text an agent writes into the ledger or a commit
is redacted there (`senpai.ledger.redact`, applied by every ledger write and by WorkCopy.commit_all).
"""

import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

from openhands.sdk.tool import Action, Observation, ToolAnnotations, ToolDefinition, ToolExecutor, register_tool
from pydantic import Field

from senpai import trees
from senpai.agents import review
from senpai.agents.attempt import Attempt
from senpai.agents.hypothesis import open_hypothesis
from senpai.agents.openhands.prompts import digest, untrusted
from senpai.agents.openhands.session import Session
from senpai.agents.params import read_params
from senpai.config.roles import Role
from senpai.errors import NotFound, PermanentError, SenpaiError, TransitionError
from senpai.forge.base import PullRequest
from senpai.job.context import TurnContext
from senpai.job.workcopy import WorkCopy
from senpai.ledger import diversity
from senpai.ledger.baseline import current_baseline
from senpai.ledger.blocks import MAX_ARMS, Arm, Scalar, render
from senpai.ledger.gate import protected_touched
from senpai.ledger.labels import ASSIGNED, ExperimentState, status_of
from senpai.ledger.ladder import for_proposer
from senpai.ledger.redact import redact
from senpai.ledger.replies import reply_to_human

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)
SYNC_LIMITS = trees.Limits(entries=100_000, bytes=4 * 1024**3)  # an agent's work copy, as submitted


# Bounds on what the model may write into a record (a PR body is at most 65,536 characters on GitHub,
# and the forge refuses the PR after its branch was pushed): a longer argument is a tool error it can read.
SHORT, SENTENCE, TEXT = 200, 1_000, 8_000


class SenpaiObservation(Observation):
    """The text result of a senpai tool (is_error: refused, with the reason)."""


class QueryLedgerAction(Action):
    pr: int | None = Field(None, ge=1, description="A PR number for that experiment's full record; omit for the digest.")


class QueryRunsAction(Action):
    run_id: str | None = Field(None, max_length=SHORT, description="A W&B run id (from evidence).")
    pr: int | None = Field(None, ge=1, description="All runs of this PR (W&B group pr-<n>).")


class CreateHypothesisAction(Action):
    student: str = Field(max_length=SHORT, description="An idle student's name (from the idle events).")
    hypothesis: str = Field(max_length=SENTENCE, description="One sentence: what change improves the metric.")
    rationale: str = Field(max_length=TEXT, description="Why you expect it, citing the ledger.")
    plan: str = Field(max_length=TEXT, description="What the student should do and measure.")
    params: dict[str, Scalar] = Field(default_factory=dict, description="Params to set (keys of the target's space).")
    change: str | None = Field(None, max_length=TEXT, description="A code change in words, when not (only) a params change.")
    arms: list[Arm] | None = Field(
        None,
        description="Optional params-only variants run under the same seed, exactly one `control: true`; each arm's "
        "params override `params`. The best arm on validation is verified (corrected for the number of arms) and "
        "merged; the others are recorded as findings. Needs the search student runtime.",
    )


class DecideAction(Action):
    pr: int = Field(ge=1, description="The PR to decide.")
    verdict: Literal["merge", "close", "changes"] = Field(
        description="merge: a review-ready PR goes to the verifier, a verified one is merged through the gate; "
        "close: reject with the reason; changes: send back to the student."
    )
    reason: str = Field(max_length=TEXT, description="The reason, with the numbers compared.")


class ReplyToHumanAction(Action):
    event_id: str = Field(
        max_length=SHORT,
        description="The id of the message event you answer, as the event lists it, "
        "e.g. message:4:0:3f2a9c1b (#4's body) or message:12:88:3f2a9c1b (a comment on #12).",
    )
    text: str = Field(max_length=TEXT, description="Your answer: what you did or will do, and why.")


class SubmitEvidenceAction(Action):
    interpretation: str = Field(max_length=TEXT, description="What you changed and what you expect the numbers to show.")


Executor = Callable[[Session, Action], str]


def harness_context(s: Session, purpose: str, branch: str) -> TurnContext:
    """The turn context with a fresh clone of `branch` that the agent never had access to.

    Credentialed git never runs in the agent's work copy: its `.git/config` and hooks are the
    agent's to write (a hook or `core.fsmonitor` would run with the token in its environment).
    """
    s.clones += 1
    ctx = s.ctx
    path = ctx.workdir / f"harness-{purpose}-{s.clones}"
    return replace(ctx, repo=WorkCopy.clone(ctx.forge.clone_url, path, ctx.forge.git_env(), branch))


def _sync_tree(src: Path, dst: Path) -> None:
    """Make `dst`'s working tree (not its .git) a copy of `src`'s, the agent's work copy. The agent's
    processes may still be changing it, so it is copied by folder handle (`senpai.trees.copy`): a link
    stays a link and is never followed, a FIFO or device is left out. Raises TransitionError if it
    is too large to submit (`SYNC_LIMITS`)."""
    staged = dst.parent / f".sync-{uuid.uuid4().hex[:8]}"
    try:
        why, _ = trees.copy(src, staged, SYNC_LIMITS, links="keep", others="skip", exclude=frozenset({".git"}))
        if why is not None:
            raise TransitionError(f"your work copy cannot be submitted: {why}")
        for entry in dst.iterdir():
            if entry.name != ".git":
                trees.remove(entry)
        for entry in staged.iterdir():
            entry.rename(dst / entry.name)
    finally:
        trees.remove(staged)


class _Run(ToolExecutor):
    """Runs `fn(session, action)`; a SenpaiError becomes an error observation with its message."""

    def __init__(self, session: Session, fn: Executor) -> None:
        self.session, self.fn = session, fn

    def __call__(self, action, conversation=None) -> SenpaiObservation:
        try:
            return SenpaiObservation.from_text(self.fn(self.session, action))
        except SenpaiError as e:
            return SenpaiObservation.from_text(f"refused: {redact(str(e))}", is_error=True)


class SenpaiTool(ToolDefinition[Action, SenpaiObservation]):
    """A senpai tool bound to one turn's session; built by `senpai_tools`, never by name alone."""

    @classmethod
    def create(cls, conv_state=None, **params) -> Sequence["SenpaiTool"]:
        raise NotImplementedError("senpai tools are registered as instances bound to a turn (senpai_tools)")


def _pull(ctx: TurnContext, number: int) -> PullRequest:
    """PR `number` (`LedgerReader.pull`). Raises TransitionError naming the open PRs if there is no
    such PR (the forge's 404 tells a model nothing it can act on)."""
    try:
        return ctx.ledger.pull(number)
    except NotFound:
        open_prs = [f"#{p.number}" for p in ctx.ledger.listed() if p.state == "open"]
        raise TransitionError(f"there is no PR #{number}; the open PRs: {', '.join(open_prs) or 'none'}") from None


def _query_ledger(s: Session, a: QueryLedgerAction) -> str:
    ctx = s.ctx
    if a.pr is None:
        exps = ctx.ledger.experiments()
        return digest(exps, current_baseline(exps, ctx.forge.branch_sha(ctx.base)), ctx.target)
    exp = ctx.ledger.experiment(_pull(ctx, a.pr))
    blocks = [b for b in [exp.hypothesis, *exp.evidence, *exp.verifications, *exp.decisions, *exp.budget_reports] if b]
    head = f"PR #{exp.pr} [{exp.state}] {exp.title}\nbranch {exp.branch} head {exp.head}\n"
    # holdout numbers rounded, no per-seed values: the Ladder (`ladder.for_proposer`)
    return (
        head
        + ("\n".join(render(for_proposer(b)) for b in blocks) or "(no blocks)")
        + (f"\nerror: {exp.error}" if exp.error else "")
    )


def _query_runs(s: Session, a: QueryRunsAction) -> str:
    tracker = s.ctx.tracker
    if a.run_id:
        runs = [tracker.get_run(a.run_id)]
    elif a.pr is not None:
        runs = tracker.list_runs(f"pr-{a.pr}")
    else:
        raise PermanentError("give run_id or pr")
    if not runs:
        return "no runs"
    parts = []
    for r in runs:
        numbers = {k: v for k, v in sorted(r.summary.items()) if isinstance(v, (int, float)) and not k.startswith("_")}
        if r.job_type == "verify":  # the holdout's exact numbers: an agent sees them rounded (query_ledger), never here
            numbers = {"holdout": "rounded in query_ledger's verification blocks"}
        text = json.dumps(
            {"name": r.name, "group": r.group, "job_type": r.job_type, "tags": r.tags, "config": r.config}, default=str
        )
        parts.append(f"run {r.id}: state {r.state}; summary {json.dumps(numbers)}\n{untrusted(f'wandb:{r.id}', text)}")
    return "\n".join(parts)


def _create_hypothesis(s: Session, a: CreateHypothesisAction) -> str:
    ctx = s.ctx
    idle = {e.student for e in s.events if e.kind == "idle"}
    if a.student not in idle:
        raise TransitionError(f"student {a.student!r} is not idle in this turn's events (idle: {sorted(idle) or 'none'})")
    unknown = sorted(set(a.params) - set(ctx.target.params.space))
    if unknown:
        raise PermanentError(f"params {unknown} are not in the target's space {sorted(ctx.target.params.space)}")
    if not a.params and not a.change:
        raise PermanentError("give params, a change, or both")
    _check_arms(ctx, a)
    exps = ctx.ledger.experiments()
    if any(e.student == a.student and e.state in ASSIGNED for e in exps):
        raise TransitionError(f"student {a.student} already has an open assignment")
    baseline = current_baseline(exps, ctx.forge.branch_sha(ctx.base))
    hctx = harness_context(s, "hypothesis", ctx.base)
    current = baseline.params or read_params(hctx.repo.path / ctx.target.params.file)
    alarm = diversity.read(exps, ctx.target.params.space, ctx.harness.runtime.diversity)
    pr = open_hypothesis(
        hctx,
        a.student,
        hypothesis=a.hypothesis,
        rationale=a.rationale,
        plan=a.plan,
        params={**current, **a.params},
        baseline=baseline,
        change=a.change,
        exploration=alarm.reason if alarm.collapsed else None,
        arms=a.arms,
    )
    s.opened.append(pr.number)
    s.actions.append(f"#{pr.number}: opened {pr.head_ref.rsplit('/', 1)[-1]} for {a.student}")
    return f"opened PR #{pr.number} on branch {pr.head_ref} for {a.student}"


def _check_arms(ctx: TurnContext, a: CreateHypothesisAction) -> None:
    """Arms are params-only and run by the search student. Raises PermanentError naming the problem."""
    if not a.arms:
        return
    if ctx.harness.runtime.student.kind != "search":
        raise PermanentError("arms are run by the search student runtime only; give one variant (no arms)")
    unknown = sorted({k for arm in a.arms for k in arm.params} - set(ctx.target.params.space))
    if unknown:
        raise PermanentError(f"arm params {unknown} are not in the target's space {sorted(ctx.target.params.space)}")
    names = [arm.name for arm in a.arms]
    if not 2 <= len(names) <= MAX_ARMS or len(set(names)) != len(names) or sum(arm.control for arm in a.arms) != 1:
        raise PermanentError(f"arms: 2 to {MAX_ARMS} distinct names with exactly one control, got {names}")


def _decide(s: Session, a: DecideAction) -> str:
    ctx = s.ctx
    pr = _pull(ctx, a.pr)
    exp = ctx.ledger.experiment(pr)
    if pr.state != "open":
        raise TransitionError(f"PR #{a.pr} is already {'merged' if pr.merged else 'closed'}")
    exps = ctx.ledger.experiments()
    baseline = current_baseline(exps, ctx.forge.branch_sha(ctx.base))
    status, reason = status_of(pr.labels), a.reason
    if a.verdict == "close" and status in ASSIGNED and not _may_close_assigned(s, pr.number):
        raise TransitionError(
            f"PR #{pr.number} is {status.label}: its student is working on it and has no evidence to review yet. "
            "Close it only when this turn's events say it is stale, or a trusted human's message here asks for it; "
            "otherwise wait for its evidence"
        )
    if a.verdict == "merge":
        line = _merge(s, pr, exp, baseline, status, reason, exps)
    else:
        review.apply(ctx, pr, exp, baseline, review.decision(exp, a.verdict, reason))
        line = f"#{a.pr}: {'closed' if a.verdict == 'close' else 'changes requested'}: {reason}"
    s.actions.append(line)
    return line


def _may_close_assigned(s: Session, number: int) -> bool:
    """True if this turn may close PR `number` while its student works on it (wip or changes): one of
    the turn's events says it is stale, or is a trusted human's message (only those become message
    events: `senpai.ledger.events.Message`) written on it or naming `#<number>`. The model's own
    judgment never closes work whose evidence it has not seen (a real model closed the hypothesis
    it had just opened, in the same turn)."""
    named = re.compile(rf"(?<![\w&])#{number}(?!\d)")
    return any(
        (e.kind == "stale" and e.pr == number)
        or (e.message is not None and (e.message.number == number or named.search(e.message.body)))
        for e in s.events
    )


def _merge(s: Session, pr, exp, baseline, status, reason: str, exps: list) -> str:
    ctx = s.ctx
    if status == ExperimentState.REVIEW:
        ev = exp.evidence_for(pr.head_sha)
        if ev is None or ev.outcome != "ok":
            raise TransitionError(f"PR #{pr.number} has no ok evidence for head {pr.head_sha[:8]}; close it or ask for changes")
        return review.send_to_verifier(ctx, pr, exp) + "; you will be woken when the verifier has measured it"
    if status != ExperimentState.VERIFYING:
        raise TransitionError(f"PR #{pr.number} is {status and status.label}; merge needs status:review or status:verifying")
    v = exp.verification_for(pr.head_sha, baseline.commit)
    if v is None:
        raise TransitionError(
            f"PR #{pr.number} is waiting for the verifier (head {pr.head_sha[:8]} vs base {baseline.commit[:8]})"
        )
    if v.conflict:
        return review.reapply(ctx, pr, exp, baseline, review.verified_numbers(v))
    if not v.passed:
        raise TransitionError(f"the verifier did not pass PR #{pr.number}: {for_proposer(v).reason}; close it or ask for changes")
    line = review.merge_verified(ctx, pr, exp, baseline, v, reason)
    return "; ".join([line, *review.reapply_round(ctx, pr.number, baseline, exps)])  # the round's others, settled


def _reply(s: Session, a: ReplyToHumanAction) -> str:
    event = next((e for e in s.events if e.id == a.event_id and e.message is not None), None)
    if event is None:
        ids = [e.id for e in s.events if e.message is not None]
        raise PermanentError(f"no message event {a.event_id!r} in this turn (messages: {ids or 'none'})")
    posted = reply_to_human(s.ctx.forge, event.message, a.text)
    s.actions.append(f"#{event.message.number}: replied to @{event.message.author}")
    return "replied" if posted else "this message version was already answered"


def _submit_evidence(s: Session, a: SubmitEvidenceAction) -> str:
    ctx, h = s.ctx, s.hypothesis
    assert s.pr is not None and s.attempt is not None and h is not None and s.branch is not None
    if s.submitted is not None:
        raise TransitionError(f"attempt {s.attempt} is already submitted ({s.submitted.head[:8]}); finish the turn")
    hctx = harness_context(s, f"attempt-{s.attempt}", s.branch)
    repo = hctx.repo
    repo.merge_base_in(ctx.base)  # as the agent's checkout was
    _sync_tree(ctx.repo.path, repo.path)
    repo.git("add", "-A")
    changed = repo.git("diff", "--cached", "--name-only", f"origin/{ctx.base}", "--").splitlines()
    touched = protected_touched(ctx.target, changed)
    if touched:
        raise PermanentError(
            f"your changes touch protected paths {touched}; revert them (git checkout origin/{ctx.base} -- <path>)"
        )
    head = repo.commit_all(f"{h.id}: attempt {s.attempt} ({a.interpretation[:60]})")
    repo.push(s.branch)
    params = read_params(repo.path / ctx.target.params.file)
    s.submitted = Attempt(
        pr=s.pr, attempt=s.attempt, hypothesis=h, branch=s.branch, head=head, arms=[(None, params, True)],
        interpretation=a.interpretation, clone=str(repo.path),
    )  # fmt: skip
    s.actions.append(f"#{s.pr}: attempt {s.attempt} submitted at {head[:8]}")
    return (
        f"pushed {head[:8]} as attempt {s.attempt}. Once this turn ends, the harness trains it with `{ctx.target.train}` "
        "(in a place of its own, holding no key) and posts the evidence, which moves the PR to review: finish your turn now."
    )


SPECS: dict[str, tuple[type[Action], Executor, ToolAnnotations, str]] = {
    "query_ledger": (QueryLedgerAction, _query_ledger, READ_ONLY, "Read the ledger: the digest, or one PR's blocks."),
    "query_runs": (QueryRunsAction, _query_runs, READ_ONLY, "Read tracker (W&B) runs by run id or by PR."),
    "create_hypothesis": (
        CreateHypothesisAction,
        _create_hypothesis,
        WRITES,
        "Open a hypothesis PR for an idle student (params and/or a code change in words).",
    ),
    "decide": (
        DecideAction,
        _decide,
        DESTRUCTIVE,
        "Decide a PR: merge (verifier first, then the merge gate), close, or changes.",
    ),
    "reply_to_human": (ReplyToHumanAction, _reply, WRITES, "Answer a trusted human's message event (once per message version)."),
    "submit_evidence": (
        SubmitEvidenceAction,
        _submit_evidence,
        WRITES,
        "Commit and push your edits for the harness to train once your turn ends; it then posts the evidence and moves "
        "the PR to review. Call once, when your change is ready, then finish.",
    ),
}
TOOL_CLASSES: dict[str, type[SenpaiTool]] = {
    name: type(f"{name.title().replace('_', '')}Tool", (SenpaiTool,), {"name": name}) for name in SPECS
}
ROLE_TOOLS = {
    Role.ADVISOR: ["create_hypothesis", "decide", "query_ledger", "query_runs", "reply_to_human"],
    Role.STUDENT: ["query_ledger", "query_runs", "reply_to_human", "submit_evidence"],
}
# the advisor's tools whose result (no error) is a ledger effect: what an advisor turn is woken for
LEDGER_TOOLS = frozenset(n for n in ROLE_TOOLS[Role.ADVISOR] if not SPECS[n][2].readOnlyHint)


def senpai_tools(session: Session) -> list[str]:
    """Register the role's senpai tools bound to `session`; returns their names, sorted."""
    names = sorted(ROLE_TOOLS[session.role])
    for name in names:
        action, fn, hints, description = SPECS[name]
        tool = TOOL_CLASSES[name](
            description=description,
            action_type=action,
            observation_type=SenpaiObservation,
            annotations=hints.model_copy(update={"title": name}),
            executor=_Run(session, fn),
        )
        register_tool(name, tool)
    return names
