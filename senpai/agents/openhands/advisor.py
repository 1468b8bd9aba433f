"""The `openhands` advisor turn: an LLM agent reviews evidence, opens hypotheses and answers humans.

Its ledger effects are those of the `search` advisor (same functions: open_hypothesis,
senpai.agents.review, reply_to_human); only the judgment comes from the model.  It also records what
each turn spent (`transitions.record_turn`), which the search advisor, with no LLM, does not.

A turn over events that makes no ledger effect and does not `finish` with a reason is told once, in
the same conversation, which tool its events need (`prompts.directive`); if it still changes
nothing, its record says `no_effect` and the job fails with NoEffect (exit 7), which the wrapper
backs off from (`senpai.wrapper.policy`). A turn the SDK's stuck detector stopped before any
ledger effect (a model repeating a refused call) keeps `stuck` in its record and fails the same way.
"""

import json
from datetime import UTC, datetime

from senpai.agents.openhands.conversation import Expectation, run_turn, turn_key
from senpai.agents.openhands.prompts import digest, directive, event_line, read_program, system_suffix, user_turn
from senpai.agents.openhands.tools import LEDGER_TOOLS, senpai_tools
from senpai.agents.openhands.turn import conversations_dir, log_turn, open_session, post_budget_report, walled_tools
from senpai.config.roles import Role
from senpai.errors import NoEffect, TransientError
from senpai.job.context import TurnContext
from senpai.ledger import diversity, transitions
from senpai.ledger.baseline import current_baseline
from senpai.ledger.blocks import TurnCost
from senpai.ledger.events import Event
from senpai.ledger.records import quote

ANSWER_HEAD = 200  # characters of a no-effect turn's last answer quoted in its error (and so in the issue for humans)


def advisor_turn(ctx: TurnContext, events: list[Event], now: datetime | None = None) -> list[str]:
    """One advisor turn over `events`; returns one line per ledger effect, then the turn's outcome.

    Raises TransientError if the LLM provider fails, after recording what the turn spent so far;
    NoEffect if the turn (directive included) changed nothing, after recording it as `no_effect`, or
    the stuck detector stopped it before any ledger effect (recorded as `stuck`)."""
    session, llm, guard = open_session(ctx, Role.ADVISOR, events)
    base_sha = ctx.forge.branch_sha(ctx.base)
    exps = ctx.ledger.experiments()
    space = {k: v.model_dump(exclude_none=True) for k, v in ctx.target.params.space.items()}
    sections = [
        ("Events", "\n".join(event_line(e) for e in events) or "none"),
        ("Ledger digest", digest(exps, current_baseline(exps, base_sha), ctx.target)),
        ("Target", f"train: `{ctx.target.train}`; params file {ctx.target.params.file}; space {json.dumps(space)}"),
    ]
    alarm = diversity.read(exps, ctx.target.params.space, ctx.harness.runtime.diversity)
    if alarm.collapsed:
        sections.append(("Exploration directive", alarm.directive()))
    user = user_turn(now or datetime.now(UTC), ctx.repo.path, sections)
    prs = sorted({e.pr for e in events if e.pr is not None})
    pr = prs[0] if len(prs) == 1 else None
    key = turn_key(Role.ADVISOR, pr, base_sha, extra=",".join(sorted(e.id for e in events)))
    tools = senpai_tools(session)
    try:
        result = run_turn(
            llm=llm,
            senpai_tools=tools,
            system=system_suffix(Role.ADVISOR, read_program(ctx.repo.path, ctx.target)),
            user=user,
            workspace=ctx.repo.path,
            state_dir=conversations_dir(ctx, Role.ADVISOR),
            key=key,
            guard=guard,
            walled=walled_tools(ctx, ctx.repo.path, Role.ADVISOR),
            expect=Expectation(directive(events), LEDGER_TOOLS) if events else None,
        )
    except TransientError:
        # the provider failed mid-turn: the job's next try may hold other events (another key, a new
        # conversation) or never come (escalated), so what this conversation spent is recorded now
        if guard.usage().llm_calls:
            failed = TurnCost(pr=pr, revision=base_sha, key=key, status="error", spent=guard.usage())
            transitions.record_turn(ctx.forge, failed, session.opened)
        raise
    log_turn(ctx, Role.ADVISOR, pr, base_sha, key, guard, result)
    lines = list(session.actions)
    # before any turn-limit report (`senpai-budget`): a replay after a crash between the two finds this one posted
    cost = TurnCost(pr=pr, revision=base_sha, key=key, status=result.status, spent=result.usage)
    lines.append(f"turn spend on #{transitions.record_turn(ctx.forge, cost, session.opened)}")
    if result.status == "budget":
        known = "; ".join(session.actions) or "no ledger effect yet"
        if result.last_message:
            known += f'. Last words, quoted: "{quote(result.last_message)}"'
        missing = "events not yet handled: " + ", ".join(e.id for e in events)
        where = post_budget_report(session, guard, result, pr, base_sha, known, missing)
        lines.append(f"turn-limit report on #{where} ({', '.join(result.exhausted)} exhausted)")
    u = result.usage
    outcome = f"advisor turn {result.status}: {u.llm_calls} LLM calls, {u.tokens} tokens, ${u.dollars:.4f}"
    # a turn stopped (stuck, out of its turn limits) before any ledger effect handled none of its events either
    if result.status == "no_effect" or (result.status in ("stuck", "budget") and events and not result.made):
        head = quote(result.last_message, ANSWER_HEAD) or "(no text)"
        how = {"stuck": "until the stuck detector stopped it", "budget": "until its turn limits stopped it"}.get(
            result.status, "even when told which"
        )
        raise NoEffect(
            f"{outcome}; the model called no tool that changes the ledger, {how} "
            f'({len(events)} event(s): {", ".join(sorted({e.kind for e in events}))}); its last answer began: "{head}"'
        )
    lines.append(outcome)
    return lines
