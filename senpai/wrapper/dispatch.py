"""Dispatch and reap: turn the policy's actions into fleet jobs, ledger writes and replies to humans.

This is the only place the wrapper writes: launching is idempotent (deterministic job names;
already exists = success), every ledger write goes through `senpai.ledger.transitions` (or
`senpai.ledger.escalation`), every reply to a human through `senpai.ledger.replies.reply_to_human`
(once per message version and kind), and an issue for humans is opened once per marker (and
closed, when it no longer holds, with one comment), so a replayed action is harmless.
"""

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from senpai.config.harness import ENV_CONFIG
from senpai.config.time_limits import TimeLimits
from senpai.errors import ConfigError, DiskFull, SenpaiError
from senpai.fleet.base import Fleet, JobSpec
from senpai.forge.port import ForgeReadWrite
from senpai.ledger import escalation, transitions
from senpai.ledger.blocks import Decision, Evidence
from senpai.ledger.events import ENV_EVENTS, EventBatch
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ATTENTION, SENPAI, STEER, ExperimentState
from senpai.ledger.records import neutral, unmention
from senpai.ledger.redact import redact
from senpai.ledger.replies import reply_to_human
from senpai.ledger.table import LedgerReader
from senpai.wrapper.actions import (
    Ack,
    Action,
    ApplyCommand,
    Block,
    CloseIssue,
    DeleteJob,
    Escalate,
    FailureEvidence,
    FinishAttempts,
    Launch,
    OpenIssue,
    RestoreStudent,
    Stop,
)
from senpai.wrapper.steering import delivered_text

log = logging.getLogger(__name__)
ESCALATION_TAIL = 12  # log lines of the last failed run shown in an escalation issue
FULL_HOLD_SECONDS = 30.0  # no launch for this long after one found the fleet's volume full; doubled per repeat
FULL_HOLD_MAX_SECONDS = 600.0


@dataclass(frozen=True)
class JobInputs:
    """What the jobs launched in one tick are given, an input of that tick (`WrapperLoop.tick`):
    their deadlines, from the time limits for senpai.yaml at the base (`TimeLimits.of`), or the
    ConfigError saying why there is none (every job would fail to load senpai.yaml, so none is
    launched), and the environment added to each (the base mirror's sha, the ledger snapshot's time)."""

    time_limits: TimeLimits | ConfigError
    env: Mapping[str, str] = field(default_factory=dict)


NOT_READ = JobInputs(ConfigError("senpai.yaml at the base is not read yet"))


def job_spec(
    a: Launch, config_path: str, wall_seconds: int, gpus: int = 0, cpus: int = 1, env: Mapping[str, str] | None = None
) -> JobSpec:
    """The fleet job for `a`: `python -m senpai job <args>` with the harness config path (and `env`,
    e.g. the base sha the wrapper mirrored), its deadline `wall_seconds`, and the GPUs and CPU cores
    of its student (an advisor job: none, and one core)."""
    env = {**(env or {}), ENV_CONFIG: config_path}
    if a.events:
        env[ENV_EVENTS] = EventBatch(events=list(a.events)).model_dump_json()
    command = [sys.executable, "-m", "senpai", "job", *a.args]
    return JobSpec(
        name=a.name,
        role=a.role,
        pr=a.pr,
        student=a.student,
        command=command,
        env=env,
        wall_seconds=wall_seconds,
        gpus=gpus,
        cpus=cpus,
    )


def failure_evidence(exp: Experiment, a: FailureEvidence, logs: str, reason: str) -> Evidence:
    """Evidence for an attempt whose job ended without posting any (crash, deadline, lost); its
    primary result names the hypothesis's metric and baseline value, as a student's own does."""
    h = exp.hypothesis
    return Evidence.of(
        h,
        metric=h.metric.name if h else "metric",
        value=None,
        failure=f"job {a.job} ended without evidence: {reason}",
        interpretation="the job died before it could report; see the log tail",
        pr=exp.pr,
        attempt=a.attempt,
        student=exp.student or "unknown",
        head=exp.head,
        command=f"senpai job student --pr {exp.pr} --attempt {a.attempt}",
        log_tail=logs[-4000:],
    )


def _arms(a: Launch, exps: dict[int, Experiment]) -> int:
    """How many training runs the job of `a` holds: its PR's hypothesis's arms (`Hypothesis.arm_count`,
    at most MAX_ARMS, from the bot's own PR body), 1 for a job without a PR or hypothesis."""
    exp = exps.get(a.pr) if a.pr is not None else None
    return exp.hypothesis.arm_count() if exp is not None and exp.hypothesis is not None else 1


class Dispatcher:
    """Carries out the policy's actions (`apply`), one at a time, on the forge and the fleet."""

    def __init__(
        self,
        forge: ForgeReadWrite,
        fleet: Fleet,
        config_path: str,
        gpus: dict[str, int],
        cpus: dict[str, int] | None = None,
        ledger: LedgerReader | None = None,
    ) -> None:
        self.forge, self.fleet, self.config_path, self.gpus, self.cpus = forge, fleet, config_path, gpus, cpus or {}
        self.ledger = ledger  # its cached comments of a thread are dropped once we post there
        self._issues: dict[str, int] = {}  # marker -> number of the issues for humans known to exist (opened or found)
        self.clock: Callable[[], float] = time.monotonic  # the launch hold's clock (seconds)
        self._full, self._held_until = 0, 0.0  # launches that found the fleet's volume full in a row; no launch before

    def _hold(self, e: DiskFull) -> None:
        """The fleet's volume is full: open one issue for humans naming it, and launch nothing until
        the hold ends (FULL_HOLD_SECONDS, doubled per launch that finds it full again, at most
        FULL_HOLD_MAX_SECONDS), so a full disk costs one error a hold, not one a tick. Nothing is
        spent or closed meanwhile: the PRs that wait for a job keep their state."""
        self._full += 1
        hold = min(FULL_HOLD_SECONDS * 2 ** (self._full - 1), FULL_HOLD_MAX_SECONDS)
        self._held_until = self.clock() + hold
        log.warning("no job is launched for %.0f s: %s", hold, e)
        key = f"disk-full:{e.path}"
        marker = f"<!-- senpai:escalation:{escalation.escalation_id(key)} -->"
        body = (
            f"senpai cannot launch jobs: {e}.\n\nNo attempt is spent and no PR is closed: the PRs waiting "
            f"for a job keep their state. senpai tries one launch again after {hold:.0f} s, then less often "
            f"(at least every {FULL_HOLD_MAX_SECONDS:.0f} s), and goes on by itself once there is room. Free "
            f"space on the volume that holds `{e.path}`."
        )
        title = f"senpai: no space left for the fleet's jobs ({e.path})"
        with contextlib.suppress(SenpaiError):  # the forge may fail too: the next hold tries again
            self._open_issue(OpenIssue(marker, redact(title), f"{redact(body)}\n\n{marker}", (SENPAI, STEER, ATTENTION)))

    def apply(self, action: Action, exps: dict[int, Experiment], inputs: JobInputs = NOT_READ) -> str:
        """Carry out one action; returns a one-line description for progress output ("" if there was
        nothing left to do). A launch takes its deadline and environment from `inputs`. Raises
        SenpaiError subclasses as the forge and the fleet do; ConfigError for a launch without
        time limits."""
        if isinstance(action, Launch):
            if isinstance(inputs.time_limits, ConfigError):
                raise ConfigError(f"{action.name} not launched: {inputs.time_limits}")
            if self.clock() < self._held_until:
                return ""  # the fleet's volume is full: one launch tries again once the hold ends
            student, wall = action.student or "", inputs.time_limits.deadline(action.role, _arms(action, exps))
            spec = job_spec(action, self.config_path, wall, self.gpus.get(student, 0), self.cpus.get(student, 1), inputs.env)
            try:
                self.fleet.launch(spec)
            except DiskFull as e:
                self._hold(e)
                raise
            self._full = 0
            for ev in action.events:  # tell each human whose message it carries where it went
                if ev.kind == "message" and ev.message is not None:
                    self._reply(ev.message, delivered_text(action))
            what = f"#{action.pr}" if action.pr else f"{len(action.events)} event(s)"
            return f"launched {action.name} ({what})"
        if isinstance(action, Ack):
            posted = self._reply(action.message, action.text)
            return f"#{action.message.number}: answered @{action.message.author}" if posted else ""
        if isinstance(action, ApplyCommand):
            m = action.message
            answers = f"\n\n{action.answers}" if action.answers else ""
            self._reply(m, "Applied:\n" + "\n".join(f"- {d}" for d in action.done) + answers, action.record)
            stopped = [self._stop(s, exps) for s in action.stops]
            return "; ".join([f"#{m.number}: applied from @{m.author}: " + "; ".join(action.done), *stopped])
        if isinstance(action, Stop):
            return self._stop(action, exps)
        if isinstance(action, OpenIssue):
            return self._open_issue(action)
        if isinstance(action, CloseIssue):
            return self._close_issue(action.number, action.labels, action.reason, action.note)
        if isinstance(action, DeleteJob):
            self.fleet.delete(action.name)
            return f"deleted job {action.name}: {action.reason}"
        if isinstance(action, Escalate):
            return self._escalate(action)
        pr = self.forge.get_pull(action.pr)
        if isinstance(action, RestoreStudent):
            transitions.restore_student(self.forge, pr, action.student)
            return f"#{action.pr}: restored label student:{action.student}"
        if isinstance(action, FinishAttempts):
            transitions.submit_evidence(self.forge, pr, exps[action.pr].evidence[-1], to_review=True)
            return f"#{action.pr}: out of attempts, moved to review"
        if isinstance(action, Block):
            transitions.block(self.forge, pr, action.reason)
            return f"#{action.pr}: blocked: {action.reason}"
        job = self.fleet.get(action.job)
        reason = f"{job.reason or 'no reason'}, exit {job.exit_code}" if job else "job lost"
        try:
            logs = self.fleet.logs(action.job)
        except SenpaiError:
            logs = ""
        ev = failure_evidence(exps[action.pr], action, logs, reason)  # the ledger redacts it
        transitions.submit_evidence(self.forge, pr, ev, to_review=action.to_review)
        return f"#{action.pr}: failure evidence for attempt {action.attempt} ({reason})"

    def _reply(self, m, text: str, record=None) -> bool:
        """The ack of `m` (`reply_to_human`, kind ack); True if posted, False if it already was."""
        posted = reply_to_human(self.forge, m, text, kind="ack", record=record) is not None
        if self.ledger is not None:
            self.ledger.forget(m.number)
        return posted

    def _stop(self, s: Stop, exps: dict[int, Experiment]) -> str:
        """Delete the PR's live jobs, then close it with the decision "stopped by @author" if it is
        still open (both idempotent)."""
        for name in s.jobs:
            self.fleet.delete(name)
        pr = self.forge.get_pull(s.pr)
        what = f"stopped by @{s.author}" if s.reason is None else f"rejected by @{s.author}: {s.reason}"
        if pr.state == "open":
            d = Decision(pr=s.pr, head=pr.head_sha, verdict="close", reason=what, metric=None)
            transitions.decide(self.forge, pr, exps[s.pr], d, None, "")  # a close reads no base
        return f"#{s.pr}: {what}"

    def _open_issue(self, a: OpenIssue) -> str:
        """Open `a` once (`escalation.open_issue_once`), its marker looked up on the forge once per
        process, then close the issues it supersedes, each naming it; "" if it was there already
        and it supersedes none."""
        number, opened = self._issues.get(a.marker), False
        if number is None:
            number, opened = escalation.open_issue_once(self.forge, a.marker, a.title, a.body, list(a.labels))
            self._issues[a.marker] = number
        lines = [f"#{number}: opened an issue for humans: {a.title.removeprefix('senpai: ')}"] if opened else []
        for c in a.supersedes:
            lines.append(self._close_issue(c.number, c.labels, f"{c.reason} by #{number}", f"Superseded by #{number}. {c.note}"))
        return "; ".join(lines)

    def _close_issue(self, number: int, labels: tuple[str, ...], reason: str, note: str) -> str:
        """Close the bot's issue `number` with the comment `note` (`escalation.close_issue`: once)."""
        escalation.close_issue(self.forge, number, note, list(labels))
        if self.ledger is not None:
            self.ledger.forget(number)
        return f"#{number}: closed: {reason}"

    def _tail(self, job: str | None) -> str:
        """The last ESCALATION_TAIL lines of `job`'s log as neutral prose ("" if none is left):
        the cause a human needs first (a log line is the job's output, so it is hostile text)."""
        if job is None:
            return ""
        try:
            lines = self.fleet.logs(job, ESCALATION_TAIL).strip()
        except SenpaiError:
            return ""
        return f"\n\nLast lines of `{job}`:\n\n{unmention(neutral(redact(lines)))}" if lines else ""

    def _escalate(self, a: Escalate) -> str:
        """One issue for humans first (a crash after it still blocks next tick), then block each PR."""
        prs = ", ".join(f"#{n}" for n in a.prs) or "no PR"
        body = f"senpai could not finish its own work on {prs}; a human must look.\n\n{a.reason}{self._tail(a.job)}"
        number = escalation.open_issue(self.forge, a.key, f"senpai: {a.title} ({prs})", body)
        for n in a.prs:
            pr = self.forge.get_pull(n)
            if pr.state == "open" and ExperimentState.BLOCKED.label not in pr.labels:
                transitions.block(self.forge, pr, a.reason)
        log.warning("escalated %s: %s", prs, a.reason)
        return f"{prs}: escalated to issue #{number}: {a.reason}"
