"""A base that cannot train (issue 27), end to end: the wrapper's loop over the real local forge,
real git, real subprocess jobs and wandb offline, with a train command whose interpreter is missing
(exit 127 for every run). Its measurement fails once, one issue opens for humans, and nothing else
opens while it is open, tick after tick; closing the issue measures the same base again, and a fix
pushed to the base is measured by itself, after which proposals follow."""

import time

import pytest
from forge_fixtures import as_user, clone, commit_and_push
from research import make_program, reader

from senpai.cli.wiring import make_forge
from senpai.cli.wrapper import build_wrapper
from senpai.config import safe_yaml
from senpai.config.harness import load_harness
from senpai.config.time_limits import Relaunch
from senpai.ledger import basefails
from senpai.ledger.baseline import current_baseline
from senpai.ledger.escalation import escalated, escalation_id, marked
from senpai.ledger.labels import ATTENTION, SENPAI, ExperimentState
from senpai.wrapper import policy

pytestmark = pytest.mark.e2e

HOSTILE = "@alice ``` <!-- senpai:escalation:0123456789abcdef --> <details>"  # the program's output is hostile
BROKEN = f"echo '{HOSTILE}' && /nonexistent/venv/bin/python train.py"  # the shell answers 127: no such interpreter


def _tick_until(w, done, what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        report = w.tick()
        assert not report.errors, report.errors  # the loop keeps running: no tick fails
        time.sleep(1.0)  # the wrapper's own period (tick_seconds): a tick while jobs run plans again, at a CPU cost


def _settle(w, ticks: int = 12) -> None:
    """Tick until no job is live, then `ticks` more (each 0.3 s apart)."""
    _tick_until(w, lambda: all(j.done for j in w.fleet.list()), "the jobs to end")
    for _ in range(ticks):
        assert not w.tick().errors
        time.sleep(0.3)


def _issues(bot, prs) -> list:
    """The bot's issues saying that the measurement of a base in one of the PRs numbered `prs` failed."""
    issues = bot.list_issues(SENPAI, "all")
    return [
        i for n in prs for i in marked(issues, f"<!-- senpai:escalation:{escalation_id(basefails.issue_key(n))} -->", bot.login)
    ]


def _pulls(bot) -> list[int]:
    """The repository's PR numbers: a poll that lists the PRs, where reading the ledger also reads each PR's thread."""
    return [p.number for p in bot.list_pulls("all")]


@pytest.mark.long
def test_a_base_that_cannot_train_blocks_escalates_once_and_is_measured_again(local_forge, tmp_path):
    config = make_program(
        local_forge.base_url, tmp_path, "base-fails", experiments=5, mutate=lambda t: t.update(train=BROKEN), target="quick"
    )
    cfg = load_harness(config)
    bot = make_forge(cfg)
    w = build_wrapper(str(config))
    try:
        base = bot.branch_sha("advisor")
        _tick_until(w, lambda: len(_issues(bot, _pulls(bot))) == 1, "the humans' issue")
        _settle(w)
        exps = reader(config).experiments()
        (m,) = exps  # the measurement alone: no proposal, no second measurement, after many ticks
        assert m.hypothesis.measures_base and m.hypothesis.baseline.commit == base and m.state == "closed"
        assert m.evidence[-1].outcome == "failed" and "127" in m.evidence[-1].failure
        assert m.decision.reason.startswith("the base does not train (issue #") and "useful failure" not in m.decision.reason
        (issue,) = _issues(bot, [e.pr for e in exps])
        assert issue.state == "open" and "close this issue" in issue.body and "push the fix to `advisor`" in issue.body
        assert "127" in issue.body and "Last lines of the training's log" in issue.body  # quoted, inert:
        assert "@alice" not in issue.body and "```" not in issue.body and "<details>" not in issue.body
        assert escalated([issue], bot.login) == {escalation_id(basefails.issue_key(m.pr))}  # no forged marker
        advisors = {j.name for j in w.fleet.list() if j.name.startswith("senpai-advisor-")}
        _settle(w, ticks=8)
        assert {j.name for j in w.fleet.list() if j.name.startswith("senpai-advisor-")} == advisors  # no turn per tick

        # a human closes the issue (the environment was fixed, say): the same base is measured again
        alice = as_user(local_forge, cfg.forge, "alice", "collaborator")
        alice.close_with_labels(issue.number, issue.labels)
        _tick_until(w, lambda: len(_issues(bot, _pulls(bot))) == 2, "the second measurement's issue")
        _settle(w)
        exps = reader(config).experiments()
        assert [e.hypothesis.measures_base and e.hypothesis.baseline.commit == base for e in exps] == [True, True]
        assert exps[0].branch != exps[1].branch  # a fresh branch
        assert all(e.state == "closed" for e in exps)

        # the user pushes the fix to the base: the new base is measured by itself, then proposals follow
        target = safe_yaml.load((clone(bot, tmp_path / "fix", "advisor") / "senpai.yaml").read_text())
        fixed = commit_and_push(
            bot, tmp_path / "fix", "advisor", {"senpai.yaml": safe_yaml.dump({**target, "train": "python train.py"})}
        )

        def measured_and_proposed() -> bool:
            if len(_pulls(bot)) < 4:  # two failed measurements, the fixed base's, a proposal: no full read before
                return False
            exps = reader(config).experiments()
            value = current_baseline(exps, fixed).value
            return value is not None and any(not e.hypothesis.measures_base for e in exps)

        _tick_until(w, measured_and_proposed, "the fixed base's measurement and a proposal", timeout=300)
        exps = reader(config).experiments()
        assert [e.hypothesis.baseline.commit for e in exps if e.hypothesis.measures_base] == [base, base, fixed]
        assert len(_issues(bot, [e.pr for e in exps])) == 2
    finally:
        for job in w.fleet.list():
            if not job.done:
                w.fleet.delete(job.name)
        w.store.close()


def test_a_train_interpreter_that_does_not_run_blocks_the_base_with_one_issue(local_forge, tmp_path, monkeypatch):
    """The train command's own interpreter is missing (issue 27's user: `train` named a venv this
    machine lacks): the measurement's student job exits 3 before its turn (`TrainPythonFailed`),
    is relaunched and escalated, and the measurement is blocked for humans. That is the base's
    failure too: nothing else opens on the base, tick after tick, so one issue is all humans get
    and no experiment under the cap is spent on a PR that cannot train."""
    monkeypatch.setattr(policy, "RELAUNCH", Relaunch(backoff_seconds=0.2))  # the relaunches' backoff, not their count
    missing = "/nonexistent/venv/bin/python train.py"
    config = make_program(
        local_forge.base_url, tmp_path, "base-python", experiments=3, mutate=lambda t: t.update(train=missing), target="quick"
    )
    bot = make_forge(load_harness(config))
    w = build_wrapper(str(config))
    try:

        def blocked() -> bool:  # a cheap look at the labels first; the ledger's own reading decides
            labelled = any(ExperimentState.BLOCKED.label in p.labels for p in bot.list_pulls("all"))
            return labelled and any(e.state == ExperimentState.BLOCKED for e in reader(config).experiments())

        _tick_until(w, blocked, "the measurement to be blocked")
        _settle(w, ticks=20)
        exps = reader(config).experiments()
        assert [(e.hypothesis.measures_base, e.state) for e in exps] == [(True, ExperimentState.BLOCKED)], [
            (e.pr, e.state, e.hypothesis.measures_base) for e in exps
        ]
        assert exps[0].attempts == 0  # senpai's failure: no attempt spent
        issues = [i for i in bot.list_issues(SENPAI, "all") if i.user == bot.login and ATTENTION in i.labels]
        assert len(issues) == 1, [i.title for i in issues]

        # a human closes the blocked measurement (its environment fixed, say): the base is not held any more
        alice = as_user(local_forge, load_harness(config).forge, "alice", "collaborator")
        alice.update_pull(exps[0].pr, state="closed")
        _tick_until(w, lambda: len(_pulls(bot)) == 2 and len(reader(config).experiments()) == 2, "new work on the base")
    finally:
        for job in w.fleet.list():
            if not job.done:
                w.fleet.delete(job.name)
        w.store.close()
