"""Text that came from outside pin, made safe to show on a terminal or to check before use.

Locks, snapshots, overlays, pasted dumps and registry answers may carry terminal escapes
(ESC, OSC, CSI), other C0/C1 control characters, line or paragraph separators and bidi
overrides. Shown raw, they can move the cursor, erase lines pin printed, retitle the window
or reorder what a reader sees. :func:`printable` escapes them; :func:`control_chars` finds
them, for models that refuse such text.
"""

from __future__ import annotations

import unicodedata

__all__ = ["ascii_int", "control_chars", "escape_char", "is_word", "json_safe", "printable"]

# Unicode categories never shown raw: controls (C0, DEL, C1), format characters (bidi
# overrides and isolates, zero-width characters, BOM), lone surrogates, line and paragraph
# separators.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def escape_char(ch: str) -> str:
    """The Python-style escape of one character: ``\\x1b`` below U+0100, ``\\u202e`` in the
    basic plane, ``\\U000e0001`` above it.
    """
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _hidden(ch: str) -> bool:
    return not ch.isprintable() and unicodedata.category(ch) in _HIDDEN


def printable(text: str, *, newlines: bool = True) -> str:
    """``text`` with every character a terminal would act on, or that hides or reorders
    text, written as its escape (:func:`escape_char`): C0 controls (``\\r``, ESC, NUL...),
    DEL, C1 controls, format characters such as bidi overrides (U+202E) and zero-width
    spaces, lone surrogates, and the separators U+2028 / U+2029.

    Line feed and tab are kept when ``newlines`` is true (a paragraph of text), escaped
    otherwise (one value on one line). Everything else, including non-ASCII letters and
    symbols, is unchanged, so ordinary text prints exactly as before.
    """
    if text.isprintable() and text.isascii():
        return text
    keep = "\n\t" if newlines else ""
    return "".join(escape_char(ch) if ch not in keep and _hidden(ch) else ch for ch in text)


def ascii_int(text: str, *, max_digits: int = 18, signed: bool = False) -> int | None:
    """``text`` as an int when it is 1 to ``max_digits`` ASCII digits (after one ``-`` when
    ``signed``), else ``None``: never the ``ValueError`` ``int()`` raises for a Unicode
    digit such as ``²`` or a number past Python's 4,300-digit limit.
    """
    body = text[1:] if signed and text.startswith("-") else text
    if not (0 < len(body) <= max_digits and body.isascii() and body.isdigit()):
        return None
    return int(text)


def json_safe(text: str) -> str:
    """JSON text ``text`` with every hidden character (the set :func:`printable` escapes:
    controls, DEL, C1, format characters, separators, lone surrogates) written as a JSON
    ``\\uXXXX`` escape (a surrogate pair above U+FFFF).

    JSON encoders escape C0 controls but leave DEL, C1 controls, U+202E or U+2028 raw when
    they write UTF-8, and a terminal acts on them. Such characters can only stand inside
    JSON strings, so the result is the same JSON value; ASCII-only text is returned as is.
    """
    if text.isascii() and "\x7f" not in text:
        return text
    out = []
    for ch in text:
        if ch in "\n\t" or not _hidden(ch):
            out.append(ch)
            continue
        code = ord(ch)
        if code >= 0x10000:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)


def control_chars(text: str, *, allow: str = "") -> list[str]:
    """The control characters (Unicode category ``Cc``: C0, DEL, C1) in ``text`` other than
    those in ``allow``, each as its escape (``['\\n', '\\x1b']`` -> ``['\\x0a', '\\x1b']``),
    in order of first appearance; an empty list when there are none.
    """
    found: list[str] = []
    for ch in text:
        if ch not in allow and unicodedata.category(ch) == "Cc":
            esc = escape_char(ch)
            if esc not in found:
                found.append(esc)
    return found


def is_word(text: str) -> bool:
    """True when ``text`` is one non-empty word: no whitespace (Unicode's, which includes line
    breaks) and no control character, so it stays one token on a command or requirements line.
    """
    return bool(text) and not any(ch.isspace() for ch in text) and not control_chars(text)


def redact(url: str, *, mask: str = "") -> str:
    """``url`` without a user name or password: the ``USER:PASSWORD@`` of its authority
    (after ``//``, up to the first ``/``, ``?`` or ``#``) removed, or replaced by
    ``mask + "@"`` when ``mask`` is given (``"***"`` in messages, so a reader sees that
    credentials were given). Credentials never reach a lock or a message. Works on text
    :func:`urllib.parse.urlsplit` refuses (``https://u:p@[::1``) too; never raises.
    """
    head, sep, rest = url.partition("//")
    if not sep:
        return url
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority = rest[:end]
    if "@" not in authority:
        return url
    return f"{head}//{mask + '@' if mask else ''}{authority.rpartition('@')[2]}{rest[end:]}"
