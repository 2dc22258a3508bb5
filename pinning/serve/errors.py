"""The one error shape of pin serve's API and the handlers that give it.

Every error is HTTP status + ``{"error": {"status", "code", "message", "hint"}}``; a 401
carries ``WWW-Authenticate: Bearer realm="pin"`` (RFC 6750 section 3,
https://www.rfc-editor.org/rfc/rfc6750#section-3, read 2026-12-01). Never a traceback.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from pinning.errors import PinError, UsageError

if TYPE_CHECKING:
    from fastapi import FastAPI, Request
    from starlette.responses import Response

__all__ = ["CODES", "UNAVAILABLE", "ApiError", "ErrorBody", "ErrorDetail", "error_response",
           "install", "pin_error_response", "responses", "unexpected_response"]

#: The ``code`` of each status pin serve answers with.
CODES: dict[int, str] = {
    400: "bad-request", 401: "unauthorized", 403: "forbidden", 404: "not-found",
    405: "method-not-allowed", 409: "conflict", 413: "too-large",
    415: "unsupported-media-type", 422: "invalid", 500: "internal", 503: "unavailable",
}
_LOG = logging.getLogger("pin.serve")
#: The message and hint of every 503: the store's own message names the database and its
#: hint tells the operator what to pass (``--db``), so both go to the server's log only.
UNAVAILABLE = ("pin serve's database cannot be used right now.",
               "Tell the service's operator (its log has the details).")
#: The hint of a ``PinError`` answered as is that carries none of its own.
_FALLBACK_HINT = "Correct the request as the message says and send it again."


class ErrorDetail(BaseModel):
    """``status`` (the HTTP status), ``code`` (see :data:`CODES`), ``message`` (one
    paragraph: what, which field / host / lock) and ``hint`` (what to do).
    """

    model_config = ConfigDict(extra="forbid")
    status: int
    code: str
    message: str
    hint: str


class ErrorBody(BaseModel):
    """The body of every error response: ``{"error": ErrorDetail}``."""

    model_config = ConfigDict(extra="forbid")
    error: ErrorDetail


class ApiError(Exception):
    """An error answer: ``status`` and its paragraph ``message`` and ``hint`` (what the
    client can do; required). Raises ``ValueError`` (a bug in pin) for an empty hint.
    """

    def __init__(self, status: int, message: str, hint: str) -> None:
        if not hint.strip():
            raise ValueError(f"ApiError {status} {message[:60]!r} has no hint.")
        super().__init__(message)
        self.status, self.message, self.hint = status, message, hint

    @classmethod
    def of(cls, status: int, err: PinError) -> ApiError:
        """The answer ``status`` with a ``PinError``'s paragraph and hint (a generic
        "correct the request" hint when it has none).
        """
        return cls(status, err.message, err.hint or _FALLBACK_HINT)


def pin_error_response(exc: PinError, where: str) -> Response:
    """The answer to a ``PinError`` no handler turned into :class:`ApiError`: a
    ``UsageError`` is the store's "database cannot be used", answered 503 with
    :data:`UNAVAILABLE` (its own message and hint, meant for the operator, are logged with
    ``where``, e.g. ``"POST /api/v1/locks"``); any other ``PinError`` is invalid input,
    answered 422 with its message and hint.
    """
    if isinstance(exc, UsageError):
        _LOG.error("database unavailable on %s: %s %s", where, exc.message, exc.hint or "")
        return error_response(503, *UNAVAILABLE)
    return error_response(422, exc.message, exc.hint or _FALLBACK_HINT)


def unexpected_response(exc: BaseException, where: str) -> Response:
    """The 500 answer to an unexpected exception, logged with its traceback and ``where``
    (the answer names only the exception's type, never the traceback).
    """
    _LOG.error("unexpected %s on %s: %s", type(exc).__name__, where, exc, exc_info=exc)
    return error_response(500, f"Unexpected {type(exc).__name__} in pin serve.",
                          "This is a bug in pin; please report it with the server log.")


def error_response(status: int, message: str, hint: str,
                   headers: Mapping[str, str] | None = None) -> Response:
    """The JSON error response with ``headers`` (``WWW-Authenticate`` added for 401)."""
    from starlette.responses import Response

    body = {"error": {"status": status, "code": CODES.get(status, "error"),
                      "message": message, "hint": hint}}
    sent = dict(headers or {})
    if status == 401:
        sent["WWW-Authenticate"] = 'Bearer realm="pin"'
    return Response(json.dumps(body).encode(), status_code=status, headers=sent or None,
                    media_type="application/json")


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` documenting 400 and ``statuses`` as :class:`ErrorBody`
    answers. Every operation may answer 400: a NUL character in the URL
    (:mod:`pinning.serve.api.fastpath`), a body FastAPI cannot parse as JSON, a malformed
    Content-Length.
    """
    text = {400: "Bad request (a NUL character in the URL, a body that is not JSON, a "
                 "malformed Content-Length)", 401: "No valid token (WWW-Authenticate: Bearer)",
            403: "The token's scope or host does not allow this", 404: "Not stored",
            409: "Conflict (ambiguous lock prefix, no lock assigned)",
            413: "Request body over [serve] max-body-bytes",
            415: "Unsupported Content-Type", 422: "Invalid body or parameter",
            503: "Database unavailable"}
    return {s: {"model": ErrorBody, "description": text.get(s, CODES.get(s, "Error"))}
            for s in sorted({400, *statuses})}


def _validation_text(errors: Any) -> str:
    """The first few request validation errors as ``where: problem`` phrases."""
    parts = []
    for err in list(errors)[:3]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def install(app: FastAPI) -> None:
    """Register the handlers that turn :class:`ApiError`, ``PinError``, request
    validation errors, Starlette's HTTP errors and any other exception into the error
    shape (an unexpected exception is logged with its traceback and answered 500 without
    it; a 503 answers :data:`UNAVAILABLE` and logs the store's message).
    """
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    async def api_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return error_response(exc.status, exc.message, exc.hint)

    async def pin_error(request: Request, exc: Exception) -> Response:
        # Input errors become ApiError in the handlers; a UsageError that gets here is
        # the store's "database cannot be used" (503), any other PinError invalid input.
        assert isinstance(exc, PinError)
        return pin_error_response(exc, f"{request.method} {request.url.path}")

    async def invalid(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return error_response(422, f"Invalid request: {_validation_text(exc.errors())}.",
                              "See /openapi.json for the parameters and body this path "
                              "takes.")

    async def http_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        status = exc.status_code
        # Starlette's headers kept: its 405 carries Allow, which RFC 9110 section 15.5.6
        # requires (https://www.rfc-editor.org/rfc/rfc9110#section-15.5.6, read
        # 2026-12-02); it lists the methods of the first route whose path matches.
        headers = exc.headers
        message = {404: "No such path in pin serve's API.",
                   405: "This path does not take that method."}.get(status, str(exc.detail))
        return error_response(status, message, "See /openapi.json for the API's paths.",
                              headers)

    async def unexpected(request: Request, exc: Exception) -> Response:
        return unexpected_response(exc, f"{request.method} {request.url.path}")

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(PinError, pin_error)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)
