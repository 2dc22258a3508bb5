"""Shell text read statically, for Dockerfiles: the words of a command line (POSIX quoting)
and ``$NAME`` / ``${NAME:-word}`` substitution from known values, both linear in the text and
bounded in what they produce (a hostile Dockerfile cannot make them slow or large).
"""

from __future__ import annotations

import re

__all__ = ["MAX_ARG_VALUE", "MAX_NESTING", "MAX_SUBSTITUTED", "substitute", "words"]

_SHELL_SPECIAL = re.compile(r"[\s'\"\\]")
_NOT_SPACE = re.compile(r"\S")
_BRACE = re.compile(r"[{}]")
_QUOTED_SPECIAL = re.compile(r'["\\]')
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")

MAX_ARG_VALUE = 4 * 1024
"""The longest ARG value substituted into a ``FROM`` (4 KiB); a longer one stops it."""

MAX_SUBSTITUTED = 64 * 1024
"""The longest ``FROM`` image after ARG substitution (64 KiB); a longer one stops it."""

MAX_NESTING = 8
"""The deepest ``${A:-${B:-...}}`` nesting substituted."""


class _Stop(Exception):
    """Substitution given up: the reason, one line."""


def _name_end(text: str, start: int) -> int:
    """The end of the variable name starting at ``text[start]`` (``start`` when none)."""
    if start >= len(text) or text[start] not in _NAME_START:
        return start
    end = start + 1
    while end < len(text) and text[end] in _NAME_CHARS:
        end += 1
    return end


def _closing(text: str, start: int) -> int:
    """The index of the ``}`` closing a ``${`` whose word starts at ``start`` (nested
    ``${...}`` counted); raises :class:`_Stop` when there is none (Docker refuses it too).
    """
    depth = 1
    pos = start
    while True:
        m = _BRACE.search(text, pos)
        if m is None:
            raise _Stop("a ${ without its closing }")
        pos = m.end()
        if m.group(0) == "}":
            depth -= 1
            if depth == 0:
                return m.start()
        elif m.start() > 0 and text[m.start() - 1] == "$":
            depth += 1


class _Expansion:
    """Running state of one substitution: characters produced, and whether an ARG was
    unknown.
    """

    def __init__(self) -> None:
        self.size = 0
        self.unknown = False

    def add(self, out: list[str], piece: str, *, value: bool = False) -> None:
        if value and len(piece) > MAX_ARG_VALUE:
            raise _Stop(f"an ARG value longer than {MAX_ARG_VALUE // 1024} KiB")
        self.size += len(piece)
        if self.size > MAX_SUBSTITUTED:
            raise _Stop(f"longer than {MAX_SUBSTITUTED // 1024} KiB after ARG substitution")
        out.append(piece)


def _expand(text: str, args: dict[str, str], depth: int, state: _Expansion) -> str:
    """``text`` with ``$NAME``, ``${NAME}``, ``${NAME:-word}`` and ``${NAME:+word}`` (and the
    forms without ``:``) substituted from ``args``; an unknown name stays as written and
    marks ``state.unknown``. Linear in ``len(text)`` times the nesting depth.
    """
    out: list[str] = []
    pos = 0
    while True:
        dollar = text.find("$", pos)
        if dollar < 0:
            state.add(out, text[pos:])
            return "".join(out)
        state.add(out, text[pos:dollar])
        brace = text.startswith("{", dollar + 1)
        start = dollar + 1 + brace
        end = _name_end(text, start)
        if end == start:  # a `$` not starting a variable: kept
            state.add(out, "$")
            pos = dollar + 1
            continue
        name = text[start:end]
        known = name in args
        value = args.get(name, "")
        if not brace:
            pos = end
        elif text.startswith("}", end):
            pos = end + 1
        else:
            colon = text.startswith(":", end)
            op = text[end + colon:end + colon + 1]
            if op not in ("-", "+"):
                raise _Stop(f"${{{name}{text[end:end + 2]}...}}: a substitution form not "
                            "read (only :- and :+)")
            close = _closing(text, end + colon + 1)
            word = text[end + colon + 1:close]
            pos = close + 1
            is_set = known and (not colon or value != "")
            if op == "-" and not is_set:
                if depth >= MAX_NESTING:
                    raise _Stop(f"${{...}} nested deeper than {MAX_NESTING}")
                value, known = _expand(word, args, depth + 1, state), True
            elif op == "+" and known:
                if depth >= MAX_NESTING:
                    raise _Stop(f"${{...}} nested deeper than {MAX_NESTING}")
                value = _expand(word, args, depth + 1, state) if is_set else ""
        if known:
            state.add(out, value, value=True)
        else:
            state.unknown = True
            state.add(out, text[dollar:pos])


def substitute(text: str, args: dict[str, str]) -> tuple[str, str | None]:
    """``text`` with the known ARG values substituted, and ``None``, or ``text`` and why it
    could not be (an ARG without a default, an ARG value over :data:`MAX_ARG_VALUE`, a
    result over :data:`MAX_SUBSTITUTED`, a malformed ``${``). Time and memory linear.
    """
    state = _Expansion()
    try:
        out = _expand(text, args, 0, state)
    except _Stop as exc:
        return text, str(exc)
    if state.unknown:
        return out, "an ARG without a default"
    return out, None


def words(text: str) -> list[str]:
    """The shell words of ``text`` (POSIX quoting: ``'...'``, ``"..."`` with ``\\`` escapes
    of ``"``, ``\\``, ``$`` and backquote, a ``\\`` outside quotes escaping the next
    character; an unclosed quote runs to the end). Linear time: plain runs are skipped with
    one search each.
    """
    if "'" not in text and '"' not in text and "\\" not in text:
        return text.split()
    words: list[str] = []
    cur: list[str] = []
    in_word = False
    pos, n = 0, len(text)
    while pos < n:
        m = _SHELL_SPECIAL.search(text, pos)
        stop = m.start() if m else n
        if stop > pos:
            cur.append(text[pos:stop])
            in_word = True
        if m is None:
            break
        c = text[stop]
        if c == "\\":
            cur.append(text[stop + 1:stop + 2])
            in_word, pos = True, stop + 2
        elif c == "'":
            close = text.find("'", stop + 1)
            close = n if close < 0 else close
            cur.append(text[stop + 1:close])
            in_word, pos = True, close + 1
        elif c == '"':
            pos = _double_quoted(text, stop + 1, cur)
            in_word = True
        else:  # whitespace ends a word
            if in_word:
                words.append("".join(cur))
                cur, in_word = [], False
            nxt = _NOT_SPACE.search(text, stop)
            pos = nxt.start() if nxt else n
    if in_word:
        words.append("".join(cur))
    return words


def _double_quoted(text: str, pos: int, cur: list[str]) -> int:
    """Append the body of the ``"..."`` whose body starts at ``pos`` to ``cur``; the index
    after its closing quote (the end of ``text`` when unclosed).
    """
    n = len(text)
    while pos < n:
        m = _QUOTED_SPECIAL.search(text, pos)
        if m is None:
            cur.append(text[pos:])
            return n
        cur.append(text[pos:m.start()])
        if m.group(0) == '"':
            return m.end()
        nxt = text[m.end():m.end() + 1]
        cur.append(nxt if nxt in '"\\$`' and nxt else "\\" + nxt)
        pos = m.end() + 1
    return n
