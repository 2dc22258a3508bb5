"""The ``[serve] endpoint`` URL: checked (:func:`check_endpoint`), split into the URL pin
sends to and its basic-auth credentials (:func:`split_endpoint`), and shown without them
(:func:`redact_endpoint`): credentials are sent, never recorded or printed.
"""

from __future__ import annotations

import base64

import yarl

from pinning.errors import UsageError

__all__ = ["check_endpoint", "redact_endpoint", "split_endpoint"]


def redact_endpoint(endpoint: str) -> str:
    """``endpoint`` with the userinfo of its authority replaced by ``***``
    (``http://user:pw@host:8000/v1?x=1`` -> ``http://***@host:8000/v1?x=1``); unchanged when
    it has none. Works on text that is not a valid URL too, so error messages can use it.
    """
    scheme, sep, rest = endpoint.partition("://")
    if not sep:
        return endpoint
    end = len(rest)
    for stop in "/?#":
        at = rest.find(stop)
        if at != -1:
            end = min(end, at)
    authority = rest[:end]
    if "@" not in authority:
        return endpoint
    return f"{scheme}://***@{authority.rpartition('@')[2]}{rest[end:]}"


def split_endpoint(endpoint: str) -> tuple[yarl.URL, str | None]:
    """``(URL without userinfo, basic-auth header value or None)`` of ``endpoint``;
    ``UsageError`` naming ``[serve] endpoint`` when it is not an http(s) URL with a host
    and a valid port.
    """
    shown = redact_endpoint(endpoint)
    hint = ("Set `[serve] endpoint` in the gates file to the server's base URL, such as "
            "http://127.0.0.1:8000/v1.")
    try:
        url = yarl.URL(endpoint)
        port = url.port
        host = url.host
    except (ValueError, TypeError) as exc:
        raise UsageError(f"[serve] endpoint {shown}: not a valid URL ({exc}).",
                         hint=hint) from exc
    if url.scheme not in ("http", "https") or not host or port is None:
        raise UsageError(f"[serve] endpoint {shown}: not an http:// or https:// URL with a "
                         "host.", hint=hint)
    auth = None
    if url.user is not None or url.password is not None:
        pair = f"{url.user or ''}:{url.password or ''}".encode()
        auth = "Basic " + base64.b64encode(pair).decode("ascii")
        url = url.with_user(None)
    return url, auth


def check_endpoint(endpoint: str) -> None:
    """Raise ``UsageError`` (exit 2) naming ``[serve] endpoint`` when ``endpoint`` is not an
    http(s) URL with a host and a port in 0-65535 (``http://host:99999/v1``,
    ``http://[::1/v1``); the message shows it with :func:`redact_endpoint`.
    """
    split_endpoint(endpoint)
