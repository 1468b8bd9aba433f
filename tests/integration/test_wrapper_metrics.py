"""GET /metrics of the wrapper's health server, scraped over HTTP after ticks recorded from a real
forge adapter's counts (the fake forge), and parsed with prometheus_client's own parser."""

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from senpai.config.roles import Role
from senpai.ledger.table import LedgerReader
from senpai.wrapper.health import HealthServer, TickHealth
from senpai.wrapper.metrics import WrapperMetrics


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """Every sample of `url`/metrics: (name, sorted labels) -> value."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value for fam in text_string_to_metric_families(text) for s in fam.samples
    }


def test_metrics_after_ticks(fake_forge) -> None:
    forge, _ = fake_forge
    health, metrics = TickHealth(5), WrapperMetrics()
    server = HealthServer(health, metrics.registry).start()
    try:
        before = scrape(server.url)
        assert before[("senpai_wrapper_ticks_total", ())] == 0
        assert before[("senpai_jobs_launched_total", (("role", "student"),))] == 0  # every role's series from the start
        assert not [k for k in before if k[0] == "senpai_forge_rate_limit_remaining"]  # no limit stated yet: absent, not 0

        ledger = LedgerReader(forge)
        exps = ledger.experiments()  # a first listing: charged
        metrics.tick(0.02, False, forge, exps)
        ledger.experiments()  # the same listing again: 304s
        metrics.job_launched(Role.ADVISOR)
        metrics.tick(0.5, False, forge, exps)
        metrics.tick(3.0, True, forge, None)  # the forge did not answer

        after = scrape(server.url)
    finally:
        server.stop()
    assert after[("senpai_wrapper_ticks_total", ())] == 3
    assert after[("senpai_wrapper_tick_failures_total", ())] == 1
    assert after[("senpai_wrapper_tick_duration_seconds_count", ())] == 3
    assert after[("senpai_wrapper_tick_duration_seconds_sum", ())] == 3.52
    assert after[("senpai_wrapper_tick_duration_seconds_bucket", (("le", "0.5"),))] == 2
    charged, cached = (after[("senpai_forge_requests_total", (("cached", c),))] for c in ("false", "true"))
    assert charged + cached == forge.calls and cached == forge.not_modified > 0
    assert after[("senpai_jobs_launched_total", (("role", "advisor"),))] == 1
    states = {dict(k[1])["state"]: v for k, v in after.items() if k[0] == "senpai_experiments"}
    assert sum(states.values()) == len(exps) and set(states) >= {"wip", "review", "merged", "closed"}
    assert after[("process_resident_memory_bytes", ())] > 0


def test_probes_and_unknown_paths_beside_metrics(fake_forge) -> None:
    health = TickHealth(5)
    server = HealthServer(health, WrapperMetrics().registry).start()
    try:
        try:
            urllib.request.urlopen(f"{server.url}/nope", timeout=5)
            raise AssertionError("/nope answered")
        except urllib.error.HTTPError as e:
            assert e.code == 404 and b"/metrics" in e.read()
        with urllib.request.urlopen(f"{server.url}/healthz", timeout=5) as r:
            assert r.status == 200
    finally:
        server.stop()
