"""What the kernel scanner (:mod:`pinning.audit.kernels`) reads around a match, each in
constant time, and how it reports: the findings of one text aggregated per rule and subject
(:class:`Hits`), the declaration or operand left of a match, and whether an offset lies in a
``__global__`` / ``__device__`` function body (:class:`Region`, linear over a whole text).

Every pattern here is linear (checked by ``tests/unit/util/test_regex.py``).
"""

from __future__ import annotations

import re

from pinning.audit.kernel_names import positions
from pinning.audit.kernel_rules import PORTING_GUIDE, Rule
from pinning.audit.model import Finding, Verdict
from pinning.audit.preproc import Guard, Guards

LOOK_BACK = 200
"""How far a rule looks left of a match (characters): the declaration before ``=``, the
operand before ``& 31``, the ``for (`` before ``= 16;``. Bounded so that every handler costs
a constant and a file's scan stays linear in its size."""

_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*+(?=\n)")
_BRACES = re.compile(r"[{}/\"']")
_HEAD_END = re.compile(r"[{;]")
_LITERAL_REST = {'"': re.compile(r'(?:[^"\\\n]|\\(?s:.))*+"?'),
                 "'": re.compile(r"(?:[^'\\\n]|\\(?s:.))*+'?")}
_REV_OPERAND = re.compile(r"[ \t]*+(?:\)([^(]{0,160})\(|([\w.]++))")
"""The operand left of an operator, read in the reversed text: a parenthesised expression
(group 1) or a word with its member accesses (group 2), both reversed."""
_LANE_WORD = re.compile(r"enal|dit|di_?daerht|sdaerht|midkcolb", re.IGNORECASE)
"""Operand words of lane / warp arithmetic, reversed (searched in a reversed operand): a lane
or thread index (``lane``, ``tid``, ``threadIdx``, ``thread_id``), and thread counts
(``threads``, ``blockDim``: ``kNThreads / 32`` is a warp count that assumes 32 lanes)."""


_ASM_TOKENS = re.compile(r'[();]|"(?:[^"\\\n]|\\(?s:.))*+"?')
ASM_EXTENT = 4000
"""How far an ``asm`` statement is read for its PTX (characters): to the ``)`` that closes
it, or to a ``;`` outside its strings (an unclosed statement), or this far."""


class Hits:
    """The findings of one text: one entry per (rule, subject, platform guard) with the offsets
    it occurs at; offsets become 1-based lines and columns once, in :meth:`findings`.

    ``guards`` (set by the kernel scanner) says which branch of the file's ``#if`` directives
    holds an offset: occurrences in a branch a platform macro makes an AMD build skip (or
    ``#if 0``) become one ``ready`` finding ("CUDA-only branch, already ported"); those under
    a ``__CUDA_ARCH__`` guard or an undecided condition keep their verdict and say so in
    ``why``.
    """

    def __init__(self, text: str, display: str, line_offset: int) -> None:
        self.text = text
        self.display = display
        self.offset = line_offset
        self.guards: Guards | None = None
        self.found: dict[tuple[str, str, Guard | None], tuple[Rule, list[int]]] = {}

    def add(self, rule: Rule, subject: str, offset: int) -> None:
        """Record ``rule`` for ``subject`` at ``offset`` (0-based) of the text."""
        guard = self.guards.at(offset) if self.guards is not None else None
        got = self.found.get((rule.rule, subject, guard))
        if got is None:
            self.found[(rule.rule, subject, guard)] = (rule, [offset])
        else:
            got[1].append(offset)

    def _positions(self) -> dict[int, tuple[int, int]]:
        offsets = [o for _, found in self.found.values() for o in found]
        return positions(self.text, offsets, self.offset)

    def findings(self) -> list[Finding]:
        """One finding per (rule, subject, guard), sorted by line, column, rule and subject;
        ``line`` the first occurrence, ``lines`` all of them (when more than one).
        """
        at = self._positions()
        out = []
        entries = sorted(self.found.items(), key=lambda kv: (
            at[min(kv[1][1])], kv[0][0], kv[0][1]))  # line, column, rule, subject
        for (_rule_id, subject, guard), (rule, offsets) in entries:
            first = min(offsets)
            lines = sorted({at[o][0] for o in offsets}) if len(offsets) > 1 else []
            verdict, why, todo, cite = rule.verdict, rule.why, rule.todo, rule.citation
            if guard is not None and guard.settles():
                verdict, why = Verdict.READY, f"{guard.note()} (was: {rule.why})"
                todo, cite = "Nothing for the ROCm build: keep the branch for CUDA.", PORTING_GUIDE
            elif guard is not None:
                why = f"{rule.why} ({guard.note()})"
            out.append(Finding(
                kind=rule.kind, rule=rule.rule, verdict=verdict, subject=subject,
                path=self.display, line=at[first][0], column=at[first][1],
                lines=lines if len(lines) > 1 else [], why=why, todo=todo,
                replacement=rule.replacement, citation=cite))
        return out


_MASK32_TYPES = frozenset({"unsigned", "int", "uint32_t", "uint", "unsigned int", "int32_t",
                           "const unsigned", "const int", "const uint32_t", "auto32"})
_DECL_QUALIFIERS = frozenset({"const", "constexpr", "static", "inline", "volatile", "register",
                              "__device__", "__host__", "__constant__", "__shared__"})
_DECL_32_BITS = frozenset({"unsigned", "unsigned int", "int", "signed", "signed int", "uint",
                           "uint32_t", "std::uint32_t", "int32_t", "std::int32_t", "auto"})
"""Declared types of a 32-bit integer (after qualifiers are dropped): ``-1`` or ``~0`` stored
in one of them is a 32-lane mask."""


def left_of(text: str, start: int) -> str:
    """At most :data:`LOOK_BACK` characters of ``start``'s line left of it."""
    low = max(0, start - LOOK_BACK)
    nl = text.rfind("\n", low, start)
    return text[low if nl < 0 else nl + 1:start]


def lane_operand(text: str, start: int) -> bool:
    """Whether the operand left of ``start`` is a lane / thread index (``tid``, ``lane_id``,
    ``threadIdx.x``, or a parenthesised expression holding one that is not the shift amount
    of a data word, ``(w >> (tid * 5))``). Reads at most
    :data:`LOOK_BACK` characters back (reversed, so that one ``match`` finds the operand).
    """
    back = text[max(0, start - LOOK_BACK):start][::-1]
    m = _REV_OPERAND.match(back)
    if m is None or _LANE_WORD.search(m[m.lastindex or 0]) is None:
        return False
    # ``(w >> (lane * 5)) & 31``: the lane index is a shift amount inside the data word's
    # expression (bit unpacking), not the operand of the ``&``.
    return not (m.lastindex == 1 and back[m.end():m.end() + 4].lstrip(" \t")[:2] in ("<<", ">>"))


def stored_in_32_bits(text: str, start: int) -> bool:
    """Whether ``<type> name = `` right before ``start`` declares a 32-bit integer (looks at
    most :data:`LOOK_BACK` characters back, on the same line).
    """
    before = left_of(text, start).rstrip()
    if not before.endswith("=") or before.endswith(("==", "!=", "<=", ">=")):
        return False
    words = before[:-1].split()
    if len(words) < 2:
        return False
    declared = " ".join(words[-3:-1]) if len(words) >= 3 else words[-2]
    return words[-2] in _MASK32_TYPES or declared in _MASK32_TYPES


def declared_mask(text: str, eq_at: int, value: str) -> str | None:
    """The name that ``NAME = value`` (``=`` at ``eq_at``) makes a 32-lane mask, or ``None``.

    ``0xffffffff``, ``4294967295`` and ``~0u`` / ``-1u`` are 32 lanes whatever the declared
    type (``const unsigned long long FULL = 0xffffffff`` still leaves out lanes 32-63);
    ``-1`` and ``~0`` are 32 lanes only in a 32-bit type (``const unsigned FULL = -1``), not
    in a 64-bit one (``uint64_t FULL = -1``). Comparisons and compound assignments
    (``==``, ``|=``) are not declarations.
    """
    if eq_at and text[eq_at - 1] in "=!<>+-*/%&|^~":
        return None
    before = left_of(text, eq_at)
    cut = max(before.rfind(c) for c in ";{}(,")
    words = before[cut + 1:].split()
    if not words or not (words[-1].replace("_", "a").isalnum() and not words[-1][0].isdigit()):
        return None
    value = "".join(value.split())
    if value[-1] in "uU" or value.startswith(("0", "4")):
        return words[-1]
    declared = " ".join(w for w in words[:-1] if w not in _DECL_QUALIFIERS)
    return words[-1] if declared in _DECL_32_BITS else None


class Region:
    """Whether offsets of one text lie inside the body of the function declared at the last
    marker (``__global__``, or ``__device__`` too): the first ``{`` after the marker opens
    the body unless a ``;`` comes first (a declaration); braces are counted from there, those
    in comments and string or character literals not counted, until the body closes.

    Linear overall: :meth:`inside` is asked with offsets that only grow, and each call reads
    on from where the last one stopped (the brace depth is kept), never from the marker again.
    """

    _NONE, _HEAD, _BODY = 0, 1, 2

    def __init__(self, text: str) -> None:
        self.text = text
        self.phase = self._NONE
        self.pos = 0
        self.depth = 0

    def start(self, at: int) -> None:
        """A marker at offset ``at``: a new function head begins there."""
        self.phase, self.pos, self.depth = self._HEAD, at, 0

    def inside(self, at: int) -> bool:
        """Whether offset ``at`` (not before the last offset asked) is inside the body."""
        if self.phase != self._NONE and self.pos < at:
            self._advance(at)
        return self.phase == self._BODY

    def _advance(self, at: int) -> None:
        text, pos = self.text, self.pos
        if self.phase == self._HEAD:
            end = _HEAD_END.search(text, pos, at)
            if end is None or end.group() == ";":
                self.pos = at
                if end is not None:
                    self.phase = self._NONE
                return
            self.phase, self.depth, pos = self._BODY, 1, end.end()
        depth = self.depth
        while pos < at:
            m = _BRACES.search(text, pos, at)
            if m is None:
                pos = at
                break
            ch, pos = m.group(), m.end()
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    self.phase = self._NONE
                    break
            elif ch == "/":
                if text.startswith("/", pos, at):
                    nl = text.find("\n", pos, at)
                    pos = at if nl < 0 else nl
                elif text.startswith("*", pos, at):
                    close = text.find("*/", pos + 1, at)
                    pos = at if close < 0 else close + 2
            else:
                rest = _LITERAL_REST[ch].match(text, pos, at)
                pos = rest.end() if rest is not None else at
        self.pos, self.depth = max(pos, self.pos), depth


def non_blank_lines(text: str) -> int:
    """Lines holding something other than white space (the blank ones are counted, being
    fewer: a regex finds the blank lines between two newlines).
    """
    newlines = text.count("\n")
    blank = len(_BLANK_LINE.findall(text))
    blank += not text.partition("\n")[0].strip()
    if newlines:
        blank += not text[text.rfind("\n") + 1:].strip()
    return newlines + 1 - blank


def asm_body_end(text: str, open_at: int) -> int:
    """The offset of the ``)`` that closes the ``asm(`` whose ``(`` is at ``open_at``
    (parentheses and ``;`` inside string literals do not count); for an unclosed statement
    the offset of the first ``;`` outside a string, else ``open_at`` + :data:`ASM_EXTENT`
    (or the text's end).
    """
    limit = min(len(text), open_at + ASM_EXTENT)
    depth = 0
    for token in _ASM_TOKENS.finditer(text, open_at, limit):
        ch = token.group()
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return token.start()
        elif ch == ";":
            return token.start()
    return limit
