"""The research loop behind the fault proxy: 20% of the wrapper's and the jobs' REST and git requests
fail (5xx, 429, resets before and after forwarding, slow answers). The loop still decides its
experiments with no duplicate record and no experiment closed, or attempt spent, for a fault.

The short version of the fault figure (`bench/` runs the long one with the same parts)."""

import time
from collections import Counter

import pytest
from audit import DUPLICATES, audit
from fault_proxy import FaultProxy
from research import make_program

from senpai.cli.demo import run_until
from senpai.cli.wiring import make_fleet, make_forge, make_tracker
from senpai.config.harness import load_harness
from senpai.errors import SenpaiError

pytestmark = pytest.mark.e2e
DECIDED = 2  # the measured start, then a proposal; bench/run.py decides 6
CHECKED = (*DUPLICATES, "closed_for_infra", "infra_attempts", "not_terminal", "lost_events", "unreadable")


def run_under_faults(config, proxy: FaultProxy, decided: int, timeout: float) -> tuple[object, str | None]:
    """Run the loop with faults on; then pause them. Returns (last tick report, crash message or None)."""
    proxy.rate = 0.2
    try:
        return run_until(config, decided, time.monotonic() + timeout), None
    except SenpaiError as e:  # the wrapper itself died of a fault: reported with the counts below
        return None, f"{type(e).__name__}: {e}"
    finally:
        proxy.rate = 0.0


@pytest.mark.long
def test_loop_under_20_percent_faults_has_no_duplicates_and_no_infra_closures(local_forge, tmp_path):
    with FaultProxy(local_forge.base_url, rate=0.0, seed=8, slow_seconds=0.5, retry_after=1) as proxy:
        config = make_program(proxy.url, tmp_path, "faults", students=2, experiments=DECIDED, target="quick")
        report, crash = run_under_faults(config, proxy, DECIDED, timeout=420)
        cfg = load_harness(config)
        found = audit(make_forge(cfg), make_tracker(cfg))
        jobs = Counter(f"{j.role}:{j.phase}" for j in make_fleet(cfg).list())
    by_surface = proxy.counts()["by_surface"]
    assert any(k.startswith("rest:") for k in by_surface) and any(k.startswith("git:") for k in by_surface), by_surface
    outcome = {
        "crash": crash,
        "decided": found.decided >= DECIDED,
        **{k: found.counts[k] for k in CHECKED},
    }
    expected = {"crash": None, "decided": True, **dict.fromkeys(CHECKED, 0)}
    assert outcome == expected, "\n".join([f"proxy: {proxy.counts()}", f"jobs: {dict(jobs)}", *found.findings])
