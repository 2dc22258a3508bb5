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
  connection is closed (the handler sees the client gone, nothing is stored). The same
  bound applies to a client that stops reading the answer (the socket's send buffer full).
  An answer sent before the body arrived (401, 413) closes the connection.
- :data:`MAX_HEADER_BYTES`: a request line and headers longer than that are answered 431.
- ``keep_alive_s``: idle time between requests (uvicorn's own timer).
- ``max_connections``: open connections per process. A new connection past it closes the
  oldest one whose request is not whole (first those that never finished their headers,
  then idle kept-alive ones, then those still sending a body), so stalled clients can never
  lock nodes out; when every other connection's handler is answering a whole request the
  new one gets 503 and is closed.

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


def _answer(status: str, text: str, *extra: str) -> bytes:
    """A whole HTTP/1.1 response closing the connection: ``status`` line, plain ``text``."""
    body = text.encode() + b"\n"
    head = [f"HTTP/1.1 {status}", "content-type: text/plain; charset=utf-8",
            "connection: close", *extra, f"content-length: {len(body)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


_TIMEOUT = _answer("408 Request Timeout", "The request's headers did not arrive in time.")
_FULL = _answer("503 Service Unavailable", "Every connection of this server is busy: retry.",
                "retry-after: 1")
_TOO_LARGE = _answer("431 Request Header Fields Too Large",
                     "The request line and headers are too long.")

#: The most bytes a request line and its headers may take (64 KiB: pin's own choice; nginx
#: allows 4 buffers of 8 KiB by default, large_client_header_buffers).
MAX_HEADER_BYTES = 64 * 1024
#: Descriptors kept free beyond the connections: the database, log files, the listener.
FD_RESERVE = 256


@dataclass(frozen=True)
class Limits:
    """The four bounds of the module docstring: seconds, seconds, seconds, connections."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    keep_alive_s: int = 5
    max_connections: int = 1024


def drop(conn: Any) -> None:
    """Abort ``conn``'s transport, its request (if any) marked disconnected first: a handler
    still answering then stops writing at once (uvicorn's ``send`` returns on a disconnected
    cycle), instead of failing on a closed transport before ``connection_lost`` runs.
    """
    cycle = getattr(conn, "cycle", None)
    if cycle is not None and not cycle.response_complete:
        cycle.disconnected = True
        cycle.message_event.set()
    if not conn.transport.is_closing():
        conn.transport.abort()


#: The states a connection can be shed in, in the order they are shed: no whole headers
#: yet, idle between requests, then receiving a body (the handler waits for it).
SHEDDABLE = ("waiting", "idle", "receiving")


@dataclass
class Shedder:
    """Which connections of one server may be closed to make room, oldest first in each of
    :data:`SHEDDABLE` (``pools``): a connection whose handler has its whole request and
    is answering is never shed. ``shed`` counts connections closed to make room,
    ``timed_out`` those past a deadline.
    """

    limits: Limits
    pools: dict[str, collections.OrderedDict[int, Any]] = field(
        default_factory=lambda: {state: collections.OrderedDict() for state in SHEDDABLE})
    shed: int = 0
    timed_out: int = 0

    def mark(self, conn: Any, state: str | None) -> None:
        """Put ``conn`` in ``state`` (one of :data:`SHEDDABLE`) or in none (``None``: its
        handler is answering a whole request, or it is closed).
        """
        key = id(conn)
        for pool in self.pools.values():
            pool.pop(key, None)
        if state is not None:
            self.pools[state][key] = conn

    def make_room(self, newcomer: Any, open_now: int) -> bool:
        """Close the oldest sheddable connections (never ``newcomer``) until ``open_now``
        (connections open, ``newcomer`` included) is within the bound; ``False`` when that
        is impossible (every other connection's handler is answering a whole request).
        """
        while open_now > self.limits.max_connections:
            victim = self._oldest(newcomer)
            if victim is None:
                return False
            self.mark(victim, None)
            drop(victim)
            self.shed += 1
            open_now -= 1
        return True

    def _oldest(self, newcomer: Any) -> Any:
        for state in SHEDDABLE:
            for conn in self.pools[state].values():
                if conn is not newcomer:
                    return conn
        return None


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the header and body deadlines and the connection
    bound of this module; ``shedder`` (and its limits) is set per server by
    :func:`protocol_class`.
    """

    shedder: Shedder
    _deadline: Any = None
    _heard = False
    _header_bytes = 0
    _receiving = False
    _stall: Any = None

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
        if self._deadline is None and (self.cycle is None or self.cycle.response_complete):
            # bytes between requests (a bare CRLF starts no message): the header deadline
            self.shedder.mark(self, "waiting")
            self._arm(self.shedder.limits.header_timeout_s, self._headers_late)
        self._header_bytes += len(data)
        super().data_received(data)
        if not self._receiving and self._header_bytes > MAX_HEADER_BYTES:
            self._refuse(_TOO_LARGE)  # still no whole headers after this many bytes

    def on_message_begin(self) -> None:  # noqa: D102
        super().on_message_begin()
        if self._deadline is None:  # the next request on a kept-alive connection
            self.shedder.mark(self, "waiting")
            self._arm(self.shedder.limits.header_timeout_s, self._headers_late)

    def on_headers_complete(self) -> None:  # noqa: D102
        self._receiving = True
        self.shedder.mark(self, "receiving")
        self._arm(self.shedder.limits.body_timeout_s, self._body_late)
        super().on_headers_complete()

    def on_message_complete(self) -> None:  # noqa: D102
        self._receiving = False
        self._header_bytes = 0
        self._disarm()
        self.shedder.mark(self, None)
        super().on_message_complete()

    def on_response_complete(self) -> None:  # noqa: D102
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self._receiving:  # answered before its body arrived (401, 413): stop reading
            self.transport.close()
        elif not self.pipeline:
            self.shedder.mark(self, "idle")

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: D102
        self._disarm()
        self._unstall()
        self.shedder.mark(self, None)
        super().connection_lost(exc)

    def pause_writing(self) -> None:  # noqa: D102 - the client does not read: a deadline
        super().pause_writing()
        if self._stall is None:
            self._stall = self.loop.call_later(self.shedder.limits.body_timeout_s,
                                               self._send_late)

    def resume_writing(self) -> None:  # noqa: D102
        self._unstall()
        super().resume_writing()

    def _unstall(self) -> None:
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None

    def _send_late(self) -> None:
        """The client read none of the answer for ``body_timeout_s``: close."""
        self._stall = None
        self.shedder.timed_out += 1
        drop(self)

    def _arm(self, seconds: float, then: Callable[[], None]) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, then)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _refuse(self, answer: bytes) -> None:
        """Answer ``answer`` (a whole HTTP response) and close."""
        self._disarm()
        self.shedder.mark(self, None)
        if not self.transport.is_closing():
            self.transport.write(answer)
            self.transport.close()

    def _headers_late(self) -> None:
        """Past the header deadline: 408 (when a byte came) and close."""
        self._deadline = None
        self.shedder.timed_out += 1
        if self._heard:
            self._refuse(_TIMEOUT)
        else:
            self.shedder.mark(self, None)
            self.transport.close()

    def _body_late(self) -> None:
        """Past the body deadline: close (the handler sees the client gone)."""
        self._deadline = None
        self.shedder.mark(self, None)
        self.shedder.timed_out += 1
        drop(self)


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
