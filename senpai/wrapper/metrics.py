"""Prometheus metrics of the wrapper loop, served at `GET /metrics` beside the probes
(`senpai.wrapper.health`) and written by `Wrapper.run` and `Wrapper.tick`.

Each Wrapper has its own CollectorRegistry (a process may build several wrappers, as the tests do,
and the global registry would refuse a metric registered twice), with prometheus_client's process
collector (CPU seconds, resident memory, open fds, start time).

- `senpai_wrapper_ticks_total` (counter): ticks tried, failed ones included;
- `senpai_wrapper_tick_failures_total` (counter): ticks that failed (the forge or the cluster did
  not answer);
- `senpai_wrapper_tick_duration_seconds` (histogram): wall time of one tick, seconds;
- `senpai_forge_requests_total{cached}` (counter): the forge adapter's requests; `cached="true"`:
  answered 304 (free on GitHub);
- `senpai_forge_rate_limit_remaining{resource="core"}` (gauge): requests left in the forge's
  rate-limit window, as its last answer said; absent until one did (the local forge states none);
- `senpai_jobs_launched_total{role}` (counter): Jobs the fleet accepted (one that already existed
  too), per role: advisor, student, verifier;
- `senpai_experiments{state}` (gauge): experiments per ledger state (every `ExperimentState`), as
  of the last tick that succeeded.
"""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

from senpai.config.roles import Role
from senpai.forge.read import ForgeReader
from senpai.ledger.experiment import Experiment
from senpai.ledger.labels import ExperimentState

# a quiet tick takes milliseconds; one that re-reads 10,000 PRs or waits on retries, tens of seconds
TICK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class WrapperMetrics:
    """The wrapper's metrics on their own `registry` (see the module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        r = self.registry
        self.ticks = Counter("senpai_wrapper_ticks", "Wrapper ticks tried, failed ones included.", registry=r)
        self.failures = Counter("senpai_wrapper_tick_failures", "Ticks that failed (forge or cluster unreachable).", registry=r)
        self.duration = Histogram(
            "senpai_wrapper_tick_duration_seconds", "Wall time of one tick, seconds.", buckets=TICK_BUCKETS, registry=r
        )
        self.requests = Counter("senpai_forge_requests", "Forge API requests; cached: answered 304.", ["cached"], registry=r)
        # labelled, so the series is absent (not a misleading 0) until the forge states a limit
        self.remaining = Gauge(
            "senpai_forge_rate_limit_remaining", "Requests left in the forge's rate-limit window.", ["resource"], registry=r
        )
        self.launched = Counter("senpai_jobs_launched", "Jobs the fleet accepted, by role.", ["role"], registry=r)
        self.experiments = Gauge("senpai_experiments", "Experiments per ledger state.", ["state"], registry=r)
        for role in Role:  # every series exists from the start, so rate() sees the first launch
            self.launched.labels(role=role.value)
        for cached in ("true", "false"):
            self.requests.labels(cached=cached)
        self._calls = self._free = 0

    def tick(self, seconds: float, failed: bool, forge: ForgeReader, exps: list[Experiment] | None) -> None:
        """Record one tick of `seconds` that `failed` or not; the forge's request counts and rate
        limit as of now, and (unless None: a failed tick) the experiments it saw."""
        self.ticks.inc()
        self.failures.inc(failed)
        self.duration.observe(seconds)
        calls, free = forge.calls, forge.not_modified
        self.requests.labels(cached="true").inc(max(free - self._free, 0))
        self.requests.labels(cached="false").inc(max((calls - free) - (self._calls - self._free), 0))
        self._calls, self._free = calls, free
        if (limit := forge.rate_limit()) is not None:
            self.remaining.labels(resource="core").set(limit.remaining)
        if exps is not None:
            counts = {state: 0 for state in ExperimentState}
            for e in exps:
                counts[e.state] += 1
            for state, n in counts.items():
                self.experiments.labels(state=state.value).set(n)

    def job_launched(self, role: Role) -> None:
        """Count a Job of `role` the fleet accepted."""
        self.launched.labels(role=str(role)).inc()
