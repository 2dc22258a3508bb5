"""The one bounded JSON parse every reader in pin goes through.

``json.loads`` fails in ways that are not ``JSONDecodeError``: an integer of more than
``sys.get_int_max_str_digits()`` digits (4,300 by default) is a bare ``ValueError``, nesting
deeper than the interpreter's recursion limit a ``RecursionError``, bytes that are not UTF-8
a ``UnicodeDecodeError``. Uncaught, each is exit 1 and a traceback. :func:`load_json` turns
every one of them into the caller's own :class:`~pinning.errors.PinError` class (the exit
code of the reader: a snapshot's 7, a service answer's 13, ...), with one message naming
the input and what is wrong with it, never quoting the input (it may hold a secret).

Depth is bounded explicitly (:data:`MAX_JSON_DEPTH`), before parsing, so a value that parsed
is shallow enough for any recursive code that later walks it.
"""

from __future__ import annotations

import json
import math
import sys
from array import array
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from pinning.errors import PinError

__all__ = ["MAX_JSON_DEPTH", "as_finite", "load_json"]

#: The deepest nesting of arrays and objects :func:`load_json` accepts (``[]`` is 1). No
#: document pin reads comes near it; well below CPython's default recursion limit (1,000).
MAX_JSON_DEPTH = 512

#: Every byte but a quote or a bracket, which the depth scan deletes.
_OTHER = bytes(b for b in range(256) if b not in b'"[]{}')
#: Brackets to signed steps: an opening one +1, a closing one -1 (0xff as a signed byte).
_STEPS = bytes(1 if b in b"[{" else 0xFF if b in b"]}" else 0 for b in range(256))
#: How many brackets the depth scan sums at a time (it stops at the first deep chunk).
_CHUNK = 1 << 16
#: Bytes to ``0`` for an ASCII digit, ``x`` for anything else (to find long digit runs).
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x78 for b in range(256))
_BOM = b"\xef\xbb\xbf"


class _LongNumber(Exception):
    """An integer past the interpreter's digit limit (``args[0]``: its digit count)."""


def load_json(data: str | bytes, error: type[PinError], *, label: str,
              hint: str | None = None,
              object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
              parse_float: Callable[[str], Any] | None = None,
              parse_constant: Callable[[str], Any] | None = None,
              max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value in ``data`` (one whole document; text, or bytes read as UTF-8, where a
    leading UTF-8 byte order mark is skipped as ``json.loads`` skips it for bytes).

    Raises ``error`` (the caller's :class:`~pinning.errors.PinError` subclass), its message
    starting with ``label`` (``"Host snapshot n1.json"``) and ``hint`` as its hint, for:
    bytes that are not UTF-8 (``not JSON (not UTF-8 text: byte N)``), arrays and objects
    nested deeper than ``max_depth`` levels (``JSON nested too deeply``), an integer of more
    digits than ``sys.get_int_max_str_digits()`` (``a number too long to read``), and text
    that is not JSON (``not JSON (line L, column C: what)``; the exception's ``__cause__``
    is then the ``json.JSONDecodeError``). The input itself is never quoted.

    ``object_pairs_hook``, ``parse_float`` and ``parse_constant`` are ``json.loads``'s; what
    they raise passes through unchanged.
    """
    if isinstance(data, bytes | bytearray):
        raw = bytes(data).removeprefix(_BOM)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"{label}: not JSON (not UTF-8 text: byte {exc.start}).",
                        hint=hint) from exc
    else:
        text = data
        raw = b""
    if text.count("[") + text.count("{") > max_depth:
        depth = _depth(raw or text.encode("utf-8", "surrogatepass"), max_depth)
        if depth > max_depth:
            raise error(f"{label}: JSON nested too deeply (more than {max_depth} levels of "
                        "arrays and objects).", hint=hint)
    limit = sys.get_int_max_str_digits()
    long_run = bool(limit) and len(text) > limit and _has_digit_run(
        raw or text.encode("utf-8", "surrogatepass"), limit + 1)
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook, parse_float=parse_float,
                          parse_constant=parse_constant,
                          parse_int=_bounded_int if long_run else None)
    except json.JSONDecodeError as exc:
        # The stdlib's "Invalid control character at" reads on into its own position text.
        what = exc.msg.removesuffix(" at")
        raise error(f"{label}: not JSON (line {exc.lineno}, column {exc.colno}: {what}).",
                    hint=hint) from exc
    except _LongNumber as exc:
        raise error(f"{label}: a number too long to read ({exc.args[0]} digits; at most "
                    f"{limit}).", hint=hint) from None
    except RecursionError as exc:  # a hook's own recursion, or a nearly exhausted stack
        raise error(f"{label}: JSON nested too deeply to read.", hint=hint) from exc


def _depth(data: bytes, limit: int) -> int:
    """The deepest nesting of arrays and objects in the JSON ``data`` (0 for none), or a
    depth past ``limit`` as soon as one is seen; linear time, a few C passes over the bytes.

    Escapes go first (``\\\\`` pairs left to right, then ``\\"``), then every byte but
    quotes and brackets; quotes then delimit strings, whose brackets do not count. Exact for
    valid JSON; for other bytes only an estimate (the parse then says what is wrong).
    """
    plain = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _OTHER)
    steps = array("b", b"".join(plain.split(b'"')[0::2]).translate(_STEPS))
    depth = deepest = 0
    for start in range(0, len(steps), _CHUNK):
        sums = list(accumulate(steps[start:start + _CHUNK], initial=depth))
        depth, deepest = sums[-1], max(deepest, max(sums))
        if deepest > limit:
            break
    return deepest


def _has_digit_run(data: bytes, length: int) -> bool:
    """Whether ``data`` holds ``length`` ASCII digits in a row (anywhere, strings too)."""
    return b"0" * length in data.translate(_DIGITS)


def _bounded_int(text: str) -> int:
    """``json.loads``'s ``parse_int`` when a long digit run was seen: the integer, or
    :class:`_LongNumber` past the interpreter's limit (``int()``'s bare ``ValueError``).
    """
    try:
        return int(text)
    except ValueError:
        raise _LongNumber(len(text.lstrip("-"))) from None


def as_finite(value: object) -> float | None:
    """``value`` as a finite ``float`` when it is a JSON number (``int`` or ``float``, not
    ``bool``) that has one: ``None`` for anything else, NaN and infinities included, and
    for integers too large for a float (``10**400``: past about 1.8e308, where ``float()``
    raises ``OverflowError``). Raises nothing.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None
