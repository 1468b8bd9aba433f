"""Hand-made changes on the forge, through the real wrapper and local forge: a hand merge is flagged
(never the baseline) and reported once; a PR closed by hand loses its job at once; a removed
student label is put back and the experiment goes on."""

import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from forge_fixtures import add_collaborator, as_user, clone, commit_and_push
from research import hand_hypothesis, make_program, reader, ticks

from senpai.cli.wiring import make_forge
from senpai.cli.wrapper import build_wrapper
from senpai.config.harness import load_harness
from senpai.ledger import transitions
from senpai.ledger.baseline import current_baseline
from senpai.ledger.blocks import Decision, Evidence, PrimaryResult
from senpai.ledger.labels import SENPAI, ExperimentState, student_label
from senpai.ledger.records import record_text
from senpai.wrapper.loop import Wrapper

pytestmark = pytest.mark.e2e


def _step(
    w: Wrapper, until: Callable[[], bool], what: str, timeout: float = 120, each: Callable[[], None] = lambda: None
) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        report = w.tick()
        assert not report.errors, report.errors
        each()
        time.sleep(1.0)  # the wrapper's own period (tick_seconds): a tick while jobs run plans again, at a CPU cost


def _ledger_check(config) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "senpai", "ledger", "--config", str(config), "--check"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _stop_jobs(w: Wrapper) -> None:
    for job in w.fleet.list():
        if not job.done:
            w.fleet.delete(job.name)
    w.store.close()


def test_hand_merge_is_flagged_reported_once_and_never_the_baseline(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "handmerge", students=1, experiments=1, target="quick")
    bot = make_forge(load_harness(config))
    base = bot.branch_sha("advisor")
    work = clone(bot, tmp_path / "work", "advisor")
    head = commit_and_push(bot, work, "senpai/ada/h-hand", {"notes.md": "by hand\n"}, start="advisor")
    merged = transitions.open_experiment(bot, hand_hypothesis("h-hand", base), "senpai/ada/h-hand", "advisor", "hand")
    ok = PrimaryResult(name="val_accuracy", value=0.99, baseline=None, delta=None)
    ev = Evidence(
        pr=merged.number, attempt=1, student="ada", head=head, command="c", outcome="ok", primary=ok, interpretation="i"
    )
    transitions.submit_evidence(bot, merged, ev)
    assert _ledger_check(config).returncode == 0
    bot.merge_pull(merged.number, "merged by hand, no verification", head)

    # a merge decision posted on a PR that is then closed without a merge
    commit_and_push(bot, work, "senpai/ada/h-closed", {"other.md": "x\n"}, start="advisor")
    closed = transitions.open_experiment(bot, hand_hypothesis("h-closed", base), "senpai/ada/h-closed", "advisor", "closed")
    d = Decision(pr=closed.number, head=closed.head_sha, verdict="merge", reason="looked good")
    bot.create_comment(closed.number, record_text(d, "**Decision** merge"))  # a record, as decide renders it
    bot.update_pull(closed.number, state="closed")

    exps = reader(config).experiments()
    moved = bot.branch_sha("advisor")
    assert moved != base
    assert current_baseline(exps, moved).value is None and current_baseline(exps, moved).pr is None

    out = _ledger_check(config)
    assert out.returncode == 5, out.stdout + out.stderr
    flags = [line for line in out.stderr.splitlines() if line.startswith("#")]
    assert flags == [
        f"#{merged.number}: merged with no merge decision (by hand?)",
        f"#{merged.number}: merged head {head[:8]} has no passing verification against a senpai base",
        f"#{closed.number}: merge decision on a PR closed without a merge",
    ], out.stderr
    assert "base:" not in out.stderr  # the base head is the (hand) merge's own commit

    # a commit pushed to the base by hand is merged code with no merged PR
    commit_and_push(bot, work, "advisor", {"pushed.md": "by hand\n"}, start="advisor")
    out = _ledger_check(config)
    assert out.returncode == 5 and "was not produced by a senpai merge" in out.stderr, out.stderr

    csv = subprocess.run(
        [sys.executable, "-m", "senpai", "ledger", "--config", str(config), "--csv"], capture_output=True, text=True, timeout=120
    )
    assert csv.returncode == 0 and "merged with no merge decision" in csv.stdout and ",consistency" in csv.stdout.splitlines()[0]

    # a trusted human's issue that happens to carry the marker does not hide the report
    cfg = load_harness(config)
    alice = as_user(local_forge, cfg.forge, "alice", "collaborator")
    add_collaborator(local_forge.base_url, cfg.forge.repo, "alice")
    alice.create_issue("decoy", f"<!-- senpai:hand-merge:pr-{merged.number} -->", [SENPAI])
    for _ in range(2):  # the wrapper reports the hand merge once, also across a restart
        w = build_wrapper(str(config))
        try:
            ticks(w, 3)
        finally:
            _stop_jobs(w)
    issues = [i for i in bot.list_issues(SENPAI, "all") if f"hand-merge:pr-{merged.number}" in i.body and i.user == bot.login]
    assert len(issues) == 1 and "merged with no merge decision" in issues[0].body
    assert not [i for i in bot.list_issues(SENPAI, "all") if f"hand-merge:pr-{closed.number}" in i.body]
    pushed = [i for i in bot.list_issues(SENPAI, "all") if f"hand-push:{bot.branch_sha('advisor')}" in i.body]
    assert len(pushed) == 1 and "was not produced by a senpai merge" in pushed[0].body  # the push by hand, once


def _slow(target: dict) -> None:
    target["train"] = "python -c 'import time; time.sleep(100)' && " + target["train"]
    target["budget"]["wall_seconds"] = 300


def test_a_pr_closed_by_hand_loses_its_job_at_once(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "handclose", students=1, experiments=2, mutate=_slow, target="quick")
    bot = make_forge(load_harness(config))
    w = build_wrapper(str(config))
    try:
        live = lambda: [j for j in w.fleet.list() if j.role == "student" and not j.done]  # noqa: E731
        _step(w, lambda: bool(live()), "the first student job", timeout=180)
        (first,) = live()
        time.sleep(2)  # it is training now
        bot.update_pull(first.pr, state="closed")
        ticks(w, 4)
        assert w.fleet.get(first.name) is None or w.fleet.get(first.name).done
        # the student is free at once: its next experiment starts without waiting for the dead job
        _step(w, lambda: any(j.pr != first.pr for j in live()), "the next student job", timeout=120)
    finally:
        _stop_jobs(w)
    exps = reader(config).experiments()
    assert [e.state for e in exps][:1] == ["closed"] and exps[0].evidence == []


def test_a_removed_student_label_is_restored_and_the_experiment_goes_on(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "handlabel", students=1, experiments=2, target="quick")
    bot = make_forge(load_harness(config))
    w = build_wrapper(str(config))
    try:
        _step(w, lambda: len(bot.list_pulls("all")) == 1, "the first PR", timeout=180)
        (pr,) = bot.list_pulls("all")
        bot.set_labels(pr.number, [x for x in pr.labels if x != student_label("ada")])

        def one_pr_while_open() -> None:
            labels = bot.get_pull(pr.number).labels  # a student with work in wip or changes gets no second PR
            if ExperimentState.WIP.label in labels or ExperimentState.CHANGES.label in labels:
                assert len(bot.list_pulls("all")) == 1, "a second PR was opened for a student with work"

        _step(w, lambda: student_label("ada") in bot.get_pull(pr.number).labels, "the label back", each=one_pr_while_open)
        _step(
            w,
            lambda: bot.get_pull(pr.number).state == "closed" or bot.get_pull(pr.number).merged,
            "PR decided",
            timeout=240,
            each=one_pr_while_open,
        )
    finally:
        _stop_jobs(w)
    exp = reader(config).experiment(bot.get_pull(pr.number))
    assert (
        exp.evidence
        and "stale" not in exp.decision.reason
        and ExperimentState.BLOCKED.label not in bot.get_pull(pr.number).labels
    )
