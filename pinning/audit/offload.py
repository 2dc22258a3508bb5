"""Clang offload bundles: the gfx targets a ``.hip_fatbin`` section's HIP code objects are
built for, read from its bytes alone (bounded in entries and inflated bytes).

A ``.hip_fatbin`` section holds clang offload bundles: the magic ``__CLANG_OFFLOAD_BUNDLE__``
(24 bytes), a little-endian u64 entry count, then per entry u64 offset, u64 size, u64 ID length
and the bundle entry ID ``<offload-kind>-<target-triple>[-<target-id>]``
(``hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-``); a compressed bundle starts with
``CCOB``, a u16 version and a u16 method, and its header is 20 (v1), 24 (v2) or 32 (v3) bytes
(``llvm/llvm-project@058ec5f2:clang/docs/ClangOffloadBundler.rst``).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

__all__ = ["Bundle", "iter_targets", "read_bundles"]

MAX_INFLATED_HEADER = 1024 * 1024
"""The most bytes of a compressed bundle inflated: its entry table is at the start (1 MiB)."""

MAX_ENTRIES = 4096
"""Bundles claiming more entries are treated as corrupt."""

MAX_TOTAL_ENTRIES = 65_536
"""The most bundle entries examined in one ``.hip_fatbin`` section, all bundles together."""

MAX_INFLATED_TOTAL = 16 * 1024 * 1024
"""The most bytes inflated from the compressed bundles of one section (16 MiB)."""

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"
HIP_ALIGN = 4096  # HIPCodeObjectAlign in CGCUDANV.cpp: each bundle starts on a 4 KiB boundary


class Bundle:
    """What the ``.hip_fatbin`` section said: targets found, why they are unknown, and why
    the list may be incomplete (a cap reached).
    """

    def __init__(self) -> None:
        self.targets: list[str] = []
        self.unknown: str | None = None
        self.incomplete: str | None = None


class _Budget:
    """What one section may still cost: bundle entries examined, bytes inflated."""

    def __init__(self) -> None:
        self.entries = MAX_TOTAL_ENTRIES
        self.inflated = MAX_INFLATED_TOTAL


class _Corrupt(ValueError):
    """A bundle that cannot be read; ``end`` is how far (from the bundle start) it was read."""

    def __init__(self, reason: str, end: int) -> None:
        super().__init__(reason)
        self.end = end


class _OverBudget(Exception):
    """The section's entry or inflation budget is spent; the reason, one line."""


def read_bundles(data: bytes, bundle: Bundle) -> None:
    """Add the targets of every offload bundle in the section ``data`` to ``bundle``.

    One forward pass, linear in ``len(data)``: each bundle is parsed once from its header
    and the walk resumes after what it covers (its entry table and the code objects its
    entries point at), so a magic inside an entry ID or a code object is never parsed. A
    compressed bundle is looked for on each 4 KiB boundary. At most
    :data:`MAX_TOTAL_ENTRIES` entries and :data:`MAX_INFLATED_TOTAL` inflated bytes are
    examined; past that ``bundle.incomplete`` says so.
    """
    problems: list[str] = []
    budget = _Budget()
    pos, n = 0, len(data)
    aligned = 0  # the next 4 KiB boundary not yet checked for a compressed bundle
    try:
        while pos < n:
            plain = data.find(BUNDLE_MAGIC, pos)
            limit = plain if plain >= 0 else n
            aligned = max(aligned, -(-pos // HIP_ALIGN) * HIP_ALIGN)
            while aligned < limit and not data.startswith(COMPRESSED_MAGIC, aligned):
                aligned += HIP_ALIGN
            if aligned < limit:
                start = aligned
                covered = len(COMPRESSED_MAGIC)
                try:
                    bundle.targets += _compressed_targets(data, start, budget)[0]
                    covered = _compressed_size(data, start)
                except ValueError as exc:
                    problems.append(str(exc))
                pos = start + max(covered, len(COMPRESSED_MAGIC))
                aligned = start + HIP_ALIGN
            elif plain >= 0:
                try:
                    targets, end = _entry_targets(data, plain, budget)
                    bundle.targets += targets
                except _Corrupt as exc:
                    problems.append(str(exc))
                    end = exc.end
                pos = plain + max(end, len(BUNDLE_MAGIC))
            else:
                break
    except _OverBudget as exc:
        bundle.incomplete = str(exc)
    bundle.targets = sorted(set(bundle.targets))
    if not bundle.targets:
        bundle.unknown = (bundle.incomplete or (problems[0] if problems else None)
                          or "no clang offload bundle in .hip_fatbin")


def _entry_targets(data: bytes, start: int, budget: _Budget) -> tuple[list[str], int]:
    """The gfx target IDs of the uncompressed bundle at ``start`` of ``data`` and how many
    bytes from ``start`` it covers (its entry table, and the code objects its entries place
    inside ``data``). Raises :class:`_Corrupt` (with how far it read) for a bundle that
    cannot be read, :class:`_OverBudget` when the section's entry budget is spent.
    """
    pos = start + len(BUNDLE_MAGIC)
    end = len(BUNDLE_MAGIC)
    room = len(data) - start
    if pos + 8 > len(data):
        raise _Corrupt("an offload bundle header runs past the section (truncated)", end)
    (count,) = struct.unpack_from("<Q", data, pos)
    if count > MAX_ENTRIES:
        raise _Corrupt(f"an offload bundle claiming {count} entries (corrupt)", end + 8)
    pos += 8
    targets = []
    for _ in range(count):
        if budget.entries <= 0:
            raise _OverBudget(f"more than {MAX_TOTAL_ENTRIES} offload bundle entries in "
                              ".hip_fatbin; the rest were not read")
        budget.entries -= 1
        if pos + 24 > len(data):
            raise _Corrupt("an offload bundle header runs past the section (truncated)",
                           pos - start)
        offset, size, id_len = struct.unpack_from("<QQQ", data, pos)
        pos += 24
        if id_len > 1024 or pos + id_len > len(data):
            raise _Corrupt("an offload bundle entry ID runs past the section (truncated)",
                           pos - start)
        entry_id = data[pos:pos + id_len].decode("ascii", "replace")
        pos += id_len
        if offset + size <= room:
            end = max(end, offset + size)
        target = _target_of(entry_id)
        if target:
            targets.append(target)
    return targets, max(end, pos - start)


def _target_of(entry_id: str) -> str | None:
    """``hipv4-amdgcn-amd-amdhsa--gfx942:xnack-`` -> ``gfx942:xnack-``; ``None`` for the host
    entry or a non-AMDGPU entry.
    """
    kind, _, rest = entry_id.partition("-")
    if kind not in ("hip", "hipv4", "hcc") or not rest.startswith("amdgcn-amd-amdhsa"):
        return None
    target = rest.removeprefix("amdgcn-amd-amdhsa").lstrip("-")
    if target.startswith("unknown-"):  # a written-out fourth triple field
        target = target.removeprefix("unknown-")
    return target if target.startswith("gfx") else None


def _compressed_header(data: bytes, pos: int) -> tuple[int, int, int]:
    """``(version, method, header size)`` of the compressed bundle at ``pos``; ``ValueError``
    for a truncated header or an unknown version.
    """
    try:
        version, method = struct.unpack_from("<HH", data, pos + 4)
    except struct.error:
        raise ValueError("a compressed offload bundle header (truncated)") from None
    header = {1: 20, 2: 24, 3: 32}.get(version)
    if header is None:
        raise ValueError(f"a compressed offload bundle of unknown version {version}")
    return version, method, header


def _compressed_size(data: bytes, pos: int) -> int:
    """The bytes the compressed bundle at ``pos`` covers: its total size when the header
    records a plausible one (v2, v3), else its header.
    """
    version, _method, header = _compressed_header(data, pos)
    if version == 1 or pos + header > len(data):
        return header
    (total,) = struct.unpack_from("<I" if version == 2 else "<Q", data, pos + 8)
    return int(total) if header <= total <= len(data) - pos else header


def _compressed_targets(data: bytes, pos: int, budget: _Budget) -> tuple[list[str], int]:
    """The targets of the compressed bundle at ``pos``: its first 64 KiB inflated, or up to
    :data:`MAX_INFLATED_HEADER` when the entry table runs past them.
    """
    want = 64 * 1024
    while True:
        inflated = _inflate(data, pos, budget, want)
        if not inflated.startswith(BUNDLE_MAGIC):
            raise ValueError("a compressed bundle that inflates to no offload bundle")
        try:
            return _entry_targets(inflated, 0, budget)
        except _Corrupt:
            if len(inflated) < want or want >= MAX_INFLATED_HEADER:
                raise
            want = MAX_INFLATED_HEADER


def _inflate(data: bytes, pos: int, budget: _Budget, want: int) -> bytes:
    """At most ``want`` bytes inflated from the compressed bundle at ``pos`` (its input
    limited to its recorded size and ``2 * want`` bytes); ``ValueError`` naming why they
    cannot be had with the standard library, :class:`_OverBudget` when the section's
    inflation budget (input read plus output) is spent.
    """
    version, method, header = _compressed_header(data, pos)
    if budget.inflated <= 0:
        raise _OverBudget(f"more than {MAX_INFLATED_TOTAL // (1024 * 1024)} MiB of compressed "
                          "offload bundles inflated in .hip_fatbin; the rest were not read")
    want = min(want, budget.inflated)
    total = _compressed_size(data, pos)
    stop = pos + total if total > header else len(data)
    feed = memoryview(data)[pos + header:min(stop, pos + header + 2 * want)]
    engine = zlib.decompressobj()
    try:
        out = engine.decompress(feed, want)
    except zlib.error:
        raise ValueError(f"a compressed offload bundle (CCOB version {version}, method "
                         f"{method}) that zlib cannot inflate (zstd needs a library the "
                         "standard library lacks); targets unknown") from None
    budget.inflated -= len(out) + len(feed) - len(engine.unconsumed_tail) + 1
    return out


def iter_targets(data: bytes) -> Iterator[str]:
    """The gfx target IDs of the offload bundles in a ``.hip_fatbin`` section's ``data``
    (sorted, unique); raises nothing (an unreadable bundle yields nothing).
    """
    bundle = Bundle()
    read_bundles(data, bundle)
    yield from bundle.targets
