"""Three-valued logic for conditions pin reads without running them (``#if`` branches,
``setup.py`` and CMake tests): ``True``, ``False``, or ``None`` for undecided. Kleene's
rules: ``False and x`` is false and ``True or x`` is true whatever ``x`` is; otherwise an
undecided operand leaves the result undecided. Pure; raises nothing.
"""

from __future__ import annotations

__all__ = ["and3", "not3", "or3"]


def not3(value: bool | None) -> bool | None:
    """``not value``; undecided stays undecided."""
    return None if value is None else not value


def and3(a: bool | None, b: bool | None) -> bool | None:
    """``a and b``: false when either is false, undecided when either is undecided."""
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def or3(a: bool | None, b: bool | None) -> bool | None:
    """``a or b``: true when either is true, undecided when either is undecided."""
    if a is True or b is True:
        return True
    return None if a is None or b is None else False
