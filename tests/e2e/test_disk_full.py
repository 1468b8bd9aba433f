"""A full disk is senpai's failure, never the hypothesis's: the real wrapper, fleet, jobs and git on
a real full volume (a small tmpfs: `full_disk.small_volume`, root only, as CI runs).

- A training run whose W&B run cannot be taken into a full tracker folder is relaunched, not
  charged: no evidence, no attempt, the PR is not closed; once the runs are spent, one issue says
  which folder is full.
- A full fleet folder holds the launches: one error and one issue naming it, not an error every
  tick; the launch goes once there is room.
"""

import time
from pathlib import Path

import pytest
import yaml
from forge_fixtures import clone, commit_and_push
from full_disk import fill, small_volume
from research import make_program, reader
from test_failures import GOOD, _hypothesis

from senpai.cli.wiring import make_forge
from senpai.cli.wrapper import build_wrapper
from senpai.config import safe_yaml
from senpai.config.harness import load_harness
from senpai.config.time_limits import Relaunch
from senpai.ledger import transitions
from senpai.ledger.labels import SENPAI, ExperimentState
from senpai.wrapper import policy

pytestmark = pytest.mark.e2e


def _set(config: Path, section: str, key: str, value: str) -> None:
    cfg = yaml.safe_load(config.read_text())
    cfg[section][key] = value
    config.write_text(safe_yaml.dump(cfg))


def _experiment(config: Path, tmp_path: Path) -> int:
    """One hand-opened wip experiment for student ada (no advisor turn needed)."""
    forge = make_forge(load_harness(config))
    base = forge.branch_sha("advisor")
    commit_and_push(forge, clone(forge, tmp_path / "hand", "advisor"), "senpai/ada/h-disk", {"notes.md": "x\n"}, start="advisor")
    return transitions.open_experiment(
        forge, _hypothesis("ada", "h-disk", GOOD, base), "senpai/ada/h-disk", "advisor", "d"
    ).number


def _stop(w) -> None:
    for j in w.fleet.list():
        if not j.done:
            w.fleet.delete(j.name)
    w.store.close()


def test_a_full_tracker_folder_is_relaunched_then_escalated_naming_it(local_forge, tmp_path, monkeypatch):
    monkeypatch.setattr(policy, "RELAUNCH", Relaunch(backoff_seconds=0.2))  # the relaunches' backoff, not their count
    config = make_program(local_forge.base_url, tmp_path, "disk-wandb", target="quick")
    with small_volume(tmp_path / "wandb-volume", "4m") as wandb_dir:
        _set(config, "tracker", "dir", str(wandb_dir))
        pr = _experiment(config, tmp_path)
        forge = make_forge(load_harness(config))
        fill(wandb_dir)  # the run the train command logs in its own folder cannot be taken in
        w = build_wrapper(str(config))
        try:
            deadline = time.monotonic() + 240
            while ExperimentState.BLOCKED.label not in forge.get_pull(pr).labels:
                assert time.monotonic() < deadline, [(j.name, j.phase, j.exit_code) for j in w.fleet.list()]
                w.tick()
                time.sleep(0.3)
            jobs = {j.name: j for j in w.fleet.list()}
        finally:
            _stop(w)
        runs = [f"senpai-student-pr{pr}-1", f"senpai-student-pr{pr}-1-r1", f"senpai-student-pr{pr}-1-r2"]
        assert sorted(jobs) == runs and [jobs[n].exit_code for n in runs] == [6, 6, 6]  # DiskFull, each time
        exp = reader(config).experiment(forge.get_pull(pr))
        assert exp.evidence == [] and exp.attempts == 0 and exp.state == "blocked" and exp.decisions == []
        (comment,) = [c.body for c in forge.list_comments(pr) if c.user == forge.login]
        assert "a volume it writes to is full" in comment
        (issue,) = [i for i in forge.list_issues(SENPAI, "all") if i.user == forge.login]
        assert issue.title == f"senpai: a volume is full (#{pr})"
        assert f"no space left on the volume of {wandb_dir}" in issue.body  # which folder, from the last run's log


def test_a_full_fleet_folder_holds_launches_with_one_error_and_one_issue(local_forge, tmp_path):
    config = make_program(local_forge.base_url, tmp_path, "disk-fleet", target="quick")
    with small_volume(tmp_path / "fleet-volume", "2m") as volume:
        jobs = volume / "jobs"
        jobs.mkdir()
        _set(config, "fleet", "dir", str(jobs))
        pr = _experiment(config, tmp_path)
        forge = make_forge(load_harness(config))
        filler = fill(volume)
        w = build_wrapper(str(config))
        try:
            errors = []
            for _ in range(6):
                errors += w.tick().errors
                time.sleep(0.2)
            assert len(errors) == 1 and "no space left on the volume of" in errors[0], errors
            (issue,) = [i for i in forge.list_issues(SENPAI, "all") if i.user == forge.login]
            assert str(jobs) in issue.title and "No attempt is spent and no PR is closed" in issue.body
            exp = reader(config).experiment(forge.get_pull(pr))
            assert (exp.state, exp.evidence, exp.decisions) == ("wip", [], [])

            filler.unlink()  # room again: once the hold ends, the launch goes
            for tiny in volume.glob("f*"):
                tiny.unlink()
            w.dispatcher.clock = lambda: time.monotonic() + 3600  # past the longest hold
            report = w.tick()
            assert report.errors == [] and f"launched senpai-student-pr{pr}-1 (#{pr})" in report.actions
            assert len([i for i in forge.list_issues(SENPAI, "all") if i.user == forge.login]) == 1
        finally:
            _stop(w)
