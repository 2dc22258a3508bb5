"""A check that a regular expression runs in linear time on one line of hostile text.

Python's ``re`` backtracks. Two unbounded repeats next to each other that can match the
same character (``(.*?)\\s*$``, ``([^:]+?)\\s*:``, ``(\\s*)([a-z ]+)``) let a line of n spaces
be split between them in n ways at every start, so a 64 KiB line of spaces costs seconds
(quadratic time). Every pattern pin applies to tool output must pass :func:`adjacent_repeats`;
``tests/unit/util/test_regex.py`` scans the package for them.
"""

from __future__ import annotations

import importlib
import string
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["adjacent_repeats"]

# Characters a line of tool output holds: the printable ASCII set, NUL, the full-width
# colon and space some localised tools print, and letters beyond ASCII.
_ALPHABET = string.printable + "\x00\u3000\uff1a\u00e9\u00a0"
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
_ZERO_WIDTH = frozenset({"AT", "ASSERT", "ASSERT_NOT"})
def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


_CATEGORY: dict[str, Callable[[str], bool]] = {
    "CATEGORY_DIGIT": str.isdigit,
    "CATEGORY_SPACE": str.isspace,
    "CATEGORY_WORD": _word,
}

Item = tuple[Any, Any]


def adjacent_repeats(pattern: str, *, search: bool = False) -> str | None:
    """Why ``pattern`` may take quadratic time on one line, or ``None`` when it cannot.

    Refused: an unbounded repeat (``*``, ``+``, ``{n,}``, greedy or lazy) followed, with
    only zero-width or optional parts between, by another unbounded repeat that can match
    a character the first can. The check is conservative (it may refuse a pattern that is
    in fact linear); the rewrite is to capture ``(.*)`` and strip in Python, or to make the
    two character sets disjoint (``([^:\\s]+)``). Possessive repeats and atomic groups
    (``*+``, ``(?>...)``) never backtrack and are allowed. With ``search`` (the pattern is
    used by ``re.search``, ``sub``, ``findall``, ``finditer`` or ``split``, which try every
    start) a pattern that begins with an unbounded repeat is refused too: it rescans a run
    from each of its characters. Raises ``re.error`` when ``pattern`` is not a regular
    expression.
    """
    parsed = list(importlib.import_module("re._parser").parse(pattern))
    if search and _leading_repeat_can_fail(_flatten(parsed)):
        return ("a search that starts with an unbounded repeat followed by more pattern "
                "retries the repeat from every character of a run (quadratic); start with a "
                "literal, anchor with ^, or strip the text first")
    return _scan_sequence(parsed)


def _leading_repeat_can_fail(flat: list[Item]) -> bool:
    """Whether ``flat`` starts (after look-arounds) with an unbounded backtracking repeat
    that is followed by a part that can fail: anything but an optional repeat.
    """
    behind: set[str] = set()  # characters a negative look-behind refuses before the start
    for i, (op, av) in enumerate(flat):
        name = _name(op)
        if name == "AT" and str(av) == "AT_BEGINNING":
            return False
        if name == "ASSERT_NOT" and av[0] == -1:
            behind |= _chars(list(av[1]))
        if name in _ZERO_WIDTH:
            continue
        if name in _REPEATS and name != "POSSESSIVE_REPEAT" and _unbounded(av):
            if _chars(list(av[2])) <= behind:  # (?<!\d)\d+: tried only where a run starts
                return False
            return any(_name(o) not in _REPEATS or a[0] != 0 for o, a in flat[i + 1:])
        return False
    return False


def _name(op: Any) -> str:
    return str(op)


def _flatten(items: Sequence[Item]) -> list[Item]:
    """``items`` with plain groups (not repeated, not alternatives) opened inline."""
    out: list[Item] = []
    for op, av in items:
        if _name(op) == "SUBPATTERN":
            out.extend(_flatten(list(av[3])))
        else:
            out.append((op, av))
    return out


def _scan_sequence(items: list[Item]) -> str | None:
    """The first problem in a sequence of parsed items, looking inside groups too."""
    flat = _flatten(items)
    for i, (op, av) in enumerate(flat):
        name = _name(op)
        if name in _REPEATS:
            inner = _scan_sequence(list(av[2]))
            if inner is not None:
                return inner
            if name != "POSSESSIVE_REPEAT" and _unbounded(av):
                problem = _overlap_after(flat, i)
                if problem is not None:
                    return problem
        elif name == "BRANCH":
            for alternative in av[1]:
                inner = _scan_sequence(list(alternative))
                if inner is not None:
                    return inner
        elif name in ("ASSERT", "ASSERT_NOT"):
            inner = _scan_sequence(list(av[1]))
            if inner is not None:
                return inner
    return None


def _unbounded(av: Any) -> bool:
    """Whether a repeat's upper bound is ``MAXREPEAT`` (``*``, ``+``, ``{n,}``) or near it;
    a small bound (``\\d{1,9}``) caps the backtracking at a constant factor.
    """
    _lo, hi, _sub = av
    return bool(hi >= 65535)


def _overlap_after(flat: list[Item], i: int) -> str | None:
    """A problem when the unbounded repeat ``flat[i]`` is next to an overlapping one."""
    first = _chars(list(flat[i][1][2]))
    for op, av in flat[i + 1:]:
        name = _name(op)
        if name in _ZERO_WIDTH:
            continue
        if name in _REPEATS and name != "POSSESSIVE_REPEAT":
            shared = first & _chars(list(av[2]))
            if (shared and _unbounded(av) and _can_run(list(flat[i][1][2]), shared)
                    and _can_run(list(av[2]), shared)):
                sample = "".join(sorted(shared))[:6]
                return (f"two unbounded repeats next to each other both match {sample!r} "
                        "(quadratic backtracking on a long run of them)")
            if av[0] == 0:
                continue
        return None
    return None


def _can_run(body: list[Item], shared: set[str]) -> bool:
    """Whether one pass of a repeat's ``body`` can consist of ``shared`` characters only:
    false when a part the body requires (``\\.`` in ``(\\.\\d+)*``) matches none of them, so
    a run of ``shared`` characters cannot be split between the two repeats.
    """
    for op, av in _flatten(body):
        name = _name(op)
        if name in _ZERO_WIDTH:
            continue
        if name in _REPEATS:
            if av[0] >= 1 and not (_chars(list(av[2])) & shared):
                return False
        elif name in ("BRANCH", "ATOMIC_GROUP"):
            continue
        elif not (_chars([(op, av)]) & shared):
            return False
    return True


def _chars(items: list[Item]) -> set[str]:
    """The characters of :data:`_ALPHABET` that some part of ``items`` can match."""
    out: set[str] = set()
    for op, av in items:
        name = _name(op)
        if name in _REPEATS:
            out |= _chars(list(av[2]))
        elif name == "SUBPATTERN":
            out |= _chars(list(av[3]))
        elif name == "ATOMIC_GROUP":
            out |= _chars(list(av))
        elif name == "BRANCH":
            for alternative in av[1]:
                out |= _chars(list(alternative))
        elif name not in _ZERO_WIDTH:
            out |= {c for c in _ALPHABET if _matches((op, av), c)}
    return out


def _matches(item: Item, c: str) -> bool:
    """Whether the one-character item ``item`` matches ``c`` (conservatively true when
    the item is a kind this check does not model).
    """
    op, av = item
    name = _name(op)
    if name == "LITERAL":
        return bool(av == ord(c))
    if name == "NOT_LITERAL":
        return bool(av != ord(c))
    if name == "ANY":
        return c != "\n"
    if name == "IN":
        return _in_set(list(av), c)
    return True


def _in_set(members: list[Item], c: str) -> bool:
    negate = bool(members) and _name(members[0][0]) == "NEGATE"
    hit = False
    for op, av in members[1:] if negate else members:
        name = _name(op)
        if name == "LITERAL":
            hit = av == ord(c)
        elif name == "RANGE":
            hit = av[0] <= ord(c) <= av[1]
        elif name == "CATEGORY":
            category = _name(av)
            positive = category.replace("_NOT_", "_")
            test = _CATEGORY.get(positive)
            hit = True if test is None else test(c) != (category != positive)
        else:
            hit = True
        if hit:
            break
    return hit != negate
