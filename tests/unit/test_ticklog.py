"""`senpai wrapper run` prints the ticks that did something and, after a quiet minute, one summary
line, never a line per idle tick (`senpai.cli.ticklog`)."""

import re

import pytest
from forge_fixtures import experiment

from senpai.cli.ticklog import TickLog
from senpai.wrapper.loop import TickReport


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def tick(log: TickLog, clock: Clock, n: int, states: dict[int, str], actions=(), errors=(), seconds=1.0) -> None:
    clock.now += seconds
    exps = [experiment(pr, state) for pr, state in states.items()]
    log(TickReport(n, 2, False, actions=list(actions), errors=list(errors), exps=exps, live_jobs=1, free=2))


def lines(capsys: pytest.CaptureFixture[str]) -> tuple[list[str], list[str]]:
    out, err = capsys.readouterr()
    strip = lambda text: [re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in text.splitlines()]  # noqa: E731
    return strip(out), strip(err)


def test_idle_ticks_print_nothing_until_a_summary_and_a_tick_that_did_something_prints_what(capsys):
    clock = Clock()
    log = TickLog(clock=clock)
    tick(log, clock, 1, {1: "wip"})
    assert lines(capsys) == (["tick 1: calls=2 jobs=1 decided=0 [wip=1]"], [])  # the first tick: where things stand
    for n in range(2, 60):  # 58 idle ticks, 58 s
        tick(log, clock, n, {1: "wip"})
    assert lines(capsys) == ([], [])
    tick(log, clock, 60, {1: "wip"}, seconds=2.0)  # 60 s since the last line
    assert lines(capsys) == (["59 quiet ticks in 1 min: calls=118 (118 free) jobs=1 decided=0 [wip=1]"], [])
    tick(log, clock, 61, {1: "review", 2: "wip"}, actions=["#2: launched senpai-student-pr2-1"])
    assert lines(capsys) == (
        [
            "tick 61: calls=2 jobs=1 decided=0 [review=1 wip=1]",
            "    #2: launched senpai-student-pr2-1",
            "    #1 wip -> review",
            "    #2 new -> wip",
        ],
        [],
    )
    tick(log, clock, 62, {1: "merged", 2: "wip"})  # a decision the advisor's job made: a change, no action of the wrapper
    tick(log, clock, 63, {1: "merged", 2: "wip"}, errors=["Launch senpai-student-pr2-1: the forge said 502"])
    out, err = lines(capsys)
    assert out == [
        "tick 62: calls=2 jobs=1 decided=0 [merged=1 wip=1]",
        "    #1 review -> merged",
        "tick 63: calls=2 jobs=1 decided=0 [merged=1 wip=1]",
    ]
    assert err == ["    error: Launch senpai-student-pr2-1: the forge said 502"]
    for n in range(64, 64 + 59):  # the same error again and again is counted, not printed; a printed tick restarts the minute
        tick(log, clock, n, {1: "merged", 2: "wip"}, errors=["Launch senpai-student-pr2-1: the forge said 502"])
    assert lines(capsys) == ([], [])
    tick(log, clock, 123, {1: "merged", 2: "wip"}, errors=["Launch senpai-student-pr2-1: the forge said 502"])
    (summary,), _ = lines(capsys)
    assert summary == "60 quiet ticks in 1 min: calls=120 (120 free) jobs=1 decided=0 [merged=1 wip=1] errors=60 (repeated)"
    tick(log, clock, 124, {1: "merged", 2: "wip"}, errors=["Launch senpai-student-pr2-1: the forge said 503"])  # a new one
    assert lines(capsys)[1] == ["    error: Launch senpai-student-pr2-1: the forge said 503"]


def test_quiet_prints_no_summary_only_the_ticks_that_did_something(capsys):
    clock = Clock()
    log = TickLog(quiet=True, clock=clock)
    for n in range(1, 200):
        tick(log, clock, n, {1: "wip"})
    tick(log, clock, 200, {1: "review"})
    assert lines(capsys) == (
        ["tick 1: calls=2 jobs=1 decided=0 [wip=1]", "tick 200: calls=2 jobs=1 decided=0 [review=1]", "    #1 wip -> review"],
        [],
    )
