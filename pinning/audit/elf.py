"""Compiled extensions: the device code an ELF shared object carries, read with pyelftools.

CUDA device code sits in the ELF section ``.nv_fatbin`` (``__nv_relfatbin`` for relocatable
device code), its wrapper in ``.nvFatBinSegment`` and, with ``-rdc``, a module id in
``__nv_module_id``; HIP device code sits in ``.hip_fatbin`` (wrapper ``.hipFatBinSegment``)
(``llvm/llvm-project@02c30bce:clang/lib/CodeGen/CGCUDANV.cpp``, ``makeModuleCtorFunction``).
nvcc links cudart statically by default, so ``DT_NEEDED`` alone misses CUDA code: the section
is the evidence, the needed libraries only add to it. The offload bundles of ``.hip_fatbin``
are read by :mod:`pinning.audit.offload`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from pinning.audit.model import (
    CPP_EXTENSION,
    Citation,
    Context,
    FileScan,
    Finding,
    Kind,
    Skip,
    Verdict,
)
from pinning.audit.offload import Bundle, read_bundles

MAX_ELF_BYTES = 4 * 1024 * 1024 * 1024
"""The largest file opened as an ELF (4 GiB); only headers and the bundle section are read."""

MAX_BUNDLE_READ = 64 * 1024 * 1024
"""The most bytes of a ``.hip_fatbin`` section read to find offload bundles (64 MiB)."""

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
                     "ROCm", REBUILD + "; link the HIP/ROC equivalents", CPP_EXTENSION))
    if any(s in sections for s in HIP_SECTIONS):
        add(_hip_finding(bundle, display, package, ctx))
    elif hip_libs and not cuda_secs:
        add(_finding("extension.hip-library", Verdict.READY,
                     f"DT_NEEDED {', '.join(hip_libs)}", display, package,
                     "the extension is linked against HIP/ROCm libraries and carries no CUDA "
                     "device code", "nothing to port", CPP_EXTENSION))
    return scan


def _finding(rule: str, verdict: Verdict, subject: str, display: str, package: str | None,
             why: str, todo: str, citation: Citation) -> Finding:
    return Finding(kind=Kind.EXTENSION, rule=rule, verdict=verdict, subject=subject,
                   path=display, package=package, why=why, todo=todo, citation=citation)


def _lib_key(soname: str) -> str:
    """``libcublasLt.so.12`` -> ``libcublaslt``."""
    return soname.split(".so", 1)[0].lower()


def _read_elf(stream: BinaryIO) -> tuple[set[str], list[str], Bundle]:
    """``(section names, DT_NEEDED names, HIP bundle)`` of the ELF in ``stream``."""
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(stream)
    names: set[str] = set()
    needed: list[str] = []
    bundle = Bundle()
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
    read_bundles(data, bundle)
    if int(hip["sh_size"]) > MAX_BUNDLE_READ and bundle.incomplete is None:
        bundle.incomplete = (f"the .hip_fatbin section is larger than "
                             f"{MAX_BUNDLE_READ // (1024 * 1024)} MiB; only its start was read")
    return names, needed, bundle


def _hip_finding(bundle: Bundle, display: str, package: str | None, ctx: Context) -> Finding:
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
