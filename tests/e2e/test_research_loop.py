"""The research loop end to end: local forge (PyGithub over HTTP), real git, real wandb offline,
real subprocess jobs through the local fleet, the search runtime and the verifier."""

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from research import assert_no_duplicates, make_program, reader, run

from senpai import phases
from senpai.cli.main import cli
from senpai.cli.wiring import make_fleet
from senpai.cli.wrapper import build_wrapper
from senpai.config.harness import load_harness
from senpai.ledger.table import SETTLE, to_json
from senpai.wrapper import loop, policy

pytestmark = pytest.mark.e2e


@pytest.mark.long
def test_loop_decides_merges_and_the_ledger_rebuilds(local_forge, tmp_path, monkeypatch):
    # the subject is the harness, so the quick target (digits' contract, no scikit-learn); the same
    # loop on examples/digits, at full size, is `make bench-research` (bench/research_senpai.py)
    config = make_program(local_forge.base_url, tmp_path, "loop", students=2, experiments=3, target="quick")
    report = run(config, decided=3, timeout=900)  # generous: each verification trains and scores both sides
    assert sum(e.state == "merged" for e in report.exps) >= 1

    led = reader(config)
    exps = led.experiments()
    assert len(exps) == 3
    for e in exps:
        assert e.hypothesis is not None and e.evidence and e.decision is not None, e
        run_id = e.evidence[0].runs[0].id
        rec = led.tracker.get_run(run_id)  # the program's own W&B run, read back offline
        assert rec.group == f"pr-{e.pr}" and rec.name == f"{e.student}/pr-{e.pr}/1"
        assert {"senpai", f"student:{e.student}", f"pr-{e.pr}"} <= set(rec.tags)
        assert rec.config["senpai_pr"] == e.pr and rec.config["senpai_hypothesis"] == e.hypothesis.id
        assert e.runs[0].metric == e.evidence[0].primary.value
    # every job ends its log with its phases; jobs copy the base from the wrapper's mirror, not the forge
    cfg = load_harness(config)
    # the jobs the fleet lists (one the run deleted as it stopped, launched by its last tick, is gone)
    jobs = make_fleet(cfg).list()
    records = [phases.parse((Path(cfg.fleet.dir) / job.name / "log").read_text()) for job in jobs]
    assert records and all(r is not None for r in records)
    assert sum("git clone (mirror)" in r["phases"] for r in records) > len(records) / 2
    assert (Path(cfg.state_dir) / "mirror.git").is_dir()
    merged = [e for e in exps if e.state == "merged"]
    for e in merged:
        v = e.verifications[-1]
        assert v.passed and v.improvement > v.noise_floor and e.decision.verdict == "merge"

    cli_json = CliRunner().invoke(cli, ["ledger", "--json", "--config", str(config)])
    assert cli_json.exit_code == 0, cli_json.output
    before = to_json(exps)
    checked = CliRunner().invoke(cli, ["ledger", "--check", "--config", str(config)])
    assert checked.exit_code == 0 and "consistent: 3 experiment(s)" in checked.output, checked.output  # nothing by hand
    assert json.loads(cli_json.stdout) == json.loads(before)

    # the state store is only a cache: delete it, tick, and the ledger reads the same
    state = Path(load_harness(config).state_dir) / "wrapper.sqlite"
    assert state.exists()
    for f in state.parent.glob("wrapper.sqlite*"):
        f.unlink()
    w = build_wrapper(str(config))
    tick = w.tick()
    assert tick.actions == [] and tick.errors == []
    # threads read within SETTLE s of their last change are read again once more (stamps are whole
    # seconds, so only SETTLE + 1 s always crosses it); whether the run's last comment was that recent
    # when this tick read it depends on the machine's load (a loaded one takes longer to get here)
    unsettled = w.ledger.unsettled
    time.sleep(SETTLE + 1)
    assert w.tick().refreshed == unsettled and not w.ledger.unsettled
    # an idle wrapper (everything decided, no live job) costs two conditional requests per tick, both
    # 304s (free): the PRs updated since its last listing, and the steering issues; once a tick
    # planned nothing, the next quiet ones do not plan again (planning walks every experiment)
    planned = []
    monkeypatch.setattr(loop, "plan", lambda *a: planned.append(1) or policy.plan(*a))
    idle = [w.tick() for _ in range(3)]
    assert [(t.calls, t.free) for t in idle] == [(2, 2)] * 3 and not any(t.refreshed or t.actions for t in idle)
    assert planned == []
    w.store.close()
    assert to_json(reader(config).experiments()) == before
    assert_no_duplicates(config)
