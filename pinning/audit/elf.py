"""Compiled extensions: the device code an ELF shared object carries, read with pyelftools.

CUDA device code sits in the ELF section ``.nv_fatbin`` (``__nv_relfatbin`` for relocatable
device code), its wrapper in ``.nvFatBinSegment`` and, with ``-rdc``, a module id in
``__nv_module_id``; HIP device code sits in ``.hip_fatbin`` (wrapper ``.hipFatBinSegment``)
(``llvm/llvm-project@02c30bce:clang/lib/CodeGen/CGCUDANV.cpp``, ``makeModuleCtorFunction``).
nvcc links cudart statically by default, so ``DT_NEEDED`` alone misses CUDA code: the section
is the evidence, the needed libraries only add to it.

A ``.hip_fatbin`` section holds clang offload bundles: the magic ``__CLANG_OFFLOAD_BUNDLE__``
(24 bytes), a little-endian u64 entry count, then per entry u64 offset, u64 size, u64 ID length
and the bundle entry ID ``<offload-kind>-<target-triple>[-<target-id>]``
(``hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-``); a compressed bundle starts with
``CCOB``, a u16 version and a u16 method, and its header is 20 (v1), 24 (v2) or 32 (v3) bytes
(``llvm/llvm-project@058ec5f2:clang/docs/ClangOffloadBundler.rst``).
"""

from __future__ import annotations

import os
import stat
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pinning.audit.model import (
    Citation,
    Context,
    FileScan,
    Finding,
    Kind,
    Skip,
    Verdict,
)

MAX_ELF_BYTES = 4 * 1024 * 1024 * 1024
"""The largest file opened as an ELF (4 GiB); only headers and the bundle section are read."""

MAX_BUNDLE_READ = 64 * 1024 * 1024
"""The most bytes of a ``.hip_fatbin`` section read to find offload bundles (64 MiB)."""

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

CUDA_SECTIONS = (".nv_fatbin", "__nv_relfatbin", ".nvFatBinSegment", "__nv_module_id")
HIP_SECTIONS = (".hip_fatbin", ".hipFatBinSegment")

CUDA_LIBRARIES = frozenset({
    "libcudart", "libcuda", "libcublas", "libcublaslt", "libcudnn", "libnccl", "libnvrtc",
    "libcufft", "libcurand", "libcusparse", "libcusolver", "libnvtoolsext", "libnvjitlink",
    "libnvidia-ml", "libcupti", "libnvinfer", "libcufile", "libnvshmem_host",
})
HIP_LIBRARIES = frozenset({
    "libamdhip64", "librocblas", "libhipblas", "libhipblaslt", "libmiopen", "librccl",
    "libhiprtc", "librocfft", "libhipfft", "librocrand", "libhiprand", "librocsparse",
    "libhipsparse", "librocsolver", "libhipsolver", "libroctx64", "libamd_smi",
})

_CGCUDANV = Citation(
    source="llvm/llvm-project@02c30bce9088ce61a8f09e02c62215c75f791e3c:"
           "clang/lib/CodeGen/CGCUDANV.cpp",
    published_unknown="the source file carries no date; the commit was read from a code "
                      "index without its commit date")
_BUNDLER = Citation(
    source="llvm/llvm-project@058ec5f27d5cf91558c90178adc1833d8faa8894:"
           "clang/docs/ClangOffloadBundler.rst",
    published_unknown="the page carries no date; the commit was read from a code index "
                      "without its commit date")
_CPP_EXTENSION = Citation(
    source="pytorch/pytorch@0011ec5c5d6171a395bb339b873343a4cdfebd18:"
           "torch/utils/cpp_extension.py",
    published_unknown="the source file carries no date; the commit was read from a code "
                      "index without its commit date")

REBUILD = "rebuild from source for ROCm (hipcc / torch cpp_extension on a ROCm build)"


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading without blocking; :class:`Skip` unless a regular file of
    at most :data:`MAX_ELF_BYTES`.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise Skip(f"cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Skip("not a regular file")
        if st.st_size > MAX_ELF_BYTES:
            raise Skip("larger than 4 GiB")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def scan_elf(path: Path, display: str, ctx: Context, *, package: str | None = None) -> FileScan:
    """The device code of the ELF file ``path`` (shown as ``display``) as findings of kind
    ``extension``; ``package`` names the distribution the file belongs to.

    Rules: ``extension.cuda-device-code`` (a CUDA fat binary section: port),
    ``extension.cuda-library`` (``DT_NEEDED`` CUDA libraries: port),
    ``extension.hip-code-object`` (HIP code objects for the listed gfx targets: ready),
    ``extension.no-code-object`` (none for ``ctx.gfx_targets``: port),
    ``extension.hip-targets-unknown`` (a bundle that cannot be read: no-data),
    ``extension.hip-library`` (HIP libraries needed, no device code: ready).
    Raises :class:`Skip` for a file that is not a regular file, not an ELF file, or a
    truncated or corrupt ELF file; never anything else.
    """
    with _open_regular(path) as stream:
        if stream.read(4) != b"\x7fELF":
            raise Skip("not an ELF file")
        stream.seek(0)
        try:
            sections, needed, bundle = _read_elf(stream)
        except Skip:
            raise
        except Exception as exc:  # pyelftools raises many types on bad input
            raise Skip(f"corrupt or truncated ELF file ({type(exc).__name__}: "
                       f"{str(exc)[:200]})") from None
    scan = FileScan()
    add = scan.findings.append
    cuda_secs = [s for s in CUDA_SECTIONS if s in sections]
    cuda_libs = sorted(n for n in needed if _lib_key(n) in CUDA_LIBRARIES)
    hip_libs = sorted(n for n in needed if _lib_key(n) in HIP_LIBRARIES)
    if cuda_secs:
        add(_finding("extension.cuda-device-code", Verdict.PORT,
                     f"CUDA device code ({', '.join(cuda_secs)})", display, package,
                     "the extension carries CUDA device code (an NVIDIA fat binary), which "
                     "runs only on NVIDIA GPUs", REBUILD, _CGCUDANV))
    if cuda_libs:
        add(_finding("extension.cuda-library", Verdict.PORT,
                     f"DT_NEEDED {', '.join(cuda_libs)}", display, package,
                     "the extension is linked against CUDA libraries that do not exist on "
                     "ROCm", REBUILD + "; link the HIP/ROC equivalents", _CPP_EXTENSION))
    if ".hip_fatbin" in sections or ".hipFatBinSegment" in sections:
        add(_hip_finding(bundle, display, package, ctx))
    elif hip_libs and not cuda_secs:
        add(_finding("extension.hip-library", Verdict.READY,
                     f"DT_NEEDED {', '.join(hip_libs)}", display, package,
                     "the extension is linked against HIP/ROCm libraries and carries no CUDA "
                     "device code", "nothing to port", _CPP_EXTENSION))
    return scan


def _finding(rule: str, verdict: Verdict, subject: str, display: str, package: str | None,
             why: str, todo: str, citation: Citation) -> Finding:
    return Finding(kind=Kind.EXTENSION, rule=rule, verdict=verdict, subject=subject,
                   path=display, package=package, why=why, todo=todo, citation=citation)


def _lib_key(soname: str) -> str:
    """``libcublasLt.so.12`` -> ``libcublaslt``."""
    return soname.split(".so", 1)[0].lower()


class _Bundle:
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


def _read_elf(stream: BinaryIO) -> tuple[set[str], list[str], _Bundle]:
    """``(section names, DT_NEEDED names, HIP bundle)`` of the ELF in ``stream``."""
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(stream)
    names: set[str] = set()
    needed: list[str] = []
    bundle = _Bundle()
    for section in elf.iter_sections():
        names.add(section.name)
        if isinstance(section, DynamicSection):
            needed += [str(getattr(tag, "needed", "")) for tag in section.iter_tags()
                       if tag.entry.d_tag == "DT_NEEDED"]
    hip = elf.get_section_by_name(".hip_fatbin")
    if hip is None:
        if ".hipFatBinSegment" in names:
            bundle.unknown = ("only the .hipFatBinSegment wrapper is present; the bundle lives "
                              "in another file (relocatable device code)")
        return names, needed, bundle
    if hip["sh_type"] == "SHT_NOBITS" or hip["sh_size"] == 0:
        bundle.unknown = "the .hip_fatbin section is empty"
        return names, needed, bundle
    size = min(int(hip["sh_size"]), MAX_BUNDLE_READ)
    stream.seek(int(hip["sh_offset"]))
    data = stream.read(size)
    if len(data) < size:
        raise Skip("truncated ELF file (the .hip_fatbin section runs past the end)")
    _read_bundles(data, bundle)
    if int(hip["sh_size"]) > MAX_BUNDLE_READ and bundle.incomplete is None:
        bundle.incomplete = (f"the .hip_fatbin section is larger than "
                             f"{MAX_BUNDLE_READ // (1024 * 1024)} MiB; only its start was read")
    return names, needed, bundle


def _read_bundles(data: bytes, bundle: _Bundle) -> None:
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


def _hip_finding(bundle: _Bundle, display: str, package: str | None, ctx: Context) -> Finding:
    if bundle.unknown is not None:
        return _finding("extension.hip-targets-unknown", Verdict.NO_DATA,
                        "HIP device code (.hip_fatbin), targets unknown", display, package,
                        f"the offload bundle could not be read: {bundle.unknown}",
                        "list its targets with `clang-offload-bundler --list` or "
                        "`roc-obj-ls`", _BUNDLER)
    listed = ", ".join(bundle.targets)
    wanted = set(ctx.gfx_targets)
    missing = bool(wanted and not wanted & {t.split(":", 1)[0] for t in bundle.targets})
    if missing and bundle.incomplete is not None:  # the target may be in the unread rest
        return _finding("extension.hip-targets-unknown", Verdict.NO_DATA,
                        f"HIP device code for {listed} and more", display, package,
                        f"only part of the offload bundles could be read "
                        f"({bundle.incomplete}); those read hold {listed}",
                        "list its targets with `clang-offload-bundler --list` or "
                        "`roc-obj-ls`", _BUNDLER)
    if missing:
        gpu = ctx.gpu_name or "the target GPU"
        want = ", ".join(ctx.gfx_targets)
        return _finding("extension.no-code-object", Verdict.PORT,
                        f"HIP device code for {listed}", display, package,
                        f"has no {want} code object: built only for {listed}, so it cannot "
                        f"load on {gpu}",
                        f"rebuild with PYTORCH_ROCM_ARCH={';'.join(ctx.gfx_targets)} "
                        f"(--offload-arch={want})", _BUNDLER)
    partial = f" (and perhaps more: {bundle.incomplete})" if bundle.incomplete else ""
    return _finding("extension.hip-code-object", Verdict.READY,
                    f"HIP device code for {listed}", display, package,
                    f"the extension carries HIP code objects for {listed}{partial}",
                    "nothing to port", _BUNDLER)


def iter_targets(data: bytes) -> Iterator[str]:
    """The gfx target IDs of the offload bundles in a ``.hip_fatbin`` section's ``data``
    (sorted, unique); raises nothing (an unreadable bundle yields nothing).
    """
    bundle = _Bundle()
    _read_bundles(data, bundle)
    yield from bundle.targets
