"""`senpai demo` says what runs while it is otherwise silent (a heartbeat at most every 30 s) and
gives up only when nothing has progressed for its stall time, never while progress happens."""

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from forge_fixtures import experiment

from senpai.cli.demo import given_up
from senpai.cli.progress import DemoWatch, seed_progress, seed_steps
from senpai.config.target import Holdout
from senpai.errors import TransientError
from senpai.fleet.base import JobStatus
from senpai.ledger.experiment import Experiment
from senpai.wrapper.loop import TickReport

T0 = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
HOLDOUT = Holdout(command="python eval.py {artifact} {holdout}", files=["eval.py"], metric="acc", min_floor=0.005)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Jobs:
    """The fleet as the watch reads it: `list()` only."""

    def __init__(self, *jobs: JobStatus) -> None:
        self.jobs, self.broken = list(jobs), False

    def list(self) -> list[JobStatus]:
        if self.broken:
            raise TransientError("cannot list the local fleet")
        return self.jobs


def job(name: str, role: str, pr: int | None, started: float | None, student: str | None = None, phase: str = "running"):
    """A job as the fleet lists it, started `started` seconds after T0 (None: pending)."""
    at = None if started is None else T0 + timedelta(seconds=started)
    return JobStatus(name=name, role=role, pr=pr, student=student, phase=phase, started_at=at)


def report(*exps: Experiment) -> TickReport:
    return TickReport(1, 0, True, exps=list(exps))


def wip(pr: int, updated: int = 0) -> Experiment:
    return experiment(pr, "wip", updated_at=f"2026-12-06T12:00:{updated:02d}Z")


def out_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in capsys.readouterr().out.splitlines()]


def begin(work: Path, *steps: str) -> None:
    """Steps as the verifier begins them: `baseline-0-train`, `candidate-1-score`, ..."""
    for step in steps:
        side, _, kind = step.split("-")
        folder = work / "score" if kind == "score" else work / side / "artifacts"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{step}.log").touch()


def test_it_gives_up_after_the_stall_time_without_progress_and_not_before() -> None:
    clock, jobs = Clock(), Jobs(job("senpai-student-pr2-1", "student", 2, 0))
    watch = DemoWatch(6, HOLDOUT, stall_seconds=60, clock=clock)
    for _ in range(3):  # the same experiments and jobs, tick after tick: 0, 20 and 40 s
        watch(report(wip(2)), jobs)
        assert not watch.stalled()
        clock.advance(20)
    watch(report(wip(2)), jobs)
    assert watch.stalled() and watch.idle_seconds() == 60


@pytest.mark.parametrize("change", ["record", "job", "job phase", "seed step"])
def test_progress_of_any_kind_keeps_it_going_past_the_stall_time(tmp_path: Path, change: str) -> None:
    """Each tick, 40 s apart with a stall time of 60 s, shows one change: 10 minutes in, it has not given up."""
    clock, jobs = Clock(), Jobs()
    verifier = job("senpai-verifier-pr3-1", "verifier", 3, 0)
    watch = DemoWatch(6, HOLDOUT, lambda name: tmp_path / name / "work", stall_seconds=60, clock=clock)
    for i in range(15):
        match change:
            case "record":  # a comment posted moves the PR's updated_at
                exps = [wip(2, updated=i)]
            case "job":
                jobs.jobs.append(job(f"senpai-advisor-{i}-1", "advisor", None, 0, phase="succeeded"))
            case "job phase":
                jobs.jobs = [job("senpai-student-pr2-1", "student", 2, 0, phase=("pending", "running")[i % 2])]
            case "seed step":
                jobs.jobs = [verifier]
                begin(tmp_path / verifier.name / "work", f"{('baseline', 'candidate')[i % 2]}-{i // 2}-train")
        watch(report(*(exps if change == "record" else [wip(2)])), jobs)
        assert not watch.stalled(), i
        clock.advance(40)
    clock.advance(30)  # 70 s since the last change
    assert watch.stalled()


def test_a_fleet_that_cannot_be_listed_is_no_progress() -> None:
    clock, jobs = Clock(), Jobs()
    watch = DemoWatch(6, HOLDOUT, stall_seconds=60, clock=clock)
    watch(report(wip(2)), jobs)
    jobs.broken = True
    for _ in range(4):
        clock.advance(20)
        watch(report(wip(2, updated=5)), jobs)  # its record moved, but the tick saw no jobs: not counted
    assert watch.stalled()


def test_no_stall_time_never_gives_up() -> None:
    clock = Clock()
    watch = DemoWatch(6, HOLDOUT, clock=clock)
    watch(report(), Jobs())
    clock.advance(10**6)
    assert not watch.stalled()


def test_the_heartbeat_says_what_runs_how_far_and_for_how_long(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    verifier = job("senpai-verifier-pr3-1", "verifier", 3, 0)
    jobs = Jobs(
        job("senpai-advisor-abc-1", "advisor", None, 25),
        job("senpai-student-pr4-1", "student", 4, 18, student="bo"),
        verifier,
        job("senpai-student-pr5-1", "student", 5, None, student="ada", phase="pending"),
        job("senpai-student-pr2-1", "student", 2, 0, student="ada", phase="succeeded"),  # done: not shown
    )
    begin(tmp_path / verifier.name / "work", "baseline-0-train", "baseline-0-score", "candidate-0-train", "candidate-0-score")
    begin(tmp_path / verifier.name / "work", "baseline-1-train")
    watch = DemoWatch(6, HOLDOUT, lambda name: tmp_path / name / "work", stall_seconds=300, clock=clock)
    watch(report(wip(3)), jobs)
    clock.advance(41)
    watch(report(wip(3)), jobs)
    clock.advance(30)
    watch(report(wip(3)), jobs)
    assert out_lines(capsys) == [
        "running: #3 verifying, seed 2 of 3, 41 s; #4 training (bo), 23 s; #5 training (ada), waiting to start; advisor, 16 s"
        "  [0 of 6 decided]",
        "running: #3 verifying, seed 2 of 3, 71 s; #4 training (bo), 53 s; #5 training (ada), waiting to start; advisor, 46 s; "
        "nothing new for 71 s, gives up at 300 s (--stall-timeout)  [0 of 6 decided]",
    ]


def test_the_heartbeat_comes_at_most_every_30_s_and_only_in_silence(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    jobs = Jobs(job("senpai-student-pr2-1", "student", 2, 0, student="ada"))
    watch = DemoWatch(6, HOLDOUT, clock=clock)
    said = []
    for second in range(0, 140, 5):  # a tick every 5 s
        if second == 70:  # an outcome line is news: the next heartbeat waits 30 s from it
            exps = [experiment(2, "closed")]
        elif second == 115:  # nothing runs: nothing to say
            jobs.jobs = []
        watch(report(*(exps if second >= 70 else [wip(2)])), jobs)
        said += [(second, line) for line in out_lines(capsys)]
        clock.advance(5)
    assert [(second, line.split(":")[0]) for second, line in said] == [
        (30, "running"), (60, "running"), (70, "#2 closed"), (100, "running")
    ]  # fmt: skip
    assert said[0][1] == "running: #2 training (ada), 30 s  [0 of 6 decided]"
    assert said[1][1] == "running: #2 training (ada), 60 s; nothing new for 60 s  [0 of 6 decided]"


def test_seed_progress_counts_train_steps_in_the_holdouts_seed_order(tmp_path: Path) -> None:
    begin(tmp_path, "baseline-0-train", "candidate-0-train", "candidate-0-score", "baseline-2-train")
    (tmp_path / "candidate" / "artifacts" / "candidate-0").mkdir()  # the artifact folder: not a step
    (tmp_path / "score" / "candidate-9999999999-train.log").touch()  # not a name senpai writes
    steps = seed_steps(tmp_path)
    assert steps == {("baseline", 0, "train"), ("candidate", 0, "train"), ("candidate", 0, "score"), ("baseline", 2, "train")}
    assert seed_progress(steps, HOLDOUT) == "seed 3 of 3"
    assert seed_progress({("candidate", 7, "train")}, HOLDOUT) is None  # a seed the holdout has not: ignored
    more = HOLDOUT.model_copy(update={"seeds": [5, 6], "max_seeds": 4})
    assert seed_progress({("candidate", 7, "train")}, more) == "seed 3 of 2 (up to 4)"
    assert seed_progress(set(), HOLDOUT) is None and seed_steps(tmp_path / "missing") == set()


def test_the_error_names_the_option_that_raises_the_limit() -> None:
    clock = Clock()
    stalled = DemoWatch(6, HOLDOUT, stall_seconds=300, clock=clock)
    stalled(report(), Jobs())
    clock.advance(301)
    assert given_up(3, 6, stalled, None, 400) == (
        "only 3 of 6 experiments were decided: nothing progressed for 300 s (no new job, seed step, record or decision), so "
        "the demo gave up; if the machine is only busy or slow, run it again with a longer --stall-timeout (say 900)"
    )
    going = DemoWatch(6, HOLDOUT, stall_seconds=300, clock=Clock())
    late = given_up(3, 6, going, 900, 901)
    assert late == (
        "only 3 of 6 experiments were decided within --timeout 900 s; run it again with a larger --timeout, or without one"
    )
    assert given_up(3, 6, going, None, 100).endswith("the demo was stopped (Ctrl-C or SIGTERM)")


def test_a_demo_stalled_on_blocked_prs_names_them_not_a_longer_wait() -> None:
    clock = Clock()
    stalled = DemoWatch(3, HOLDOUT, stall_seconds=300, clock=clock)
    stalled(report(), Jobs())
    clock.advance(301)
    said = given_up(0, 3, stalled, None, 400, [2, 3])
    assert said == (
        "only 0 of 3 experiments were decided: nothing progressed for 300 s while #2, #3 are blocked for humans; "
        "the last comment on each says why (`senpai status` lists them): fix the cause, then run the demo again"
    )
    assert "--stall-timeout" not in said
