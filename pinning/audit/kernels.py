"""The CUDA / C++ source scanner of ``pin audit``: the porting bill for custom kernels.

Two entry points share one engine: :func:`scan_source` (``.cu``, ``.cuh`` and C/C++ sources
and headers) and :func:`scan_cuda_text` (kernel source embedded in Python, e.g. a
``cupy.RawKernel`` string). CMake files are :mod:`pinning.audit.cmake`'s.

How a file is read: ONE compiled alternation (:data:`_SOURCE`) is searched left to right over
the text, and each match is dispatched on its group name; identifiers are classified with a
dict lookup (no per-identifier pattern). Comments (``//``, ``/* */``), string literals and
character literals are alternatives of the same pattern, so the search consumes them whole and
nothing inside them is reported (the single-pass blanker: line numbers stay exact because the
text is never rewritten). Two exceptions, on purpose: ``#include "..."`` is read before the
string rule sees the quotes, and the string operands of an ``asm`` statement are read for
tensor-core PTX (``mma.sync``, ``wgmma``, ``cp.async``) because that is where PTX lives. Raw
string literals (``R"(...)"``) and string continuation lines are read as code.

What it finds (one :class:`~pinning.audit.model.Finding` per file, rule and subject; ``line``
the first occurrence, ``lines`` all of them): the rules of :mod:`pinning.audit.kernel_rules`;
what a handler reads around a match is :mod:`pinning.audit.kernel_text`; 32-lane names (mask
and warp-size names, wrappers of the ``*_sync`` functions, ``32 / kNThreadsPerRow``) are
read by :mod:`pinning.audit.kernel_lanes`, which records in the
:class:`~pinning.audit.model.FileScan` what the file defines and the uses it cannot resolve,
for the audit-wide join of :mod:`pinning.audit.follow`.

Every pattern here is linear (checked by ``tests/unit/util/test_regex.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

from pinning.audit.files import read_text
from pinning.audit.header_defines import header_defines, include_name
from pinning.audit.kernel_lanes import (
    LaneState,
    mask_literals,
    mask_name,
    on_lane_division,
    on_warp_size,
    on_warp_value,
    warp_define,
)
from pinning.audit.kernel_names import is_warp_size_name
from pinning.audit.kernel_rules import (
    ARCH_MACRO,
    CUTE_ATOM,
    DYNAMIC_PARALLELISM,
    HEADERS,
    INLINE_PTX,
    LANE_ARITH,
    MAXREGCOUNT,
    TENSOR_PTX,
    WARP_LOOP,
    WARP_MASK,
    WARP_MASK_STORE,
    WMMA,
    Rule,
    api_rule,
    library_rule,
    tma_rule,
)
from pinning.audit.kernel_text import (
    Hits,
    Region,
    asm_body_end,
    declared_mask,
    lane_operand,
    left_of,
    non_blank_lines,
    stored_in_32_bits,
)
from pinning.audit.model import Context, FileScan
from pinning.audit.preproc import Guards
from pinning.audit.project_defines import ProjectDefine

__all__ = ["scan_cuda_text", "scan_source"]

# -- the one pattern per file pass -------------------------------------------------------------
#
# ``X(?<!\w.)`` after the first character of an alternative checks that the match starts a
# word (a look-behind at the very start would defeat the engine's first-character scan).

_SOURCE = re.compile(
    r"_(?<!\w.)(?:_(?:CUDA_ARCH\w*+(?P<arch>)"
    r"|(?:shfl_(?:up_|down_|xor_)?|ballot_|any_|all_|match_any_|match_all_)sync(?!\w)(?P<sync>)"
    r"|(?:activemask|ballot)(?!\w)(?P<amask>)|global__(?!\w)(?P<glob>)"
    r"|asm(?:__)?(?!\w)(?P<asm_>)|device__(?!\w)(?P<dev>)"
    r"|(?!device__|host__|restrict__|shared__|forceinline__|syncthreads|launch_bounds__"
    r"|constant__|inline__|noinline__|managed__)\w*+(?P<id>))|nvrtc\w*+(?P<id_>))"
    r"|c(?<!\w.)u(?:da|blas|fft|rand|sparse|solver|dnn|tensor|[Ff]ile|[A-Z_])\w*+(?P<id__>)"
    r"|a(?<!\w.)(?:sm(?!\w)(?P<asm>)|rch::Sm[1-9][0-9]{1,2}(?!\w)(?P<atom__>))"
    r"|O(?<!\w.)pClassTensorOp(?!\w)(?P<atom___>)"
    r"|n(?<!\w.)(?:v(?:rtc|_)\w*+(?P<id___>)|vcuda::wmma(?!\w)(?P<wmma>))"
    r"|S(?<!\w.)M[1-9][0-9]{1,2}_(?:[0-9]{1,3}x[0-9]|U[0-9]{2}x[0-9]|CP_ASYNC|TMA_|BULK_|MMA_"
    r"|TMEM_|GMMA)\w*+(?P<atom>)"
    r"|m(?<!\w.)ake_cu\w*+(?P<id____>)"
    r"|C(?<!\w.)(?:U|u[A-Z])\w*+(?P<id_____>)"
    r"|/(?:/[^\n]*+(?P<lc>)|\*(?P<bc>)|[ \t]*+32(?![\w.])(?P<lane>)"
    r"|(?:(?<=[^\w.]32/)|(?<=[^\w.]32 /))(?!=)[ \t]*+\(?[ \t]*+[A-Za-z_]\w*+(?P<ldiv>))"
    r"|=[ \t]*+(?:16[ \t]*+;(?P<loop>)|32[ \t]*+;(?P<wval>)"
    r"|(?:0[xX][fF]{8}(?![0-9a-fA-F])[uU]?[lL]{0,2}"
    r"|4294967295[uU]?|~[ \t]*+0[uU]?|-[ \t]*+1[uU]?)(?![\w.])(?P<mval>))"
    r'|"(?:[^"\\\n]|\\(?s:.))*+"?(?P<str>)'
    r"|\#[ \t]*+(?:include[ \t]*+[<\"][^>\"\n]{1,200}(?P<inc>)"
    r"|define[ \t]++\w++[ \t]++\(?(?:0x[fF]{8}[uU]?(?![0-9a-fA-F])|~0[uU]\b)(?P<mdef>)"
    r"|(?:ifn?def|if|elif|else|endif|define|undef)(?!\w)(?P<pp>))"
    r"|<<<++(?P<launch>)"
    r"|>>[ \t]*+5(?![\w.])(?P<lane_>)"
    r"|w(?:arp_?(?:[sS]ize|[tT]hreads)\w*+(?P<ws>)|(?<!\w.)mma::(?P<wmma_>))"
    r"|W(?i:arp)\w*+(?P<ws_>)"
    r"|&[ \t]*+(?:31|0x1[fF]|\([ \t]*+32[ \t]*+-[ \t]*+1[ \t]*+\))(?![\w.])(?P<lane__>)"
    r"|%[ \t]*+32(?![\w.])(?P<lane___>)"
    r"|'(?:[^'\\\n]|\\[^\n]){1,8}'(?P<chr>)"
    r"|N(?<!\w.)VRTC\w*+(?P<id______>)"
    r"|-(?<![\w-].)-?maxregcount(?P<mrc>)"
)
"""The one pattern of a C/C++/CUDA pass. Every top-level alternative starts with a literal
character (one alternative per first character, most frequent first), so the engine scans for
the set of first characters in C and tests the word-start look-behind once per candidate; an
empty group at the end of each branch names what matched (``m.lastgroup``; trailing ``_`` only
keep the names unique) and picks the handler."""

# Secondary patterns, each tried with ``.match`` at one position a master match gave.
_MASK_ARG = re.compile(
    r"[ \t]*+\([ \t\r\n]*+(?:0x[fF]{8}(?![0-9a-fA-F])[uU]?[lL]{0,2}|~[ \t]*+0[uU]?(?![\w.])"
    r"|4294967295[uU]?|-[ \t]*+1[uU]?(?![\w.])"
    r"|\([ \t]*+(?:unsigned(?:[ \t]++int)?|(?:std::)?uint32_t)[ \t]*+\)[ \t]*+-[ \t]*+1"
    r"|(?:std::)?uint32_t\([ \t]*+-[ \t]*+1[ \t]*+\)"
    r"|static_cast[ \t]*+<[ \t]*+(?:unsigned(?:[ \t]++int)?|(?:std::)?uint32_t)[ \t]*+>"
    r"[ \t]*+\([ \t]*+-[ \t]*+1[ \t]*+\)"
    r"|(?P<name>[A-Za-z_]\w*+))[ \t\r\n]*+,")
_AMASK_COMPARE = re.compile(
    r"[ \t]*+\([ \t]*+\)[ \t]*+[=!]=[ \t]*+(?:0x[fF]{8}[uU]?(?![0-9a-fA-F])|~0[uU]\b)")
_ASM_QUALIFIERS = re.compile(
    r"[ \t\r\n]*+(?:(?:volatile|__volatile__|goto|inline)[ \t\r\n]*+)*+\(")
_PTX_HINT = re.compile(r"\b(?:mov|ld|st|cvt|mma|wgmma|shfl|cp|bar|atom|red|vote|fma|add|mul|"
                       r"prmt|lop3|ldmatrix|stmatrix|setp|selp|bfe|bfi)\.[a-z]")
_PTX_TENSOR = re.compile(
    r"\b(?:wgmma\.\w++|mma\.sync|cp\.async(?:\.bulk(?:\.tensor)?)?|(?:ld|st)matrix(?!\w))")
_WS_DEFINE = re.compile(r"[ \t]++(\w++)[ \t]++\(?32\)?[ \t]*+(?:$|//|/\*|\r?\n)", re.MULTILINE)
_LOOP_TAIL = re.compile(r"[^;)\n]{0,80};[^)\n]{0,80}(?:/=[ \t]*+2\b|>>=[ \t]*+1\b)")
_CUDA_SUFFIXES = frozenset({".cu", ".cuh"})


# -- the scan ----------------------------------------------------------------------------------

def scan_cuda_text(text: str, display: str, ctx: Context, *, line_offset: int = 0) -> FileScan:
    """Scan CUDA C++ ``text`` (a ``.cu`` file's content, or a kernel string embedded in
    Python) and return its findings, with ``kernel_lines`` = its non-blank lines.

    ``display`` is the path findings name; ``line_offset`` is added to every line (the line
    before the string's first line in the embedding file). Pure and total: never raises for
    any text.
    """
    scan = _scan(text, display, line_offset=line_offset, cuda=True, ctx=ctx, path=None)
    scan.kernel_lines = non_blank_lines(text)
    return scan


def scan_source(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan one C/C++/CUDA source or header (``.cu .cuh .c .cc .cpp .cxx .h .hh .hpp .hxx
    .inl`` ...). ``kernel_lines`` counts the non-blank lines of ``.cu`` / ``.cuh`` files (0 for
    other C++). In other C++ the lane / warp-size rules (``kernel.lane-arith``,
    ``kernel.warp-size``, ``kernel.warp-loop``) apply only inside ``__global__`` /
    ``__device__`` function bodies. Raises :class:`~pinning.audit.model.Skip` for a file that
    cannot be read (through :func:`pinning.audit.files.read_text`), nothing else for bad input.
    """
    text = read_text(path)
    cuda = path.suffix.lower() in _CUDA_SUFFIXES
    scan = _scan(text, display, line_offset=0, cuda=cuda, ctx=ctx, path=path)
    if cuda:
        scan.kernel_lines = non_blank_lines(text)
    return scan


class _State(LaneState):
    """One pass over one text: where the search stands and what was seen so far."""

    def __init__(self, text: str, display: str, line_offset: int, cuda: bool,
                 ctx: Context, path: Path | None) -> None:
        self.text = text
        self.ctx = ctx
        self.path = path
        self.cuda = cuda
        self.hits = Hits(text, display, line_offset)
        self.pos = 0
        self.kernel = Region(text)
        self.device = Region(text)
        self.mask_macros: set[str] = set()
        self.guards = Guards(text, ctx.build_defines)
        self.hits.guards = self.guards
        if path is not None:
            self.guards.resolve = partial(_header, path, ctx)
        self.start_names(line_offset)



def _header(path: Path, ctx: Context, name: str) -> tuple[ProjectDefine, ...]:
    return header_defines(path, name, ctx)


def _on_block_comment(s: _State, m: re.Match[str]) -> None:
    end = s.text.find("*/", s.pos)
    s.pos = len(s.text) if end < 0 else end + 2


_CACHE_MAX = 100_000
"""At most this many identifiers and ``#include`` lines are remembered with their rule (the
two handlers a large tree calls most: a dictionary hit instead of a lookup per match)."""
_ID_RULES: dict[str, Rule | None] = {}
_INCLUDE_RULES: dict[str, tuple[Rule, str] | None] = {}


def _on_identifier(s: _State, m: re.Match[str]) -> None:
    name = m.group()
    try:
        rule = _ID_RULES[name]
    except KeyError:
        rule = tma_rule(name) if name.startswith("cuTensorMapEncode") else api_rule(name)
        if len(_ID_RULES) < _CACHE_MAX:
            _ID_RULES[name] = rule
    if rule is not None:
        s.hits.add(rule, name, m.start())


def _on_include(s: _State, m: re.Match[str]) -> None:
    matched = m.group()
    try:
        found = _INCLUDE_RULES[matched]
    except KeyError:
        header = matched[matched.index("include") + 7:].lstrip(" \t")[1:].strip()
        key = HEADERS.get(header) or HEADERS.get(header.split("/", 1)[0] if "/" in header
                                                 else "")
        found = None if key is None else (library_rule(key), header)
        if len(_INCLUDE_RULES) < _CACHE_MAX:
            _INCLUDE_RULES[matched] = found
    if found is not None:
        s.hits.add(found[0], found[1], m.start())
    elif s.guards.resolve is not None and '"' in matched and s.guards.at(m.start()) is None:
        name = include_name(s.text, m.start() + matched.index("include") + 7)
        if name is not None:
            s.guards.pending.append(name)  # read when a condition needs it


def _on_asm(s: _State, m: re.Match[str]) -> None:
    """An ``asm`` statement (and the tensor-core PTX in its strings); host asm in non-CUDA
    files (no PTX mnemonic in it) is left alone. The search goes on after the statement, so
    each character is read once.
    """
    text = s.text
    head = _ASM_QUALIFIERS.match(text, s.pos)
    if head is None:
        return
    body_at = head.end()
    end = asm_body_end(text, body_at - 1)
    body = text[body_at:end]
    s.pos = max(s.pos, end)
    if not s.cuda and _PTX_HINT.search(body) is None:
        return
    s.add(INLINE_PTX, " ".join(text[m.start():min(body_at - 1, m.start() + 60)].split()),
          m.start())
    for op in _PTX_TENSOR.finditer(body):
        s.add(TENSOR_PTX, op.group(), body_at + op.start())


def _on_sync(s: _State, m: re.Match[str]) -> None:
    arg = _MASK_ARG.match(s.text, s.pos)
    name = arg.group("name") if arg is not None else None
    if arg is not None and (name is None or name in s.mask_macros):
        s.add(WARP_MASK, f"32-bit mask in {m.group()}", m.start())
    if name is not None:
        mask_name(s, m, name)
    if m.group() == "__ballot_sync" and stored_in_32_bits(s.text, m.start()):
        s.add(WARP_MASK_STORE, "__ballot_sync result in 32 bits", m.start())


def _on_active_mask(s: _State, m: re.Match[str]) -> None:
    if stored_in_32_bits(s.text, m.start()) or _AMASK_COMPARE.match(s.text, s.pos):
        s.add(WARP_MASK_STORE, f"{m.group()} result in 32 bits", m.start())


def _on_mask_define(s: _State, m: re.Match[str]) -> None:
    words = m.group().replace("#", " ").split()
    s.mask_macros.add(words[1])
    s.define("mask", words[1], words[2].lstrip("("), m.start())
    s.guards.hash_line(m.start(), m.start() + m.group().index("define") + 6)


def _on_directive(s: _State, m: re.Match[str]) -> None:
    if s.next_literal < len(s.literals):
        mask_literals(s, m.start())
    s.guards.hash_line(m.start(), m.end())
    if m.group().endswith("define"):
        d = _WS_DEFINE.match(s.text, m.end())
        if d is not None and is_warp_size_name(d[1]):
            warp_define(s, d[1], m.start(), d.start(1), f"{d[1]} 32")


def _on_atom(s: _State, m: re.Match[str]) -> None:
    s.add(CUTE_ATOM, m.group(), m.start())


def _on_mask_value(s: _State, m: re.Match[str]) -> None:
    name = declared_mask(s.text, m.start(), m.group()[1:])
    if name is not None:
        s.mask_macros.add(name)
        if any(w in left_of(s.text, m.start()) for w in ("const", "static", "enum")):
            s.define("mask", name, "".join(m.group()[1:].split()), m.start())


def _on_arch(s: _State, m: re.Match[str]) -> None:
    s.add(ARCH_MACRO, m.group(), m.start())


def _on_lane(s: _State, m: re.Match[str]) -> None:
    at = m.start()
    if lane_operand(s.text, at) and (s.cuda or s.device.inside(at)):
        found = m.group()
        s.hits.add(LANE_ARITH, found if len(found) == 3 else " ".join(found.split()), at)


def _on_loop(s: _State, m: re.Match[str]) -> None:
    text, start = s.text, m.start()
    head = left_of(text, start)
    if ("for" in head and "(" in head and _LOOP_TAIL.match(text, s.pos)
            and s.device_code(start)):
        s.add(WARP_LOOP, "loop from offset 16", start)


def _on_wmma(s: _State, m: re.Match[str]) -> None:
    s.add(WMMA, "wmma", m.start())


def _on_kernel(s: _State, m: re.Match[str]) -> None:
    s.kernel.start(m.start())
    if not s.cuda:
        s.device.start(m.start())


def _on_device(s: _State, m: re.Match[str]) -> None:
    if not s.cuda:
        s.device.start(m.start())


def _on_launch(s: _State, m: re.Match[str]) -> None:
    if s.kernel.inside(m.start()):
        s.add(DYNAMIC_PARALLELISM, "<<<...>>> in a __global__ function", m.start())


def _on_maxregcount(s: _State, m: re.Match[str]) -> None:
    s.add(MAXREGCOUNT, "--maxregcount", m.start())


def _skip(s: _State, m: re.Match[str]) -> None:
    """A comment or literal: consumed whole, nothing in it is reported."""


_HANDLER_BY_RULE: dict[str, Callable[[_State, re.Match[str]], None]] = {
    "lc": _skip, "str": _skip, "chr": _skip, "bc": _on_block_comment, "id": _on_identifier,
    "inc": _on_include, "asm": _on_asm,
    "sync": _on_sync, "amask": _on_active_mask, "mdef": _on_mask_define, "arch": _on_arch,
    "ws": on_warp_size, "lane": _on_lane, "loop": _on_loop, "wmma": _on_wmma,
    "glob": _on_kernel, "dev": _on_device, "launch": _on_launch, "mrc": _on_maxregcount,
    "mval": _on_mask_value, "pp": _on_directive, "atom": _on_atom,
    "wval": on_warp_value, "ldiv": on_lane_division,
}
_SKIPPED = frozenset({"lc", "str", "chr"})
_HANDLERS = {name: _HANDLER_BY_RULE[name.rstrip("_")] for name in _SOURCE.groupindex}


def _scan(text: str, display: str, *, line_offset: int, cuda: bool, ctx: Context,
          path: Path | None) -> FileScan:
    s = _State(text, display, line_offset, cuda, ctx, path)
    search = _SOURCE.search
    handlers = _HANDLERS
    skipped = _SKIPPED
    n = len(text)
    while s.pos < n:
        m = search(text, s.pos)
        if m is None:
            break
        s.pos = m.end()
        group = m.lastgroup
        if group in skipped:
            continue
        handlers[group or ""](s, m)
    mask_literals(s, n)
    defines, uses = s.names()
    return FileScan(findings=s.hits.findings(), defines=defines, uses=uses)
