"""Shedding slow and idle clients: the HTTP protocol pin serve runs uvicorn with.

uvicorn (0.54, the version CI tests) bounds idle keep-alive time (``timeout_keep_alive``)
but nothing else: a connection that sends no byte, or trickles its request line and headers,
is held for ever (``connection_made`` arms no timer and ``data_received`` cancels the
keep-alive timer on every byte; the ask for ``--timeout-request-start`` has been open since
2018: https://github.com/Kludex/uvicorn/issues/157, read 2026-12-05). About 1,100 such
connections, which need no token, used up pin serve's file descriptors, and every new
connection, a node's report included, was then reset.

pin therefore runs uvicorn's own httptools protocol with four bounds, the ones nginx gives a
proxy (``client_header_timeout``, ``client_body_timeout``, ``keepalive_timeout``,
``worker_connections``: https://nginx.org/en/docs/http/ngx_http_core_module.html and
https://nginx.org/en/docs/ngx_core_module.html#worker_connections, read 2026-12-05), kept
in the process so that a bare ``pin serve`` is safe without a proxy in front:

- ``header_timeout_s``: from the connection's start (or, on a kept-alive connection, the
  first byte of its next request) to the end of the request's headers; past it pin answers
  408 and closes.
- ``body_timeout_s``: from the end of the headers to the end of the body; past it the
  connection is closed (the handler sees the client gone, nothing is stored).
- ``keep_alive_s``: idle time between requests (uvicorn's own timer).
- ``max_connections``: open connections per process. A new connection past it closes the
  oldest one that has no request in progress (first those that never finished their
  headers, then idle kept-alive ones), so stalled clients can never lock nodes out; when
  every connection has a request in progress the new one gets 503 and is closed.

At start :func:`raise_fd_limit` lifts the soft descriptor limit (``RLIMIT_NOFILE``) up to the
hard one, so the connection bound, not the descriptor table, is what sheds.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["BoundedHttpToolsProtocol", "Limits", "Shedder", "protocol_class", "raise_fd_limit"]

_LOG = logging.getLogger("pin.serve")
_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"connection: close\r\ncontent-length: 47\r\n\r\n"
            b"The request's headers did not arrive in time.\n")
_FULL = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
         b"connection: close\r\nretry-after: 1\r\ncontent-length: 49\r\n\r\n"
         b"Every connection of this server is busy: retry.\n")
#: Descriptors kept free beyond the connections: the database, log files, the listener.
FD_RESERVE = 256


@dataclass(frozen=True)
class Limits:
    """The four bounds of the module docstring: seconds, seconds, seconds, connections."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    keep_alive_s: int = 5
    max_connections: int = 1024


@dataclass
class Shedder:
    """Which connections of one server may be closed to make room, oldest first:
    ``waiting`` (no complete headers yet) and ``idle`` (kept alive between requests);
    ``shed`` counts connections closed to make room, ``timed_out`` those past a deadline.
    """

    limits: Limits
    waiting: collections.OrderedDict[int, Any] = field(default_factory=collections.OrderedDict)
    idle: collections.OrderedDict[int, Any] = field(default_factory=collections.OrderedDict)
    shed: int = 0
    timed_out: int = 0

    def mark(self, conn: Any, state: str | None) -> None:
        """Put ``conn`` in ``state`` (``"waiting"``, ``"idle"``) or in neither (``None``:
        a request in progress, or closed).
        """
        key = id(conn)
        self.waiting.pop(key, None)
        self.idle.pop(key, None)
        if state == "waiting":
            self.waiting[key] = conn
        elif state == "idle":
            self.idle[key] = conn

    def make_room(self, newcomer: Any, open_now: int) -> bool:
        """Close the oldest sheddable connections (never ``newcomer``) until ``open_now``
        (connections open, ``newcomer`` included) is within the bound; ``False`` when that
        is impossible (every other connection has a request in progress).
        """
        while open_now > self.limits.max_connections:
            victim = self._oldest(newcomer)
            if victim is None:
                return False
            self.mark(victim, None)
            victim.transport.abort()
            self.shed += 1
            open_now -= 1
        return True

    def _oldest(self, newcomer: Any) -> Any:
        for pool in (self.waiting, self.idle):
            for key, conn in pool.items():
                if conn is not newcomer:
                    return pool[key]
        return None


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the header and body deadlines and the connection
    bound of this module; ``shedder`` (and its limits) is set per server by
    :func:`protocol_class`.
    """

    shedder: Shedder
    _deadline: Any = None
    _heard = False

    def connection_made(self, transport: Any) -> None:  # noqa: D102 - uvicorn's hooks
        super().connection_made(transport)
        self.shedder.mark(self, "waiting")
        if not self.shedder.make_room(self, len(self.connections)):
            self.shedder.mark(self, None)
            _LOG.warning("pin serve: %d connections, each with a request in progress; "
                         "refusing a new one (503)", len(self.connections))
            transport.write(_FULL)
            transport.close()
            return
        self._arm(self.shedder.limits.header_timeout_s, self._headers_late)

    def data_received(self, data: bytes) -> None:  # noqa: D102
        self._heard = True
        super().data_received(data)

    def on_message_begin(self) -> None:  # noqa: D102
        super().on_message_begin()
        if self._deadline is None:  # the next request on a kept-alive connection
            self.shedder.mark(self, "waiting")
            self._arm(self.shedder.limits.header_timeout_s, self._headers_late)

    def on_headers_complete(self) -> None:  # noqa: D102
        self.shedder.mark(self, None)
        self._arm(self.shedder.limits.body_timeout_s, self._body_late)
        super().on_headers_complete()

    def on_message_complete(self) -> None:  # noqa: D102
        self._disarm()
        super().on_message_complete()

    def on_response_complete(self) -> None:  # noqa: D102
        super().on_response_complete()
        if not self.transport.is_closing() and self._deadline is None:
            self.shedder.mark(self, "idle")

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: D102
        self._disarm()
        self.shedder.mark(self, None)
        super().connection_lost(exc)

    def _arm(self, seconds: float, then: Callable[[], None]) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, then)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_late(self) -> None:
        """Past the header deadline: 408 (when a byte came) and close."""
        self._deadline = None
        self.shedder.mark(self, None)
        self.shedder.timed_out += 1
        if not self.transport.is_closing():
            if self._heard:
                self.transport.write(_TIMEOUT)
            self.transport.close()

    def _body_late(self) -> None:
        """Past the body deadline: close (the handler sees the client gone)."""
        self._deadline = None
        self.shedder.timed_out += 1
        if not self.transport.is_closing():
            self.transport.abort()


def protocol_class(limits: Limits) -> tuple[type[BoundedHttpToolsProtocol], Shedder]:
    """A subclass of :class:`BoundedHttpToolsProtocol` enforcing ``limits`` (pass it as
    ``uvicorn.Config(http=...)``, with ``timeout_keep_alive=limits.keep_alive_s``) and the
    :class:`Shedder` its connections share (one per server).
    """
    shedder = Shedder(limits)
    cls = type("BoundedHttpToolsProtocol", (BoundedHttpToolsProtocol,), {"shedder": shedder})
    return cls, shedder


def raise_fd_limit(connections: int) -> int:
    """Lift the soft ``RLIMIT_NOFILE`` towards ``connections`` + :data:`FD_RESERVE` (never
    past the hard limit, never lowering it) and return the connections it then allows
    (``connections`` or fewer when the hard limit is lower). Where ``resource`` is missing
    (not POSIX), ``connections`` unchanged.
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = connections + FD_RESERVE
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):  # pragma: no cover - a sandbox refusing it
            pass
    if soft == resource.RLIM_INFINITY:
        return connections
    return max(1, min(connections, soft - FD_RESERVE))
