"""Decide: pure functions from what the wrapper sees to what it should do. No I/O here.

Rules (design §3, §4):
- first what humans wrote (`senpai.wrapper.steering`): slash commands, stops, lost delivery acks,
  issues for humans; a tick that applies a command or a stop does only that;
- wake the advisor for trusted human messages (first), review-ready PRs, verified PRs (a pass only
  as its round's pick: `senpai.wrapper.rounds`), queued
  `/senpai try`s and idle students (unless paused), and stale WIP;
- wake a student for an assigned wip/changes PR without a live job, carrying the messages routed
  to it; messages wait until `steering.batch_seconds` after the first undelivered one, then go
  together in one turn;
- launch the verifier for a verifying PR whose (head, base) has no verification;
- at most one advisor turn at a time and one job per student;
- once a cap of LLM spend (dollars, tokens) is reached, no turn of an LLM role starts
  (`caps.llm_held`), except the advisor's answer to trusted humans' messages: those routed to
  a held student go to the advisor instead; search roles and the verifier (no LLM) go on under
  `on_exhausted` like for any other cap;
- a job that ended without its record gets one: failure evidence (student) or a block (verifier),
  unless it failed for senpai's reasons (`senpai_failure`: on infrastructure, a full volume, or a
  verified PR's re-apply): then it is relaunched under the next name `<name>-r<k>` and spends no
  attempt; after `RELAUNCH.runs` such runs (or `RELAUNCH.advisor_runs` dead advisor turns) its PRs
  are escalated: blocked with one comment each, and one issue for humans;
- a verifying PR whose head someone other than senpai keeps moving under its verifier is blocked
  after HEAD_MOVES verifications of such heads.
- an advisor turn that changed nothing (`no_effect`: its job exits 7) is no success: its events
  are woken again, no sooner than `runtime.no_effect.wait(k)` after the k-th such turn over them;
  after `runtime.no_effect.turns` of them the events are not woken again until they change, the
  PRs they carry are blocked, and one issue for humans (one per advisor model) says the model
  calls no tools, with the last job's log tail (its answer's head).

A launch names no deadline: the Dispatcher gives the job its role's (`senpai.config.time_limits`).
"""

import hashlib
from collections.abc import Collection
from datetime import datetime, timedelta

from senpai.config.harness import HarnessConfig
from senpai.config.roles import Role
from senpai.config.time_limits import RELAUNCH
from senpai.errors import DiskFull, NoEffect, TransientError
from senpai.fleet.base import JobStatus
from senpai.fleet.names import JobName, job_name, parse_job_name
from senpai.ledger import basefails
from senpai.ledger.consistency import reverify
from senpai.ledger.escalation import escalation_id
from senpai.ledger.events import Event, idle_event, message_event, pr_event, try_event
from senpai.ledger.experiment import Experiment
from senpai.ledger.inbox import Inbound
from senpai.ledger.labels import ASSIGNED, STUDENT_PREFIX, ExperimentState, student_label
from senpai.wrapper import rounds
from senpai.wrapper.actions import (
    Action,
    ApplyCommand,
    Block,
    DeleteJob,
    Escalate,
    FailureEvidence,
    FinishAttempts,
    Launch,
    RestoreStudent,
    Stop,
)
from senpai.wrapper.caps import caps_reached, llm_held, stops_jobs
from senpai.wrapper.moves import head_keeps_moving
from senpai.wrapper.patience import paused_for_patience
from senpai.wrapper.steering import current_fingerprint, steering_actions
from senpai.wrapper.world import World

MAX_BASELINE_SOURCES = 4  # PRs a verifier is told to read for reusable baseline seeds
INFRA_EXIT = TransientError.exit_code  # `senpai job` exits 3 when the forge, git or the network failed it
DISK_FULL_EXIT = DiskFull.exit_code  # ... and 6 when a volume it writes to is full (`senpai.fleet.disk`)
NO_EFFECT_EXIT = NoEffect.exit_code  # an advisor job exits 7 when its LLM turn changed nothing
INFRA_REASONS = frozenset({"Lost", "Killed", "Evicted", "NodeLost", "Preempted"})  # the fleet's doing
HYPOTHESIS_REASONS = frozenset({"DeadlineExceeded", "OOMKilled"})  # it ran out of its wall time (the compute budget) or memory


def infra_failure(job: JobStatus) -> bool:
    """True if `job` failed for senpai's or the fleet's reasons, never the hypothesis's.

    Infrastructure: exit status 3 (`senpai job` raised TransientError: forge 5xx, rate limit, git
    fault, after their retries) or 6 (a full volume: DiskFull), reason Lost (its supervisor died),
    Killed (a signal the deadline did not send), Evicted/NodeLost/Preempted, or a failed job that
    never reported an exit status (its pod or node is gone).  The hypothesis's: DeadlineExceeded (its
    wall-time budget), OOMKilled (its memory) and every other exit status (the job ran and failed,
    e.g. exit 4 on a bad block).
    """
    if job.phase != "failed" or job.reason in HYPOTHESIS_REASONS:
        return False
    return job.exit_code in (INFRA_EXIT, DISK_FULL_EXIT, None) or job.reason in INFRA_REASONS


def no_effect(job: JobStatus) -> bool:
    """True if `job` is an advisor job that ran but whose turn changed nothing (exit 7, NoEffect)."""
    return job.role == Role.ADVISOR and job.phase == "failed" and job.exit_code == NO_EFFECT_EXIT


def job_attempt(job: JobStatus) -> int:
    """A student job's attempt, a verifier job's verification number (`senpai.fleet.names`); 0 for
    any other name."""
    n = parse_job_name(job.name)
    return n.number if n and n.role != Role.ADVISOR else 0


def job_retry(job: JobStatus) -> int:
    """k of a relaunch after senpai's failures (`senpai.fleet.names`); 0 for the first run."""
    n = parse_job_name(job.name)
    return n.retry if n else 0


def job_work(job: JobStatus) -> JobName | None:
    """The work a run is for, without its relaunch (`next_run`'s `work`); None for a name senpai did not build."""
    n = parse_job_name(job.name)
    return n.work if n else None


def job_try(job: JobStatus) -> int:
    """An advisor job's try over its event batch (`senpai.fleet.names`); 0 for any other name."""
    n = parse_job_name(job.name)
    return n.number if n and n.role == Role.ADVISOR else 0


def senpai_failure(job: JobStatus, e: Experiment) -> bool:
    """True if `job`, of experiment `e`, failed for senpai's reasons: on infrastructure
    (`infra_failure`), or any failure of a student job on a PR that holds a passing verification
    (its re-apply on a moved base: a hang, its deadline or a crash there never closes a verified PR)."""
    if infra_failure(job):
        return True
    return job.role == Role.STUDENT and job.phase == "failed" and any(v.passed for v in e.verifications)


def next_run(work: JobName, jobs: list[JobStatus], now: datetime, retried=infra_failure) -> str | None:
    """The job name to launch for `work` (a student attempt or a verification), or None if there is
    nothing to launch now.

    `work` itself first; after it failed for senpai's reasons (`retried`, default `infra_failure`),
    its relaunch 1, ... up to `RELAUNCH.runs` runs in all, the k-th relaunch no sooner than
    `RELAUNCH.wait(k)` after the failed run finished.  None while a run is live or backing off,
    once a run ended otherwise (the reaper records it), or when the runs are spent (the reaper
    escalates).
    """
    runs = sorted((j for j in jobs if job_work(j) == work), key=job_retry)
    if not runs:
        return str(work)
    last = runs[-1]
    if not last.done or not retried(last) or len(runs) >= RELAUNCH.runs:
        return None
    wait = timedelta(seconds=RELAUNCH.wait(len(runs)))
    if last.finished_at is not None and now < last.finished_at + wait:
        return None
    return str(work._replace(retry=len(runs)))


def _live(jobs: list[JobStatus]) -> list[JobStatus]:
    return [j for j in jobs if not j.done]


def route(m: Inbound, w: World, cfg: HarnessConfig) -> int | None:
    """Where a free-text message goes: the PR of the student work it addresses, or None (the advisor).

    A comment on a PR goes to that PR's student while the PR is in wip or changes; an issue labelled
    `student:<name>` goes to that student's PR in wip or changes.  Anything else, including those
    when the student has no such PR (or is not configured), goes to the advisor.
    """
    students = {s.name for s in cfg.students}
    for e in w.exps:
        if e.state not in ASSIGNED or e.student not in students or e.error:
            continue
        if (m.on_pr and e.pr == m.message.number) or (m.student is not None and m.student == e.student):
            return e.pr
    return None


def pending_messages(w: World, cfg: HarnessConfig) -> list[Event]:
    """Message events not yet delivered (acked on the forge, or handed to a job that exists), oldest
    first, each routed (`route`), or to the advisor while a spent LLM cap holds the students' LLM
    turns (`caps.llm_held`): the advisor answers the human then."""
    names = {j.name for j in w.jobs}
    held = bool(w.inbox) and llm_held(caps_reached(w, cfg), cfg, Role.STUDENT)
    out = []
    for m in sorted(w.inbox, key=lambda m: m.order):
        ev = message_event(m.message, None if held else route(m, w, cfg))
        if not m.acked and w.handed.get(ev.id) not in names:
            out.append(ev)
    return out


def window_open(events: list[Event], w: World, cfg: HarnessConfig) -> bool:
    """True while the batch window after the first of `events` is still open (wait, then deliver all)."""
    seen = [w.first_seen.get(ev.id, w.now) for ev in events]
    return bool(seen) and w.now < min(seen) + timedelta(seconds=cfg.steering.batch_seconds)


def evidence_version(e: Experiment) -> str:
    """What a PR's advisor event is about besides its head: `/a<attempts>d<decisions>`.

    A head alone is not enough: after a `changes` decision an attempt can die before it pushes,
    and the PR is back in review at the same head with new evidence; that is a new event.
    """
    return f"/a{e.attempts}d{len(e.decisions)}"


def advisor_events(w: World, cfg: HarnessConfig) -> list[Event]:
    """What the advisor should look at: reviews, verifications and stale WIP, then new work."""
    events: list[Event] = []
    busy_prs = {j.pr for j in _live(w.jobs) if j.role in (Role.STUDENT, Role.VERIFIER)}
    stale_after = timedelta(seconds=cfg.stale_after_seconds)
    waiting = rounds.held(w, cfg)  # passes that wait for their round, or lost it
    for e in w.exps:
        if e.error or e.decided:
            continue
        version = evidence_version(e)
        if e.state == ExperimentState.REVIEW:
            events.append(pr_event("review", e.pr, e.head, version))
        elif e.state == ExperimentState.VERIFYING and e.verification_for(e.head, w.base_sha):
            if e.pr in waiting:
                continue
            events.append(pr_event("verified", e.pr, e.head, version + _approved(e, w), base=w.base_sha))
        elif (
            e.state == ExperimentState.WIP and e.pr not in busy_prs and w.now - datetime.fromisoformat(e.updated_at) > stale_after
        ):
            events.append(pr_event("stale", e.pr, e.head, version))
    return events + idle_events(w, cfg)


def _approved(e: Experiment, w: World) -> str:
    """`/ok<fingerprint>` once a human's approval of the PR's current merge is acknowledged, else "".

    A merge waiting for an approval (`senpai.ledger.gate.ApprovalRequired`) leaves the PR verifying
    at the same head: its `verified` event was handled, so the advisor is not woken for it again
    until the approval makes this a new event."""
    fp = current_fingerprint(e, w.base_sha)
    return f"/ok{fp}" if fp and fp in w.steer.approvals.get(e.pr, {}) else ""


def idle_events(w: World, cfg: HarnessConfig) -> list[Event]:
    """New work for students with nothing assigned: queued `/senpai try`s first (one per student,
    oldest first), then an `idle` event per remaining student while the experiment cap and patience
    allow, and while the base's measurement is not blocked for humans (`basefails.held`: it could
    not train on senpai's side, so nothing on that base would).  Nothing while a human has paused
    (`/senpai pause`)."""
    if w.steer.paused or set(caps_reached(w, cfg)) - {"experiments"}:
        return []  # a reached fleet cap (money or the end) stops even a human's `/senpai try`; the experiment cap does not
    assigned = {e.student for e in w.exps if e.state in ASSIGNED}
    idle = [s.name for s in cfg.students if s.name not in assigned]
    opened = {e.hypothesis.request for e in w.exps if e.hypothesis and e.hypothesis.request}
    tries = [t for t in w.steer.tries if t.ref not in opened]
    events = [try_event(t.ref, s, t.params, t.author) for s, t in zip(idle, tries, strict=False)]
    idle = idle[len(events) :]
    cap = w.steer.experiments if w.steer.experiments is not None else cfg.max_experiments
    room = len(idle) if cap is None else cap - len(w.exps) - len(events)
    if room <= 0 or paused_for_patience(w.exps, cfg, w.steer.resumed_after) or basefails.held(w.exps, w.base_sha):
        return events
    resolved = len(basefails.resolved(w.exps, w.base_sha, list(w.issues), w.bot))
    return events + [idle_event(s, w.base_sha, len(w.exps), resolved) for s in idle[:room]]


def plan(w: World, cfg: HarnessConfig) -> list[Action]:
    """Every action for this tick, in the order to take them: the steering rules' first
    (`senpai.wrapper.steering`); when they apply a command or a stop, only those (the rest is
    decided on the re-read they cause: a pause or a stop changes it)."""
    steering = steering_actions(w, cfg)
    if any(isinstance(a, ApplyCommand | Stop) for a in steering):
        return steering
    actions: list[Action] = [
        Block(e.pr, f"a senpai block is invalid: {e.error}")
        for e in [*w.exps, *w.foreign]
        if e.error and not e.decided and e.state != ExperimentState.BLOCKED
    ]
    actions += _human_changes(w)
    actions += _reap(w)
    if _stopping(w, cfg):
        actions += [DeleteJob(j.name, j.pr, "a fleet cap is reached") for j in _live(w.jobs) if j.role != Role.ADVISOR]
    else:
        actions += _students(w, cfg)
        actions += _verifiers(w)
    # a WIP PR this plan launches a student for is not stale (after a long wait for room on a full disk)
    advisor = _advisor(w, cfg, {a.pr for a in actions if isinstance(a, Launch)})
    return steering + actions + ([advisor] if advisor else [])


def _stopping(w: World, cfg: HarnessConfig) -> bool:
    """True when a reached fleet cap (money or the end) stops running student and verifier jobs (`caps.on_exhausted:
    stop`): they are deleted and not relaunched until a `/senpai caps` raises the cap. The
    deleted attempt runs again then; it spends no attempt (the job is gone, so nothing reaps it)."""
    return stops_jobs(caps_reached(w, cfg), cfg)


def _by_pr(w: World) -> dict[int, Experiment]:
    return {e.pr: e for e in w.exps}


def _human_changes(w: World) -> list[Action]:
    """Undo what a human changed by hand under a running experiment: a live job of a decided PR is
    deleted (as `/senpai stop` does); a missing or wrong student label is restored."""
    exps, out = _by_pr(w), []
    for j in _live(w.jobs):
        e = exps.get(j.pr) if j.pr is not None else None
        if e is not None and e.decided:
            out.append(DeleteJob(j.name, e.pr, f"PR #{e.pr} is {e.state}"))
    for e in w.exps:
        labels = w.labels.get(e.pr)
        if e.decided or e.student is None or labels is None:
            continue
        if [x for x in labels if x.startswith(STUDENT_PREFIX)] != [student_label(e.student)]:
            out.append(RestoreStudent(e.pr, e.student))
    return out


def _reap(w: World) -> list[Action]:
    exps, out = _by_pr(w), []
    for j in w.jobs:
        e = exps.get(j.pr) if j.pr is not None else None
        if not j.done or e is None or e.decided or e.state == ExperimentState.BLOCKED:
            continue
        if j.role == Role.STUDENT and e.attempts < job_attempt(j) and e.state in ASSIGNED:
            if senpai_failure(j, e):
                out += _spent(j, e.pr, w)  # relaunched by _students until the runs are spent
                continue
            budget = e.hypothesis.budget.attempts if e.hypothesis else 1
            out.append(FailureEvidence(e.pr, job_attempt(j), j.name, to_review=job_attempt(j) >= budget))
        elif j.role == Role.VERIFIER and e.state == ExperimentState.VERIFYING and not e.verification_for(e.head, w.base_sha):
            if len(e.verifications) >= job_attempt(j):
                continue
            if infra_failure(j):
                out += _spent(j, e.pr, w)
            else:
                out.append(Block(e.pr, f"verifier job {j.name} ended without a verification ({j.reason}, exit {j.exit_code})"))
    return out


def _spent(j: JobStatus, pr: int, w: World) -> list[Action]:
    """Escalate if `j` was the last run its infrastructure retries allow; otherwise nothing (yet)."""
    if job_retry(j) + 1 < RELAUNCH.runs:
        return []
    base = str(job_work(j) or j.name)
    # a verifier exits 3 too when the base head fails its own train or score step (BaselineFailed):
    # the target's or senpai's problem, not the hypothesis's; the log tail in the issue says which
    why = (
        "on infrastructure, or because the base head failed its own train or score step,"
        if j.role == Role.VERIFIER
        else "on infrastructure,"
    )
    if j.exit_code == DISK_FULL_EXIT:
        why = "because a volume it writes to is full (no space left: its last lines below name the folder),"
    elif not infra_failure(j):  # `senpai_failure`: a student job re-applying a verified PR
        why = "while re-applying a PR that passed verification (a hang, its deadline or a crash there),"
    reason = (
        f"job `{base}` failed {RELAUNCH.runs} times {why} not on the hypothesis "
        f"(last run `{j.name}`: {j.reason}, exit {j.exit_code}). No attempt was spent; see the job logs."
    )
    title = "a volume is full" if j.exit_code == DISK_FULL_EXIT else Escalate.title
    return [Escalate((pr,), reason, base, j.name, title)]


def _students(w: World, cfg: HarnessConfig) -> list[Action]:
    held = llm_held(caps_reached(w, cfg), cfg, Role.STUDENT)  # no LLM turn starts
    live = {j.student for j in _live(w.jobs) if j.role == Role.STUDENT}
    busy = {j.pr for j in _live(w.jobs)}
    messages = [ev for ev in pending_messages(w, cfg) if ev.pr is not None]
    out: list[Action] = []
    for e in w.exps:
        if e.state not in ASSIGNED or e.error or e.student is None or e.hypothesis is None:
            continue
        attempt = e.attempts + 1
        if e.state == ExperimentState.WIP and attempt > e.hypothesis.budget.attempts:
            out += [FinishAttempts(e.pr)] if e.pr not in busy and e.evidence else []
            continue  # out of attempts: to review (the reaper or the job's own evidence normally does it)
        if held or e.student in live or e.student not in {s.name for s in cfg.students}:
            continue
        name = next_run(JobName(Role.STUDENT, attempt, pr=e.pr), w.jobs, w.now, lambda j, e=e: senpai_failure(j, e))
        if name is None:
            continue  # live, or about to be reaped (evidence, or escalation once its retries are spent)
        mine = [ev for ev in messages if ev.pr == e.pr]
        if window_open(mine, w, cfg):
            continue  # a message for this student is on its way: wait for the batch, then go with it
        args = ["student", "--pr", str(e.pr), "--attempt", str(attempt)]
        out.append(Launch(Role.STUDENT, name, args, e.pr, e.student, tuple(mine)))
        live.add(e.student)
    return out


def _verifiers(w: World) -> list[Action]:
    """A verifier per PR that owes one. A base no verification has measured yet gets one verifier
    at a time (none while another runs): it measures the baseline's seeds, and the verifiers
    launched after it reuse them (`senpai.verifier.reuse`) instead of training the same seeds again.
    Once a verifier of an owed verification has failed (it may fail again, and its retries back
    off), nobody waits for it: every owed verifier goes."""
    out: list[Action] = []
    measured: dict[str, list[int]] | None = None  # worked out once a verifier is owed (most ticks owe none)
    owed = [(e, base) for e in w.exps if (base := _owed_base(e, w.base_sha))]
    runs = [JobName(Role.VERIFIER, len(e.verifications) + 1, pr=e.pr) for e, _ in owed]
    failed = {job_work(j) for j in w.jobs if j.role == Role.VERIFIER and j.phase == "failed"}
    stalled = bool(failed.intersection(runs))  # an owed verifier failed: nobody waits for it
    busy = any(j.role == Role.VERIFIER for j in _live(w.jobs)) and not stalled
    for (e, base), run in zip(owed, runs, strict=True):
        if moved := head_keeps_moving(e):
            out.append(Block(e.pr, moved))
            continue
        name = next_run(run, w.jobs, w.now)
        if name is None:
            continue
        measured = _measured_bases(w.exps) if measured is None else measured
        if base not in measured and busy:
            continue
        out.append(_verifier(name, e, measured.get(base, [])))
        busy = not stalled
    return out


def _owed_base(e: Experiment, base_sha: str) -> str | None:
    """The base `e` owes a verification against, if any: a merged PR's base that moved after its
    verification (`reverify`), or the current base for a PR in verifying without one."""
    if e.state == ExperimentState.MERGED and (owed := reverify(e)):
        return owed[1]
    if e.state == ExperimentState.VERIFYING and not e.error and not e.verification_for(e.head, base_sha):
        return base_sha
    return None


def _measured_bases(exps: list[Experiment]) -> dict[str, list[int]]:
    """Base commit -> the PRs (newest first, at most MAX_BASELINE_SOURCES) whose verifications
    measured its tree with a key (`reuse.measurement_key`): those that measured it as their
    baseline, and the verified merge that made it (its candidate side measured the tree the merge
    landed). A base measured only without a key (its seeds cannot be reused) maps to no PR: its
    verifiers need not wait."""
    out: dict[str, list[int]] = {}
    for e in sorted(exps, key=lambda e: -e.pr):
        # a merge that landed on a moved base measured another tree, until its re-verification is recorded
        if e.merge_commit and reverify(e) is None and any(v.passed and v.candidate_key for v in e.verifications):
            prs = out.setdefault(e.merge_commit, [])
            if e.pr not in prs:
                prs.insert(0, e.pr)  # the merge's own seeds first: they measured the base's tree
                del prs[MAX_BASELINE_SOURCES:]
        for v in e.verifications:
            if not v.baseline_values:
                continue
            prs = out.setdefault(v.baseline, [])
            if v.baseline_key and len(prs) < MAX_BASELINE_SOURCES and e.pr not in prs:
                prs.append(e.pr)
    return out


def _verifier(name: str, e: Experiment, sources: list[int]) -> Launch:
    """The verifier of `e`, as its student: the job gets the student's GPUs to train both sides.
    `sources`: PRs whose verifications measured the base, for it to reuse (`--baseline-from`)."""
    args = ["verify", "--pr", str(e.pr), *(a for pr in sources if pr != e.pr for a in ("--baseline-from", str(pr)))]
    return Launch(Role.VERIFIER, name, args, e.pr, e.student)


def _advisor(w: World, cfg: HarnessConfig, launching: Collection[int | None] = ()) -> Launch | Escalate | None:
    if any(j.role == Role.ADVISOR for j in _live(w.jobs)):
        return None
    messages = [ev for ev in pending_messages(w, cfg) if ev.pr is None]
    if window_open(messages, w, cfg):
        return None  # messages go first and together: wait for the batch window to close
    events = messages
    if not llm_held(caps_reached(w, cfg), cfg, Role.ADVISOR):  # else only humans are answered
        fresh = [ev for ev in advisor_events(w, cfg) if not _handled(ev, w)]
        events = messages + [ev for ev in fresh if not (ev.kind == "stale" and ev.pr in launching)]
    if not events:
        return None
    digest = hashlib.sha256("\n".join(sorted(ev.id for ev in events)).encode()).hexdigest()[:10]
    tries = [j for j in w.jobs if j.role == Role.ADVISOR and (n := parse_job_name(j.name)) and n.digest == digest]
    ineffective = [j for j in tries if no_effect(j)]
    if len(ineffective) >= cfg.runtime.no_effect.turns:
        return _advisor_ineffective(events, ineffective, w, cfg)
    if len(tries) - len(ineffective) >= RELAUNCH.advisor_runs:
        return _advisor_spent(events, tries, digest, w)
    last = max(tries, key=job_try, default=None)
    if last is not None and last.phase == "failed" and last.finished_at is not None:
        wait = cfg.runtime.no_effect.wait(len(ineffective)) if no_effect(last) else RELAUNCH.wait(len(tries))
        if w.now < last.finished_at + timedelta(seconds=wait):
            return None  # the same batch just died, or changed nothing: back off
    name = job_name(Role.ADVISOR, len(tries) + 1, digest=digest)
    return Launch(Role.ADVISOR, name, ["advisor"], events=tuple(events))


def _advisor_spent(events: list[Event], tries: list[JobStatus], digest: str, w: World) -> Escalate | None:
    """The same batch died `RELAUNCH.advisor_runs` times: block the PRs it carried and open one issue.

    Once the PRs are blocked their events leave the batch, so the rest forms a new batch (a new
    digest) with retries of its own; a batch without PRs is escalated once (`w.escalated`).
    """
    prs = tuple(sorted({ev.pr for ev in events if ev.pr is not None}))
    key = f"senpai-advisor-{digest}"
    if not prs and escalation_id(key) in w.escalated:
        return None
    last = max(tries, key=lambda j: j.name)
    kinds = ", ".join(sorted({ev.kind for ev in events}))
    reason = (
        f"{len(tries)} advisor turns for the same {len(events)} event(s) ({kinds}) died "
        f"(last `{last.name}`: {last.reason}, exit {last.exit_code}). No attempt was spent; see the job logs."
    )
    return Escalate(prs, reason, key, last.name)


def _advisor_ineffective(events: list[Event], turns: list[JobStatus], w: World, cfg: HarnessConfig) -> Escalate | None:
    """The same batch woke `runtime.no_effect.turns` advisor turns that changed nothing: block the
    PRs it carries (a human decides them) and open one issue per advisor model (its key), quoting
    the last turn's answer through its log tail. A batch without PRs is left once the issue exists:
    its events wake the advisor again only once they change (a new base, a new experiment)."""
    model = getattr(cfg.runtime.advisor.llm, "model", cfg.runtime.advisor.kind)
    key = f"senpai-advisor-no-effect:{model}"
    prs = tuple(sorted({ev.pr for ev in events if ev.pr is not None}))
    if not prs and escalation_id(key) in w.escalated:
        return None
    last = max(turns, key=job_try)
    kinds = ", ".join(sorted({ev.kind for ev in events}))
    reason = (
        f"{len(turns)} advisor turns over the same {len(events)} event(s) ({kinds}) changed nothing: the model "
        f"`{model}` answered without calling a tool that changes the ledger, even when told which tool to call "
        "(or repeated a refused call until the stuck detector stopped it). "
        "It may write its tool calls as text: it needs native tool calling (or a chat template that renders tools, "
        "and `tool_choice: required`). These events wake it again only once they change. The head of its last "
        "answer is in the last lines below."
    )
    return Escalate(prs, reason, key, last.name, "the advisor's model calls no tools")


def _handled(ev: Event, w: World) -> bool:
    """An event already handed to an advisor job that succeeded is not handed again."""
    job = w.handed.get(ev.id)
    return any(j.name == job and j.phase == "succeeded" for j in w.jobs)
