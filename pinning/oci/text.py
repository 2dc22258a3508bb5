"""What pin shows of a registry's answers: text clipped to one line, secrets masked, error
bodies read with a bound, URLs without their query.

Every registry module (:mod:`pinning.oci.transport`, :mod:`pinning.oci.blobs`,
:mod:`pinning.oci.registry`) and the image engine word their messages with these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from pinning.errors import BuildError

if TYPE_CHECKING:
    import requests

HINT = "Check the registry is running and reachable at that address."

ERROR_TEXT_CHARS = 300
"""The most characters of a registry's (or engine's) error text shown in a message."""
ERROR_READ_BYTES = 64 * 1024
"""The most bytes of an error answer's body kept; the rest is counted, not stored."""
ERROR_COUNT_BYTES = 64 * 1024 * 1024
"""The most bytes of an error answer read at all (to say how many were left out)."""


def clip_text(text: str, limit: int = ERROR_TEXT_CHARS, *, more: int = 0,
              squeeze: bool = True) -> str:
    """``text`` cut to ``limit`` characters, followed by ``... (N bytes more)`` saying how
    many UTF-8 bytes were left out (plus ``more``, bytes the caller never read); ``text``
    itself when it is short enough. With ``squeeze`` (the default) runs of white space,
    line breaks included, become one space first, so the text fits in one line.
    """
    if squeeze:
        text = " ".join(text.split())
    if len(text) <= limit and not more:
        return text
    left = len(text[limit:].encode("utf-8", "replace")) + more
    return f"{text[:limit]}... ({left} bytes more)"


MASK = "***"
"""What stands in a message for a secret a registry echoed."""
MIN_MASKED_PASSWORD = 4
"""A password shorter than this is not searched for in error text on its own (pin's choice:
masking every ``a`` of a one-letter password would make the message unreadable); the
``Authorization`` values that carry it are always masked."""


def mask_secrets(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every occurrence of each of ``secrets`` (and its JSON form with ``/``
    written ``\\/``) replaced by :data:`MASK`, longest first. Empty secrets are ignored.
    """
    forms = {form for secret in secrets if secret
             for form in (secret, secret.replace("/", "\\/"))}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, MASK)
    return text


def error_body(resp: requests.Response, secrets: tuple[str, ...] = ()) -> str:
    """The start of an error answer's body, clipped (:func:`clip_text`) with ``secrets``
    masked first (:func:`mask_secrets`): at most :data:`ERROR_READ_BYTES` are read and kept.
    The bytes left out are counted from ``Content-Length`` when the answer has one, else by
    reading on (discarding) to at most :data:`ERROR_COUNT_BYTES`. When the body was cut,
    its last characters (as many as the longest secret) are dropped too, so no start of a
    secret cut in two is shown.
    """
    import requests

    kept = b""
    skipped = 0
    chunks = resp.iter_content(chunk_size=ERROR_READ_BYTES)
    try:
        for chunk in chunks:
            kept += chunk
            if len(kept) >= ERROR_READ_BYTES:
                break
        kept, skipped = kept[:ERROR_READ_BYTES], len(kept[ERROR_READ_BYTES:])
        length = resp.headers.get("Content-Length", "")
        if length.isascii() and length.isdigit() and len(length) < 19:
            skipped = max(int(length) - len(kept), 0)
        elif len(kept) == ERROR_READ_BYTES:
            for chunk in chunks:
                skipped += len(chunk)
                if skipped > ERROR_COUNT_BYTES:
                    break
    except requests.RequestException:
        pass  # the error body is a courtesy; the status is the message
    text = mask_secrets(kept.decode("utf-8", "replace"), secrets)
    longest = max((len(x) for x in secrets), default=0)
    if skipped and longest:
        dropped, text = text[len(text) - longest:], text[:len(text) - longest]
        skipped += len(dropped.encode("utf-8", "replace"))
    return clip_text(text, more=skipped)


def read_body(resp: requests.Response, limit: int | None, what: str) -> bytes:
    """The body of ``resp``; :class:`BuildError` naming ``what`` when ``limit`` is given
    and the body is larger (nothing past ``limit`` + 1 MiB is read).
    """
    chunks: list[bytes] = []
    size = 0
    for chunk in resp.iter_content(chunk_size=1024 * 1024):
        chunks.append(chunk)
        size += len(chunk)
        if limit is not None and size > limit:
            raise BuildError(f"{what}: the answer is larger than {limit} bytes.", hint=HINT)
    return b"".join(chunks)


def shown_url(url: str) -> str:
    """``url`` without its query (an upload's state or a signed redirect), clipped."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return clip_text(url.split("?", 1)[0])
    return clip_text(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")))

