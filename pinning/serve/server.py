"""Running pin serve: uvicorn (uvloop event loop, httptools parser) on a socket pin binds
itself, so ``--port 0`` listens on a free port and the line pin prints names the real one.

When the server is ready, one line goes to standard output, flushed::

    pin serve: listening on http://127.0.0.1:8470 (database sqlite:////path/pin.db)

(the database URL without its password). SIGTERM or SIGINT stops it gracefully: no new
connection is accepted, requests in flight finish, the batch writer stores every queued
report (the app's lifespan end), and :func:`run` returns; a second SIGINT forces the exit.
Slow and idle clients are shed by :mod:`pinning.serve.transport` (header and body deadlines,
keep-alive, a bound on open connections).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from pinning.errors import UsageError

if TYPE_CHECKING:
    from pinning.serve.config import ServeConfig
    from pinning.serve.transport import Limits

__all__ = ["bind", "limits", "listening_line", "run"]

#: The listen backlog (pending connections) of pin's socket: pin's own choice (not measured),
#: meant to leave room for many nodes connecting at once.
BACKLOG = 2048
#: Seconds a stop (SIGTERM) waits for requests in flight before it cancels them and stores
#: the queued reports: pin's own choice, within Kubernetes' default 30 s grace period
#: (terminationGracePeriodSeconds,
#: https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination, read
#: 2026-12-05).
GRACE_S = 10


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host`` (an address or a name) and ``port`` (0: any free
    port). Raises ``UsageError`` (exit 2) naming the address when it cannot be bound.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"--host {host!r}: not an address pin can listen on ({exc}).",
                         hint="Give an IP address such as 127.0.0.1 or 0.0.0.0.") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise UsageError(f"Cannot listen on {host}:{port} ({exc.strerror or exc}).",
                         hint="Pick another --port (0: any free one), or stop what uses it."
                         ) from exc
    sock.setblocking(False)
    return sock


def listening_line(sock: socket.socket, url: str) -> str:
    """The ready line naming the bound address of ``sock`` and the database ``url``."""
    from pinning.serve.storage.engine import redact

    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"pin serve: listening on http://{shown}:{port} (database {redact(url)})"


def _server_class() -> type[Any]:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, stopping on SIGTERM / SIGINT without re-raising the signal."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            def stop(sig: int, _frame: Any) -> None:
                if self.should_exit and sig == signal.SIGINT:
                    self.force_exit = True
                self.should_exit = True

            before = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for s, handler in before.items():
                    signal.signal(s, handler)

    return Server


def run(config: ServeConfig, *, out: IO[str] | None = None) -> None:
    """Open the store at ``config.db``, serve the app on ``config.host``/``config.port``
    until SIGTERM or SIGINT, then drain the writer and close the store. Prints the
    listening line to ``out`` (standard output). Raises ``UsageError`` (exit 2) for a
    database that cannot be opened or an address that cannot be bound.
    """
    import uvicorn

    from pinning.serve.app import create_app
    from pinning.serve.storage import Store
    from pinning.serve.transport import protocol_class

    store = Store(config.db)
    try:
        sock = bind(config.host, config.port)
        try:
            app = create_app(store, config)
            protocol, _ = protocol_class(limits(config))
            uv = uvicorn.Config(app, loop="uvloop", http=protocol, lifespan="on",
                                log_level="warning", access_log=False, server_header=False,
                                proxy_headers=False, timeout_keep_alive=config.keep_alive,
                                timeout_graceful_shutdown=GRACE_S)
            server = _server_class()(uv)
            line = listening_line(sock, store.url)
            _settle_gc()
            with asyncio.Runner(loop_factory=_loop()) as runner:
                runner.run(_serve(server, sock, line, out or sys.stdout))
        finally:
            sock.close()
    finally:
        store.close()


def limits(config: ServeConfig) -> Limits:
    """The slow-client bounds of ``config`` (:mod:`pinning.serve.transport`), with the
    process's descriptor limit lifted for them (fewer connections when the hard limit is
    lower than they need: then a warning on standard error).
    """
    from pinning.serve.transport import Limits, raise_fd_limit

    allowed = raise_fd_limit(config.max_connections)
    if allowed < config.max_connections:
        print(f"pin: warning: [serve] max-connections = {config.max_connections}, but this "
              f"process may open few enough files (ulimit -n) for {allowed} only; serving "
              f"at most {allowed}. Raise the hard limit (LimitNOFILE= in a systemd unit) to "
              "allow more.", file=sys.stderr, flush=True)
    return Limits(header_timeout_s=config.header_timeout, body_timeout_s=config.body_timeout,
                  keep_alive_s=config.keep_alive, max_connections=allowed)


def _settle_gc() -> None:
    """Move what start-up allocated (the matrix, the app, imported modules) out of the
    collector's view (``gc.freeze``) and collect the youngest generation less often. What
    it is for: the long-lived start-up objects are then never traversed again, and
    collections (which pause every request in flight) come less often. The thresholds
    ``(20_000, 20, 50)`` are pin's own choice; their effect on latency is not measured.
    """
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 50)


def _loop() -> Any:
    """The event loop factory of uvloop (uvloop is a dependency on Linux and macOS)."""
    import uvloop

    return uvloop.new_event_loop


async def _serve(server: Any, sock: socket.socket, line: str, out: IO[str]) -> None:
    """Run ``server`` on ``sock``; print ``line`` once it accepts connections."""
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started and not task.done():
        await asyncio.sleep(0.01)
    if server.started:
        print(line, file=out, flush=True)
    await task
