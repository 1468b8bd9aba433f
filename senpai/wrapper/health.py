"""Liveness, readiness and metrics of the wrapper loop over HTTP, for Kubernetes probes and Prometheus.

`TickHealth` is written by `Wrapper.run` (tick start, success, failure, planned wait) and read
by `HealthServer`, a stdlib HTTP server in a daemon thread. Its handler is prometheus_client's own
`MetricsHandler`, which serves `GET /metrics` (text or OpenMetrics by the Accept header, gzip if
asked) from the wrapper's registry (`senpai.wrapper.metrics`); the probes are routed beside it.
prometheus_client's `start_http_server` alone would answer metrics on every path and has no way
to answer 503, so one server with three routes is the least code of our own.

- `GET /healthz` (liveness) answers 200 while the loop thread is alive and either is still in its
  first tick or finished a tick within `max(3 * tick_seconds, 60)` seconds of now (a longer wait the
  loop chose, e.g. a rate-limit `retry_after`, extends that window). Otherwise 503: the pod is
  restarted.
- `GET /readyz` (readiness) answers 200 when the last finished tick reached the forge and the fleet
  without a transient error, else 503.

- `GET /metrics`: the Prometheus exposition of `senpai.wrapper.metrics` (ticks, failures, tick
  duration, forge requests and rate limit, Jobs launched, experiments by state).

The probes return JSON: `status`, `reason`, `ticks`, `in_tick`, `last_tick_started`, `last_tick_finished`,
`last_success` (ISO 8601 UTC or null), `consecutive_failures`, `last_error`, and `action_errors`
(actions of the last tick that failed on their own, e.g. a Job the cluster refused; they do not
make the wrapper unready, its log names them).
"""

import json
import logging
import threading
import time
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import MetricsHandler

log = logging.getLogger(__name__)
MIN_LIVENESS_SECONDS = 60.0


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


class TickHealth:
    """Thread-safe record of the loop's progress; times are wall-clock seconds (time.time())."""

    def __init__(self, tick_seconds: float, clock=time.time) -> None:
        self.window = max(3 * tick_seconds, MIN_LIVENESS_SECONDS)
        self._clock, self._lock = clock, threading.Lock()
        self._thread: threading.Thread | None = None
        self.ticks = self.consecutive_failures = 0
        self.started = self.finished = self.success = self.wait_until = None
        self.last_error: str | None = None
        self.action_errors = 0

    def tick_started(self) -> None:
        with self._lock:
            self._thread = threading.current_thread()
            self.started = self._clock()

    def tick_finished(self, error: str | None = None, action_errors: int = 0) -> None:
        """Record the end of a tick; `error` is None when it reached the forge and fleet."""
        with self._lock:
            self.ticks += 1
            self.finished = self._clock()
            self.last_error, self.action_errors = error, action_errors
            if error is None:
                self.success, self.consecutive_failures = self.finished, 0
            else:
                self.consecutive_failures += 1

    def waiting(self, seconds: float) -> None:
        """The loop sleeps `seconds` before its next tick (liveness allows for it)."""
        with self._lock:
            self.wait_until = self._clock() + seconds

    def snapshot(self) -> dict:
        with self._lock:
            in_tick = self.started is not None and (self.finished is None or self.started > self.finished)
            return {
                "ticks": self.ticks,
                "in_tick": in_tick,
                "last_tick_started": _iso(self.started),
                "last_tick_finished": _iso(self.finished),
                "last_success": _iso(self.success),
                "consecutive_failures": self.consecutive_failures,
                "last_error": self.last_error,
                "action_errors": self.action_errors,
            }

    def live(self) -> tuple[bool, str]:
        """(alive, reason) for the liveness probe."""
        with self._lock:
            if self._thread is None:
                return True, "starting"
            if not self._thread.is_alive():
                return False, "the loop thread has exited"
            if self.finished is None:
                return True, "first tick"
            deadline = max(self.finished, self.wait_until or 0) + self.window
            if self._clock() > deadline:
                return False, f"no tick finished in the last {self._clock() - self.finished:.0f} s (limit {self.window:.0f} s)"
            return True, "ok"

    def ready(self) -> tuple[bool, str]:
        """(ready, reason) for the readiness probe."""
        with self._lock:
            if self.finished is None:
                return False, "no tick finished yet"
            if self.last_error is not None:
                return False, f"last tick failed: {self.last_error}"
            return True, "ok"


class _Handler(MetricsHandler):
    server: "HealthServer"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self.registry = self.server.registry
            super().do_GET()
            return
        probes = {"/healthz": self.server.health.live, "/readyz": self.server.health.ready}
        probe = probes.get(path)
        if probe is None:
            self._reply(404, {"status": "not found", "paths": sorted([*probes, "/metrics"])})
            return
        ok, reason = probe()
        self._reply(200 if ok else 503, {"status": "ok" if ok else "failing", "reason": reason, **self.server.health.snapshot()})

    def _reply(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # probes every few seconds: debug only
        log.debug("health %s", format % args)


class HealthServer(ThreadingHTTPServer):
    """HTTP server for `health` and the metrics of `registry` on `host:port` (port 0: a free one);
    bound on construction."""

    daemon_threads = True

    def __init__(self, health: TickHealth, registry: CollectorRegistry, host: str = "127.0.0.1", port: int = 0) -> None:
        self.health, self.registry = health, registry
        super().__init__((host, port), _Handler)
        self._thread = threading.Thread(target=self.serve_forever, name=f"health-{self.server_address[1]}", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "HealthServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
