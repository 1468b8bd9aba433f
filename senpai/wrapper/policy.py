"""Decide: pure functions from what the wrapper sees to what it should do. No I/O here.

Rules (design §3):
- wake the advisor for review-ready PRs, verified PRs, idle students and stale WIP;
- wake a student for an assigned wip/changes PR without a live job;
- launch the verifier for a verifying PR whose (head, base) has no verification;
- at most one advisor turn at a time and one job per student;
- a job that ended without its record gets one: failure evidence (student) or a block (verifier).
"""

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from senpai.config.harness import HarnessConfig
from senpai.fleet.base import JobStatus
from senpai.ledger.events import Event
from senpai.ledger.experiment import Experiment

ADVISOR_RETRIES = 3


@dataclass(frozen=True)
class World:
    """Everything a decision may depend on, read this tick."""

    exps: list[Experiment]
    base_sha: str
    jobs: list[JobStatus]
    now: datetime
    handed: dict[str, str] = field(default_factory=dict)  # event id -> advisor job (state store)


@dataclass(frozen=True)
class Launch:
    role: str
    name: str
    args: list[str]
    wall_seconds: int
    pr: int | None = None
    student: str | None = None
    events: tuple[Event, ...] = ()


@dataclass(frozen=True)
class FailureEvidence:
    pr: int
    attempt: int
    job: str
    to_review: bool


@dataclass(frozen=True)
class Block:
    pr: int
    reason: str


Action = Launch | FailureEvidence | Block


def job_attempt(job: JobStatus) -> int:
    """The attempt number encoded in a job name `senpai-<role>-pr<n>-<attempt>`."""
    return int(job.name.rsplit("-", 1)[1])


def _live(jobs: list[JobStatus]) -> list[JobStatus]:
    return [j for j in jobs if not j.done]


def advisor_events(w: World, cfg: HarnessConfig) -> list[Event]:
    """What the advisor should look at, reviews first, then idle students."""
    events: list[Event] = []
    busy_prs = {j.pr for j in _live(w.jobs) if j.role in ("student", "verifier")}
    stale_after = timedelta(seconds=cfg.stale_after_seconds)
    for e in w.exps:
        if e.error or e.decided:
            continue
        if e.state == "review":
            events.append(Event(id=f"review:pr-{e.pr}@{e.head}", kind="review", pr=e.pr, head=e.head))
        elif e.state == "verifying" and e.verification_for(e.head, w.base_sha):
            events.append(Event(id=f"verified:pr-{e.pr}@{e.head}..{w.base_sha}", kind="verified", pr=e.pr, head=e.head))
        elif e.state == "wip" and e.pr not in busy_prs and w.now - datetime.fromisoformat(e.updated_at) > stale_after:
            events.append(Event(id=f"stale:pr-{e.pr}@{e.head}", kind="stale", pr=e.pr, head=e.head))
    return events + idle_events(w, cfg)


def idle_events(w: World, cfg: HarnessConfig) -> list[Event]:
    """Students with nothing assigned, while the experiment budget and patience allow."""
    room = len(cfg.students) if cfg.max_experiments is None else cfg.max_experiments - len(w.exps)
    if room <= 0 or paused_for_patience(w.exps, cfg):
        return []
    assigned = {e.student for e in w.exps if e.state in ("wip", "changes")}
    idle = [s.name for s in cfg.students if s.name not in assigned][:room]
    return [Event(id=f"idle:{s}@{w.base_sha}:{len(w.exps)}", kind="idle", student=s) for s in idle]


def paused_for_patience(exps: list[Experiment], cfg: HarnessConfig) -> bool:
    """True once `patience` experiments in a row were decided without a merge."""
    if cfg.patience is None:
        return False
    streak = 0
    for e in exps:
        if e.state == "merged":
            streak = 0
        elif e.state == "closed":
            streak += 1
    return streak >= cfg.patience


def plan(w: World, cfg: HarnessConfig) -> list[Action]:
    """Every action for this tick, in the order to take them."""
    actions: list[Action] = [
        Block(e.pr, f"a senpai block is invalid: {e.error}")
        for e in w.exps
        if e.error and e.state not in ("blocked", "merged", "closed")
    ]
    actions += _reap(w)
    actions += _students(w, cfg)
    actions += _verifiers(w, cfg)
    advisor = _advisor(w, cfg)
    return actions + ([advisor] if advisor else [])


def _by_pr(w: World) -> dict[int, Experiment]:
    return {e.pr: e for e in w.exps}


def _reap(w: World) -> list[Action]:
    exps, out = _by_pr(w), []
    for j in w.jobs:
        e = exps.get(j.pr) if j.pr is not None else None
        if not j.done or e is None or e.decided or e.state == "blocked":
            continue
        if j.role == "student" and e.attempts < job_attempt(j) and e.state in ("wip", "changes"):
            budget = e.hypothesis.budget.attempts if e.hypothesis else 1
            out.append(FailureEvidence(e.pr, job_attempt(j), j.name, to_review=job_attempt(j) >= budget))
        elif j.role == "verifier" and e.state == "verifying" and not e.verification_for(e.head, w.base_sha):
            if len(e.verifications) < job_attempt(j):
                out.append(Block(e.pr, f"verifier job {j.name} ended without a verification ({j.reason}, exit {j.exit_code})"))
    return out


def _students(w: World, cfg: HarnessConfig) -> list[Action]:
    live = {j.student for j in _live(w.jobs) if j.role == "student"}
    names = {j.name for j in w.jobs}
    out = []
    for e in w.exps:
        if e.state not in ("wip", "changes") or e.error or e.student is None or e.hypothesis is None:
            continue
        if e.student in live or e.student not in {s.name for s in cfg.students}:
            continue
        attempt = e.attempts + 1
        if e.state == "wip" and attempt > e.hypothesis.budget.attempts:
            continue  # out of attempts; the reaper moved it to review
        name = f"senpai-student-pr{e.pr}-{attempt}"
        if name in names:
            continue  # launched already; it is live or about to be reaped
        args = ["student", "--pr", str(e.pr), "--attempt", str(attempt)]
        out.append(Launch("student", name, args, e.hypothesis.budget.wall_seconds, e.pr, e.student))
        live.add(e.student)
    return out


def _verifiers(w: World, cfg: HarnessConfig) -> list[Action]:
    names = {j.name for j in w.jobs}
    out = []
    for e in w.exps:
        if e.state != "verifying" or e.error or e.verification_for(e.head, w.base_sha):
            continue
        name = f"senpai-verifier-pr{e.pr}-{len(e.verifications) + 1}"
        if name not in names:
            out.append(Launch("verifier", name, ["verify", "--pr", str(e.pr)], cfg.verifier_wall_seconds, e.pr))
    return out


def _advisor(w: World, cfg: HarnessConfig) -> Launch | None:
    if any(j.role == "advisor" for j in _live(w.jobs)):
        return None
    events = [ev for ev in advisor_events(w, cfg) if not _handled(ev, w)]
    if not events:
        return None
    digest = hashlib.sha256("\n".join(sorted(ev.id for ev in events)).encode()).hexdigest()[:10]
    tries = [j for j in w.jobs if j.role == "advisor" and j.name.startswith(f"senpai-advisor-{digest}-")]
    if len(tries) >= ADVISOR_RETRIES:
        return None  # the same batch failed every time; a human must look at the job logs
    name = f"senpai-advisor-{digest}-{len(tries) + 1}"
    return Launch("advisor", name, ["advisor"], cfg.advisor_wall_seconds, events=tuple(events))


def _handled(ev: Event, w: World) -> bool:
    """An event already handed to an advisor job that succeeded is not handed again."""
    job = w.handed.get(ev.id)
    return any(j.name == job and j.phase == "succeeded" for j in w.jobs)
