"""What the kernel scanner (:mod:`pinning.audit.kernels`) reads around a *name*: where a mask
name passed to a ``*_sync`` call was declared (a parameter of the enclosing function, which
makes that function a wrapper; a local variable; or nowhere in the file), which call an
argument belongs to, and which names are warp sizes or thread counts. Each reader looks at
most :data:`DECL_BACK` characters back, so a file's scan stays linear in its size.

Every pattern here is linear (checked by ``tests/unit/util/test_regex.py``).
"""

from __future__ import annotations

import re

__all__ = ["DECL_BACK", "DECL_TRIES", "SYNC_CALLS", "call_of", "declaration_of", "is_thread_count",
           "is_warp_size_name", "positions"]

DECL_BACK = 4000
"""How far back a mask name's declaration is looked for (characters): a function head and
the start of its body. A name declared further back counts as not declared in the file."""

DECL_TRIES = 64
"""How many earlier occurrences of a mask name are read looking for its declaration; past
that the name counts as declared in the file (nothing is claimed for it)."""

SYNC_CALLS = frozenset({
    "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync",
    "__any_sync", "__all_sync", "__match_any_sync", "__match_all_sync"})
"""CUDA's cross-lane functions with a mask argument (their calls are read by the scanner
itself, never as wrapper calls)."""

_KEYWORDS = frozenset({"if", "for", "while", "switch", "return", "sizeof", "alignof",
                       "decltype", "static_cast", "reinterpret_cast", "const_cast",
                       "defined", "assert", "static_assert"})
_TYPES_32 = frozenset({"unsigned", "int", "uint", "uint32_t", "std::uint32_t", "int32_t",
                       "std::int32_t", "signed"})
_TYPE_WORDS = frozenset({"unsigned", "signed", "int", "long", "short", "char", "auto",
                         "uint", "bool", "size_t"})
_REV_WORD = re.compile(r"[ \t\r\n]*+([\w:]++)")
_WARP_SIZE_NAME = re.compile(r"warp_?size|threads_?per_?warp|warp_?threads|lanes_?per_?warp",
                             re.IGNORECASE)
_THREAD_COUNT = re.compile(r"thread|lane", re.IGNORECASE)


def is_warp_size_name(name: str) -> bool:
    """Whether ``name`` says it is a warp's lane count (``WARP_SIZE``, ``kWarpSize``,
    ``THREADS_PER_WARP``, ``kWarpThreads``); not HIP's built-in ``warpSize``, which is right
    on every target, nor a count of warps (``WARPS_PER_BLOCK``).
    """
    return name != "warpSize" and _WARP_SIZE_NAME.search(name) is not None


def is_thread_count(name: str) -> bool:
    """Whether ``name`` is a count of threads or lanes (``kNThreadsPerRow``,
    ``THREADS_PER_ROW``, ``kLanesPerGroup``): ``32 / name`` is then a count per warp of 32.
    """
    return _THREAD_COUNT.search(name) is not None and not is_warp_size_name(name)


def _word_at(text: str, i: int, name: str) -> bool:
    end = i + len(name)
    return ((i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))
            and (end >= len(text) or not (text[end].isalnum() or text[end] == "_")))


def _open_paren(text: str, i: int, low: int) -> tuple[int, int] | None:
    """The ``(`` that encloses offset ``i`` at depth 0 (no ``;``, ``{`` or ``}`` between) and
    the number of top-level commas between it and ``i``, or ``None``.
    """
    depth = commas = 0
    for j in range(i - 1, low - 1, -1):
        ch = text[j]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                return (j, commas) if ch == "(" else None
            depth -= 1
        elif ch == "," and depth == 0:
            commas += 1
        elif ch in ";{}":
            return None
    return None


def _callee(text: str, paren: int) -> str | None:
    back = text[max(0, paren - 120):paren][::-1]
    m = _REV_WORD.match(back)
    if m is None:
        return None
    word = m.group(1)[::-1].split("::")[-1]
    if not word or word[0].isdigit() or word in _KEYWORDS:
        return None
    return word


def _is_type(word: str) -> bool:
    word = word.rstrip("&")
    return (word in _TYPE_WORDS or word in _TYPES_32 or word.endswith("_t")
            or (word[:1].isupper() and word.replace("_", "a").replace(":", "a").isalnum()))


def call_of(text: str, at: int) -> tuple[str, int] | None:
    """The function called with the argument at offset ``at`` and that argument's 0-based
    position (``warp_sum(0xffffffff, v)`` -> ``("warp_sum", 0)``), or ``None`` when ``at``
    is not a call argument (a keyword's parentheses, an initialiser). Reads at most 400
    characters back.
    """
    found = _open_paren(text, at, max(0, at - 400))
    if found is None:
        return None
    callee = _callee(text, found[0])
    return None if callee is None else (callee, found[1])


def declaration_of(text: str, at: int, name: str) -> tuple[str, str, int, bool, int] | None:
    """Where ``name`` (used at offset ``at``) was declared, looking at most :data:`DECL_BACK`
    characters back: ``("param", function, index, is_32_bits, offset)`` for a parameter of
    the enclosing function, ``("local", "", -1, is_32_bits, offset)`` for another declaration
    (``offset`` where the name is declared), ``None`` when the file does not declare it there
    (a macro or constant from another file).
    """
    low = max(0, at - DECL_BACK)
    i = text.rfind(name, low, at)
    for _ in range(DECL_TRIES):
        if i < 0:
            return None
        if _word_at(text, i, name):
            after = text[i + len(name):i + len(name) + 40].lstrip(" \t\r\n")
            words = text[max(low, i - 80):i].replace("(", " ").replace(",", " ").split()
            words = [w for w in words if w not in ("const", "&", "volatile", "register")]
            if after[:1] in (",", ")", "=", ";", "[", "{") and words and _is_type(words[-1]):
                bits32 = words[-1] in _TYPES_32 and "long" not in words[-2:]
                where = _open_paren(text, i, max(low, i - 400))
                if where is not None and after[:1] in (",", ")", "="):
                    func = _callee(text, where[0])
                    if func is not None:
                        return "param", func, where[1], bits32, i
                return "local", "", -1, bits32, i
        i = text.rfind(name, low, i)
    return "local", "", -1, False, max(i, 0)  # too many uses to tell: claim nothing


def positions(text: str, offsets: list[int], line_offset: int) -> dict[int, tuple[int, int]]:
    """1-based (line, column) of each offset, ``line_offset`` added to lines; one pass over
    the text up to the last offset.
    """
    out: dict[int, tuple[int, int]] = {}
    line, last, line_start = 1 + line_offset, 0, 0
    for offset in sorted(set(offsets)):
        newlines = text.count("\n", last, offset)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", last, offset) + 1
        last = offset
        out[offset] = (line, offset - line_start + 1)
    return out
