"""What senpai is doing now, computed from the ledger, the fleet and the forge (never from a cache).

`build_status` is a pure function of what was read: the experiments (`LedgerReader`), the fleet's
jobs (`Fleet.list`), the steering state (the fold of the acks, `HumansView.state`), the forge's
last stated rate limit (`Forge.rate_limit`) and the last tick. `senpai status` (the CLI) and the
wrapper's answer to `/senpai status` both build it and render it with `Status.markdown()`.

Every text in it that came from the forge (PR titles) is hostile: `markdown()` bounds it and
keeps it to one table cell; the wrapper's reply is neutralised on top (`reply_to_human`).
"""

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from senpai.config.harness import HarnessConfig
from senpai.config.roles import Role
from senpai.fleet.base import JobStatus, Phase
from senpai.forge.base import RateLimit
from senpai.ledger.comments import cell, count, dollars, duration, number, signed
from senpai.ledger.deltas import base_names, delta
from senpai.ledger.experiment import Experiment, holdout_verdicts, verdicts_by_holdout
from senpai.ledger.inbox import SteerState
from senpai.ledger.labels import ASSIGNED, ExperimentState
from senpai.ledger.spend import Spend
from senpai.wrapper.caps import MONEY, caps_in_force, consequence, exhausted, spent, steered_caps, stops_jobs
from senpai.wrapper.patience import patience_streak

TITLE_CHARS = 80  # characters of a PR title shown in a table cell
OPEN_ORDER = (
    ExperimentState.WIP,
    ExperimentState.CHANGES,
    ExperimentState.REVIEW,
    ExperimentState.VERIFYING,
    ExperimentState.BLOCKED,
    ExperimentState.UNLABELLED,
)


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StudentRow(_Row):
    """One configured student and what it does now."""

    name: str
    activity: Literal["running", "assigned", "idle"] = Field(
        description="running: a live job of its; assigned: a wip or changes PR of its waits for its next job; idle: neither."
    )
    pr: int | None = Field(None, description="The PR its live job (else its assigned PR) is for.")
    title: str | None = None
    job: str | None = Field(None, description="Its live job's name.")


class ExperimentRow(_Row):
    """One open experiment (a `senpai` PR not merged or closed)."""

    pr: int
    title: str
    state: ExperimentState
    student: str | None
    attempts: int = Field(description="Attempts with evidence so far.")
    note: str = Field("", description="What a verifying PR waits for (`_note`); empty for the other states.")
    delta: float | None = Field(
        None, description="Its verifier's holdout delta (`deltas.measured`), positive is better; None: not verified."
    )
    vs: str = Field("", description="The base that delta was measured against (`Delta.label`: `vs #2`, `vs old base #1`).")
    stale: bool = Field(False, description="That base is no longer the current one: the delta is not comparable.")


class ApprovalRow(_Row):
    """An open experiment whose merge waits for a human (its latest `senpai-approval` request at its head)."""

    pr: int
    title: str
    fingerprint: str = Field(description="What `/senpai approve <fingerprint>` must name.")
    reasons: list[str] = Field(description="The senpai.yaml `approval` rules that name the merge.")
    approved_by: str | None = Field(
        description="The trusted login whose acknowledged approval names it (the advisor merges next)."
    )


class JobRow(_Row):
    """One live job of the fleet (pending or running)."""

    name: str
    role: Role
    pr: int | None
    student: str | None
    phase: Phase
    started_at: datetime | None
    age_seconds: float | None = Field(description="Seconds since it started; None while pending.")
    deadline_at: datetime | None = Field(description="When the fleet kills it, UTC (`JobStatus.deadline_at`).")
    left_seconds: float | None = Field(description="Seconds until its deadline (negative: overdue).")


class CapsStatus(_Row):
    """The caps the wrapper enforces and how much of each is used."""

    experiments: int = Field(description="Experiments opened so far (any state).")
    experiment_cap: int | None = Field(description="The cap: `/senpai caps experiments=N` if given, else max_experiments.")
    cap_source: Literal["steering", "config", "none"]
    patience: int | None = Field(description="The harness config's patience (None: no patience stop).")
    streak: int = Field(description="Experiments closed without a merge since the last merge or resume.")
    paused: bool = Field(description="A human's `/senpai pause` holds.")
    paused_for_patience: bool
    spent: Spend = Field(description="Summed from the ledger (`senpai.ledger.spend`).")
    in_force: dict[str, float | int | datetime] = Field(
        description="Fleet-wide caps in force by `/senpai caps` key (`senpai.wrapper.caps.caps_in_force`); absent: no cap."
    )
    steered: list[str] = Field(
        default_factory=list,
        description="The keys of `in_force` a trusted human's `/senpai caps` set (it wins over the config); "
        "the rest are the config's.",
    )
    exhausted: dict[str, str] = Field(description="Cap key -> 'spent of cap' for each cap reached: no new experiment opens.")
    stopping: bool = Field(
        False,
        description="A reached cap stops running student and verifier jobs (`caps.stops_jobs`: "
        "`caps.on_exhausted: stop`); else they finish and open experiments go on.",
    )
    effect: str = Field("", description="What the reached caps do now, in words (`caps.consequence`); empty: none reached.")
    unpriced: dict[Role, str] = Field(
        default_factory=dict,
        description="Role -> LLM model, for each openhands role whose calls count $0 (`HarnessConfig.unpriced_llms`): "
        "the dollars spent and their cap leave those calls out.",
    )


class LastTick(_Row):
    """The wrapper's last tick, and where that was learnt."""

    at: datetime | None
    source: Literal["wrapper", "health", "ledger", "none"] = Field(
        description="wrapper: the tick answering now; health: the wrapper's /healthz; ledger: the bot's newest "
        "PR, issue or comment (the wrapper's or a job's; a lower bound of its activity); none: nothing found."
    )
    detail: str = ""


class Status(_Row):
    """senpai's state now: students, open experiments by state, live jobs, fleet caps, last tick, rate limit."""

    schema_version: Literal[1] = 1
    at: datetime = Field(description="When it was computed, UTC.")
    repo: str
    students: list[StudentRow]
    open: list[ExperimentRow] = Field(description="Open experiments, in OPEN_ORDER of their state, then by PR.")
    merged: int
    closed: int
    holdout_verdicts: int = Field(0, description="Verdicts the current holdout has served (`experiment.holdout_verdicts`).")
    holdouts: int = Field(0, description="Sealed holdouts that served a verdict (`experiment.verdicts_by_holdout`).")
    jobs: list[JobRow]
    approvals: list[ApprovalRow] = Field(default_factory=list, description="Merges waiting for a human's approval.")
    caps: CapsStatus
    last_tick: LastTick
    rate_limit: RateLimit | None = Field(description="The forge's core rate limit as last stated; None: it states none.")

    def markdown(self) -> str:
        """The status as GitHub Markdown: a summary line, then a table per part."""
        return "\n\n".join(
            [
                f"**senpai status** for `{self.repo}` at {_time(self.at)}",
                self._summary(),
                _table(("student", "doing", "PR", "job"), [_student_cells(s) for s in self.students]),
                _table(("PR", "state", "student", "attempts", "holdout Δ", "title"), [_exp_cells(e) for e in self.open])
                if self.open
                else "No open experiments.",
                _table(("job", "phase", "PR", "age", "deadline in"), [_job_cells(j) for j in self.jobs])
                if self.jobs
                else "No live jobs.",
                *(
                    [_table(("PR", "waiting for approval", "approved by", "why"), [_approval_cells(a) for a in self.approvals])]
                    if self.approvals
                    else []
                ),
            ]
        )

    def _summary(self) -> str:
        b, s = self.caps, self.caps.spent
        cap = f"{b.experiments} of {b.experiment_cap}" if b.experiment_cap else f"{b.experiments} (no cap)"
        by = lambda key: _BY_COMMAND if key in b.steered else ""  # noqa: E731
        cap += by("experiments")
        patience = f"{b.streak} of {b.patience}" if b.patience else f"{b.streak} (no patience stop)"
        paused = "; **paused** by `/senpai pause`" if b.paused else ""
        paused += "; **paused** for patience (`/senpai resume` goes on)" if b.paused_for_patience else ""
        tick = self.last_tick
        tick_line = f"{_time(tick.at)} ({tick.source}{': ' + tick.detail if tick.detail else ''})" if tick.at else "unknown"
        rate = self.rate_limit
        rate_line = f"{rate.remaining} of {rate.limit} left" if rate else "not stated by the forge"
        if rate and rate.reset_at:
            rate_line += f", resets {_time(rate.reset_at)}"
        return "\n".join(
            [
                f"- experiments: {cap}, {len(self.open)} open, {self.merged} merged, {self.closed} closed{paused}",
                f"- without improvement: {patience}",
                f"- holdout verdicts: {self.holdout_verdicts} on the current holdout"
                + (f" ({self.holdouts} holdouts in all)" if self.holdouts > 1 else "")
                + " (each tells the search a little about it; refresh it after some thousands)",
                "- spent: " + ", ".join(_against(k, getattr(s, k), b.in_force.get(k), b.unpriced, b.steered) for k in MONEY),
                f"- by role: student {duration(s.student_seconds)}, verifier {duration(s.verifier_seconds)}, "
                f"advisor {duration(s.advisor_seconds)} ({count(s.advisor_tokens)} tokens, {dollars(s.advisor_dollars)})",
                *([f"- end: {_time(b.in_force['end'])}{by('end')}"] if "end" in b.in_force else []),
                *([_reached(b)] if b.exhausted else []),
                f"- last tick: {tick_line}",
                f"- forge rate limit: {rate_line}",
            ]
        )


def build_status(
    cfg: HarnessConfig,
    exps: list[Experiment],
    jobs: list[JobStatus],
    steer: SteerState,
    now: datetime,
    last_tick: LastTick,
    rate_limit: RateLimit | None,
    base: str | None = None,
) -> Status:
    """The status for the harness config `cfg` from what was read: the experiments, the fleet's jobs
    (finished ones are left out), the steering state, `now` (aware UTC), the last tick, the
    forge's rate limit and the base head `base` (None: unknown; a verifying PR's note then says
    less). Pure: reads nothing itself but LiteLLM's bundled price map (`senpai.config.prices`)."""
    live = [j for j in jobs if not j.done]
    titles = {e.pr: e.title for e in exps}
    names = base_names(exps)
    cap = steer.experiments if steer.experiments is not None else cfg.max_experiments
    source = "steering" if steer.experiments is not None else "config" if cfg.max_experiments else "none"
    streak = len(patience_streak(exps, steer.resumed_after))
    reached = exhausted(exps, steer, now, cfg)
    return Status(
        at=now,
        repo=cfg.forge.repo,
        students=[_student(s.name, exps, live, titles) for s in cfg.students],
        open=[
            _open_row(e, exps, base, names)
            for e in sorted((e for e in exps if not e.decided), key=lambda e: (OPEN_ORDER.index(e.state), e.pr))
        ],
        merged=sum(e.state == ExperimentState.MERGED for e in exps),
        closed=sum(e.state == ExperimentState.CLOSED for e in exps),
        holdout_verdicts=holdout_verdicts(exps),
        holdouts=len(verdicts_by_holdout(exps)),
        jobs=[_job(j, now) for j in live],
        approvals=[a for e in exps if (a := _waiting(e, steer))],
        caps=CapsStatus(
            experiments=len(exps),
            experiment_cap=cap,
            cap_source=source,
            patience=cfg.patience,
            streak=streak,
            paused=steer.paused,
            paused_for_patience=cfg.patience is not None and streak >= cfg.patience and not steer.paused,
            spent=spent(exps, cfg, steer),
            in_force=caps_in_force(steer, cfg),
            steered=steered_caps(steer),
            exhausted=reached,
            stopping=stops_jobs(reached, cfg),
            effect=consequence(reached, cfg) if reached else "",
            unpriced=cfg.unpriced_llms(),
        ),
        last_tick=last_tick,
        rate_limit=rate_limit,
    )


def _open_row(e: Experiment, exps: list[Experiment], base: str | None, names: dict[str, str]) -> ExperimentRow:
    """`e` (open) with what it waits for and its holdout delta against the base it names (`deltas.delta`)."""
    d = delta(e, names, base)
    return ExperimentRow(
        pr=e.pr, title=e.title, state=e.state, student=e.student, attempts=e.attempts, note=_note(e, exps, base),
        delta=d.improvement if d else None, vs=d.label if d else "", stale=d.stale if d else False,
    )  # fmt: skip


def _waiting(e: Experiment, steer: SteerState) -> ApprovalRow | None:
    """The approval `e`'s merge waits for (`Experiment.pending_approval`), and who gave it if it came."""
    if (r := e.pending_approval()) is None:
        return None
    by = steer.approvals.get(e.pr, {}).get(r.fingerprint)
    return ApprovalRow(pr=e.pr, title=e.title, fingerprint=r.fingerprint, reasons=r.reasons, approved_by=by)


def _reached(b: CapsStatus) -> str:
    """The summary line of the reached caps: a real stop only where running jobs are stopped; else
    only the opening of new experiments has stopped, and the line says that the rest goes on."""
    caps_ = "; ".join(f"{k} {v}" for k, v in b.exhausted.items())
    head = f"**stopped**, fleet caps exhausted ({caps_})" if b.stopping else f"**no new experiments**, cap reached ({caps_})"
    return f"- {head}: {b.effect}"


_BY_COMMAND = " (by `/senpai caps`)"


def _against(key: str, used: float, cap: float | None, unpriced: dict[Role, str], steered: list[str]) -> str:
    names = {"dollars": "LLM", "tokens": "tokens", "gpu_hours": "GPU-h", "cpu_hours": "CPU-core-h"}
    shown = {"dollars": dollars, "tokens": count}.get(key, number)
    text = f"{shown(used)}{f' of {shown(cap)}' if cap is not None else ''} {names[key]}{_BY_COMMAND if key in steered else ''}"
    if key == "dollars" and unpriced:
        text += " (**unpriced**: " + ", ".join(f"{role} {cell(model)} counts $0" for role, model in unpriced.items()) + ")"
    return text


def _student(name: str, exps: list[Experiment], live: list[JobStatus], titles: dict[int, str]) -> StudentRow:
    job = next((j for j in live if j.role == Role.STUDENT and j.student == name), None)
    if job is not None:
        return StudentRow(name=name, activity="running", pr=job.pr, title=titles.get(job.pr or 0), job=job.name)
    assigned = next((e for e in exps if e.student == name and e.state in ASSIGNED), None)
    if assigned is not None:
        return StudentRow(name=name, activity="assigned", pr=assigned.pr, title=assigned.title)
    return StudentRow(name=name, activity="idle")


def _job(j: JobStatus, now: datetime) -> JobRow:
    age = (now - j.started_at).total_seconds() if j.started_at else None
    left = (j.deadline_at - now).total_seconds() if j.deadline_at else None
    return JobRow(
        name=j.name,
        role=j.role,
        pr=j.pr,
        student=j.student,
        phase=j.phase,
        started_at=j.started_at,
        age_seconds=age,
        deadline_at=j.deadline_at,
        left_seconds=left,
    )


def _cell(text: str | None) -> str:
    """Forge text as one bounded, inert table cell (`comments.cell`, TITLE_CHARS); "" for none."""
    return cell(text, TITLE_CHARS) if text else ""


def _pr(n: int | None) -> str:
    return f"#{n}" if n is not None else ""


def _student_cells(s: StudentRow) -> tuple[str, ...]:
    pr = f"{_pr(s.pr)} {_cell(s.title)}".strip()
    return (s.name, s.activity, pr, f"`{s.job}`" if s.job else "")


def _exp_cells(e: ExperimentRow) -> tuple[str, ...]:
    state = f"{e.state.value}: {e.note}" if e.note else e.state.value
    delta = f"{signed(e.delta)} {e.vs}" if e.delta is not None else ""
    return (_pr(e.pr), _cell(state), e.student or "", str(e.attempts), f"_{delta}_" if e.stale else delta, _cell(e.title))


def _note(e: Experiment, exps: list[Experiment], base: str | None) -> str:
    """For a verifying PR, what it waits for: its verification of the head against `base`, or,
    once that passed, its round (design: the best pass of a base merges, after the verifications
    of that base already running) and the advisor; a failed or refused one waits for the advisor."""
    if e.state != ExperimentState.VERIFYING:
        return ""
    v = e.verification_for(e.head, base) if base else None
    if v is None:
        return f"measuring {e.head[:8]} against the base" + ("" if base else " (base unknown)")
    if v.conflict:
        return "conflicts with the base: re-applied on it next"
    if not v.passed:
        return "failed verification: the advisor closes it"
    rivals = [x.pr for x in exps if x.state == ExperimentState.VERIFYING and x.verification_for(x.head, base) is None]
    running = f" ({', '.join(f'#{n}' for n in rivals)} still verifying)" if rivals else ""
    return (
        f"passed on {base[:8]}; the advisor merges the round's best pass once the verifications of this base "
        f"that were running at its first pass end, or round_wait_seconds after it{running}"
    )


def _approval_cells(a: ApprovalRow) -> tuple[str, ...]:
    return (
        f"{_pr(a.pr)} {_cell(a.title)}",
        f"`/senpai approve {a.fingerprint}`",
        a.approved_by or "",
        _cell("; ".join(a.reasons)),
    )


def _job_cells(j: JobRow) -> tuple[str, ...]:
    return (f"`{j.name}`", j.phase, _pr(j.pr), _duration(j.age_seconds), _duration(j.left_seconds))


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _duration(seconds: float | None) -> str:
    """`comments.duration` (4 min 12 s; - when overdue); "" for None."""
    return duration(seconds) if seconds is not None else ""


def _time(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
