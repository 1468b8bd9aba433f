"""A fault-injecting HTTP reverse proxy for the local forge (REST and git smart HTTP under `/git/`).

`FaultProxy(upstream).start()` listens on a free 127.0.0.1 port in a daemon thread and forwards
each request to `upstream` (an `http://127.0.0.1:<port>` URL).  With probability `rate` a request
gets one fault instead, chosen by `weights` from a seeded RNG:

- `500`, `502`: an error answer, the request never reaches the forge;
- `503`, `429`: the same, with `Retry-After: <retry_after>` seconds;
- `reset_before`: the connection is reset (RST) before the request is forwarded;
- `reset_after`: the request is forwarded and applied, then the connection is reset, so the
  client never sees the answer (the case that duplicates non-idempotent writes);
- `slow`: the answer is forwarded after `slow_seconds`.

Bodies are buffered (the forge's payloads are small) and forwarded byte for byte; a chunked request
body is de-chunked and forwarded with a Content-Length.  All other end-to-end headers (Host,
Authorization, ETag, If-None-Match, Retry-After, Link) pass unchanged, so 304s and links work.
`injected` counts faults by kind, `injected_by_surface` by ("rest"|"git", kind), `forwarded`
counts requests that reached the forge, `answered` the forge's answers by ("rest"|"git", status),
`methods` by ("rest"|"git", method, answered 304), `charged_paths` the REST answers but 304s by
method and path (numbers as N), `requests` every REST answer by method and path (304s too); `only`
(a regex searched in the path) limits faults to the requests it matches
(bench/forge_requests.py counts 304s apart: GitHub does not charge them to the rate limit).
Set `rate = 0` to pause injection (e.g. while seeding).

`stuck_304 = True` plays a stale ETag or a caching proxy: every REST request that carries
`If-None-Match` is answered 304 with that ETag, whatever the forge holds, without reaching it
(`held_304` counts them); a request without a validator passes as usual.
"""

import http.client
import random
import re
import socket
import struct
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

KINDS = ("500", "502", "503", "429", "reset_before", "reset_after", "slow")
DEFAULT_WEIGHTS = dict.fromkeys(KINDS, 1.0)
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "content-length"}
MAX_BODY = 256 * 1024 * 1024  # bytes: a request body larger than this is refused (413)
UPSTREAM_TIMEOUT = 120.0  # seconds


class FaultProxy:
    """A reverse proxy on 127.0.0.1 in front of `upstream` that injects faults into `rate` of requests."""

    def __init__(
        self,
        upstream: str,
        *,
        rate: float = 0.2,
        seed: int = 0,
        weights: dict[str, float] | None = None,
        retry_after: int = 1,
        slow_seconds: float = 1.0,
        surfaces: tuple[str, ...] = ("rest", "git"),
        only: str | None = None,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.hostname not in ("127.0.0.1", "localhost") or not parts.port:
            raise ValueError(f"upstream must be http://127.0.0.1:<port>, got {upstream!r}")
        self.upstream = (parts.hostname, parts.port)
        self.rate, self.retry_after, self.slow_seconds, self.surfaces = rate, retry_after, slow_seconds, surfaces
        self.only = re.compile(only) if only else None  # faults only into requests whose path this searches
        self.weights = dict(weights or DEFAULT_WEIGHTS)
        unknown = set(self.weights) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; expected some of {KINDS}")
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.injected: Counter[str] = Counter()
        self.injected_by_surface: Counter[tuple[str, str]] = Counter()
        self.forwarded = 0
        self.answered: Counter[tuple[str, int]] = Counter()
        self.methods: Counter[tuple[str, str, bool]] = Counter()  # (surface, method, answered 304)
        self.charged_paths: Counter[str] = Counter()  # "GET /repos/o/r/issues/N/comments": REST answers but 304s
        self.charged_by_role: Counter[tuple[str, str]] = Counter()  # (senpai role from the User-Agent, route)
        self.requests: Counter[str] = Counter()  # "GET /repos/o/r/...": every REST answer, 304s too (query dropped)
        self.stuck_304 = False  # answer every conditional REST request 304 (a stale ETag, a caching proxy)
        self.held_304 = 0
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """What to give clients as the forge's base URL, e.g. http://127.0.0.1:8124."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> "FaultProxy":
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:  # shutdown() waits for serve_forever, so only after start()
            self._server.shutdown()
            self._thread.join(10)
        self._server.server_close()

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def choose(self, path: str) -> str | None:
        """The fault for a request to `path` (None: forward it); counts what it injects."""
        surface = "git" if path.startswith("/git/") else "rest"
        with self._lock:
            if surface not in self.surfaces or (self.only and not self.only.search(path)):
                return None
            if self.rate <= 0 or self._rng.random() >= self.rate:
                return None
            kinds = [k for k, w in self.weights.items() if w > 0]
            kind = self._rng.choices(kinds, [self.weights[k] for k in kinds])[0]
            self.injected[kind] += 1
            self.injected_by_surface[(surface, kind)] += 1
            return kind

    def answer(self, path: str, status: int, method: str = "GET", agent: str = "") -> None:
        """Count the forge's answer `status` to a `method` request for `path` from User-Agent `agent`."""
        surface = "git" if path.startswith("/git/") else "rest"
        role = m[1] if (m := re.search(r"^senpai/\S+ \((\w+)\)", agent)) else "other"
        with self._lock:
            self.answered[(surface, status)] += 1
            self.methods[(surface, method, status == 304)] += 1
            if surface == "rest":
                self.requests[f"{method} {path.split('?', 1)[0]}"] += 1
            if surface == "rest" and status != 304:
                route = f"{method} {re.sub(r'/[0-9]+', '/N', path.split('?', 1)[0])}"
                self.charged_paths[route] += 1
                self.charged_by_role[(role, route)] += 1

    def counts(self) -> dict:
        """JSON-ready counts: {"forwarded": n, "injected": {kind: n}, "by_surface": {"rest:500": n, ...}}."""
        with self._lock:
            return {
                "forwarded": self.forwarded,
                "injected": {k: self.injected[k] for k in KINDS},
                "by_surface": {f"{s}:{k}": n for (s, k), n in sorted(self.injected_by_surface.items())},
            }


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients that go away (their own resets, timeouts) are normal here; anything else is printed."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        pass

    Handler.proxy = proxy
    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as PyGithub's session and git's libcurl use it
    proxy: FaultProxy

    def log_message(self, format: str, *args: object) -> None:  # quiet: tests read counts, not logs
        pass

    def do_GET(self) -> None:
        self._relay()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    def _relay(self) -> None:
        body = self._read_body()
        if body is None:
            return
        etag = self.headers.get("If-None-Match")
        if self.proxy.stuck_304 and etag and not self.path.startswith("/git/"):
            return self._not_modified(etag)
        fault = self.proxy.choose(self.path)
        if fault == "reset_before":
            return self._reset()
        if fault in ("500", "502", "503", "429"):
            return self._error(int(fault))
        status, reason, headers, payload = self._forward(body)
        self.proxy.answer(self.path, status, self.command, self.headers.get("User-Agent", ""))
        if fault == "reset_after":
            return self._reset()
        if fault == "slow":
            time.sleep(self.proxy.slow_seconds)
        self.send_response(status, reason)
        for name, value in headers:
            self.send_header(name, value)
        if status not in (204, 304) and self.command != "HEAD":
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _read_body(self) -> bytes | None:
        """The request body (de-chunked); None after answering 413 for one that is too large."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks, total = [], 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY:
                    self._error(413)
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._error(413)
            return None
        return self.rfile.read(length) if length else b""

    def _forward(self, body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(*self.proxy.upstream, timeout=UPSTREAM_TIMEOUT)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            if body or self.command in ("POST", "PUT", "PATCH"):
                headers["Content-Length"] = str(len(body))
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
            with self.proxy._lock:
                self.proxy.forwarded += 1
            kept = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP]
            return resp.status, resp.reason, kept, payload
        finally:
            conn.close()

    def _error(self, status: int) -> None:
        payload = b'{"message": "fault injected by the test proxy"}'
        self.send_response(status)
        if status in (429, 503):
            self.send_header("Retry-After", str(self.proxy.retry_after))
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _not_modified(self, etag: str) -> None:
        with self.proxy._lock:
            self.proxy.held_304 += 1
        self.proxy.answer(self.path, 304, self.command, self.headers.get("User-Agent", ""))
        self.send_response(304)
        self.send_header("ETag", etag)
        self.end_headers()

    def _reset(self) -> None:
        """Close with SO_LINGER 0: the peer gets a TCP RST, not an answer."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.rfile.close()  # the reader holds a reference: the socket really closes only without it
        self.connection.close()
