"""The `openhands` student turn: an LLM agent implements the hypothesis on the PR branch with the
terminal and file editor, then calls `submit_evidence`, which commits and pushes its change as the
attempt; once the turn has ended it is trained and its evidence posted exactly as the `search`
student's (`senpai.agents.student_steps`), with the agent's interpretation and the turn's spend.

A turn that ends without submitting still leaves a record: a turn-guard stop posts the `senpai-budget`
report and a failed evidence; any other end posts a failed evidence with the agent's last words,
quoted as one line of neutral prose (`records.quote`: no fence, no marker, bounded).
"""

from datetime import UTC, datetime

from senpai.agents.attempt import Attempt, checkout_for_attempt
from senpai.agents.openhands.conversation import TurnResult, run_turn, turn_key
from senpai.agents.openhands.prompts import event_line, read_program, system_suffix, user_turn
from senpai.agents.openhands.session import Session
from senpai.agents.openhands.tools import senpai_tools
from senpai.agents.openhands.turn import conversations_dir, log_turn, open_session, post_budget_report, walled_tools
from senpai.agents.params import apply_params
from senpai.config.roles import Role
from senpai.job.context import TurnContext
from senpai.ledger import transitions
from senpai.ledger.blocks import Cost, Evidence, render
from senpai.ledger.events import Event
from senpai.ledger.ladder import for_proposer
from senpai.ledger.records import quote


def student_turn(
    ctx: TurnContext, number: int, attempt: int, events: list[Event] = (), now: datetime | None = None
) -> Attempt | Evidence:
    """Attempt `attempt` on PR `number`: the attempt the agent submitted (with the turn's spend), or
    the failed evidence posted for a turn that submitted none. Raises PermanentError if the PR has
    no hypothesis."""
    session, llm, guard = open_session(ctx, Role.STUDENT, list(events))
    h, branch = checkout_for_attempt(ctx, number)
    apply_params(ctx.repo.path / ctx.target.params.file, h.params)
    head = ctx.repo.head()
    session.pr, session.attempt, session.hypothesis, session.branch = number, attempt, h, branch
    exp = ctx.ledger.experiment(ctx.ledger.handed(number))
    earlier = [render(for_proposer(b)) for b in [*exp.evidence, *exp.decisions]]
    t = ctx.target
    sections = [
        (
            "Assignment",
            f"PR #{number}, attempt {attempt}, branch {branch} (checked out; the hypothesis params are "
            f"already written into {t.params.file}, uncommitted).\n{render(h)}",
        ),
        (
            "Target",
            f"train: `{t.train}`; metric {t.metric.name} ({t.metric.direction}); "
            f"protected paths (never edit): {', '.join([*t.protected, 'senpai.yaml'])}",
        ),
        ("Earlier attempts and decisions on this PR", "\n".join(earlier) or "none"),
        ("Events", "\n".join(event_line(e) for e in events) or "none"),
    ]
    key = turn_key(Role.STUDENT, number, head, extra=f"attempt-{attempt}")
    result = run_turn(
        llm=llm,
        senpai_tools=senpai_tools(session),
        system=system_suffix(Role.STUDENT, read_program(ctx.repo.path, t)),
        user=user_turn(now or datetime.now(UTC), ctx.repo.path, sections),
        workspace=ctx.repo.path,
        state_dir=conversations_dir(ctx, Role.STUDENT),
        key=key,
        guard=guard,
        walled=walled_tools(ctx, ctx.repo.path, Role.STUDENT),
    )
    log_turn(ctx, Role.STUDENT, number, head, key, guard, result)
    if session.submitted is not None:
        u = result.usage
        return session.submitted.model_copy(update={"tokens": u.tokens, "dollars": u.dollars})
    return _no_evidence(session, guard, result, head)


def _no_evidence(s: Session, guard, result: TurnResult, head: str) -> Evidence:
    h = s.hypothesis
    assert h is not None and s.pr is not None and s.attempt is not None
    words = quote(result.last_message)
    said = f'the agent\'s last words, quoted: "{words}"' if words else ""
    if result.status == "budget":
        where = post_budget_report(
            s,
            guard,
            result,
            s.pr,
            head,
            known=f"worked on {h.hypothesis}; {said or 'no last words'}",
            missing=f"no training run and no evidence for attempt {s.attempt}",
        )
        failure = f"turn limits exhausted ({', '.join(result.exhausted)}) before evidence; report on #{where}"
    else:
        failure = f"the agent ended its turn ({result.status}) without submitting evidence"
    ev = Evidence.of(
        h,
        metric=h.metric.name,
        value=None,
        failure=failure,
        interpretation=said or failure,
        pr=s.pr,
        attempt=s.attempt,
        student=h.student,
        head=head,
        command=s.ctx.target.train,
        cost=Cost(wall_seconds=result.usage.wall_seconds, tokens=result.usage.tokens, dollars=result.usage.dollars),
    )
    transitions.submit_evidence(s.ctx.forge, s.ctx.forge.get_pull(s.pr), ev, to_review=s.attempt >= h.budget.attempts)
    return ev
