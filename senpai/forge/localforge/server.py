"""Run the local forge with uvicorn, in the foreground (CLI) or in a background thread (tests).

The socket is bound before uvicorn starts, so port 0 picks a free port and `url` is known at once.
In the foreground uvicorn handles SIGINT/SIGTERM and shuts down cleanly.
"""

import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

from senpai.errors import cannot_listen
from senpai.forge.localforge.app import DEFAULT_PROTECTED, create_app
from senpai.forge.localforge.ratelimit import NO_WRITE_LIMITS, WriteLimits
from senpai.forge.localforge.store import Store


class LocalForgeServer:
    """One local forge server on `host:port` (port 0: a free one, known once constructed)."""

    def __init__(
        self,
        data_dir: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        app: ASGIApp | None = None,
        protected: tuple[str, ...] = DEFAULT_PROTECTED,
        rate_limit: int | None = None,
        write_limits: WriteLimits = NO_WRITE_LIMITS,
        required_approvals: int = 0,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.app = app or create_app(self.data_dir, protected, rate_limit, write_limits, required_approvals)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on sockets that say so (else +40 ms per reply)
        self._socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((host, port))
        except OSError as e:
            self._socket.close()
            raise cannot_listen("the local forge", host, port, e, "--port") from e
        self._socket.listen(128)  # connections wait in the backlog until uvicorn accepts them
        self.host, self.port = host, self._socket.getsockname()[1]
        # the app dates its answers by the store's clock (`app.ForgeDate`), not uvicorn by the wall clock
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, timeout_keep_alive=30, date_header=False)
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def store(self) -> Store:
        """The forge's SQLite store (tokens: `store.add_token(login, role)`)."""
        return self.app.state.store  # type: ignore[attr-defined]

    @property
    def url(self) -> str:
        """REST root to give PyGithub as base_url, e.g. http://127.0.0.1:8123."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """Same as `url`: what `ForgeSettings.base_url` should be."""
        return self.url

    def run(self) -> None:
        """Serve in this thread until SIGINT/SIGTERM or `stop()`."""
        self._server.run(sockets=[self._socket])

    def start(self, timeout: float = 15.0) -> "LocalForgeServer":
        """Serve in a daemon thread; return once uvicorn accepts connections. Raises RuntimeError."""
        self._thread = threading.Thread(target=self.run, name=f"localforge-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"local forge did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit and wait for the thread (no-op when serving in the foreground)."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._socket.close()


def serve(
    data_dir: Path,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    background: bool = False,
    on_ready: Callable[[LocalForgeServer], None] | None = None,
    protected: tuple[str, ...] = DEFAULT_PROTECTED,
    rate_limit: int | None = None,
    write_limits: WriteLimits = NO_WRITE_LIMITS,
    required_approvals: int = 0,
) -> LocalForgeServer:
    """Serve the forge for `data_dir`.

    background=False blocks until SIGINT/SIGTERM, then returns normally after a graceful shutdown
    (`on_ready` is called first, once the port is bound);
    background=True returns the started server; call `.stop()` when done.
    """
    server = LocalForgeServer(
        data_dir, host, port, protected=protected, rate_limit=rate_limit, write_limits=write_limits,
        required_approvals=required_approvals,
    )  # fmt: skip
    if background:
        server.start()
        if on_ready:
            on_ready(server)
        return server
    if on_ready:
        on_ready(server)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if main else None
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises the signal it shut down for
        pass
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        server.stop()
    return server


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def start_in_thread(data_dir: Path, host: str = "127.0.0.1", port: int = 0) -> LocalForgeServer:
    """Start a server in a daemon thread and return it once it accepts connections; `.stop()` it."""
    return LocalForgeServer(data_dir, host, port).start()
