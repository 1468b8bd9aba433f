"""senpai's status (`senpai.wrapper.status`) as the pure function of the ledger and the fleet it is,
and `/senpai help` and `/senpai status` answered on the forge through the steering path."""

import json
from datetime import timedelta

import steering_tick
from forge_fixtures import after_a_merge, commit_and_push, merged
from policy_world import BASE, CFG, NOW, exp, job
from test_forge_steering import TARGET

from senpai.fleet.base import JobStatus
from senpai.forge.base import RateLimit
from senpai.ledger.blocks import Cost
from senpai.ledger.commands import SYNTAX
from senpai.ledger.inbox import SteerState
from senpai.ledger.labels import STEER, ExperimentState
from senpai.ledger.table import LedgerReader
from senpai.report.summary import summarise
from senpai.wrapper.status import LastTick, Status, build_status

TICK = LastTick(at=NOW, source="wrapper")


def test_students_experiments_jobs_and_caps_are_computed_from_what_was_read():
    costly = exp(2, "review", student="bo", attempts=2)
    costly = costly.model_copy(
        update={
            "title": "wide | deep\nnets " + "x" * 200,
            "evidence": [
                e.model_copy(update={"cost": Cost(gpu_seconds=1800, wall_seconds=60, tokens=10, dollars=0.5)})
                for e in costly.evidence
            ],
        }
    )
    exps = [exp(1, "merged"), costly, exp(3, "wip"), exp(4, "closed"), exp(5, "blocked", student="bo")]
    started = NOW - timedelta(minutes=5)
    ran = JobStatus(name="senpai-student-pr3-1", role="student", pr=3, student="ada", phase="running", started_at=started)
    jobs = [
        ran.model_copy(update={"deadline_at": started + timedelta(minutes=20)}),
        job("senpai-verifier-pr2-1", "verifier", pr=2, phase="pending"),
        job("senpai-student-pr1-1", "student", pr=1, student="ada", phase="succeeded"),
    ]
    s = build_status(
        CFG, exps, jobs, SteerState(experiments=7, paused=True), NOW, TICK, RateLimit(remaining=4000, limit=5000, reset_at=None)
    )
    assert [(r.name, r.activity, r.pr, r.job) for r in s.students] == [
        ("ada", "running", 3, "senpai-student-pr3-1"),
        ("bo", "idle", None, None),
    ]
    assert [(e.pr, e.state) for e in s.open] == [
        (3, ExperimentState.WIP),
        (2, ExperimentState.REVIEW),
        (5, ExperimentState.BLOCKED),
    ]
    assert (s.merged, s.closed) == (1, 1)
    running, pending = s.jobs  # finished jobs are left out
    assert (running.age_seconds, running.left_seconds) == (300, 900) and pending.age_seconds is None
    b = s.caps
    assert (b.experiments, b.experiment_cap, b.cap_source, b.paused, b.streak) == (5, 7, "steering", True, 1)
    assert (b.spent.gpu_hours, b.spent.tokens, b.spent.dollars) == (1.0, 20, 1.0)
    assert b.in_force == {"experiments": 7} and b.exhausted == {}
    text = s.markdown()
    assert "| `senpai-student-pr3-1` | running | #3 | 5 min | 15 min |" in text
    assert "wide \\| deep nets xxx" in text and "x" * 100 not in text  # one bounded cell
    assert "5 of 7" in text and "1.000 GPU-h" in text and "$1.00 LLM" in text
    assert "4000 of 5000 left" in text and "**paused**" in text
    assert Status.model_validate(json.loads(s.model_dump_json())) == s  # --json round-trips


def test_spend_is_shown_against_each_cap_and_an_exhausted_one_is_named():
    limits = CFG.caps.model_copy(update={"dollars": 0.75, "gpu_hours": 10.0, "end_at": NOW + timedelta(days=1)})
    cfg = CFG.model_copy(update={"caps": limits})
    e = exp(1, "review", attempts=1)
    e = e.model_copy(update={"evidence": [e.evidence[0].model_copy(update={"cost": Cost(gpu_seconds=3600, dollars=1.0)})]})
    s = build_status(cfg, [e], [], SteerState(), NOW, TICK, None)
    assert s.caps.exhausted == {"dollars": "$1.00 of $0.75"}
    text = s.markdown()
    assert "$1.00 of $0.75 LLM" in text and "1.000 of 10.000 GPU-h" in text and "- end: " in text
    assert "**no new experiments**, cap reached (dollars $1.00 of $0.75): no new experiment opens; running jobs finish" in text
    assert "fleet caps exhausted" not in text and "stopped" not in text  # nothing was stopped


def test_a_reached_cap_says_what_goes_on_and_only_a_stop_reads_as_one():
    """The experiment cap only keeps new experiments from opening: the open ones go on. Only
    `on_exhausted: stop` with a spend cap reached stops running jobs, and only then is it a stop."""
    work = [exp(1, "closed"), exp(2, "review", attempts=1), exp(3, "wip")]
    jobs = [job("senpai-student-pr3-1", "student", pr=3, student="ada")]
    capped = CFG.model_copy(update={"max_experiments": 3})
    b = build_status(capped, work, jobs, SteerState(), NOW, TICK, None).caps
    assert b.exhausted == {"experiments": "3 of 3"} and not b.stopping
    line = next(x for x in build_status(capped, work, jobs, SteerState(), NOW, TICK, None).markdown().splitlines() if "cap" in x)
    assert line == (
        "- **no new experiments**, cap reached (experiments 3 of 3): no new experiment opens; "
        "running jobs finish and open experiments go on until decided"
    )
    stop = capped.model_copy(update={"caps": CFG.caps.model_copy(update={"on_exhausted": "stop"})})
    assert not build_status(stop, work, jobs, SteerState(), NOW, TICK, None).caps.stopping  # the experiment cap stops nothing
    hours = stop.model_copy(update={"max_experiments": None, "caps": stop.caps.model_copy(update={"gpu_hours": 0.1})})
    costly = exp(2, "review", attempts=1)
    costly = costly.model_copy(update={"evidence": [costly.evidence[0].model_copy(update={"cost": Cost(gpu_seconds=3600)})]})
    s = build_status(hours, [costly], jobs, SteerState(), NOW, TICK, None)
    stopped = (
        "- **stopped**, fleet caps exhausted (gpu_hours 1.000 h of 0.100 h): no new experiment opens, and running student and "
        "verifier jobs are stopped (`caps.on_exhausted: stop`)"
    )
    assert s.caps.stopping and stopped in s.markdown()


def test_a_reused_baseline_seed_counts_only_where_it_was_measured_in_the_status_and_the_report_alike():
    e = merged(1, 0.9, BASE)
    seeds = dict(seeds=[0, 1], candidate_values=[0.9, 0.9], baseline_values=[0.5, 0.5])
    seconds = dict(candidate_seconds=[100.0, 100.0], baseline_seconds=[400.0, 50.0])  # seed 0's 400 s: #7's run
    gpu = dict(candidate_gpu_seconds=[100.0, 100.0], baseline_gpu_seconds=[400.0, 50.0])
    v = e.verifications[0].model_copy(update=seeds | seconds | gpu | {"baseline_reused": {0: 7}})
    e = e.model_copy(update={"verifications": [v]})
    students = [CFG.students[0].model_copy(update={"cpus": 2}), CFG.students[1]]
    limits = CFG.caps.model_copy(update={"gpu_hours": 0.1})  # 360 GPU s: 250 trained here, 650 with #7's seed
    cfg = CFG.model_copy(update={"students": students, "caps": limits})
    spent = build_status(cfg, [e], [], SteerState(), NOW, TICK, None).caps
    report = summarise([e], "o/r", cpus={"ada": 2})
    assert spent.spent.verifier_seconds == 250 and spent.spent.gpu_seconds == 250 and spent.spent.cpu_seconds == 500
    assert report.total == spent.spent and report.rows[0].spend.verifier_seconds == 250
    assert spent.exhausted == {}


def test_a_reused_candidate_seed_counts_once_and_every_holdout_verdict_is_counted():
    e = merged(1, 0.9, BASE)
    seeds = dict(seeds=[0, 1], candidate_values=[0.9, 0.9], baseline_values=[0.5, 0.5])
    seconds = dict(candidate_seconds=[100.0, 30.0], baseline_seconds=[400.0, 50.0], candidate_gpu_seconds=[0.0, 0.0])
    reused = {"baseline_reused": {0: 7}, "candidate_reused": {0: 1, 1: 1}}  # its own earlier verification measured both
    again = e.verifications[0].model_copy(update=seeds | seconds | reused)
    refused = again.model_copy(update={"seeds": [], "candidate_values": [], "baseline_values": [], "candidate_seconds": []})
    e = e.model_copy(update={"verifications": [e.verifications[0], again, refused]})
    first = build_status(CFG, [e.model_copy(update={"verifications": e.verifications[:1]})], [], SteerState(), NOW, TICK, None)
    s = build_status(CFG, [e], [], SteerState(), NOW, TICK, None)
    assert s.caps.spent.verifier_seconds - first.caps.spent.verifier_seconds == 50  # baseline seed 1, trained again
    assert (first.holdout_verdicts, s.holdout_verdicts) == (1, 2)  # a refusal that measured nothing is no verdict
    assert "- holdout verdicts: 2 on the current holdout (each" in s.markdown()
    assert summarise([e], "o/r").counts["holdout_verdicts"] == 2
    # a refreshed holdout (new sealed data, another `holdout` id) counts its own verdicts from 1
    fresh = again.model_copy(update={"holdout": "f" * 16})
    s = build_status(CFG, [e.model_copy(update={"verifications": [*e.verifications, fresh]})], [], SteerState(), NOW, TICK, None)
    assert (s.holdout_verdicts, s.holdouts) == (1, 2) and "(2 holdouts in all)" in s.markdown()


def test_an_assigned_student_waiting_for_its_job_and_no_caps():
    cfg = CFG.model_copy(update={"max_experiments": None})
    s = build_status(cfg, [exp(1, "changes", student="bo")], [], SteerState(), NOW, LastTick(at=None, source="none"), None)
    assert [(r.name, r.activity, r.pr) for r in s.students] == [("ada", "idle", None), ("bo", "assigned", 1)]
    assert s.caps.cap_source == "none" and "1 (no cap)" in s.markdown() and "not stated by the forge" in s.markdown()


def _acks(forge, number: int) -> list[str]:
    return [c.body for c in forge.list_comments(number) if c.user == forge.login]


def test_help_and_status_are_answered_once_to_a_trusted_human_and_never_to_others(fake_forge, tmp_path):
    forge, fake = fake_forge
    fake.add_collaborator("alice")
    commit_and_push(forge, tmp_path / "seed", "advisor", {"senpai.yaml": TARGET})
    alice, mallory = fake.forge("alice"), fake.forge("mallory", "read")
    issue = alice.create_issue("steer", "How do I steer?\n\n/senpai help", [STEER]).number
    asked = alice.create_comment(issue, "/senpai status").id
    mallory.create_comment(issue, "/senpai status\n/senpai help")  # untrusted: never read, never answered
    for _ in range(2):  # the second tick is a replay (a restart: no cache, no store): nothing again
        steering_tick.tick(forge, CFG)
    help_ack, status_ack = _acks(forge, issue)
    assert help_ack.startswith("@alice ") and SYNTAX.splitlines()[1] in help_ack and "/senpai status" in help_ack
    assert status_ack.startswith("@alice **senpai status** for `o/r`") and f":{asked}:" in status_ack
    assert "| student | doing | PR | job |" in status_ack and "| ada | idle |" in status_ack
    assert "senpai-steer" not in help_ack + status_ack  # queries change nothing: no record
    assert steering_tick.read(forge, CFG)[2].state == SteerState()


def test_a_query_beside_a_command_is_answered_in_the_commands_ack(fake_forge, tmp_path):
    forge, fake = fake_forge
    fake.add_collaborator("alice")
    commit_and_push(forge, tmp_path / "seed", "advisor", {"senpai.yaml": TARGET})
    issue = fake.forge("alice").create_issue("steer", "/senpai pause\n/senpai status", [STEER]).number
    done, view = steering_tick.tick(forge, CFG)
    (ack,) = _acks(forge, issue)
    assert view.state.paused and "Applied:\n- paused" in ack and "**paused** by `/senpai pause`" in ack
    assert steering_tick.tick(forge, CFG)[0] == []


def test_a_query_with_arguments_is_refused_with_the_syntax(fake_forge, tmp_path):
    forge, fake = fake_forge
    fake.add_collaborator("alice")
    issue = fake.forge("alice").create_issue("steer", "/senpai status now\n/senpai pause", [STEER]).number
    steering_tick.tick(forge, CFG)
    (ack,) = _acks(forge, issue)
    assert "Nothing was applied: `/senpai status now`: `status` takes no arguments" in ack and "/senpai help" in ack
    assert not steering_tick.read(forge, CFG)[2].state.paused


def test_a_verifying_pr_says_what_it_waits_for():
    """A pass waits for its round and the advisor, a failure for the advisor, a conflict for its
    re-application; one with no verification of its head against the base is being measured."""
    from test_rounds import verified

    passed, failed, measuring = verified(6, 0.05), verified(7, -0.01, passed=False), exp(8, "verifying", attempts=1)
    conflict = verified(9, 0.0, passed=False)
    conflict = conflict.model_copy(update={"verifications": [conflict.verifications[0].model_copy(update={"conflict": True})]})
    s = build_status(CFG, [passed, failed, measuring, conflict], [], SteerState(), NOW, TICK, None, BASE)
    notes = {e.pr: e.note for e in s.open}
    assert notes[6].startswith(f"passed on {BASE[:8]}") and "(#8 still verifying)" in notes[6]
    assert notes[7] == "failed verification: the advisor closes it"
    assert notes[8].startswith("measuring") and "re-applied" in notes[9]
    assert f"verifying: passed on {BASE[:8]}" in s.markdown()
    moved = build_status(CFG, [passed], [], SteerState(), NOW, TICK, None, "f" * 40)
    assert moved.open[0].note.startswith("measuring")  # its pass was against a base that moved since
    assert build_status(CFG, [passed], [], SteerState(), NOW, TICK, None).open[0].note.endswith("(base unknown)")


def test_an_open_prs_holdout_delta_names_its_base_and_one_against_an_old_base_is_stale(fake_forge, tmp_path):
    forge, _ = fake_forge
    m = after_a_merge(forge, tmp_path)
    s = build_status(CFG, LedgerReader(forge).experiments(), [], SteerState(), NOW, TICK, None, m.base)
    rows = {e.pr: e for e in s.open}
    assert (rows[m.stale].delta, rows[m.stale].vs, rows[m.stale].stale) == (0.08, f"vs old base {m.start[:8]}", True)
    assert (rows[m.current].delta, rows[m.current].vs, rows[m.current].stale) == (0.02, f"vs #{m.merged}", False)
    text = s.markdown()
    assert "| PR | state | student | attempts | holdout Δ | title |" in text
    assert f"| _+0.0800 vs old base {m.start[:8]}_ |" in text and f"| +0.0200 vs #{m.merged} |" in text
    unknown = build_status(CFG, LedgerReader(forge).experiments(), [], SteerState(), NOW, TICK, None)
    assert not any(e.stale for e in unknown.open)  # the base unknown: nothing is called stale


def test_a_cap_a_human_set_by_command_says_so_and_the_configs_do_not():
    """`/senpai caps` wins over the config until its comment is edited or deleted: the status names
    which caps in force came from a command, so a reader knows where to change each."""
    cfg = CFG.model_copy(update={"max_experiments": 9, "caps": CFG.caps.model_copy(update={"dollars": 5.0, "gpu_hours": 2.0})})
    steer = SteerState(experiments=4, caps={"gpu_hours": 3.0, "end_at": "2026-12-31T18:00:00+00:00"})
    s = build_status(cfg, [exp(1, "closed")], [], steer, NOW, TICK, None)
    assert s.caps.steered == ["end", "experiments", "gpu_hours"] and s.caps.in_force["gpu_hours"] == 3.0
    lines = s.markdown().splitlines()
    assert next(x for x in lines if x.startswith("- experiments:")).startswith("- experiments: 1 of 4 (by `/senpai caps`),")
    spent = next(x for x in lines if x.startswith("- spent:"))
    assert "of 3.000 GPU-h (by `/senpai caps`)" in spent and "of $5.00 LLM," in spent and "$5.00 LLM (by" not in spent
    assert next(x for x in lines if x.startswith("- end:")).endswith("(by `/senpai caps`)")
    plain = build_status(cfg, [exp(1, "closed")], [], SteerState(), NOW, TICK, None)
    summary = [x for x in plain.markdown().splitlines() if x.startswith("- ")]
    assert plain.caps.steered == [] and not any("by `/senpai caps`" in x for x in summary)
