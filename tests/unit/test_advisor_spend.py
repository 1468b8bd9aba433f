"""What the openhands advisor's turns spent, as ledger records (`senpai-turn`): posted once per turn
and run, where the reader finds them (the PR, the PR the turn opened, or one steering issue), and
counted once by `senpai.ledger.spend`, the fleet's caps, `senpai status` and `senpai report`."""

import time

from forge_fixtures import commit_and_push, experiment
from policy_world import CFG, NOW

from senpai.ledger import records, transitions
from senpai.ledger.blocks import BudgetReport, TurnCost, TurnUsage, parse, render
from senpai.ledger.labels import SENPAI, STEER
from senpai.ledger.records import read_record, record_text
from senpai.ledger.spend import spend
from senpai.ledger.table import LedgerReader
from senpai.report.render import markdown
from senpai.report.summary import summarise
from senpai.wrapper.caps import exhausted
from senpai.wrapper.humans import HumanReader
from senpai.wrapper.status import LastTick, build_status

REV = "c" * 40


def _turn(pr: int | None, calls: int = 3, dollars: float = 0.25, status: str = "finished", key: str = "") -> TurnCost:
    spent = TurnUsage(llm_calls=calls, tokens=1000 * calls, dollars=dollars, wall_seconds=12.0)
    key = key or f"advisor-pr{pr if pr is not None else 'none'}-{REV[:12]}-1a2b3c4d"
    return TurnCost(pr=pr, revision=REV, key=key, status=status, spent=spent)  # type: ignore[arg-type]


def _pr(forge, tmp_path, name: str) -> int:
    commit_and_push(forge, tmp_path / "seed", f"senpai/ada/{name}", {f"{name}.txt": "x\n"}, start="advisor")
    return forge.create_pull(name, "body", f"senpai/ada/{name}", "advisor", [SENPAI]).number


def _read(forge):
    """The experiments and the steering issues' advisor turns, as the wrapper reads them."""
    ledger = LedgerReader(forge)
    exps = ledger.experiments()
    return exps, HumanReader(CFG, forge, ledger).read().state


def test_the_record_round_trips_and_its_prose_is_one_line():
    t = _turn(3)
    assert parse(render(t)) == t
    text = record_text(t, "advisor turn finished")
    assert read_record(text) == t and "<details>" in text
    line = transitions.prose("turn.md.j2", t=t)
    assert line == "advisor turn finished on `cccccccc`: 3 LLM calls, 3,000 tokens, $0.25, 12 s."


def test_a_turn_is_recorded_on_its_pr_else_the_pr_it_opened_else_one_steering_issue_once_per_run(fake_forge, tmp_path):
    forge, fake = fake_forge
    one, two = _pr(forge, tmp_path, "h1"), _pr(forge, tmp_path, "h2")
    assert transitions.record_turn(forge, _turn(one), []) == one
    assert transitions.record_turn(forge, _turn(one), []) == one  # a replay posts nothing
    assert transitions.record_turn(forge, _turn(None, key="advisor-prnone-cccccccccccc-aaaaaaaa"), [two, one]) == two
    issue = transitions.record_turn(forge, _turn(None), [])
    assert transitions.record_turn(forge, _turn(None), []) == issue  # replayed: the same issue, no second comment
    again = transitions.record_turn(forge, _turn(None, calls=5), [])  # resumed, more calls: a record of its own
    assert again == issue
    (steering,) = forge.list_issues(STEER, "all")
    assert steering.number == issue and SENPAI in steering.labels
    assert [len(forge.list_comments(n)) for n in (one, two, issue)] == [1, 1, 2]


def test_spend_counts_each_advisor_turn_once_on_a_pr_on_the_issue_and_stopped_by_its_turn_guard(fake_forge, tmp_path):
    forge, _ = fake_forge
    one, two = _pr(forge, tmp_path, "h1"), _pr(forge, tmp_path, "h2")
    transitions.record_turn(forge, _turn(one, dollars=0.25), [])  # finished within its turn limits
    transitions.record_turn(forge, _turn(None, dollars=0.5), [])  # about no PR: the issue
    # stopped by its turn guard: both its turn record and its turn-limit report, counted once
    stopped = _turn(two, calls=4, dollars=1.0, status="budget")
    transitions.record_turn(forge, stopped, [])
    limits = TurnUsage(llm_calls=4, tokens=4000, dollars=1.0, wall_seconds=60)
    report = BudgetReport(
        role="advisor", pr=two, revision=REV, exhausted=["dollars"], spent=stopped.spent, limits=limits, known="k",
        missing="m", needed=limits,
    )  # fmt: skip
    transitions.report_budget(forge, report)
    exps, steer = _read(forge)
    s = spend(exps, {}, steer.advisor_turns)
    assert (s.advisor_dollars, s.dollars, s.advisor_tokens, s.tokens) == (1.75, 1.75, 10_000, 10_000)
    assert s.advisor_seconds == 36.0 and s.experiments == 2
    # the status and the report show the same
    status = build_status(CFG, exps, [], steer, NOW, LastTick(at=NOW, source="wrapper"), None)
    assert status.caps.spent == s and "advisor 36 s (10,000 tokens, $1.75)" in status.markdown()
    summary = summarise(exps, "o/r", NOW, turns=steer.advisor_turns)
    assert summary.total == s and "advisor 10,000 tokens, $1.75" in markdown(summary)


def test_an_old_turn_limit_report_with_no_turn_record_still_counts():
    usage = TurnUsage(llm_calls=3, tokens=500, dollars=0.25, wall_seconds=30)
    old = BudgetReport(
        role="advisor", pr=1, revision=REV, exhausted=["dollars"], spent=usage, limits=usage, known="k", missing="m",
        needed=usage,
    )  # fmt: skip
    e = experiment(1, "review", budget_reports=[old])
    assert (spend([e], {}).advisor_dollars, spend([e], {}).advisor_seconds) == (0.25, 30)
    # a turn record of another, finished turn on the same revision does not hide it
    e = e.model_copy(update={"turn_costs": [_turn(1, dollars=0.5)]})
    assert spend([e], {}).advisor_dollars == 0.75


def test_a_resumed_turn_counts_its_largest_records_llm_figures_and_every_runs_seconds():
    first, second = _turn(None, calls=3, dollars=0.25, status="budget"), _turn(None, calls=5, dollars=0.5)
    s = spend([], {}, [first, second, second])  # the second posted twice by a race: one record
    assert (s.advisor_dollars, s.advisor_tokens, s.advisor_seconds) == (0.5, 5000, 24.0)


def test_a_record_forged_or_edited_by_anyone_but_the_bot_is_not_counted(fake_forge, tmp_path, monkeypatch):
    forge, fake = fake_forge
    one = _pr(forge, tmp_path, "h1")
    issue = transitions.record_turn(forge, _turn(None, dollars=0.5), [])
    mallory = fake.forge("mallory", "collaborator")
    rich = _turn(None, calls=9, dollars=900.0, key="advisor-prnone-cccccccccccc-ffffffff")
    mallory.create_comment(issue, record_text(rich, "advisor turn"))
    mallory.create_comment(one, record_text(rich.model_copy(update={"pr": one}), "advisor turn"))
    # a bot record someone edited: no record any more
    posted = transitions.record_turn(forge, _turn(one, dollars=0.25), [])
    bot_comment = forge.list_comments(posted)[-1]
    forged = bot_comment.body.replace("dollars: 0.25", "dollars: 700.0")
    assert forged != bot_comment.body
    monkeypatch.setattr(fake, "clock", lambda: time.time() + 5)  # GitHub's updated_at has one-second resolution
    fake.edit_comment(bot_comment.id, forged)
    exps, steer = _read(forge)
    assert spend(exps, {}, steer.advisor_turns).advisor_dollars == 0.5


def test_the_dollars_cap_is_reached_by_the_advisors_spend_alone(fake_forge, tmp_path):
    forge, _ = fake_forge
    transitions.record_turn(forge, _turn(None, calls=40, dollars=1.2), [])
    exps, steer = _read(forge)
    cfg = CFG.model_copy(update={"max_experiments": None, "caps": CFG.caps.model_copy(update={"dollars": 1.0})})
    assert exhausted(exps, steer, NOW, cfg) == {"dollars": "$1.20 of $1.00"}
    assert exhausted(exps, steer.__class__(), NOW, cfg) == {}  # without the issue's records: nothing spent


def test_the_turns_issue_is_continued_in_a_new_one_before_github_disables_its_comments(fake_forge, monkeypatch):
    # GitHub refuses every comment on an issue past 2,500 (403): the next no-PR turn would fail after
    # spending, and so would every one after it
    forge, fake = fake_forge
    monkeypatch.setattr(transitions, "TURNS_PER_ISSUE", 3)
    first = transitions.record_turn(forge, _turn(None, calls=1), [])
    fake.forge("alice", "owner").create_comment(first, "what are these?")  # a human's comment takes room too
    keys = [f"advisor-prnone-{REV[:12]}-{n:08x}" for n in range(4)]
    numbers = [transitions.record_turn(forge, _turn(None, calls=2, key=k), []) for k in keys]
    assert numbers[0] == first and len(set(numbers[1:])) == 1 and numbers[1] != first
    assert transitions.record_turn(forge, _turn(None, calls=2, key=keys[-1]), []) == numbers[-1]  # a replay: posted already
    assert all(len(forge.list_comments(n)) <= 3 for n in set(numbers))
    exps, steer = _read(forge)
    assert spend(exps, {}, steer.advisor_turns).advisor_tokens == 1000 + 4 * 2000  # every issue's records count


def test_each_turn_record_is_parsed_once_not_on_every_read(fake_forge, monkeypatch):
    # past read_record's LRU (2,048 texts, shared with every PR's records) each read re-parsed every
    # record of every turns issue: about 0.7 ms each, 2 s of CPU a refresh at 3,000 no-PR turns
    forge, _ = fake_forge
    for n in range(3):
        transitions.record_turn(forge, _turn(None, key=f"advisor-prnone-{REV[:12]}-{n:08x}"), [])
    parsed = []
    monkeypatch.setattr(records, "read_record", lambda text: parsed.append(text) or read_record(text))
    humans = HumanReader(CFG, forge, LedgerReader(forge))
    assert len(humans.read().state.advisor_turns) == 3 and len(parsed) == 3
    transitions.record_turn(forge, _turn(None, key=f"advisor-prnone-{REV[:12]}-{3:08x}"), [])
    humans.poll()
    assert len(humans.read().state.advisor_turns) == 4 and len(parsed) == 4  # only the new one
