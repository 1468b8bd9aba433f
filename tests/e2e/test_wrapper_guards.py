"""The real wrapper on the local forge against what a long run meets: a cache a job's code planted
a trigger in, a forge (or a proxy) that answers 304 for ever, a second installation on the same
repository, and senpai-labelled PRs the bot never opened. Each program is paused by a trusted
human before the first tick, so no job runs unless a test wants one."""

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from fault_proxy import FaultProxy
from forge_fixtures import TOKEN, add_collaborator, as_user, clone, commit_and_push
from research import make_program, ticks

from senpai.cli.status import StatusReader
from senpai.cli.wiring import make_fleet, make_forge
from senpai.cli.wrapper import build_wrapper
from senpai.config import safe_yaml
from senpai.config.harness import load_harness
from senpai.config.target import CONFIG_FILE, TargetConfig
from senpai.errors import ConfigError, LedgerInconsistent
from senpai.forge.github import GitHubForge
from senpai.ledger import transitions
from senpai.ledger.blocks import BaselineRef, BudgetRef, Decision, Hypothesis, MetricRef, Verification
from senpai.ledger.labels import SENPAI, STEER, ExperimentState, student_label
from senpai.ledger.records import DETAILS_OPEN
from senpai.ledger.table import LedgerReader
from senpai.wrapper.lease import Lease, current
from senpai.wrapper.loop import Wrapper

pytestmark = pytest.mark.e2e


def _configure(config: Path, **changes) -> Path:
    data = yaml.safe_load(config.read_text())
    for key, value in changes.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and isinstance(data.get(key), dict) else value
    config.write_text(safe_yaml.dump(data))
    return config


def _paused(local_forge, base_url: str, tmp_path: Path, name: str, **changes):
    """A quick-target program on repo senpai/<name> (forge at `base_url`), with alice (a collaborator)
    and her steering issue holding `/senpai pause`: (config, alice's forge, the issue number)."""
    config = _configure(make_program(base_url, tmp_path, name, target="quick"), tick_seconds=0.2, **changes)
    cfg = load_harness(config)
    add_collaborator(local_forge.base_url, cfg.forge.repo, "alice")
    alice = as_user(local_forge, cfg.forge, "alice", "read")
    return config, alice, alice.create_issue("steering", "/senpai pause", [STEER]).number


def _until(w: Wrapper, done: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        report = w.tick()
        assert not report.errors, report.errors
        time.sleep(0.2)


def _idle(w: Wrapper, timeout: float = 30):
    """The report of the first tick of `w` that re-read nothing (all settled)."""
    deadline = time.monotonic() + timeout
    while (report := w.tick()).refreshed:
        assert not report.errors and time.monotonic() < deadline, report.errors
        time.sleep(0.3)
    return report


def test_a_planted_cache_is_rebuilt_and_the_wrapper_goes_on(local_forge, tmp_path):
    config, alice, issue = _paused(local_forge, local_forge.base_url, tmp_path, "cache", steering={"batch_seconds": 60})
    state = Path(load_harness(config).state_dir) / "wrapper.sqlite"
    w = build_wrapper(str(config))
    ticks(w, 2)
    w.store.close()
    with sqlite3.connect(state, isolation_level=None) as db:  # a job's code, with write access to the state volume
        db.execute(
            "CREATE TRIGGER planted AFTER INSERT ON events BEGIN "
            "UPDATE events SET first_seen = 'not a time' WHERE id = new.id; END"
        )
    alice.create_comment(issue, "Could you try wider layers first?")  # its batch window reads the cache each tick
    w = build_wrapper(str(config))
    ticks(w, 3)
    assert w.store.rebuilds == 1 and (state.parent / "wrapper.sqlite.bad").is_file()
    assert [m.message.body for m in w.view.free_text] == ["Could you try wider layers first?"]
    w.store.close()
    state.write_bytes(b"not a database" * 100)
    w = build_wrapper(str(config))
    ticks(w, 2)
    assert w.store.rebuilds == 1
    w.store.close()


def test_the_full_refresh_sees_through_a_stuck_304(local_forge, tmp_path):
    with FaultProxy(local_forge.base_url, rate=0.0) as proxy:
        config, alice, issue = _paused(local_forge, proxy.url, tmp_path, "stuck", full_refresh_seconds=1.0)
        w = build_wrapper(str(config))
        try:
            _until(w, lambda: w.view.state.paused, "the pause")
            time.sleep(1.1)  # the command comes a second after the last change seen (timestamps have whole seconds)
            proxy.stuck_304 = True  # from now on every conditional listing says "not modified"
            alice.create_comment(issue, "/senpai caps experiments=5")
            new = alice.create_issue("more steering", "Prefer small learning rates.", [STEER]).number
            _until(w, lambda: w.view.state.experiments == 5 and new in {i.number for i in w.view.issues}, "the command")
            ticks(w, 3)
            assert proxy.held_304 > 0 and proxy.stuck_304
            bot = [c.body for c in alice.list_comments(issue) if c.user == w.forge.login]
            assert len(bot) == 2 and all("<!-- senpai:ack:" in b for b in bot)  # a stale 304 made no duplicate ack
        finally:
            w.store.close()


def _installation(config: Path, tmp_path: Path, name: str, installation: str) -> Path:
    """A second harness config for the same repository: another installation, its own state and fleet."""
    data = yaml.safe_load(config.read_text())
    data["tracker"]["installation"] = installation
    data["state_dir"], data["fleet"]["dir"] = str(tmp_path / name / "state"), str(tmp_path / name / "jobs")
    path = tmp_path / f"{name}.yaml"
    path.write_text(safe_yaml.dump(data))
    return path


def test_a_second_installation_is_refused_and_a_restart_takes_its_lease_back(local_forge, tmp_path):
    config, alice, _ = _paused(local_forge, local_forge.base_url, tmp_path, "lease")
    first, second = (_installation(config, tmp_path, n, i) for n, i in (("a", "aaaaaaaa"), ("b", "bbbbbbbb")))
    a = build_wrapper(str(first))
    a.lease.acquire()
    idle = _idle(a)  # a running wrapper, between two ticks
    assert (idle.calls, idle.free) == (2, 2)  # holding the lease costs an idle tick nothing

    b = build_wrapper(str(second))
    with pytest.raises(ConfigError, match=r"another senpai installation \(aaaaaaaa\) holds the lease on senpai/lease"):
        b.run(max_ticks=3)
    assert b.fleet.list() == [] and b.ticks == 0
    (lease,) = [i for i in alice.list_issues(STEER) if "senpai:lease" in i.body]

    slept: list[float] = []
    again = build_wrapper(str(first))  # a restart of installation aaaaaaaa while the old process still ticks
    again.lease = Lease(again.forge, "senpai/lease", "aaaaaaaa", 0.2, sleep=slept.append)
    again.lease.acquire()
    assert slept == [] and again.lease.number == lease.number  # its own lease, taken back at once
    with pytest.raises(ConfigError, match="was taken by installation aaaaaaaa"):
        _until(a, lambda: False, "the old process to stop")
    ticks(again, 2)

    again.lease.release()  # a clean stop: the next installation starts at once
    b = build_wrapper(str(second))
    b.lease = Lease(b.forge, "senpai/lease", "bbbbbbbb", 0.2, sleep=slept.append)
    b.run(max_ticks=2)
    assert slept == [3.0] and b.ticks == 2  # a new claim waited for a racing one, then ran
    assert [i.number for i in alice.list_issues(STEER) if "senpai:lease" in i.body] == [lease.number]


def test_a_crashed_installations_lease_expires_and_racing_claims_leave_one(forge_repo):
    forge, settings = forge_repo
    crashed = Lease(forge, settings.repo, "cccccccc", 1.0, sleep=lambda s: None)
    crashed.acquire()
    found = current(forge.issues_updated(STEER, None).issues, forge.login)
    assert found is not None and found.installation == "cccccccc"
    stale = forge.issues_updated(STEER, None).issues[0].body.replace(f"{found.expires:%Y%m%dT%H%M%SZ}", "20000101T000000Z")
    forge.update_issue(found.number, stale)  # its last renewal was long ago: the wrapper died

    racers = [Lease(GitHubForge(settings, TOKEN), settings.repo, i, 1.0, settle=1.0) for i in ("dddddddd", "eeeeeeee")]
    outcomes: dict[str, object] = {}

    def claim(lease: Lease) -> None:
        try:
            lease.acquire()
            outcomes[lease.installation] = "held"
        except ConfigError as e:
            outcomes[lease.installation] = e

    threads = [threading.Thread(target=claim, args=(r,)) for r in racers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(str(o) == "held" for o in outcomes.values()) == [False, True], outcomes
    winner = next(r for r in racers if r.held)
    assert current(forge.issues_updated(STEER, None).issues, forge.login).holder == winner.holder


def test_prs_the_bot_did_not_open_count_against_no_cap(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "foreign", experiments=1, target="quick")
    cfg = load_harness(config)
    add_collaborator(local_forge.base_url, cfg.forge.repo, "alice")
    alice = as_user(local_forge, cfg.forge, "alice", "read")
    w = build_wrapper(str(config))
    work, foreign = clone(w.forge, tmp_path / "work", "advisor"), set()
    for n in (1, 2):  # two PRs a human labelled `senpai` (by mistake or not): no experiment was run
        commit_and_push(alice, work, f"mine-{n}", {f"notes-{n}.md": "x\n"}, start="advisor")
        pr = alice.create_pull(f"mine {n}", "not a hypothesis", head=f"mine-{n}", base="advisor", labels=[])
        w.forge.set_labels(pr.number, [SENPAI, student_label("ada"), ExperimentState.WIP.label])
        foreign.add(pr.number)
    try:
        actions = ticks(w, 3)
        assert any(a.startswith("launched senpai-advisor-") for a in actions), actions
        assert sum("blocked: a senpai block is invalid" in a for a in actions) == 2, actions  # each author is told
        assert not [i for i in w.forge.list_issues(STEER, "all") if "fleet caps exhausted" in i.title]
        deadline = time.monotonic() + 120  # the advisor's turn may still open its experiment: read once it is done
        while any(not j.done for j in w.fleet.list()) and time.monotonic() < deadline:
            time.sleep(0.5)
        exps = LedgerReader(w.forge).experiments()
        assert foreign.isdisjoint(e.pr for e in exps)
        status = StatusReader(cfg, make_forge(cfg), make_fleet(cfg), None).read()  # `senpai status`
        assert status.caps.experiments == len(exps) and foreign.isdisjoint(r.pr for r in status.open)
    finally:
        for job in w.fleet.list():
            if not job.done:
                w.fleet.delete(job.name)
        w.store.close()


def _merged(bot, work: Path, target: TargetConfig, base: str) -> tuple[int, Hypothesis]:
    """A PR merged the way senpai merges: hypothesis, passing verification, merge decision."""
    h = Hypothesis(
        id="h-record", hypothesis="wider", rationale="r", plan="p", params={"hidden_width": 32},
        metric=MetricRef(name="val_accuracy", direction="maximize"), baseline=BaselineRef(commit=base, run_id=None, value=None),
        budget=BudgetRef(wall_seconds=120, attempts=1), stop_condition="1 attempt", student="ada",
    )  # fmt: skip
    params = json.loads((work / "params.json").read_text()) | {"hidden_width": 32}
    commit_and_push(bot, work, "senpai/ada/h-record", {"params.json": json.dumps(params)}, start="advisor")
    pr = transitions.open_experiment(bot, h, "senpai/ada/h-record", "advisor", "wider")
    bot.set_labels(pr.number, [SENPAI, student_label("ada"), ExperimentState.VERIFYING.label])
    pr = bot.get_pull(pr.number)
    v = Verification(
        pr=pr.number, candidate=pr.head_sha, baseline=base, metric="holdout_accuracy", direction="maximize", seeds=[0, 1],
        candidate_values=[0.91, 0.92], baseline_values=[0.80, 0.81], candidate_mean=0.915, baseline_mean=0.805,
        improvement=0.11, noise_floor=0.02, passed=True, reason="beats the floor", candidate_compute=[20.0, 20.0],
        baseline_compute=[20.0, 20.0], compute_ratio=1.0, guards={"holdout_log_loss": [0.4, 0.6]},
    )  # fmt: skip
    transitions.record_verification(bot, pr, v)
    pr = bot.get_pull(pr.number)
    d = Decision(pr=pr.number, head=pr.head_sha, verdict="merge", reason="beats the floor")
    transitions.decide(bot, pr, LedgerReader(bot).experiment(pr), d, target, base)
    return pr.number, h


def _check(config: Path) -> subprocess.CompletedProcess:
    """`senpai ledger --check`, the real console entry point (its exit status)."""
    cmd = [sys.executable, "-m", "senpai", "ledger", "--config", str(config), "--check"]
    # the token as a person gives it (a wrapper built in this process took it out of os.environ: credentials.adopt)
    env = {**os.environ, load_harness(config).forge.token_env: TOKEN}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def test_a_merged_prs_hypothesis_record_gone_or_changed_is_flagged_once(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "record", target="quick")
    cfg = load_harness(config)
    bot = as_user(local_forge, cfg.forge, "senpai")
    target = TargetConfig.model_validate(yaml.safe_load(bot.read_file(CONFIG_FILE, "advisor")))
    base, work = bot.branch_sha("advisor"), clone(bot, tmp_path / "work", "advisor")
    number, h = _merged(bot, work, target, base)
    other = h.model_copy(update={"id": "h-other", "params": {"hidden_width": 16}})  # tried from the same base, closed
    commit_and_push(bot, work, "senpai/ada/h-other", {"notes.md": "x\n"}, start="advisor")
    pr = transitions.open_experiment(bot, other, "senpai/ada/h-other", "advisor", "narrower")
    close = Decision(pr=pr.number, head=pr.head_sha, verdict="close", reason="no better")
    transitions.decide(bot, pr, LedgerReader(bot).experiment(pr), close, None, base)
    assert _check(config).returncode == 0

    prose = bot.get_pull(number).body.split(DETAILS_OPEN)[0]
    bot.update_pull(number, body=prose)  # a writer deletes the record from the merged PR's description
    result = _check(config)
    assert result.returncode == LedgerInconsistent.exit_code, result.stderr
    assert result.stderr.count(f"#{number}: ") == 1 and f"#{number}: hypothesis record gone from the PR body" in result.stderr

    def issues() -> list[str]:
        return [i.title for i in bot.list_issues(SENPAI, "all") if "hypothesis record" in i.title]

    for _ in range(2):  # a restart opens no second issue: the forge holds its marker
        w = build_wrapper(str(config))
        ticks(w, 2)
        w.store.close()
    assert issues() == [f"senpai: the hypothesis record of PR #{number} was edited"]

    edited = h.model_copy(update={"params": {"hidden_width": 128}})  # put back, with other params
    bot.update_pull(number, body=transitions.hypothesis_body(edited))
    result = _check(config)
    assert result.returncode == LedgerInconsistent.exit_code
    assert f"#{number}: hypothesis record changed after the decision" in result.stderr
    w = build_wrapper(str(config))
    ticks(w, 2)
    w.store.close()
    assert len(issues()) == 2

    bot.update_pull(number, body=transitions.hypothesis_body(h))  # restored from the edit history
    assert _check(config).returncode == 0
