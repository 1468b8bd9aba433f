"""senpai's failures are not the hypothesis's, through the real wrapper, fleet, jobs and git.

The forge (REST and git smart HTTP) sits behind `Flaky`, which fails the jobs' git requests on cue.
A student job whose clone keeps failing exits 3 (TransientError); the wrapper relaunches it under
the next name and spends no attempt.  When every run fails, the PR is blocked with one comment and
one issue opens for humans, and restarting the wrapper each tick adds neither.
"""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flaky import Flaky, flaky_forge
from forge_fixtures import clone, commit_and_push
from research import assert_no_duplicates, make_program, reader
from test_failures import GOOD, _hypothesis

from senpai.cli.wiring import make_fleet, make_forge
from senpai.cli.wrapper import build_wrapper
from senpai.config.harness import load_harness
from senpai.config.time_limits import GIT, RELAUNCH, Relaunch
from senpai.forge import mirror
from senpai.ledger import transitions
from senpai.ledger.labels import ATTENTION, SENPAI, ExperimentState
from senpai.wrapper import loop, policy
from senpai.wrapper.policy import INFRA_EXIT

pytestmark = pytest.mark.e2e
CLONE_FAULT = (503, {"Retry-After": "0"}, "Service Unavailable")  # Retry-After 0: the job retries at once


@pytest.fixture(autouse=True)
def _no_base_mirror(monkeypatch):
    """These tests fail the jobs' clones from the forge, so the wrapper hands its jobs no base mirror
    (`senpai.forge.mirror`; its own fetch would also take one of the queued faults)."""
    monkeypatch.setattr(mirror, "update", lambda *args, **kwargs: None)


@pytest.fixture(autouse=True)
def _short_backoff(monkeypatch):
    """Relaunches back off 1 s, then 2 s (not 15 s, then 30 s): the wrapper, rebuilt every 0.5 s,
    still restarts a few times inside each backoff, without ~45 s of restarts per test."""
    short = Relaunch(backoff_seconds=1.0)  # the same counts of runs and advisor turns
    monkeypatch.setattr(policy, "RELAUNCH", short)
    monkeypatch.setattr(loop, "RELAUNCH", short)


@pytest.fixture(scope="module")
def flaky_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Flaky, str]]:
    with flaky_forge(tmp_path_factory.mktemp("infraforge")) as served:
        yield served


def _experiment(config: Path, tmp_path: Path) -> int:
    """One hand-opened wip experiment for student ada (so no advisor turn needs git)."""
    forge = make_forge(load_harness(config))
    base = forge.branch_sha("advisor")
    work = clone(forge, tmp_path / "hand", "advisor")
    commit_and_push(forge, work, "senpai/ada/h-infra", {"notes.md": "plan\n"}, start="advisor")
    h = _hypothesis("ada", "h-infra", GOOD, base)
    return transitions.open_experiment(forge, h, "senpai/ada/h-infra", "advisor", "infra").number


def _tick_until(config: Path, done, what: str, timeout: float = 300) -> None:
    """Tick a freshly built wrapper (a restart every tick) until `done()`; fail after `timeout` s."""
    deadline, seen = time.monotonic() + timeout, []
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}; the wrapper did: {seen[-10:]}"
        w = build_wrapper(str(config))
        try:
            report = w.tick()
        finally:
            w.store.close()
        seen += report.actions + report.errors
        time.sleep(0.5)


def _jobs(config: Path, stop: bool = False) -> dict:
    """The fleet's jobs by name; with `stop`, live ones are deleted first (they would outlive the test).
    The wrapper's own fleet, without building a wrapper (which reads the ledger) for a look at it."""
    fleet = make_fleet(load_harness(config))
    for j in fleet.list() if stop else []:
        if not j.done:
            fleet.delete(j.name)
    return {j.name: j for j in fleet.list()}


def test_an_infra_failed_job_is_relaunched_without_evidence_or_attempt(flaky_url, tmp_path):
    app, url = flaky_url
    config = make_program(url, tmp_path, "infra-relaunch", students=1, experiments=1, target="quick")
    pr = _experiment(config, tmp_path)
    forge = make_forge(load_harness(config))
    app.fail(r"^/git/senpai/infra-relaunch\.git/info/refs$", *[CLONE_FAULT] * GIT.attempts)  # the first clone, each try
    relaunch = f"senpai-student-pr{pr}-1-r1"
    _tick_until(config, lambda: relaunch in (jobs := _jobs(config)) and jobs[relaunch].done, "the relaunched job")
    jobs = _jobs(config, stop=True)
    first, again = jobs[f"senpai-student-pr{pr}-1"], jobs[relaunch]
    assert (first.phase, first.exit_code) == ("failed", INFRA_EXIT) and again.phase == "succeeded"
    exp = reader(config).experiment(forge.get_pull(pr))
    assert [(e.attempt, e.outcome) for e in exp.evidence] == [(1, "ok")]  # no failure evidence; attempt 1 not spent
    assert f"senpai-student-pr{pr}-2" not in jobs
    assert_no_duplicates(config)


@pytest.mark.long
def test_repeated_infra_failures_block_once_and_open_one_issue_across_restarts(flaky_url, tmp_path):
    app, url = flaky_url
    config = make_program(url, tmp_path, "infra-block", students=1, experiments=1, target="quick")
    pr = _experiment(config, tmp_path)
    forge = make_forge(load_harness(config))
    app.fail(r"^/git/senpai/infra-block\.git/info/refs$", *[CLONE_FAULT] * (GIT.attempts * RELAUNCH.runs))
    try:
        _tick_until(config, lambda: ExperimentState.BLOCKED.label in forge.get_pull(pr).labels, "the block")
        for _ in range(3):  # more restarts and ticks: nothing is posted again
            w = build_wrapper(str(config))
            w.tick()
            w.store.close()
    finally:
        app.fail("")
    names = sorted(n for n in _jobs(config, stop=True) if n.startswith(f"senpai-student-pr{pr}-"))
    assert names == [f"senpai-student-pr{pr}-1", f"senpai-student-pr{pr}-1-r1", f"senpai-student-pr{pr}-1-r2"]
    comments = [c.body for c in forge.list_comments(pr) if c.user == forge.login]
    assert len(comments) == 1 and "3 times on infrastructure" in comments[0]
    issues = [i for i in forge.list_issues(SENPAI, "all") if "repeated infrastructure failures" in i.title]
    assert len(issues) == 1 and f"#{pr}" in issues[0].body and ATTENTION in issues[0].labels
    assert f"Last lines of `senpai-student-pr{pr}-1-r2`" in issues[0].body and "git clone failed" in issues[0].body
    exp = reader(config).experiment(forge.get_pull(pr))
    assert exp.evidence == [] and exp.attempts == 0 and exp.state == "blocked"


def test_dead_advisor_turns_open_one_issue_and_stop(flaky_url, tmp_path):
    app, url = flaky_url
    config = make_program(url, tmp_path, "infra-advisor", students=1, experiments=1, target="quick")
    forge = make_forge(load_harness(config))

    def issues() -> list:
        return [i for i in forge.list_issues(SENPAI, "all") if "repeated infrastructure failures" in i.title]

    app.fail(r"^/git/senpai/infra-advisor\.git/info/refs$", *[CLONE_FAULT] * (GIT.attempts * RELAUNCH.runs))
    try:
        _tick_until(config, lambda: bool(issues()), "the escalation issue")
        for _ in range(3):  # restarts and ticks: no fourth turn, no second issue
            w = build_wrapper(str(config))
            w.tick()
            w.store.close()
    finally:
        app.fail("")
    advisors = [j for j in _jobs(config, stop=True).values() if j.role == "advisor"]
    assert len(advisors) == RELAUNCH.advisor_runs and all(j.exit_code == INFRA_EXIT for j in advisors)
    (issue,) = issues()
    assert "3 advisor turns" in issue.body and forge.list_pulls("all") == []
