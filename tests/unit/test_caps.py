"""Fleet caps: spend summed from the ledger, new work stopped at a cap, one exhaustion issue
with every section filled, and a trusted `/senpai caps` that resumes the work."""

import logging
from datetime import timedelta

import pytest
import steering_tick
import yaml
from forge_fixtures import merged
from policy_world import BASE, CFG, NOW, exp, job, launches

from senpai.config.harness import load_harness
from senpai.errors import ConfigError
from senpai.ledger.blocks import CAPS_VERB, BudgetReport, Cost, Decision, Steer, TurnUsage, Verification
from senpai.ledger.commands import SYNTAX, parse_commands
from senpai.ledger.events import Message
from senpai.ledger.inbox import Inbound, SteerState, Try
from senpai.ledger.labels import ATTENTION, STEER
from senpai.ledger.records import bot_records
from senpai.ledger.spend import spend
from senpai.wrapper import caps
from senpai.wrapper.actions import DeleteJob
from senpai.wrapper.caps import exhausted, exhaustion_issue, report
from senpai.wrapper.policy import plan
from senpai.wrapper.world import World


def _exhausted(w: World, cfg) -> dict[str, str]:
    return exhausted(w.exps, w.steer, w.now, cfg)


def _costly(pr: int, state: str, student: str = "ada", dollars: float = 0.0, value: float | None = None):
    """An experiment with one attempt that cost `dollars`, 1,000 tokens, 1,800 wall s and 900 GPU s."""
    e = exp(pr, state, student, attempts=1)
    ev = e.evidence[0]
    primary = ev.primary.model_copy(update={"value": value})
    ev = ev.model_copy(
        update={
            "outcome": "ok" if value is not None else "failed",
            "primary": primary,
            "cost": Cost(gpu_seconds=900, wall_seconds=1800, tokens=1000, dollars=dollars),
        }
    )
    decisions = [Decision(pr=pr, head=e.head, verdict="close", reason=f"no improvement on #{pr}")] if state == "closed" else []
    return e.model_copy(update={"evidence": [ev], "decisions": decisions})


def test_spend_sums_evidence_verifications_and_stopped_advisor_turns_from_the_ledger():
    a = _costly(1, "merged", dollars=0.5)
    # baseline seed 0 was reused from #7's verification: its seconds are #7's, counted there
    v = Verification(
        pr=1, candidate=a.head, baseline=BASE, metric="acc", direction="maximize", seeds=[0, 1], candidate_values=[0.9, 0.9],
        baseline_values=[0.8, 0.8], candidate_mean=0.9, passed=True, reason="r", baseline_mean=0.8, improvement=0.1,
        noise_floor=0.01, candidate_seconds=[300.0, 300.0], baseline_seconds=[600.0, 200.0],
        candidate_gpu_seconds=[300.0, 300.0], baseline_gpu_seconds=[600.0, 200.0], baseline_reused={0: 7},
    )  # fmt: skip
    usage = TurnUsage(llm_calls=3, tokens=500, dollars=0.25)
    stopped = BudgetReport(
        role="advisor", pr=1, revision=BASE, exhausted=["dollars"], spent=usage, limits=usage, known="k", missing="m",
        needed=usage,
    )  # fmt: skip
    a = a.model_copy(update={"verifications": [v], "budget_reports": [stopped]})
    b = _costly(2, "wip", "bo", dollars=1.0)
    s = spend([a, b], {"ada": 2, "bo": 1})
    assert s.experiments == 2 and s.dollars == 1.75 and s.tokens == 2500
    assert s.verifier_seconds == 800 and s.student_seconds == 3600  # both candidate seeds and the trained baseline seed
    assert s.gpu_hours == (900 + 900 + 800) / 3600  # evidence of both, the verifier's trained seeds
    assert s.cpu_hours == (1800 * 2 + 800 * 2 + 1800 * 1) / 3600  # ada's jobs hold 2 cores


def test_the_exhaustion_report_names_the_last_merge_in_merge_order_and_the_best_verified_holdout():
    # #7 merged first, #5 landed on #7's merge commit: #5 is the last merge (and the lower holdout);
    # closed #2 had the best validation value, never a verified holdout
    exps = [_costly(2, "closed", value=0.99), merged(5, 0.93, "merge-7"), merged(7, 0.95, BASE)]
    body = report(World(exps, BASE, [], NOW), CFG, {"experiments": "3 of 3"})
    assert "- Baseline: #5 merged last, holdout acc = 0.93" in body
    assert "- Best: #7, holdout acc = 0.950 (the best holdout of the verified merges)" in body
    assert "- Experiments: 3 opened, 2 merged, 1 closed, 0 open" in body
    none = report(World([_costly(2, "closed", value=0.99)], BASE, [], NOW), CFG, {"experiments": "1 of 1"})
    assert "- Baseline: the base branch as it was (no verified merge yet)" in none and "- Best: no verified merge" in none
    stop = CFG.model_copy(update={"caps": CFG.caps.model_copy(update={"on_exhausted": "stop"})})
    capped = report(World(exps, BASE, [], NOW), stop, {"experiments": "3 of 3"})  # the experiment cap stops no job
    assert "Reached: **experiments** 3 of 3. No new experiment opens; running jobs finish and open" in capped
    hours = stop.model_copy(update={"caps": stop.caps.model_copy(update={"gpu_hours": 0.5})})
    spent = report(World(exps, BASE, [], NOW), hours, {"gpu_hours": "0.50 h of 0.50 h"})
    assert "No new experiment opens, and running student and verifier jobs are stopped" in spent


def test_a_reached_cap_stops_new_work_even_a_try_and_a_raise_resumes_it():
    cfg = CFG.model_copy(update={"max_experiments": None, "caps": CFG.caps.model_copy(update={"dollars": 1.0})})
    exps = [_costly(1, "closed", dollars=0.6), _costly(2, "closed", "bo", dollars=0.6)]
    steer = SteerState(tries=(Try("9:1:v/0", "alice", {"a": 1}),))
    assert _exhausted(World(exps, BASE, [], NOW, steer=steer), cfg) == {"dollars": "$1.20 of $1.00"}
    assert launches(plan(World(exps, BASE, [], NOW, steer=steer), cfg), "advisor") == []
    raised = SteerState(tries=steer.tries, caps={"dollars": 5.0})
    (adv,) = launches(plan(World(exps, BASE, [], NOW, steer=raised), cfg), "advisor")
    assert [e.kind for e in adv.events] == ["try", "idle"]


def test_a_tick_sums_the_spend_once_however_often_the_policy_asks(monkeypatch):
    # the spend walks every experiment: a plan asks for the caps reached from several rules
    cfg = CFG.model_copy(update={"max_experiments": None, "caps": CFG.caps.model_copy(update={"dollars": 1.0})})
    walks = []
    monkeypatch.setattr(caps, "spent", lambda exps, *_: walks.append(len(exps)) or spend(exps, {}))
    w = World([_costly(1, "wip", dollars=0.6), _costly(2, "closed", "bo", dollars=0.6)], BASE, [], NOW)
    plan(w, cfg)
    plan(w, cfg)
    assert walks == [2]
    plan(World(w.exps[:1], BASE, [], NOW), cfg)  # another world (the next tick) is summed again
    assert walks == [2, 1]
    plan(World(w.exps, BASE, [], NOW), CFG)  # with no cap of spend (only a count) it is never summed
    assert walks == [2, 1]


def test_a_wall_clock_end_stops_new_work_once_passed():
    cfg = CFG.model_copy(update={"max_experiments": None, "caps": CFG.caps.model_copy(update={"end_at": NOW})})
    assert _exhausted(World([], BASE, [], NOW - timedelta(seconds=1)), cfg) == {}
    assert set(_exhausted(World([], BASE, [], NOW), cfg)) == {"end"}
    later = SteerState(caps={"end_at": (NOW + timedelta(days=1)).isoformat()})
    assert _exhausted(World([], BASE, [], NOW, steer=later), cfg) == {}


def test_a_passed_end_is_reported_once_by_name_with_a_command_to_paste_that_lifts_it():
    cfg = CFG.model_copy(update={"max_experiments": None, "caps": CFG.caps.model_copy(update={"end_at": NOW})})
    issue = exhaustion_issue(World([], BASE, [], NOW + timedelta(hours=2)), cfg)
    assert issue is not None and f"(end {NOW.isoformat(timespec='minutes')} has passed)" in issue.title
    assert "the end" not in issue.title and "&lt;" not in issue.body  # GitHub shows `&lt;` literally inside code
    (line,) = [x for x in issue.body.splitlines() if x.startswith("To go on")]
    (command,) = parse_commands(line.split("`")[1], None, None)  # pasted as it stands, it parses
    lifted = SteerState(caps={"end_at": command.end_at})
    assert _exhausted(World([], BASE, [], NOW + timedelta(hours=2), steer=lifted), cfg) == {}


def test_on_exhausted_stop_deletes_running_jobs_and_launches_none_until_raised():
    limits = CFG.caps.model_copy(update={"gpu_hours": 0.25, "on_exhausted": "stop"})
    cfg = CFG.model_copy(update={"max_experiments": None, "caps": limits})
    exps = [_costly(1, "wip"), _costly(2, "verifying", "bo")]
    jobs = [job("senpai-student-pr1-2", "student", 1, "ada"), job("senpai-verifier-pr2-1", "verifier", 2, "bo")]
    actions = plan(World(exps, BASE, jobs, NOW), cfg)
    assert sorted(a.name for a in actions if isinstance(a, DeleteJob)) == [j.name for j in jobs]
    assert launches(actions, "student") == [] and launches(actions, "verifier") == []
    # the jobs are gone; a raise runs the same attempt again (no attempt spent) and the verifier
    raised = plan(World(exps, BASE, [], NOW, steer=SteerState(caps={"gpu_hours": 10.0})), cfg)
    assert [a.name for a in launches(raised, "student")] == ["senpai-student-pr1-2"]
    assert [a.pr for a in launches(raised, "verifier")] == [2]


def test_the_experiment_cap_opens_one_exhaustion_issue_and_a_trusted_caps_resumes_to_the_new_cap(fake_forge):
    forge, fake = fake_forge
    cfg = CFG  # max_experiments: 4
    exps = [
        merged(1, 0.91, BASE),
        _costly(2, "closed", "bo", dollars=0.02, value=0.88),
        _costly(3, "closed", value=0.87).model_copy(update={"title": "[click](https://evil.example) @acme"}),
        _costly(4, "verifying", "bo", value=0.93),
    ]
    ledger, _, view = steering_tick.read(forge, cfg)
    steering_tick.act(forge, cfg, (ledger, exps, view))  # #4 still verifying: the report waits for it
    assert not [i for i in forge.list_issues(STEER, "all") if "exhausted" in i.title]
    exps[3] = exps[3].model_copy(update={"state": "blocked"})  # waiting for a human: no longer running work
    lines = []
    for _ in range(2):  # a second wrapper (restart, no cache) finds the issue and opens none
        ledger, _, view = steering_tick.read(forge, cfg)
        lines += steering_tick.act(forge, cfg, (ledger, exps, view))[0]
    (issue,) = [i for i in forge.list_issues(STEER, "all") if "exhausted" in i.title]
    assert [line for line in lines if "exhausted" in line] == [f"#{issue.number}: opened an issue for humans: {issue.title}"]
    assert set(issue.labels) == {STEER, ATTENTION} and "experiments 4 of 4" in issue.title
    body = issue.body
    for section in ("## What is known", "## What evidence is missing", "## What was tried", "## Caps needed to go on"):
        assert section in body
    assert "- Baseline: #1 merged last, holdout acc = 0.91" in body and "- Best: #1, holdout acc = 0.91" in body
    assert "#4 t: a human (blocked)" in body  # missing evidence: what is open...
    assert (
        "The holdout of 2 closed experiment(s) was never measured (closed on validation alone): #3, #2" in body
    )  # ...and unmeasured
    assert "no improvement on #2" in body and "no improvement on #3" in body  # tried, with reasons
    assert "\\[click\\]" in body and "@\u2060acme" in body and "@acme" not in body  # a PR title stays inert
    assert "`/senpai caps experiments=6`" in body  # the caps needed, as a command to paste
    w = World(exps, BASE, [], NOW)
    assert launches(plan(w, cfg), "advisor") == []  # no new experiment at the cap

    # an outsider's raise does nothing; a collaborator's resumes the work up to 6
    fake.forge("mallory", "read").create_comment(issue.number, "/senpai caps experiments=100")
    fake.add_collaborator("carol")
    fake.forge("carol", "collaborator").create_comment(issue.number, "/senpai caps experiments=6")
    ledger, _, view = steering_tick.read(forge, cfg)
    lines = steering_tick.act(forge, cfg, (ledger, exps, view))[0]
    assert any("caps set: experiments 6 (4 experiments opened so far)" in line for line in lines), lines
    state = steering_tick.read(forge, cfg)[2].state
    assert state.experiments == 6
    (adv,) = launches(plan(World(exps, BASE, [], NOW, steer=state), cfg), "advisor")
    assert [e.kind for e in adv.events] == ["idle", "idle"]  # ada and bo: 6 - 4 = 2 more
    assert exhaustion_issue(World(exps, BASE, [], NOW, steer=state, issues=view.issues, bot=forge.login), cfg) is None


def _settled(dollars: float = 0.02) -> list:
    """Four experiments (CFG's max_experiments), none running: the experiment cap is reached and its
    report is due; #2 cost `dollars`."""
    return [
        merged(1, 0.91, BASE),
        _costly(2, "closed", "bo", dollars=dollars, value=0.88),
        _costly(3, "closed", value=0.87),
        _costly(4, "blocked", "bo", value=0.93),
    ]


def _tick(forge, cfg, exps) -> list[str]:
    """One fresh wrapper re-read and its steering, carried out on the forge: what was done."""
    ledger, _, view = steering_tick.read(forge, cfg)
    lines, errors = steering_tick.act(forge, cfg, (ledger, exps, view))
    assert not errors, errors
    return lines


def _reports(forge) -> list:
    """The exhaustion reports on the forge, any state, oldest first (whoever wrote them)."""
    return sorted((i for i in forge.list_issues(STEER, "all") if "fleet caps exhausted" in i.title), key=lambda i: i.number)


def _bot_says(forge, number: int) -> list[str]:
    return [c.body for c in forge.list_comments(number) if c.user == forge.login]


def test_raising_a_cap_not_reached_while_exhausted_opens_no_second_report(fake_forge):
    forge, fake = fake_forge
    exps = _settled()
    _tick(forge, CFG, exps)
    (first,) = _reports(forge)
    assert "experiments 4 of 4" in first.title
    fake.add_collaborator("carol")
    fake.forge("carol", "collaborator").create_comment(first.number, "/senpai caps dollars=50 gpu_hours=10")
    lines = []
    for _ in range(3):  # the ack's tick, then ticks that read the raised caps: still exhausted on experiments
        lines += _tick(forge, CFG, exps)
    assert any("caps set: dollars 50" in line for line in lines), lines
    assert steering_tick.read(forge, CFG)[2].state.caps == {"dollars": 50.0, "gpu_hours": 10.0}
    assert [(i.number, i.state) for i in _reports(forge)] == [(first.number, "open")]  # the one report stands
    assert [("Applied:" in c) for c in _bot_says(forge, first.number)] == [True]  # the ack alone: nothing closed it


def test_a_raised_reached_cap_closes_the_report_and_a_later_exhaustion_opens_a_new_one(fake_forge):
    forge, fake = fake_forge
    exps = _settled()
    _tick(forge, CFG, exps)
    (first,) = _reports(forge)
    fake.add_collaborator("carol")
    carol = fake.forge("carol", "collaborator")
    # a human's issue carrying a copy of this report's marker, and of the next one's, is not the bot's:
    # it is never closed for the bot's, and keeps none from opening
    marker = next(line for line in first.body.splitlines() if line.startswith("<!-- senpai:exhausted:"))
    later = [*exps, _costly(5, "closed", value=0.8), _costly(6, "closed", "bo", value=0.8)]
    forged = exhaustion_issue(World(later, BASE, [], NOW, steer=SteerState(experiments=6)), CFG).marker
    copy = carol.create_issue("fleet caps exhausted (mine)", f"my notes\n\n{marker}\n\n{forged}", [STEER]).number
    carol.create_comment(first.number, "/senpai caps experiments=6")
    lines = _tick(forge, CFG, exps)  # the ack
    assert any("caps set: experiments 6" in line for line in lines), lines
    lines = _tick(forge, CFG, exps)  # 4 of 6: work goes on, and the report no longer says what is true
    assert lines == [f"#{first.number}: closed: no fleet cap is reached any more"], lines
    assert [(i.number, i.state) for i in _reports(forge) if i.user == forge.login] == [(first.number, "closed")]
    (note,) = [c for c in _bot_says(forge, first.number) if "Applied:" not in c]
    assert "No fleet cap is reached any more" in note and "senpai goes on" in note
    (closed,) = [i for i in forge.list_issues(STEER, "all") if i.number == first.number]
    assert STEER in closed.labels and ATTENTION not in closed.labels
    assert steering_tick.read(forge, CFG)[2].state.experiments == 6  # the ack on the closed report still counts
    assert _tick(forge, CFG, exps) == []  # closed once
    _tick(forge, CFG, later)  # 6 of 6: exhausted again
    mine = [(i.number, i.state, "experiments 6 of 6" in i.title) for i in _reports(forge) if i.user == forge.login]
    assert mine == [(first.number, "closed", False), (mine[-1][0], "open", True)] and mine[-1][0] > first.number
    assert forged in [i.body for i in _reports(forge) if i.user == forge.login][-1]
    assert [i.state for i in forge.list_issues(STEER, "all") if i.number == copy] == ["open"]


def test_a_new_report_closes_the_earlier_open_one_naming_it(fake_forge):
    forge, fake = fake_forge
    cfg = CFG.model_copy(update={"caps": CFG.caps.model_copy(update={"dollars": 1.0})})
    _tick(forge, cfg, _settled(dollars=0.02))
    (first,) = _reports(forge)
    assert "experiments 4 of 4" in first.title and "dollars" not in first.title
    _tick(forge, cfg, _settled(dollars=2.0))  # the dollars cap is reached too (a turn's spend landed late)
    first_now, second = _reports(forge)
    assert first_now.number == first.number and first_now.state == "closed" and second.state == "open"
    assert "experiments 4 of 4" in second.title and "dollars $2.00 of $1.00" in second.title
    (note,) = _bot_says(forge, first.number)
    assert f"Superseded by #{second.number}" in note
    for _ in range(2):  # a restarted wrapper (no cache) opens and closes nothing more
        assert _tick(forge, cfg, _settled(dollars=2.0)) == []
    fake.item(first.number).state = "open"  # reopened by hand: closed again, with no second comment
    assert _tick(forge, cfg, _settled(dollars=2.0)) == [f"#{first.number}: closed: superseded by #{second.number}"]
    assert len(_bot_says(forge, first.number)) == 1 and [i.state for i in _reports(forge)] == ["closed", "open"]


def test_a_report_is_judged_after_the_caps_its_own_tick_applies(fake_forge):
    forge, fake = fake_forge
    fake.add_collaborator("carol")
    steer = fake.forge("carol", "collaborator").create_issue("more", "/senpai caps experiments=6", [STEER]).number
    exps = _settled()  # 4 of 4 as the config says: the command in this same read raises it to 6
    lines = _tick(forge, CFG, exps)
    assert any("caps set: experiments 6" in line for line in lines), lines
    assert _reports(forge) == []  # not opened for the cap this tick's ack raised
    assert _tick(forge, CFG, exps) == [] and _reports(forge) == []  # on the re-read: 4 of 6, nothing to report
    assert len(_bot_says(forge, steer)) == 1


def _llm(on_exhausted: str = "finish", **capped):
    """CFG with openhands for both roles and `capped` (e.g. dollars=1.0) as its fleet caps."""
    llm = {"kind": "openhands", "llm": {"model": "m"}}
    runtime = CFG.runtime.model_validate({"advisor": llm, "student": llm})
    in_force = CFG.caps.model_copy(update={**capped, "on_exhausted": on_exhausted})
    return CFG.model_copy(update={"max_experiments": None, "caps": in_force, "runtime": runtime})


def _verified(e):
    v = Verification(
        pr=e.pr, candidate=e.head, baseline=BASE, metric="acc", direction="maximize", seeds=[0], candidate_values=[0.9],
        baseline_values=[0.8], candidate_mean=0.9, passed=True, reason="r", baseline_mean=0.8, improvement=0.1,
        noise_floor=0.01,
    )  # fmt: skip
    return e.model_copy(update={"verifications": [v]})


def _message(number: int, cid: int, on_pr: bool) -> Inbound:
    m = Message(number=number, comment_id=cid, author="alice", association="COLLABORATOR", body="why?", version=f"v{cid}")
    return Inbound(m, on_pr, [], NOW - timedelta(minutes=1), False)


def test_a_spent_llm_cap_starts_no_llm_turn_but_the_advisors_answers_to_humans():
    work = [
        _costly(1, "review", dollars=0.6, value=0.9),  # a review for the advisor
        _verified(_costly(2, "verifying", "bo", dollars=0.6, value=0.9)),  # a decision for the advisor
        _costly(3, "changes", "ada"),  # a student's next turn; its own running job is not stopped
        _costly(4, "verifying", "bo", value=0.9),  # owes a verification: no LLM
    ]
    jobs = [job("senpai-student-pr3-2", "student", 3, "ada")]
    for cfg in (_llm(dollars=1.0), _llm(tokens=4000)):
        actions = plan(World(work, BASE, jobs, NOW), cfg)
        assert launches(actions, "advisor") == [] and launches(actions, "student") == []
        assert not [a for a in actions if isinstance(a, DeleteJob)]  # finish: the running turn finishes
        assert [a.pr for a in launches(actions, "verifier")] == [4]  # the verifier has no LLM: it finishes the work
        idle = plan(World(work, BASE, [], NOW), cfg)  # the student is free: still no LLM turn for #3
        assert launches(idle, "student") == []
    # a trusted human is still answered, by the advisor alone: on an issue, and on the PR of a held student
    inbox = (_message(7, 70, False), _message(3, 71, True))
    first = {
        f"message:{m.message.number}:{m.message.comment_id}:v{m.message.comment_id}": NOW - timedelta(minutes=1) for m in inbox
    }
    actions = plan(World(work, BASE, [], NOW, inbox=inbox, first_seen=first), _llm(dollars=1.0))
    (adv,) = launches(actions, "advisor")
    assert [(e.kind, e.pr) for e in adv.events] == [("message", None), ("message", None)] and not launches(actions, "student")
    # stop deletes the running student and verifier jobs as for any cap; a raise resumes every turn
    stopped = plan(World(work, BASE, jobs, NOW), _llm("stop", dollars=1.0))
    assert [a.name for a in stopped if isinstance(a, DeleteJob)] == ["senpai-student-pr3-2"]
    # (#2's round does not wait for #4's verification here: `tests/unit/test_rounds.py`)
    no_wait = _llm(dollars=1.0).model_copy(update={"round_wait_seconds": 0.0})
    raised = plan(World(work, BASE, [], NOW, steer=SteerState(caps={"dollars": 5.0})), no_wait)
    (adv,) = launches(raised, "advisor")
    assert {"review", "verified"} <= {e.kind for e in adv.events} and [a.pr for a in launches(raised, "student")] == [3]


def test_a_spent_llm_cap_holds_only_llm_roles_and_reports_at_once():
    work = [_costly(1, "review", dollars=0.6, value=0.9), _costly(3, "changes", "bo", dollars=0.6)]
    # search roles spend no LLM money (this was spent before a switch to search): their turns go on
    search = CFG.model_copy(update={"max_experiments": None, "caps": CFG.caps.model_copy(update={"dollars": 1.0})})
    actions = plan(World(work, BASE, [], NOW), search)
    assert [e.kind for e in launches(actions, "advisor")[0].events] == ["review"] and [
        a.pr for a in launches(actions, "student")
    ] == [3]
    assert exhaustion_issue(World(work, BASE, [], NOW), search) is None  # running work settles first
    # an LLM student, a search advisor: the advisor still reviews, the student waits
    llm_student = _llm(dollars=1.0).model_copy(
        update={"runtime": search.runtime.model_copy(update={"student": _llm().runtime.student})}
    )
    actions = plan(World(work, BASE, [], NOW), llm_student)
    assert [e.kind for e in launches(actions, "advisor")[0].events] == ["review"] and launches(actions, "student") == []
    # the held work cannot settle, so the report opens now and says what is held
    issue = exhaustion_issue(World(work, BASE, [], NOW), _llm(dollars=1.0))
    assert issue is not None and "no new LLM turn of the advisor or the student starts" in issue.body


def test_an_old_senpai_budget_comment_still_sets_the_caps_and_its_ack_names_senpai_caps(fake_forge):
    """`/senpai budget` comments are on the forge already (humans' steering, replayed after a crash):
    read as `/senpai caps`, applied, answered with the new name, and recorded as before (verb `budget`)."""
    forge, fake = fake_forge
    fake.add_collaborator("carol")
    carol = fake.forge("carol", "collaborator")
    issue = carol.create_issue("steer", "/senpai budget experiments=6 dollars=2.5", [STEER]).number
    ledger, exps, view = steering_tick.read(forge, CFG)
    done, failed = steering_tick.act(forge, CFG, (ledger, exps, view))
    assert not failed and any("caps set: experiments 6, dollars 2.5" in line for line in done), done
    (ack,) = [c.body for c in forge.list_comments(issue) if c.user == forge.login]
    assert "`/senpai budget` is now `/senpai caps`: it was read as that" in ack
    (record,) = [b for _, b in bot_records(forge.list_comments(issue), forge.login, Steer)]
    assert [c.verb for c in record.commands] == [CAPS_VERB] == ["budget"]  # the record's format is unchanged
    for _ in range(2):  # a restart folds the ack again: the caps hold, and the message is not answered twice
        ledger, exps, view = steering_tick.read(forge, CFG)
        assert view.state.experiments == 6 and view.state.caps == {"dollars": 2.5}
        steering_tick.act(forge, CFG, (ledger, exps, view))
    assert len([c for c in forge.list_comments(issue) if c.user == forge.login]) == 1
    assert "/senpai caps" in SYNTAX and "/senpai budget" not in SYNTAX  # help names the new command only


def _harness_file(tmp_path, **more):
    path = tmp_path / "harness.yaml"
    base = {"forge": {"repo": "o/r"}, "tracker": {"dir": "/tmp/w"}, "fleet": {"dir": "/tmp/f"}, "state_dir": "/tmp/s"}
    path.write_text(yaml.safe_dump({**base, "students": [{"name": "ada"}], **more}))
    return path


def test_the_old_limits_key_still_loads_as_caps_with_a_warning_and_both_are_refused(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="senpai.config.harness"):
        path = _harness_file(tmp_path, limits={"gpu_hours": 3.0, "on_exhausted": "stop"})
        cfg = load_harness(path)
    assert cfg.caps.gpu_hours == 3.0 and cfg.caps.on_exhausted == "stop"
    assert [r.getMessage() for r in caplog.records] == [f"{path}: limits is deprecated, read as caps: rename it"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="senpai.config.harness"):
        assert load_harness(_harness_file(tmp_path, caps={"gpu_hours": 3.0})).caps.gpu_hours == 3.0
    assert caplog.records == []  # the new key alone: no warning
    with pytest.raises(ConfigError, match="limits and caps are both set: limits is the deprecated name of caps"):
        load_harness(_harness_file(tmp_path, limits={"gpu_hours": 3.0}, caps={"gpu_hours": 4.0}))
    with pytest.raises(ConfigError, match=r"limits\.dolars: is not a field senpai knows") as refused:
        load_harness(_harness_file(tmp_path, limits={"dolars": 3.0}))  # named as the file writes it
    assert "caps.dolars" not in str(refused.value)


def test_raising_one_of_two_reached_caps_leaves_one_open_report_for_the_cap_still_reached(fake_forge):
    """Red team: the experiments cap alone (report A), then the dollars cap too (B supersedes A); a
    trusted human raises dollars but not experiments. Senpai is still stopped on experiments 4 of 4:
    one open report must say so, not B closed as "superseded by #A" with A closed too."""
    forge, fake = fake_forge
    cfg = CFG.model_copy(update={"caps": CFG.caps.model_copy(update={"dollars": 1.0})})
    _tick(forge, cfg, _settled(dollars=0.02))
    _tick(forge, cfg, _settled(dollars=2.0))
    first, second = _reports(forge)
    assert (first.state, second.state) == ("closed", "open")
    fake.add_collaborator("carol")
    fake.forge("carol", "collaborator").create_comment(second.number, "/senpai caps dollars=5")
    for _ in range(3):
        _tick(forge, cfg, _settled(dollars=2.0))
    assert caps.caps_reached(World(_settled(2.0), BASE, [], NOW, steer=steering_tick.read(forge, cfg)[2].state), cfg)
    still = [i for i in _reports(forge) if i.state == "open"]
    assert len(still) == 1 and "experiments 4 of 4" in still[0].title and "dollars" not in still[0].title, [
        (i.number, i.state, i.title) for i in _reports(forge)
    ]
    assert not any(f"Superseded by #{first.number}." in c for c in _bot_says(forge, second.number))


def test_the_same_caps_reached_again_after_their_report_was_closed_get_an_open_report(fake_forge):
    """Red team: report A (experiments 4 of 4) is closed once a human raises the cap to 6; the cap
    put back to 4 stops senpai again at the very values A had: an open report must say so."""
    forge, fake = fake_forge
    exps = _settled()
    _tick(forge, CFG, exps)
    (first,) = _reports(forge)
    fake.add_collaborator("carol")
    carol = fake.forge("carol", "collaborator")
    carol.create_comment(first.number, "/senpai caps experiments=6")
    _tick(forge, CFG, exps)  # the ack
    assert _tick(forge, CFG, exps) == [f"#{first.number}: closed: no fleet cap is reached any more"]
    steer = carol.create_issue("back", "/senpai caps experiments=4", [STEER]).number
    for _ in range(3):
        _tick(forge, CFG, exps)
    assert len(_bot_says(forge, steer)) == 1  # the ack
    still = [i for i in _reports(forge) if i.state == "open"]
    assert len(still) == 1 and still[0].number > first.number and "experiments 4 of 4" in still[0].title, [
        (i.number, i.state, i.title) for i in _reports(forge)
    ]
    for _ in range(2):  # and only one
        assert _tick(forge, CFG, exps) == []
    fake.item(still[0].number).state = "closed"  # a human closed it, read: no report again
    assert _tick(forge, CFG, exps) == [] and [i.state for i in _reports(forge)] == ["closed", "closed"]
