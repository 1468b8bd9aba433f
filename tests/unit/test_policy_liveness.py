"""Liveness of the pure policy: every open experiment gets an action within a bounded number of ticks.

A small simulator drives `plan(World)` over generated ledgers: each action is carried out the way
the dispatcher and the jobs would (a launched job runs for one tick, then ends with an outcome the
test draws), and the property is checked on every tick.  Advisor turns always succeed here (their
retries are another test's subject); they pick a verdict the test draws.
"""

from dataclasses import dataclass, field, replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from policy_world import BASE, NOW, exp, job

from senpai.config.harness import HarnessConfig
from senpai.fleet.base import JobStatus
from senpai.ledger.blocks import BudgetRef, Decision, Evidence, PrimaryResult, Verification
from senpai.ledger.experiment import Experiment
from senpai.wrapper import rounds
from senpai.wrapper.actions import Block, Escalate, FailureEvidence, FinishAttempts, Launch
from senpai.wrapper.policy import job_attempt, plan
from senpai.wrapper.world import World

STUDENTS = ["ada", "bo", "cy"]
CFG = HarnessConfig.model_validate(
    {
        "forge": {"repo": "o/r"},
        "tracker": {"dir": "/tmp/w"},
        "fleet": {"dir": "/tmp/f"},
        "state_dir": "/tmp/s",
        "students": [{"name": s} for s in STUDENTS],
        "max_experiments": 3,
        "stale_after_seconds": 600,
        "round_wait_seconds": 20,  # two ticks: a round's passes wait that long for its other verifications
    }
)
OPEN = ("wip", "review", "verifying", "changes")
BOUND = 3  # ticks an open, unblocked PR may go without any action or live job for it
TICKS = 40
ROUND_TICKS = 2 + 2  # round_wait_seconds in ticks, then the pick's advisor turn and the merge's re-verification


def _evidence(e: Experiment, attempt: int, head: str, outcome: str) -> Evidence:
    return Evidence(
        pr=e.pr,
        attempt=attempt,
        student=e.student,
        head=head,
        command="c",
        outcome=outcome,
        primary=PrimaryResult(name="acc", value=0.9 if outcome == "ok" else None, baseline=None, delta=None),
        interpretation="i",
    )


def _decide(e: Experiment, verdict: str) -> Experiment:
    state = {"merge": "merged", "close": "closed", "changes": "changes"}[verdict]
    d = Decision(pr=e.pr, head=e.head, verdict=verdict, reason="r")
    return e.model_copy(update={"decisions": [*e.decisions, d], "state": state})


def _verification(e: Experiment, passed: bool, base: str) -> Verification:
    return Verification(
        pr=e.pr,
        candidate=e.head,
        baseline=base,
        metric="acc",
        direction="maximize",
        seeds=[0],
        candidate_values=[1.0],
        baseline_values=[0.0],
        candidate_mean=1.0,
        baseline_mean=0.0,
        improvement=1.0,
        noise_floor=0.1,
        baseline_key="k" * 64,  # what the verifier records: later verifiers of this base reuse its baseline
        passed=passed,
        reason="r",
    )


@dataclass
class Sim:
    """The forge and fleet as the policy sees them, changed by the actions it plans."""

    exps: dict[int, Experiment]
    jobs: list[JobStatus] = field(default_factory=list)
    handed: dict[str, str] = field(default_factory=dict)
    carried: dict[str, tuple] = field(default_factory=dict)  # advisor job -> its events
    now: object = NOW
    base: str = BASE  # a merge moves it
    first_seen: dict = field(default_factory=dict)  # the wrapper's cache: when a round first had a pass
    upto: dict = field(default_factory=dict)  # ... and which PRs were verifying then (`World.round_upto`)

    def world(self) -> World:
        w = World(list(self.exps.values()), self.base, list(self.jobs), self.now, dict(self.handed))
        for rid in rounds.open_ids(w):
            self.first_seen.setdefault(rid, self.now)
            self.upto.setdefault(rid, rounds.verifying_upto(w))
        return replace(w, first_seen=dict(self.first_seen), round_upto=self.upto.get(rounds.round_id(self.base)))

    def touch(self, e: Experiment, **update) -> None:
        self.exps[e.pr] = e.model_copy(update={**update, "updated_at": self.now.isoformat()})

    def apply(self, a) -> None:
        if isinstance(a, Launch):
            self.jobs.append(job(a.name, a.role, a.pr, a.student))
            self.carried[a.name] = a.events
            self.handed.update({ev.id: a.name for ev in a.events})
        elif isinstance(a, FailureEvidence):
            e = self.exps[a.pr]
            state = "review" if a.to_review else e.state
            self.touch(e, evidence=[*e.evidence, _evidence(e, a.attempt, e.head, "failed")], state=state)
        elif isinstance(a, FinishAttempts):
            self.touch(self.exps[a.pr], state="review")
        elif isinstance(a, Block):
            self.touch(self.exps[a.pr], state="blocked")
        elif isinstance(a, Escalate):
            for pr in a.prs:
                self.touch(self.exps[pr], state="blocked")

    def end(self, j: JobStatus, phase: str, exit_code: int | None = None) -> JobStatus:
        return j.model_copy(update={"phase": phase, "exit_code": exit_code, "finished_at": self.now})

    def finish(self, j: JobStatus, draw) -> JobStatus:
        """End job `j` with a drawn outcome; returns its final status."""
        if j.role == "advisor":
            for ev in self.carried[j.name]:
                e = self.exps.get(ev.pr) if ev.pr is not None else None
                if e is None or e.head != ev.head:
                    continue
                if ev.kind == "review" and e.state == "review":
                    verdict = draw(st.sampled_from(["verify", "changes", "close"]))
                    self.touch(e, state="verifying") if verdict == "verify" else self.touch(_decide(e, verdict))
                elif ev.kind == "verified" and e.state == "verifying":
                    self.touch(_decide(e, verdict := draw(st.sampled_from(["merge", "close", "changes"]))))
                    self.base = f"m{e.pr}{e.head[:8]}".ljust(40, "0") if verdict == "merge" else self.base
                elif ev.kind == "stale" and e.state == "wip":
                    self.touch(_decide(e, "close"))
            return self.end(j, "succeeded", 0)
        e = self.exps[j.pr]
        outcome = draw(st.sampled_from(["ok", "failed", "dies", "dies-at-start", "infra"]))
        if outcome == "infra":  # senpai's failure (exit 3): relaunched, no attempt spent
            return self.end(j, "failed", 3)
        if j.role == "verifier":
            if outcome.startswith("dies"):
                return self.end(j, "failed", 1)
            self.touch(e, verifications=[*e.verifications, _verification(e, outcome == "ok", self.base)])
            return self.end(j, "succeeded", 0)
        if outcome == "dies-at-start":  # before it moved changes -> wip
            return self.end(j, "failed", 1)
        e = e.model_copy(update={"state": "wip"}) if e.state == "changes" else e
        if outcome == "dies":
            self.touch(e)
            return self.end(j, "failed", 1)
        attempt = job_attempt(j)
        head = f"{e.pr}{attempt}".ljust(40, "0") if outcome == "ok" else e.head
        self.touch(e, head=head, evidence=[*e.evidence, _evidence(e, attempt, head, outcome)], state="review")
        return self.end(j, "succeeded", 0)


def _with_budget(e: Experiment, attempts: int) -> Experiment:
    h = e.hypothesis.model_copy(update={"budget": BudgetRef(wall_seconds=60, attempts=attempts)})
    return e.model_copy(update={"hypothesis": h})


@st.composite
def ledgers(draw) -> dict[int, Experiment]:
    """1-3 open experiments, one per student, in any state a crash of the wrapper or a job can leave."""
    n = draw(st.integers(1, 3))
    out = {}
    for pr, student in zip(range(1, n + 1), STUDENTS, strict=False):
        state = draw(st.sampled_from(OPEN))
        budget = draw(st.integers(1, 3))
        # wip with every attempt made: a crash between the last evidence and its move to review
        attempts = draw(st.integers(0 if state == "wip" else 1, 4))
        e = exp(pr, state, student, attempts=attempts)
        e = _with_budget(e, budget)
        changes = draw(st.integers(0, 2)) + (state == "changes")
        e = e.model_copy(update={"decisions": [Decision(pr=pr, head=e.head, verdict="changes", reason="r")] * changes})
        out[pr] = e
    return out


def _served(sim: Sim, actions) -> set[int]:
    prs = {a.pr for a in actions if not isinstance(a, Launch | Escalate) or (isinstance(a, Launch) and a.role != "advisor")}
    prs |= {pr for a in actions if isinstance(a, Escalate) for pr in a.prs}
    prs |= {ev.pr for a in actions if isinstance(a, Launch) for ev in a.events}
    for j in sim.jobs:
        if not j.done:
            prs |= {j.pr} | {ev.pr for ev in sim.carried.get(j.name, ())}
    return prs


@settings(max_examples=150, deadline=None)
@given(ledgers(), st.data())
def test_every_open_experiment_gets_an_action_within_a_bounded_number_of_ticks(exps, data):
    sim = Sim(exps)
    waiting = dict.fromkeys(exps, 0)
    for _ in range(TICKS):
        actions = plan(sim.world(), CFG)
        served = _served(sim, actions)
        for pr, e in sim.exps.items():
            waiting[pr] = 0 if pr in served or e.state not in OPEN else waiting[pr] + 1
            # a base's first verifier runs alone (the rest reuse its baseline): one job per other PR more;
            # a pass may wait for its round (its wait, then the pick's advisor turn, then the merge's verifier)
            bound = BOUND + (len(exps) - 1 + ROUND_TICKS if e.state == "verifying" else 0)
            assert waiting[pr] <= bound, f"PR #{pr} in {e.state} got no action for {waiting[pr]} ticks: {e}"
        running = [j for j in sim.jobs if not j.done]
        for a in actions:
            sim.apply(a)
        sim.jobs = [j if j not in running else sim.finish(j, data.draw) for j in sim.jobs]
        sim.now += timedelta(seconds=10)


def test_changes_then_an_attempt_dead_before_pushing_wakes_the_advisor_again():
    e = exp(1, "review", attempts=1)
    e = _with_budget(e, 1)
    sim = Sim({1: e})
    (adv,) = [a for a in plan(sim.world(), CFG) if isinstance(a, Launch) and a.role == "advisor"]
    sim.apply(adv)
    sim.jobs = [sim.jobs[0].model_copy(update={"phase": "succeeded"})]
    sim.touch(_decide(e, "changes"))
    (student,) = [a for a in plan(sim.world(), CFG) if isinstance(a, Launch) and a.role == "student"]
    assert student.name == "senpai-student-pr1-2"
    sim.apply(student)
    sim.jobs = [sim.end(j, "failed", 1) if j.name == student.name else j for j in sim.jobs]
    (fe,) = [a for a in plan(sim.world(), CFG) if isinstance(a, FailureEvidence)]
    sim.apply(fe)
    assert sim.exps[1].state == "review" and sim.exps[1].head == e.head
    (again,) = [a for a in plan(sim.world(), CFG) if isinstance(a, Launch) and a.role == "advisor"]
    assert [ev.pr for ev in again.events if ev.kind == "review"] == [1]
