"""Liveness through the real wrapper and local forge: a PR that is back in review at the same head
(after `changes`, its next attempt died before pushing) wakes the advisor again."""

import time
from types import SimpleNamespace

import pytest
from forge_fixtures import clone, commit_and_push
from llm_server import call
from research import hand_hypothesis, make_program, reader
from scripted import LLM_KEY, LLM_KEY_ENV, tool_results, use_openhands, user_text

from senpai.cli.wiring import make_forge
from senpai.cli.wrapper import build_wrapper
from senpai.config.harness import load_harness
from senpai.ledger import transitions
from senpai.ledger.blocks import Evidence, PrimaryResult
from senpai.wrapper import loop
from senpai.wrapper.loop import TickReport

pytestmark = pytest.mark.e2e


@pytest.mark.long
def test_changes_then_an_attempt_dead_before_pushing_wakes_the_advisor_again(local_forge, llm_server, tmp_path, monkeypatch):
    config = make_program(local_forge.base_url, tmp_path, "liveness", students=1, experiments=1, target="quick")
    use_openhands(config, llm_server.base_url, roles=("advisor",))
    monkeypatch.setenv(LLM_KEY_ENV, LLM_KEY)
    reviews: list[str] = []

    def advisor(body: dict) -> dict:
        """First review: ask for changes. Any later review: close."""
        if tool_results(body):
            return call("finish", message="done")
        found = [line for line in user_text(body).splitlines() if "is ready for review" in line]
        if not found:
            return call("finish", message="nothing to review")
        reviews.append(found[0])
        pr = int(found[0].split("PR #")[1].split()[0])
        verdict = "changes" if len(reviews) == 1 else "close"
        return call("decide", pr=pr, verdict=verdict, reason=f"review {len(reviews)}")

    llm_server.state.script("scripted-advisor", [advisor] * 20)
    bot = make_forge(load_harness(config))
    work = clone(bot, tmp_path / "work", "advisor")
    # the branch's params file is broken: the next attempt dies before it can commit or push
    head = commit_and_push(bot, work, "senpai/ada/h-dies", {"params.json": "not json\n"}, start="advisor")
    dies = hand_hypothesis("h-dies", bot.branch_sha("advisor"), "an attempt that dies before it pushes")
    pr = transitions.open_experiment(bot, dies, "senpai/ada/h-dies", "advisor", "dies")
    ev = Evidence(
        pr=pr.number,
        attempt=1,
        student="ada",
        head=head,
        command="hand-made",
        outcome="ok",
        primary=PrimaryResult(name="val_accuracy", value=0.9, baseline=None, delta=None),
        interpretation="attempt 1, made by hand",
    )
    transitions.submit_evidence(bot, bot.get_pull(pr.number), ev)

    w = build_wrapper(str(config))
    try:
        deadline = time.monotonic() + 200
        while bot.get_pull(pr.number).state == "open":
            assert time.monotonic() < deadline, (reviews, reader(config).experiment(bot.get_pull(pr.number)))
            w.tick()
            time.sleep(1.0)  # the wrapper's own period (tick_seconds): a tick while jobs run plans again, at a CPU cost
    finally:
        for job in w.fleet.list():
            if not job.done:
                w.fleet.delete(job.name)
        w.store.close()
    exp = reader(config).experiment(bot.get_pull(pr.number))
    assert [d.verdict for d in exp.decisions] == ["changes", "close"] and len(reviews) == 2
    assert exp.head == head and [e.attempt for e in exp.evidence] == [1, 2] and exp.evidence[1].outcome == "failed"


def test_a_wip_pr_whose_last_evidence_landed_without_its_move_to_review_goes_on(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "finish", students=1, experiments=1, target="quick")
    bot = make_forge(load_harness(config))
    work = clone(bot, tmp_path / "work", "advisor")
    head = commit_and_push(bot, work, "senpai/ada/h-dies", {"notes.md": "x\n"}, start="advisor")
    dies = hand_hypothesis("h-dies", bot.branch_sha("advisor"), "an attempt that dies before it pushes")
    pr = transitions.open_experiment(bot, dies, "senpai/ada/h-dies", "advisor", "crash")
    ev = Evidence(
        pr=pr.number,
        attempt=1,
        student="ada",
        head=head,
        command="c",
        outcome="failed",
        failure="the job died",
        primary=PrimaryResult(name="val_accuracy", value=None, baseline=None, delta=None),
        interpretation="i",
    )
    transitions.submit_evidence(bot, pr, ev, to_review=False)  # the wrapper died before the label moved
    w = build_wrapper(str(config))
    try:
        deadline = time.monotonic() + 120
        while bot.get_pull(pr.number).state == "open":
            assert time.monotonic() < deadline, bot.get_pull(pr.number).labels
            assert not w.tick().errors
            time.sleep(0.3)
    finally:
        w.store.close()
    exp = reader(config).experiment(bot.get_pull(pr.number))
    assert [e.attempt for e in exp.evidence] == [1] and "useful failure" in exp.decision.reason


def test_ticks_start_at_a_fixed_period_whatever_a_tick_takes(local_forge, tmp_path, monkeypatch):
    """The wait after a tick is the period minus that tick's own duration (never below 0), so wake
    latency does not grow with the tick's cost. The clock is simulated: ticks "take" a quarter of the period, then two periods."""
    config = make_program(local_forge.base_url, tmp_path, "fixed-period", students=1, experiments=1, target="quick")
    w = build_wrapper(str(config))
    period = w.cfg.tick_seconds
    now, durations, waits = [1000.0], iter([period / 4, period * 2, 0.0]), []

    def tick():
        w.ticks += 1
        now[0] += next(durations)
        return TickReport(tick=w.ticks, calls=0, refreshed=False)

    class Stop:
        def is_set(self) -> bool:
            return False

        def wait(self, seconds: float) -> None:
            waits.append(seconds)
            now[0] += seconds

    monkeypatch.setattr(loop, "time", SimpleNamespace(monotonic=lambda: now[0]))  # the loop's clock only
    monkeypatch.setattr(w, "tick", tick)
    monkeypatch.setattr(w, "_stop", Stop())
    try:
        w.run(max_ticks=3)
    finally:
        w.store.close()
    assert waits == [period * 3 / 4, 0.0]
