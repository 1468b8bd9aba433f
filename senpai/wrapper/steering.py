"""Steering rules: what the wrapper does about what humans wrote, as actions. No I/O here.

Slash commands are applied by code, whatever the runtime. Each command message is answered by
one acknowledgement: the applied commands in a `senpai-steer` block (`ApplyCommand`), or, if any
line is bad, the syntax and nothing applied (`Ack`). The queries `/senpai help` and `/senpai status`
are answered in that same ack (a message of queries alone: a plain `Ack`), so a replay answers
nothing twice. The ack *is* the record: the steering state (paused, experiment cap, queued tries,
stops) is folded from these blocks, so replaying a tick, restarting the wrapper or deleting its
state store applies nothing twice and loses nothing.
`/senpai stop` has effects outside the ack (job deleted, PR closed): they follow the ack, and every
acknowledged stop is made true again on each fresh read (`Stop`), so a crash in between is
finished by the next tick; `/senpai reject <fingerprint> reason` is a stop that closes with the
human's reason. `/senpai allow compute` and `/senpai approve <fingerprint>` are only their acks:
the merge gate reads them from the PR's comments (`senpai.ledger.inbox.pr_steer`). An approve or
reject must name the PR's current fingerprint (`senpai.ledger.gate.fingerprint` of its head, the
base and their verification), so a human never answers a merge that is no longer the one asked about.

Free-text messages become events (`senpai.wrapper.policy.pending_messages`); the `Dispatcher`
acknowledges each as it launches the job it is handed to ("delivered to ..."), and
`delivery_repairs` acknowledges one whose ack was lost (a crash after the launch).  A message is
delivered once it is acknowledged or handed to a job that exists in the fleet: the hand-over is
written to the store before the launch, so a crash before the launch names a job that does not
exist and the message goes again.  The one double delivery left is a crash between the launch and
its delivery ack with the store deleted as well: nothing then says the job got it.

Humans are also asked, once each: when patience paused new work (`senpai.wrapper.patience`), when
a fleet cap is reached (`senpai.wrapper.caps`), when a merge or a base head is not senpai's
verified work, and when a decided PR's hypothesis record was edited (`hand_made_issues`). The
bot's exhaustion report is closed once a newer one supersedes it or no cap is reached any more.
"""

from senpai.config.harness import HarnessConfig
from senpai.config.roles import Role
from senpai.fleet.base import JobStatus
from senpai.ledger.blocks import CAPS_VERB, Steer, SteerCommand
from senpai.ledger.commands import SYNTAX, CommandError, parse_commands, renamed_notes
from senpai.ledger.consistency import check, record_flags, seen_bases, verified_merge
from senpai.ledger.events import message_id, message_ref
from senpai.ledger.experiment import Experiment
from senpai.ledger.gate import fingerprint
from senpai.ledger.inbox import CAP_FIELDS, Inbound, SteerState, apply_command
from senpai.ledger.labels import ATTENTION, SENPAI, STEER, ExperimentState
from senpai.ledger.records import digest
from senpai.wrapper.actions import Ack, Action, ApplyCommand, Launch, OpenIssue, Stop
from senpai.wrapper.caps import exhaustion_issue, stale_reports
from senpai.wrapper.patience import patience_issue
from senpai.wrapper.status import LastTick, build_status
from senpai.wrapper.world import World


def steering_actions(w: World, cfg: HarnessConfig) -> list[Action]:
    """Every steering action for this tick, in order: the unacknowledged command messages in the
    order they were written (`Inbound.order`), each against the state the earlier ones leave; the
    acknowledged stops not yet true; lost delivery acks; the issues humans are owed (those judged on
    the steering state, patience's and the fleet caps', only in a tick that applies no command or
    stop: they are judged on the re-read that follows). Nothing unless the humans' messages were
    read this tick (`World.fresh`): an action is planned on what the forge says now, never on a view
    its own last actions changed."""
    if not w.fresh:
        return []
    out: list[Action] = []
    state, stopped = w.steer, set()
    for m in sorted(w.commands, key=lambda m: m.order):
        action, state = command_action(m, w, state, cfg)
        out.append(action)
        stopped |= {s.pr for s in action.stops} if isinstance(action, ApplyCommand) else set()
    for e in w.exps:
        if (author := w.steer.stops.get(e.pr)) and not e.decided and e.pr not in stopped:
            out.append(stop_for(w, e.pr, author))
        elif (r := w.steer.rejects.get(e.pr)) and not e.decided and e.pr not in stopped:
            out.append(stop_for(w, e.pr, r.author, r.reason))
    out += delivery_repairs(w)
    if any(isinstance(a, ApplyCommand | Stop) for a in out):
        # the steering state (and the ledger) this read holds is the one these change: the reports
        # judged on it (a cap reached, patience run out) wait for the re-read, as the rest of the plan does
        return out + hand_made_issues(w)
    issues = [patience_issue(w, cfg), exhaustion_issue(w, cfg)]
    return out + [i for i in issues if i] + stale_reports(w, cfg) + hand_made_issues(w)


NEEDS_WRITE = (
    "`/senpai` commands that change senpai's state need write permission on this repository, and you have none "
    "(`/senpai help` and `/senpai status` do not need it). Ask a maintainer to post the command, or to give you write access."
)


def command_action(m: Inbound, w: World, state: SteerState, cfg: HarnessConfig) -> tuple[Ack | ApplyCommand, SteerState]:
    """The answer to one command message and the steering state after it. A command that changes
    state is applied only if its author may write (`Inbound.writer`); otherwise the whole message is
    refused (`NEEDS_WRITE`). A `/senpai try` is checked against the params space of the base's
    senpai.yaml (`World.target`). Queries (`help`, `status`) are answered in the same ack, after what
    the other commands did; a message of queries alone gets a plain ack (no record: it changes nothing)."""
    msg = m.message
    if m.closed:
        return Ack(msg, f"PR #{msg.number} is closed: nothing was done. Steer on an open PR or a `{STEER}` issue."), state
    space = w.target.params.space if w.target else None
    try:
        parsed = parse_commands(msg.body, space, msg.number if m.on_pr else None)
        if not m.writer and any(isinstance(c, SteerCommand) for c in parsed):
            return Ack(msg, f"Nothing was applied: {NEEDS_WRITE}"), state
        commands = [_check(c, w) for c in parsed if isinstance(c, SteerCommand)]
    except CommandError as e:
        return Ack(msg, f"Nothing was applied: {e}\n\n{SYNTAX}"), state
    queries = dict.fromkeys(c for c in parsed if isinstance(c, str))  # each answered once, in order
    if not commands:
        return Ack(msg, "\n\n".join(_answer(q, w, state, cfg) for q in queries)), state
    block = Steer(message=message_ref(msg), author=msg.author, commands=commands)
    done = []
    for i, c in enumerate(commands):  # each reply tells the state its command leaves
        state = apply_command(state, block, i, c)
        done.append(_describe(c, len(w.exps), w.jobs, state))
    stops = tuple(
        stop_for(w, c.pr, msg.author, c.reason if c.verb == "reject" else None)
        for c in commands
        if c.verb in ("stop", "reject") and c.pr is not None
    )
    done += renamed_notes(msg.body)  # `/senpai budget`, read as `/senpai caps`
    answers = "\n\n".join(_answer(q, w, state, cfg) for q in queries)  # the status the commands leave
    return ApplyCommand(msg, tuple(done), block, stops, answers), state


def _answer(query: str, w: World, state: SteerState, cfg: HarnessConfig) -> str:
    """The answer to a query: the syntax (`help`), or the status from this tick's reads and the
    steering state `state` (`status`)."""
    if query == "help":
        return SYNTAX
    tick = LastTick(at=w.now, source="wrapper", detail="this tick answers")
    return build_status(cfg, w.exps, w.jobs, state, w.now, tick, w.rate_limit, w.base_sha).markdown()


def stop_for(w: World, pr: int, author: str, reason: str | None = None) -> Stop:
    """The stop of PR `pr` for `author`, with the PR's live jobs to delete; `reason`: a `/senpai
    reject`'s (the PR is closed as rejected with it)."""
    return Stop(pr, author, tuple(j.name for j in w.jobs if j.pr == pr and not j.done), reason)


def _check(c: SteerCommand, w: World) -> SteerCommand:
    """Completes `c` with what the ledger says, or raises CommandError before anything is applied."""
    if c.verb == "resume":
        return c.model_copy(update={"decided": sorted(e.pr for e in w.exps if e.decided)})
    if c.verb in ("stop", "allow", "approve", "reject"):
        exp = next((e for e in w.exps if e.pr == c.pr), None)
        if exp is None or exp.decided:
            raise CommandError(f"PR #{c.pr} is not an open senpai experiment")
        if c.verb in ("approve", "reject") and c.fingerprint != (current := current_fingerprint(exp, w.base_sha)):
            now = f"the current one is `{current}`" if current else "it has no verification of its head on the current base"
            raise CommandError(
                f"`{c.fingerprint}` is not the fingerprint of PR #{c.pr}'s merge as it is now ({now}): "
                "its head, the base or the verification changed since"
            )
    return c


def current_fingerprint(e: Experiment, base_sha: str) -> str | None:
    """The fingerprint of merging `e`'s head into `base_sha` as verified now (None: not verified)."""
    v = e.verification_for(e.head, base_sha)
    return fingerprint(e.head, base_sha, v) if v else None


ALL_CAP_FIELDS = {"experiments", *CAP_FIELDS}


def _describe(c: SteerCommand, opened: int, jobs: list[JobStatus], state: SteerState) -> str:
    """The reply line of `c`; `state` is the steering state right after it."""
    if c.verb == "pause":
        return "paused: no new experiments are opened until `/senpai resume`; running jobs, reviews and verifications go on"
    if c.verb == "resume":
        return "resumed: new experiments are opened again (patience counts from now)"
    if c.verb == CAPS_VERB:
        return (
            "caps set: "
            + ", ".join(f"{k} {v}" for k, v in c.model_dump(include=ALL_CAP_FIELDS, exclude_none=True).items())
            + (f" ({opened} experiments opened so far)")
        )
    if c.verb == "try":
        point = ", ".join(f"`{k}={v}`" for k, v in c.params.items())
        when = " after `/senpai resume`" if state.paused else ""
        return f"queued {point}: it is opened for the next idle student{when}, before any proposal"
    if c.verb == "allow":
        return f"allowed PR #{c.pr} more compute than senpai.yaml's tolerance: the merge gate accepts its compute"
    if c.verb == "approve":
        return f"approved the merge of PR #{c.pr} (fingerprint `{c.fingerprint}`): the advisor merges it if the gate passes"
    if c.verb == "reject":
        return f"rejected PR #{c.pr} (fingerprint `{c.fingerprint}`): closing it with your reason"
    live = [j.name for j in jobs if j.pr == c.pr and not j.done]
    return f"stopped PR #{c.pr}: " + (f"deleting job {', '.join(live)}, " if live else "") + "closing it with a decision"


def delivered_text(launch: Launch) -> str:
    """The ack of a message handed to the job `launch` starts."""
    if launch.role == Role.ADVISOR:
        return f"Delivered to the advisor (job `{launch.name}`)."
    return f"Delivered to student {launch.student} on PR #{launch.pr} (job `{launch.name}`)."


def delivery_repairs(w: World) -> list[Ack]:
    """Acks for messages handed to an existing job whose ack was lost (a crash after the launch)."""
    by_name = {j.name: j for j in w.jobs}
    out = []
    for m in w.inbox:
        job = by_name.get(w.handed.get(message_id(m.message), ""))
        if not m.acked and job is not None:
            target = "the advisor" if job.role == Role.ADVISOR else f"student {job.student} (PR #{job.pr})"
            out.append(Ack(m.message, f"Delivered to {target} (job `{job.name}`)."))
    return out


def hand_made_issues(w: World) -> list[OpenIssue]:
    """One issue per merge senpai did not verify (a merge by hand, or onto a base that moved), one
    per base head no senpai merge produced (a push by hand), and one per decided PR whose hypothesis
    record is gone or changed (and state of it), each with its marker so that none
    is opened twice (the `Dispatcher` looks the markers up). None while an advisor turn runs: it
    may be between its merge and its decision comment."""
    if any(j.role == Role.ADVISOR and not j.done for j in w.jobs):
        return []
    bases, flags, out = seen_bases(w.exps), check(w.exps, w.base_sha), []
    for e in w.exps:
        if e.state != ExperimentState.MERGED or verified_merge(e, bases):
            continue
        what = "\n".join(f"- {f}" for f in flags.prs.get(e.pr, []))
        body = (
            f"PR #{e.pr} was merged, but not by a verified senpai merge:\n\n{what}\n\n"
            "senpai does not take it as the baseline: the base has no measured value until the next "
            "verified merge. Check the merged code, then revert it or let the next experiments measure it."
        )
        out.append(_issue(f"hand-merge:pr-{e.pr}", f"senpai: PR #{e.pr} was merged unverified (by hand?)", body))
    out += [_record_issue(e, lost) for e in w.exps if (lost := record_flags(e))]
    if flags.base:
        body = (
            f"The base branch head `{w.base_sha[:12]}` was not produced by a senpai merge (a push by hand?):\n\n"
            + "\n".join(f"- {f}" for f in flags.base)
            + "\n\nsenpai does not take it as a measured baseline: its code is not what any verification "
            "measured. Check the commit, then revert it or let the next experiments measure it."
        )
        out.append(_issue(f"hand-push:{w.base_sha}", f"senpai: the base moved by hand to {w.base_sha[:8]}", body))
    return out


def _record_issue(e: Experiment, flags: list[str]) -> OpenIssue:
    """The issue for a decided PR whose hypothesis record is gone or changed (`consistency.record_flags`):
    one per PR and state of its body (the record's digest, or gone), so a later edit is told again."""
    state = digest(e.hypothesis) if e.hypothesis else "gone"
    body = (
        f"PR #{e.pr} was decided ({e.state}), but its body no longer holds the hypothesis record senpai wrote:\n\n"
        + "\n".join(f"- {f}" for f in flags)
        + "\n\nThe ledger reads a PR's hypothesis (its params, metric and baseline) from that record, so "
        "`senpai ledger` and the advisor's history now show what the edit left. Restore the description from "
        "the PR's edit history (the forge keeps it); senpai never edits a decided PR."
    )
    return _issue(f"hypothesis-record:pr-{e.pr}:{state}", f"senpai: the hypothesis record of PR #{e.pr} was edited", body)


def _issue(key: str, title: str, body: str) -> OpenIssue:
    marker = f"<!-- senpai:{key} -->"
    return OpenIssue(marker, title, f"{body}\n\n{marker}", (SENPAI, ATTENTION))
