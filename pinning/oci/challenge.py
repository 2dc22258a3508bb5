"""The ``WWW-Authenticate`` challenge parser: what a registry asks a client to sign in with
(RFC 7235 section 4.1, https://www.rfc-editor.org/rfc/rfc7235, June 2014; RFC 9110 section
11.6.1, https://www.rfc-editor.org/rfc/rfc9110, June 2022).

pin keeps its own parser because it must read several challenges merged into one header,
quoted strings with escapes and token68 in one linear pass over hostile text (no
backtracking regex), and never raise; :mod:`pinning.oci.transport` answers what it finds.
"""

from __future__ import annotations

from dataclasses import dataclass

_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TOKEN68 = frozenset("-._~+/0123456789abcdefghijklmnopqrstuvwxyz"
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_SPACE = frozenset(" \t")


@dataclass(frozen=True)
class Challenge:
    """One authentication challenge: ``scheme`` in lower case (``basic``, ``bearer``),
    ``params`` with lower-case names and unquoted values (the first of a repeated name
    wins), ``token68`` when the challenge carries one instead of parameters.
    """

    scheme: str
    params: dict[str, str]
    token68: str | None = None


def parse_challenges(header: str) -> list[Challenge]:
    """The challenges of a ``WWW-Authenticate`` value (several may be joined by commas, as
    when a client merges repeated headers), e.g. ``Bearer realm="https://a/t",service="r",
    scope="repository:x:pull,push"``. Quoted strings may hold commas, ``=`` and
    backslash-escaped quotes. One left-to-right pass (linear in the length); malformed text
    ends the parse with what was read so far, never an exception.
    """
    out: list[Challenge] = []
    i, n = 0, len(header)
    current: Challenge | None = None
    while i < n:
        while i < n and (header[i] in _SPACE or header[i] == ","):
            i += 1
        start = i
        while i < n and header[i] in _TCHAR:
            i += 1
        name = header[start:i]
        if not name:
            break  # a character no rule allows here
        j = i
        while j < n and header[j] in _SPACE:
            j += 1
        if current is not None and j < n and header[j] == "=":
            value, i = _param_value(header, j + 1)
            current.params.setdefault(name.lower(), value)
            continue
        current = Challenge(scheme=name.lower(), params={})
        token68, i = _token68(header, j)
        if token68 is not None:
            current = Challenge(scheme=current.scheme, params={}, token68=token68)
        out.append(current)
    return out


def _param_value(text: str, i: int) -> tuple[str, int]:
    """The value after ``=`` at ``i`` (a quoted string or a token) and the index after it."""
    n = len(text)
    while i < n and text[i] in _SPACE:
        i += 1
    if i < n and text[i] == '"':
        i += 1
        chars: list[str] = []
        while i < n and text[i] != '"':
            if text[i] == "\\" and i + 1 < n:
                i += 1
            chars.append(text[i])
            i += 1
        return "".join(chars), i + 1
    start = i
    while i < n and text[i] in _TCHAR:
        i += 1
    return text[start:i], i


def _token68(text: str, i: int) -> tuple[str | None, int]:
    """A token68 at ``i`` (``1*(ALPHA / DIGIT / "-._~+/") *"="``) when it stands alone (the
    end or a comma follows), and the index after it; ``(None, i)`` when what follows is a
    parameter or nothing.
    """
    n = len(text)
    start = i
    while i < n and text[i] in _TOKEN68:
        i += 1
    if i == start:
        return None, start
    while i < n and text[i] == "=":
        i += 1
    j = i
    while j < n and text[j] in _SPACE:
        j += 1
    if j == n or text[j] == ",":
        return text[start:i], j
    return None, start
