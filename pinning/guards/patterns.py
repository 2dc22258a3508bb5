"""Which regular expressions a guard rule's ``package_pattern`` may be (pure).

Python's ``re`` backtracks, so a rule file could make matching take exponential time; the
pattern is judged from ``re``'s own parse tree, as no well-kept library bounds ``re`` itself.
"""

from __future__ import annotations

import re
from typing import Any

MAX_PATTERN_CHARS = 200
"""The most characters a rule's ``package_pattern`` may have."""
MAX_PATTERN_REPEATS = 3
"""The most quantified parts (``*``, ``+``, ``?``, ``{m,n}``) one pattern may have: the time
a match can take grows with the name length to this power (128**3 steps at most)."""
MAX_NAME_CHARS = 128
"""Installed names longer than this are never matched against a pattern (no PEP 503 name
pin has met is near it)."""

_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
_BACKREFS = frozenset({"GROUPREF", "GROUPREF_EXISTS"})


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` may not be a rule's ``package_pattern``, or ``None`` when it may.

    Python's ``re`` backtracks, so some patterns take exponential time on a name that
    almost matches. Refused, from the parsed pattern: a quantified part inside another
    (``(a+)+``, ``(a*)*``, ``(a?a?)+``, ``(.*a){10}``), an alternation inside a quantified group
    (``(a|a)*``, ``(a|ab)+``), a backreference, more than :data:`MAX_PATTERN_REPEATS`
    quantified parts, more than :data:`MAX_PATTERN_CHARS` characters, or text that is not
    a regular expression. The check is conservative (``(\\d+\\.)*`` is safe but refused):
    a name pattern never needs these forms. A pattern ``re`` warns about (``[[``, a
    possible nested set) is refused as well. Matching is bounded too: names over
    :data:`MAX_NAME_CHARS` characters are not matched.
    """
    import importlib
    import warnings

    if len(pattern) > MAX_PATTERN_CHARS:
        return f"{len(pattern)} characters, more than the {MAX_PATTERN_CHARS} a pattern may have"
    try:
        with warnings.catch_warnings():  # "possible nested set" and the like: refused too
            warnings.simplefilter("error")
            re.compile(pattern)
            parsed = importlib.import_module("re._parser").parse(pattern)
    except (re.error, RecursionError, OverflowError, Warning) as exc:
        return f"not a regular expression ({exc})"
    repeats = [0]
    problem = _scan(list(parsed), inside=False, repeats=repeats)
    if problem is None and repeats[0] > MAX_PATTERN_REPEATS:
        problem = (f"{repeats[0]} quantified parts, more than the {MAX_PATTERN_REPEATS} a "
                   "pattern may have (the match time grows with their number)")
    return problem


def _scan(items: list[tuple[Any, Any]], *, inside: bool, repeats: list[int]) -> str | None:
    """The first refused form in the parsed ``items`` (``re._parser`` opcodes and
    arguments); ``inside`` is true within a part repeated more than once. Counts the
    repeated parts in ``repeats[0]``.
    """
    for op, av in items:
        name = str(op)
        subs: list[list[tuple[Any, Any]]] = []
        nested = inside
        if name in _REPEATS:
            _lo, hi, sub = av
            if inside:
                return "a quantifier inside a quantified group, e.g. (a+)+ or (a?a?)* " \
                       "(catastrophic backtracking)"
            repeats[0] += 1
            nested = hi > 1
            subs = [list(sub)]
        elif name == "BRANCH":
            if inside:
                return "an alternation inside a quantified group, e.g. (a|a)* (catastrophic " \
                       "backtracking)"
            subs = [list(alt) for alt in av[1]]
        elif name in _BACKREFS:
            return "a backreference (matching time is not bounded)"
        elif name == "SUBPATTERN":
            subs = [list(av[3])]
        elif name in ("ASSERT", "ASSERT_NOT"):
            subs = [list(av[1])]
        elif name == "ATOMIC_GROUP":
            subs = [list(av)]
        for sub_items in subs:
            problem = _scan(sub_items, inside=nested, repeats=repeats)
            if problem:
                return problem
    return None
