"""The audit-wide name join of ``pin audit``: 32-lane names followed from their definitions to
their uses across every file of one audit (folders and archives alike).

A mask name (``#define FULL_MASK 0xffffffff``), a warp-size name (``constexpr int kWarpSize =
32``, ``#define THREADS_PER_WARP 32``) or a wrapper (``warp_sum(unsigned mask, float v)``
whose ``mask`` reaches ``__shfl_xor_sync``) is often defined in a header and used in other
files, which a per-file scan cannot resolve. Each file's scan records what it defines and the
uses it could not resolve (:class:`~pinning.audit.model.FileScan` ``defines`` / ``uses``,
written by :mod:`pinning.audit.kernel_lanes`); :func:`follow_names` joins them once all files
are read: each use becomes a finding that names the definition ("FULL_MASK (0xffffffff at
csrc/reduce.cuh:12) in __shfl_xor_sync"), and a mask definition used elsewhere is a finding
too. A definition an AMD build skips (a CUDA-only ``#if`` branch) resolves nothing.

A mask name used only over data (``x & FULL_MASK``) is never reached: only the mask argument
of a ``*_sync`` call, lane arithmetic and a wrapper's mask argument are recorded uses.
"""

from __future__ import annotations

from collections.abc import Callable

from pinning.audit.kernel_rules import LANE_ARITH, WARP_MASK, Rule
from pinning.audit.lane_names import NameDef, NameUse
from pinning.audit.model import FileScan, Finding
from pinning.audit.scan import Collector

__all__ = ["NameCollector", "follow_names", "join_names"]


class NameCollector(Collector):
    """A :class:`~pinning.audit.scan.Collector` that also keeps every file's name
    definitions and unresolved uses for :func:`follow_names`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.defines: list[NameDef] = []
        self.uses: list[NameUse] = []

    def add(self, display: str, scan: FileScan) -> None:
        """Add ``scan`` (see :meth:`Collector.add`) and keep its names."""
        super().add(display, scan)
        self.defines += scan.defines
        self.uses += scan.uses


def follow_names(out: Collector) -> list[Finding]:
    """The findings of the join over what ``out`` collected (none for a plain
    :class:`Collector`); uses in files folded away as byte-identical copies of another file
    are left out (their original is joined). Never raises.
    """
    if not isinstance(out, NameCollector) or not out.uses:
        return []
    copies = {c for f in out.findings for c in f.copies}
    return join_names(out.defines, [u for u in out.uses if u.path not in copies])


def _live(defines: list[NameDef], kind: str) -> dict[str, list[NameDef]]:
    """Per name (a wrapper: per name and mask position), its definitions an AMD build
    compiles, by path and line; a warp-size name with any other value (``#define WARP_SIZE
    64`` in live code) is left out: which one a file sees is up to its includes.
    """
    found: dict[str, list[NameDef]] = {}
    for d in sorted(defines, key=lambda d: (d.path, d.line)):
        if d.kind == kind and d.amd:
            found.setdefault(d.name if kind != "wrapper" else f"{d.name}#{d.index}", []).append(d)
    return {name: ds for name, ds in found.items() if all(d.value != "other" for d in ds)}


def _nearest(defs: list[NameDef], path: str) -> NameDef:
    """The definition whose file shares the longest folder prefix with ``path`` (the header
    next to the use before one elsewhere in the tree); the first by path on a tie.
    """
    parts = path.split("/")

    def shared(d: NameDef) -> int:
        n = 0
        for a, b in zip(d.path.split("/")[:-1], parts[:-1], strict=False):
            if a != b:
                break
            n += 1
        return n

    return max(defs, key=shared)


def join_names(defines: list[NameDef], uses: list[NameUse]) -> list[Finding]:
    """Resolve ``uses`` against ``defines``: one finding per (rule, file, subject) with all
    its lines, sorted by path and line; a use nothing defines gives nothing. Pure.
    """
    masks, warps = _live(defines, "mask"), _live(defines, "warp-size")
    wrappers = _live(defines, "wrapper")
    found: dict[tuple[str, str, str], tuple[Rule, list[tuple[int, int]]]] = {}
    used_in: dict[str, set[str]] = {}

    def hit(rule: Rule, path: str, subject: str, line: int, column: int) -> None:
        found.setdefault((rule.rule, path, subject), (rule, []))[1].append((line, column))

    for u in uses:
        if u.kind == "mask" and u.name in masks:
            d = _nearest(masks[u.name], u.path)
            hit(WARP_MASK, u.path, f"{u.name} ({d.value} at {d.path}:{d.line}) in {u.subject}",
                u.line, u.column)
            if d.path != u.path:
                used_in.setdefault(f"{u.name}\0{d.path}\0{d.line}", set()).add(u.path)
        elif u.kind == "lane" and u.name in warps:
            d = _nearest(warps[u.name], u.path)
            hit(LANE_ARITH, u.path, f"{u.subject} ({u.name} is 32 at {d.path}:{d.line})",
                u.line, u.column)
        elif u.kind == "call" and f"{u.name}#{u.index}" in wrappers:
            _wrapper_call(hit, u, _nearest(wrappers[f"{u.name}#{u.index}"], u.path), masks)
    for key, paths in used_in.items():
        name, path, line = key.split("\0")
        d = next(d for d in masks[name] if (d.path, str(d.line)) == (path, line))
        hit(WARP_MASK, d.path, f"{name} defined as {d.value} (32 lanes), the mask of *_sync "
            f"calls in {len(paths)} other file{'s' if len(paths) > 1 else ''}", d.line, 1)
    return sorted((_finding(rule, path, subject, at)
                   for (_r, path, subject), (rule, at) in found.items()),
                  key=lambda f: (f.path or "", f.line or 0, f.rule, f.subject))


def _wrapper_call(hit: Callable[[Rule, str, str, int, int], None], u: NameUse, w: NameDef,
                  masks: dict[str, list[NameDef]]) -> None:
    """A call of the wrapper ``w`` with ``u.arg`` as its mask: a finding for a 32-bit
    literal or a name defined as a 32-bit mask; nothing for any other name.
    """
    what = u.arg
    if not what.lower().startswith("0x"):
        if what not in masks:
            return
        d = _nearest(masks[what], u.path)
        what = f"{what} ({d.value} at {d.path}:{d.line})"
    hit(WARP_MASK, u.path, f"{what} passed to {u.name} (its mask reaches {w.value} at "
        f"{w.path}:{w.line})", u.line, u.column)


def _finding(rule: Rule, path: str, subject: str, at: list[tuple[int, int]]) -> Finding:
    first = min(at)
    lines = sorted({line for line, _col in at})
    return Finding(kind=rule.kind, rule=rule.rule, verdict=rule.verdict, subject=subject,
                   path=path, line=first[0], column=first[1],
                   lines=lines if len(lines) > 1 else [], why=rule.why, todo=rule.todo,
                   replacement=rule.replacement, citation=rule.citation)
