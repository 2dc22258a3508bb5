"""A check that a regular expression runs in linear time on one line of hostile text.

Python's ``re`` backtracks. Two unbounded repeats next to each other that can match the
same character (``(.*?)\\s*$``, ``([^:]+?)\\s*:``, ``(\\s*)([a-z ]+)``) let a line of n spaces
be split between them in n ways at every start, so a 64 KiB line of spaces costs seconds
(quadratic time). Every pattern pin applies to tool output must pass :func:`adjacent_repeats`;
``tests/unit/util/test_regex.py`` scans the package for them. A test tool (it reads Python's
private ``re._parser``), so it lives in tests/support, not in the package users install.
"""

from __future__ import annotations

import importlib
import string
from collections.abc import Callable, Iterator, Sequence
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
    if search and _repeat_crosses_start(_flatten(parsed)):
        return ("a search whose unbounded repeat can run over the pattern's first character "
                "and then fail rescans the text from every character that starts a match "
                "(quadratic); leave the first character out of the repeat")
    return _scan_sequence(parsed)


def _repeat_crosses_start(flat: list[Item]) -> bool:
    """Whether an unbounded backtracking repeat of the unanchored ``flat`` can match a
    character a match starts with and is followed by a part that can fail: then each start
    in a run of such characters (``[#[#[#`` for ``\\[#([^\\]]*)\\]_``) rescans the rest.
    A leading optional part that a negative look-behind confines to a run start
    (``(?<!\\s)\\s*``) adds no starting characters; the leading repeat itself is
    :func:`_leading_repeat_can_fail`'s.
    """
    starts: set[str] = set()
    for _i, op, av, behind in _after_lookarounds(flat):
        if _name(op) == "AT":  # anchored at the start: tried once
            return False
        if not (_nullable([(op, av)]) and _chars([(op, av)]) <= behind):
            starts |= _first_chars([(op, av)])
        if not _nullable([(op, av)]):
            break
    lead = next((i for i, (op, _av) in enumerate(flat) if _name(op) not in _ZERO_WIDTH), 0)
    for i, (op, av) in enumerate(flat):
        if (i > lead and _name(op) in _REPEATS and _name(op) != "POSSESSIVE_REPEAT"
                and _unbounded(av)
                and _chars(list(av[2])) & starts
                # it must be able to run over a whole start: every required part before it
                and all(_chars([item]) & _chars(list(av[2])) for item in flat[lead:i]
                        if not _nullable([item]))
                and any(not _nullable([item]) or _name(item[0]) in ("AT", "ASSERT",
                                                                    "ASSERT_NOT")
                        for item in flat[i + 1:])):
            return True
    return False


def _after_lookarounds(flat: list[Item]) -> Iterator[tuple[int, Any, Any, set[str]]]:
    """``(index, op, av, behind)`` for each part of ``flat`` that is not a look-around or an
    anchor other than ``^``, with the characters the negative look-behinds before it refuse
    (``behind``); stops after yielding a ``^`` (``AT``), which anchors the pattern.
    """
    behind: set[str] = set()
    for i, (op, av) in enumerate(flat):
        name = _name(op)
        if name == "AT" and str(av) == "AT_BEGINNING":
            yield i, op, av, behind
            return
        if name == "ASSERT_NOT" and av[0] == -1:
            behind |= _chars(list(av[1]))
        if name in _ZERO_WIDTH:
            continue
        yield i, op, av, behind


def _leading_repeat_can_fail(flat: list[Item]) -> bool:
    """Whether ``flat`` starts (after look-arounds) with an unbounded backtracking repeat
    that is followed by a part that can fail: anything but an optional repeat.
    """
    for i, op, av, behind in _after_lookarounds(flat):
        name = _name(op)
        if name == "AT":  # anchored at the start: tried once
            return False
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
        inner: str | None = None
        if name in _REPEATS:
            inner = _nested(list(av[2])) if av[1] > 1 else None
            inner = inner or _scan_sequence(list(av[2]))
            if inner is None and name != "POSSESSIVE_REPEAT" and _unbounded(av):
                inner = _overlap_after(flat, i)
        elif name == "BRANCH":
            for alternative in av[1]:
                inner = inner or _scan_sequence(list(alternative))
            if inner is None and _long([(op, av)]):
                inner = _overlap_after(flat, i)
        elif name in ("ASSERT", "ASSERT_NOT"):
            inner = _scan_sequence(list(av[1]))
        if inner is not None:
            return inner
    return None


_NESTED = ("a repeated part inside another repeat, e.g. (a+)+ or (a|a)*, whose passes can "
           "split a run in many ways (exponential backtracking, worse than quadratic)")


def _nested(body: list[Item]) -> str | None:
    """A problem when the body of a repeat taken more than once holds a variable repeat
    that no required part of the body (with disjoint characters) separates from the next
    pass (``(a+)+``, ``(\\d+\\.?)+``; ``(\\.\\d+)*`` is fine), or an alternation whose
    alternatives can start alike (``(a|a)*``, ``(a|ab)+``).
    """
    flat = _flatten(body)
    for i, (op, av) in enumerate(flat):
        name = _name(op)
        if name in _REPEATS and av[0] != av[1]:
            mine = _chars(list(av[2]))
            if not any(not _nullable([other]) and not (_chars([other]) & mine)
                       for j, other in enumerate(flat) if j != i):
                return _NESTED
        if name == "BRANCH":
            alts = [list(a) for a in av[1]]
            for k, a in enumerate(alts):
                for b in alts[k + 1:]:
                    if (_nullable(a) and _nullable(b)) or _first_chars(a) & _first_chars(b):
                        return _NESTED
        for sub in _children((op, av)):
            if _nested(sub) is not None:
                return _NESTED
    return None


def _children(item: Item) -> list[list[Item]]:
    """The item lists directly inside ``item`` (a repeat's body, alternatives, a group)."""
    op, av = item
    name = _name(op)
    if name in _REPEATS:
        return [list(av[2])]
    if name == "BRANCH":
        return [list(a) for a in av[1]]
    if name == "SUBPATTERN":
        return [list(av[3])]
    if name == "ATOMIC_GROUP":
        return [list(av)]
    return []


def _first_chars(items: list[Item]) -> set[str]:
    """The characters a match of ``items`` can start with."""
    out: set[str] = set()
    for op, av in _flatten(items):
        name = _name(op)
        if name in _ZERO_WIDTH:
            continue
        if name == "BRANCH":
            for alternative in av[1]:
                out |= _first_chars(list(alternative))
        elif name in _REPEATS:
            out |= _first_chars(list(av[2]))
        else:
            out |= _chars([(op, av)])
        if not _nullable([(op, av)]):
            break
    return out


def _nullable(items: list[Item]) -> bool:
    """Whether ``items`` can match the empty string."""
    for op, av in items:
        name = _name(op)
        if name in _ZERO_WIDTH:
            continue
        if name in _REPEATS:
            if av[0] != 0 and not _nullable(list(av[2])):
                return False
        elif name == "BRANCH":
            if not any(_nullable(list(a)) for a in av[1]):
                return False
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            if not _nullable(_children((op, av))[0]):
                return False
        else:
            return False
    return True


def _long(items: list[Item]) -> bool:
    """Whether ``items`` can match an unbounded number of characters."""
    for op, av in items:
        name = _name(op)
        if name in _REPEATS and _unbounded(av):
            return True
        if name != "ASSERT" and name != "ASSERT_NOT" and any(
                _long(sub) for sub in _children((op, av))):
            return True
    return False


def _unbounded(av: Any) -> bool:
    """Whether a repeat can match an unbounded number of characters: an upper bound over
    255 (``*``, ``+``, ``{n,}``, ``{0,65534}``) or a body that can (``(?:\\s+)?``); a small
    bound on a bounded body (``\\d{1,9}``) caps the backtracking at a constant factor.
    """
    _lo, hi, sub = av
    return bool(hi > 255 or (hi >= 1 and _long(list(sub))))


def _overlap_after(flat: list[Item], i: int) -> str | None:
    """A problem when the unbounded repeat (or alternation holding one) ``flat[i]`` is
    next to an overlapping one, with only zero-width or optional parts between.
    """
    first = _chars([flat[i]])
    for op, av in flat[i + 1:]:
        name = _name(op)
        if name in _ZERO_WIDTH:
            continue
        if (name in _REPEATS and name != "POSSESSIVE_REPEAT") or name == "BRANCH":
            shared = first & _chars([(op, av)])
            if (shared and _long([(op, av)]) and _runs(flat[i], shared)
                    and _runs((op, av), shared)):
                sample = "".join(sorted(shared))[:6]
                return (f"two unbounded repeats next to each other both match {sample!r} "
                        "(quadratic backtracking on a long run of them)")
            if _nullable([(op, av)]):
                continue
        return None
    return None


def _runs(item: Item, shared: set[str]) -> bool:
    """:func:`_can_run` for a repeat's body or any alternative of an alternation."""
    op, av = item
    if _name(op) == "BRANCH":
        return any(_long(list(a)) and _can_run(list(a), shared) for a in av[1])
    return _can_run(list(av[2]), shared)


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
