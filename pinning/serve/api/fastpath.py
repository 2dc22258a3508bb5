"""The report path without FastAPI's routing: ``POST /api/v1/hosts/{host}/reports``.

Nodes post reports far more often than anything else is asked, and FastAPI's routing,
dependency solving and request objects cost more than verifying a report: measured on
2026-12-02 with bench/bench_serve.py's load (3,000 reports, 50 clients, SQLite, this
project's 2-CPU machine), the FastAPI route took 1,044 reports/s (p99 78 ms), this middleware
2,852 reports/s (p99 30 ms). :class:`ReportFastPath` is a pure ASGI middleware
(https://asgi.readthedocs.io/en/latest/specs/www.html, read 2026-12-01) that answers exactly
that path itself, the one door of it (:data:`pinning.serve.api.hosts.REPORT_DOC` only
describes it in the OpenAPI document; any other method is 405 with ``Allow: POST``): the
token first (401 / 403, before the query or any of the body is read), the query (422), the
Content-Type (415), the Content-Length and the streamed size against ``[serve]
max-body-bytes`` (400 / 413), then :func:`~pinning.serve.api.hosts.ingest_report`. Every
other request goes on to FastAPI untouched. Errors have the one error shape
(:func:`pinning.serve.errors.error_response`). A request of any path whose path or query
holds a NUL character is answered 400 here (:func:`has_nul`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

from pinning.errors import PinError
from pinning.serve.api.body import JSON_TYPES, check_headers, too_large
from pinning.serve.errors import (
    ApiError,
    error_response,
    pin_error_response,
    unexpected_response,
)

__all__ = ["ReportFastPath"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PREFIX = "/api/v1/hosts/"
SUFFIX = "/reports"
#: Query parameters longer than these are refused (422), as the OpenAPI document says.
MAX_QUERY = {"group": 255, "lock": 200, "scope": 20}


def has_nul(scope: Scope) -> bool:
    """Whether the request's path or query string holds a NUL character (``%00``): no
    name, hash or filter has one, and PostgreSQL refuses them in text ("the character with
    code zero (sometimes called NUL) cannot be stored",
    https://www.postgresql.org/docs/15/datatype-character.html, read 2026-12-02), so such
    requests are answered 400 before any handler runs.
    """
    return "\x00" in scope["path"] or b"%00" in scope["query_string"]


def report_host(scope: Scope) -> str | None:
    """The ``{host}`` of a request to ``/api/v1/hosts/{host}/reports``, any method
    (``None``: another path). ``{host}`` is one path segment.
    """
    if scope["type"] != "http":
        return None
    path: str = scope["path"]
    if not (path.startswith(PREFIX) and path.endswith(SUFFIX)):
        return None
    host = path[len(PREFIX):-len(SUFFIX)]
    return host if host and "/" not in host else None


class ReportFastPath:
    """ASGI middleware answering the report path (see the module docstring) in front of
    ``app``; the service is ``scope["app"].state.pin`` (set by Starlette).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a report request; pass any other request to the wrapped app."""
        if scope["type"] == "http" and has_nul(scope):
            await error_response(400, "The request's path or query holds a NUL character, "
                                      "which no name, hash or filter of pin serve has.",
                                 "Remove %00 from the URL.")(scope, receive, send)
            return
        host = report_host(scope)
        if host is None:
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":  # the one door of this path takes POST alone
            await error_response(405, "This path does not take that method.",
                                 "POST the snapshot (pin verify --report-to does).",
                                 {"Allow": "POST"})(scope, receive, send)
            return
        from pinning.serve.api.models import json_response

        try:
            answer = json_response(await self._handle(scope, receive, host), 201)
        except ApiError as exc:
            answer = error_response(exc.status, exc.message, exc.hint)
        except PinError as exc:  # the store: a database that cannot be used (503)
            answer = pin_error_response(exc, f"POST {scope['path']}")
        except Exception as exc:  # never a traceback to the client; logged with it
            answer = unexpected_response(exc, f"POST {scope['path']}")
        await answer(scope, receive, send)

    async def _handle(self, scope: Scope, receive: Receive, host: str) -> dict[str, Any]:
        """Read the query, headers and body of the report; :func:`ingest_report` it."""
        from pinning.serve.api.hosts import ingest_report

        svc = scope["app"].state.pin
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.lower(), value)
        raw = headers.get(b"authorization")
        authorization = None if raw is None else raw.decode("latin-1")
        svc.auth.require(authorization, "report", host)  # before the query and the body
        query: dict[str, str] = {}
        for key, value in parse_qsl(scope["query_string"].decode("latin-1")):
            if key in MAX_QUERY:
                if len(value) > MAX_QUERY[key]:
                    raise ApiError(422, f"Invalid request: query.{key}: longer than "
                                        f"{MAX_QUERY[key]} characters.",
                                   "See /openapi.json for the parameters this path takes.")
                query.setdefault(key, value)
        data = await _read_body(receive, headers, svc.config.max_body_bytes)
        return await ingest_report(svc, host, query.get("group"), query.get("lock"), data,
                                   scope=query.get("scope", "full"))


async def _read_body(receive: Receive, headers: dict[bytes, bytes], limit: int) -> bytes:
    """The request body, as :func:`pinning.serve.api.body.read_body` reads it (415 / 400 /
    413 in that order; never more than ``limit`` bytes held).
    """
    ctype = headers.get(b"content-type")
    length = headers.get(b"content-length")
    check_headers(None if ctype is None else ctype.decode("latin-1"),
                  None if length is None else length.decode("latin-1"), limit, JSON_TYPES)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ApiError(400, "The client closed the connection before the body arrived.",
                           "Send the report again; nothing was stored.")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
