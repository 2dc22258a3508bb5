"""Reading request bodies with a size limit and a Content-Type check.

A body over the limit is refused (413) from its ``Content-Length`` before any of it is read,
else while it streams in, as soon as the count passes the limit; the body is never held
whole when it is too large.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pinning.serve.errors import ApiError

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = ["JSON_TYPES", "TOML_TYPES", "body_doc", "check_headers", "read_body", "too_large"]

#: Content-Types of JSON bodies (snapshots, results, audits, cost verdicts).
JSON_TYPES = ("application/json",)
#: Content-Types a lock upload may have.
TOML_TYPES = ("application/toml", "text/plain", "application/octet-stream")


def too_large(limit: int) -> ApiError:
    """The 413 answer for a body over ``limit`` bytes."""
    return ApiError(413, f"The request body is larger than this server's limit of {limit} "
                         "bytes ([serve] max-body-bytes).",
                    "Send a smaller body, or raise [serve] max-body-bytes in the server's "
                    "configuration.")


def check_headers(content_type: str | None, content_length: str | None, limit: int,
                  types: tuple[str, ...]) -> None:
    """Check a request's ``Content-Type`` and ``Content-Length`` header values (``None``: not
    sent) before its body is read: a type (without its parameters) not in ``types`` is refused
    with 415 (none given is accepted), a length that is not ASCII decimal digits (at most 18)
    with 400, a length over ``limit`` bytes with 413. Raises :class:`ApiError`.
    """
    if content_type is not None:
        base = content_type.split(";", 1)[0].strip().lower()
        if base not in types:
            raise ApiError(415, f"Content-Type {base[:80]!r} is not accepted here; send "
                                f"{' or '.join(types)}.",
                           f"Set the header Content-Type: {types[0]}.")
    if content_length is not None:
        if not (content_length.isascii() and content_length.isdigit()) \
                or len(content_length) > 18:
            raise ApiError(400, "The Content-Length header is not a number of bytes.",
                           "Send Content-Length as the body's size in decimal bytes, or "
                           "leave the header out.")
        if int(content_length) > limit:
            raise too_large(limit)


async def read_body(request: Request, limit: int, types: tuple[str, ...]) -> bytes:
    """The body of ``request``, at most ``limit`` bytes. A ``Content-Type`` (without its
    parameters) not in ``types`` is refused with 415 (none given is accepted); a body over
    ``limit`` with 413, by ``Content-Length`` first; a malformed ``Content-Length`` with
    400. Raises :class:`ApiError`.
    """
    check_headers(request.headers.get("content-type"), request.headers.get("content-length"),
                  limit, types)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def body_doc(media: tuple[str, ...], description: str,
             schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """``openapi_extra`` documenting a raw request body of the types ``media`` (a JSON
    object, or a string for TOML and text types) that handlers read themselves.
    """
    content = {m: {"schema": schema or ({"type": "object"} if "json" in m
                                        else {"type": "string"})} for m in media}
    return {"requestBody": {"required": True, "description": description, "content": content}}
