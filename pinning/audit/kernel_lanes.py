"""The kernel scanner's reading of 32-lane *names* (:mod:`pinning.audit.kernels` hands these
handlers its matches): mask names and wrappers of the ``*_sync`` functions, warp-size names
(``#define THREADS_PER_WARP 32``, ``constexpr int kWarpSize = 32``) and their uses in lane
arithmetic, ``32 / kNThreadsPerRow``, and 32-bit mask literals passed to other functions.
What one file resolves itself becomes a finding here; what it defines, and the uses it cannot
resolve, are recorded (:class:`LaneState`) for the audit-wide join of
:mod:`pinning.audit.follow`.

Every pattern here is linear (checked by ``tests/unit/util/test_regex.py``).
"""

from __future__ import annotations

import re

from pinning.audit.kernel_names import (
    SYNC_CALLS,
    call_of,
    declaration_of,
    is_thread_count,
    is_warp_size_name,
    positions,
)
from pinning.audit.kernel_rules import LANE_ARITH, WARP_MASK, WARP_SIZE, Rule
from pinning.audit.kernel_text import (
    LOOK_BACK,
    Hits,
    Region,
    declared_mask,
    lane_operand,
    left_of,
)
from pinning.audit.lane_names import NameDef, NameUse
from pinning.audit.preproc import Guards

__all__ = [
    "LaneState",
    "amd_arch_branch",
    "mask_literals",
    "mask_name",
    "on_lane_division",
    "on_warp_size",
    "on_warp_value",
    "warp_define",
    "warp_size_use",
]

_WS_TAIL = re.compile(r"[ \t]*+(?:[=!]=|=)?[ \t]*+\(?32(?![\w.])")
_ASSIGN = re.compile(r"[ \t]*+=(?!=)")
_SYNC_TAILS = tuple(SYNC_CALLS)
_MASK_LITERAL = re.compile(r"0x(?:ffffffff|FFFFFFFF)")
_MASK_WORD = re.compile(r"M(?:ASK|ask)")
_WS_DIV = re.compile(r"[ \t]*+/[ \t]*+\(?[ \t]*+([A-Za-z_]\w*+)")


class LaneState:
    """What the name handlers read and write of one pass over one text (the kernel scanner's
    pass state derives from it): the text, its findings (:class:`Hits`), its ``#if`` guards,
    and the names it defined and used.
    """

    text: str
    pos: int
    cuda: bool
    hits: Hits
    guards: Guards
    device: Region
    mask_macros: set[str]

    def start_names(self, line_offset: int) -> None:
        """Start recording (``line_offset`` is added to every line)."""
        self.line_offset = line_offset
        self.defs: list[tuple[str, str, str, int, int, bool]] = []
        self.uses: list[tuple[str, str, str, int, int, str]] = []
        self.warp_names: set[str] = set()
        self.warp_known: set[str] = set()
        self.literals = _literals(self.text)
        self.next_literal = 0

    def define(self, kind: str, name: str, value: str, at: int, index: int = -1) -> None:
        """Record that the text defines ``name`` (a :class:`NameDef` ``kind``) at ``at``."""
        guard = self.guards.at(at)
        self.defs.append((kind, name, value, at, index, guard is None or not guard.settles()))

    def use(self, kind: str, name: str, subject: str, at: int, index: int = -1,
            arg: str = "") -> None:
        """Record a use of ``name`` the text does not define (none in a CUDA-only branch)."""
        guard = self.guards.at(at)
        if guard is None or not guard.settles():
            self.uses.append((kind, name, subject, at, index, arg))

    def names(self) -> tuple[list[NameDef], list[NameUse]]:
        """The recorded definitions and uses, with 1-based lines and columns."""
        at = positions(self.text, [d[3] for d in self.defs] + [u[3] for u in self.uses],
                       self.line_offset)
        path = self.hits.display
        return ([NameDef(n, k, v, path, at[o][0], i, amd) for k, n, v, o, i, amd in self.defs],
                [NameUse(n, k, sub, path, at[o][0], at[o][1], i, a)
                 for k, n, sub, o, i, a in self.uses])

    def add(self, rule: Rule, subject: str, offset: int) -> None:
        """Record ``rule`` for ``subject`` at ``offset`` of the text."""
        self.hits.add(rule, subject, offset)

    def device_code(self, at: int) -> bool:
        """Whether lane / warp-size rules apply at offset ``at``: anywhere in CUDA text, only
        inside ``__global__`` / ``__device__`` function bodies in other C/C++ (host-only C++
        may well compute ``tid % 32`` for its own reasons).
        """
        return self.cuda or self.device.inside(at)


def mask_name(s: LaneState, m: re.Match[str], name: str) -> None:
    """The mask argument of a ``*_sync`` call is the name ``name``: a parameter makes the
    enclosing function a wrapper (a 32-bit one is a finding here, its callers are followed
    by :mod:`pinning.audit.follow`); a name the file does not declare is left to the join.
    """
    decl = declaration_of(s.text, m.start(), name)
    if decl is None:
        if name not in s.mask_macros:
            s.use("mask", name, m.group(), m.start())
        return
    kind, func, index, bits32, declared_at = decl
    if kind == "param":
        s.define("wrapper", func, m.group(), m.start(), index)
        if bits32 and name not in s.mask_macros:  # where it is declared and where it is used
            s.add(WARP_MASK, f"32-bit mask parameter {name} of {func}", declared_at)
            s.add(WARP_MASK, f"{name} (a 32-bit parameter of {func}) in {m.group()}",
                  m.start())


def mask_literals(s: LaneState, upto: int) -> None:
    """The 32-bit mask literals (``0xffffffff`` / ``0xFFFFFFFF``) and mask-like names
    (``FULL_MASK``, ``kFullMask``: a word holding ``MASK`` or ``Mask``), found with
    ``str.find`` when the pass starts, before offset ``upto``, that are a whole call argument
    in code: a wrapper's caller if the join finds the callee among the wrappers (and, for a
    name, the name among the 32-bit masks). Called at each directive and at the end of the
    pass, so the ``#if`` state is the argument's; one after ``//`` on its line, inside
    ``/* */`` or a string literal on its line is not code.
    """
    text, lits = s.text, s.literals
    while s.next_literal < len(lits) and lits[s.next_literal][0] < upto:
        at, end = lits[s.next_literal]
        s.next_literal += 1
        head = text[max(0, at - 40):at].rstrip(" \t\r\n")
        if head.endswith("(") and head[:-1].rstrip(" \t").endswith(_SYNC_TAILS):
            continue  # the mask of a *_sync call: the scanner's own rule
        after = text[end:end + 40].lstrip("uU \t\r\n")[:1]
        if head[-1:] not in ("(", ",") or after not in (",", ")") or not _in_code(text, at):
            continue  # part of an expression (``x & 0xffffffff``): data, not a mask argument
        call = call_of(text, at)
        if call is not None and call[0] not in SYNC_CALLS:
            s.use("call", call[0], call[0], at, call[1], text[at:end])


def _literals(text: str) -> list[tuple[int, int]]:
    """Where 32-bit mask literals and mask-like names stand: (start, end) offsets, sorted.
    Two searches led by a literal (``0x``, ``M``), the cheapest way ``re`` has to find them.
    """
    found: set[tuple[int, int]] = set()
    for m in _MASK_LITERAL.finditer(text):
        at = m.start()
        if not (text[at - 1:at].isalnum() or text[at + 10:at + 11].isalnum()):
            found.add((at, at + 10))
    n, last = len(text), 0
    for m in _MASK_WORD.finditer(text):
        start, end = m.start(), m.end()
        if start < last:
            continue  # inside the word just read (MASKMASK...): each character once
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        while end < n and (text[end].isalnum() or text[end] == "_"):
            end += 1
        last = end
        if not text[start].isdigit():
            found.add((start, end))
    return sorted(found)


def _in_code(text: str, at: int) -> bool:
    low = max(0, at - 400)
    nl = text.rfind("\n", low, at)
    line = text[low if nl < 0 else nl + 1:at]
    if "//" in line or line.count('"') % 2:
        return False
    low = max(0, at - 4000)
    return text.rfind("/*", low, at) <= text.rfind("*/", low, at)


def on_warp_value(s: LaneState, m: re.Match[str]) -> None:
    """``NAME = 32;`` declares a warp size when the name says so (``kThreadsPerWarp``)."""
    name = declared_mask(s.text, m.start(), "32")
    if name is not None and is_warp_size_name(name):
        head = left_of(s.text, m.start())
        warp_define(s, name, m.start(), m.start() - len(head) + head.rfind(name),
                     f"{name} = 32")


def amd_arch_branch(s: LaneState, at: int) -> bool:
    """Whether offset ``at`` lies in a branch chosen by an AMD GPU target
    (``#elif defined(__gfx1100__)``, ``__AMDGCN_WAVEFRONT_SIZE``): code written for AMD
    (RDNA's 32-wide waves), not a CUDA assumption.
    """
    guard = s.guards.at(at)
    return guard is not None and ("__gfx" in guard.directive or "__AMDGCN" in guard.directive)


def warp_define(s: LaneState, name: str, at: int, name_at: int, subject: str, *,
                value: str = "32") -> None:
    """``name`` is defined as ``value`` (``32``, or ``other``) at ``at``: recorded for the
    join and for this file's uses (once per name); a finding ``subject`` at ``name_at`` for a
    32 in device code (none when ``subject`` is empty: the warp-size handler makes it), none
    in a branch for an AMD target (:func:`amd_arch_branch`).
    """
    if name in s.warp_known or not is_warp_size_name(name):
        return
    s.warp_known.add(name)
    if amd_arch_branch(s, at):
        return
    s.define("warp-size", name, value, at)
    if value == "32" and s.guards.at(at) is None:
        s.warp_names.add(name)
    if value == "32" and subject and s.device_code(name_at):
        s.add(WARP_SIZE, subject, name_at)


def warp_size_use(s: LaneState, name: str, at: int, end: int) -> None:
    """``name`` (a warp-size name, not HIP's ``warpSize``) at ``at`` in lane arithmetic:
    ``NAME / kThreadsPerRow`` (a thread count), ``tid % NAME`` or ``lane / NAME`` (a lane
    operand). Defined here as 32 (and compiled by an AMD build): a ``kernel.lane-arith``
    finding that names it; not defined here: a use for the join of
    :mod:`pinning.audit.follow`.
    """
    if not is_warp_size_name(name) or not s.device_code(at):
        return
    text = s.text
    div = _WS_DIV.match(text, end)
    if div is not None and is_thread_count(div[1]):
        expr = f"{name} / {div[1]}"
    else:
        op = at
        while op > 0 and text[op - 1] in " \t":
            op -= 1
        if op == 0 or text[op - 1] not in "%/" or text[op - 2:op] in ("//", "*/") \
                or not lane_operand(text, op - 1):
            return
        expr = f"{text[op - 1]} {name}"
    if name in s.warp_names:
        s.add(LANE_ARITH, f"{expr} ({name} is 32)", at)
    elif name not in s.warp_known:
        s.use("lane", name, expr, at)


def on_lane_division(s: LaneState, m: re.Match[str]) -> None:
    """``32 / kNThreadsPerRow``: 32 divided by a count of threads or lanes (the divisor's
    name says ``thread`` or ``lane``) is a count per warp of 32 lanes, lane arithmetic.

    Where the line is: the divisor must name threads or lanes. ``32 / sizeof(T)`` (elements
    per 32-byte vector), ``32 / kBits`` or ``32 / BITS_PER_VALUE`` (values per 32-bit word,
    bit packing) and ``bytes / 32`` (a size in 32-byte units) divide or are divided by data
    sizes, not lanes, and are never claimed; a divisor with another name is not claimed
    either, as the scanner cannot tell a lane count from a data width by its value.
    """
    name = m.group().rsplit("(", 1)[-1].split("/", 1)[-1].strip(" \t(")
    if is_thread_count(name) and s.device_code(m.start()):
        s.add(LANE_ARITH, f"32 / {name}", m.start())


def on_warp_size(s: LaneState, m: re.Match[str]) -> None:
    """A warp-size name (``WARP_SIZE``, ``kWarpSize``, ``THREADS_PER_WARP``; HIP's ``warpSize``
    too when compared with 32): ``= 32`` / ``== 32`` / ``#define ... 32`` after it is a
    ``kernel.warp-size`` finding (and a definition for the join); another value defines it
    otherwise; anything else is a possible use (:func:`warp_size_use`).
    """
    text = s.text
    tail = _WS_TAIL.match(text, s.pos)
    word = m.start()
    low = max(0, word - LOOK_BACK)
    while word > low and (text[word - 1].isalnum() or text[word - 1] == "_"):
        word -= 1
    name = text[word:m.end()]
    head = left_of(text, word).rstrip()
    if tail is None:
        if head.endswith("define") or _ASSIGN.match(text, m.end()):
            warp_define(s, name, word, word, "", value="other")
        else:
            warp_size_use(s, name, word, m.end())
        return
    if name != "warpSize" and not is_warp_size_name(name):
        return  # WARPS_PER_BLOCK 32: a count of warps, not of lanes
    s.pos = tail.end()
    if amd_arch_branch(s, word):
        s.warp_known.add(name)  # RDNA's 32-wide waves under #if defined(__gfx1100__)
        return
    if head.endswith("define") or ("=" in tail.group() and "==" not in tail.group()):
        warp_define(s, name, word, word, "")
    if s.device_code(word):
        s.add(WARP_SIZE, " ".join(text[word:tail.end()].split()), word)
