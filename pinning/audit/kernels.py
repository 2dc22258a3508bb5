"""The CUDA / C++ source scanner of ``pin audit``: the porting bill for custom kernels.

Three entry points share one engine: :func:`scan_source` (``.cu``, ``.cuh`` and C/C++ sources
and headers), :func:`scan_cmake` (``CMakeLists.txt``, ``*.cmake``) and :func:`scan_cuda_text`
(kernel source embedded in Python, e.g. a ``cupy.RawKernel`` string).

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
the first occurrence, ``lines`` all of them):

* CUDA API identifiers classified with HIPIFY's published tables
  (:func:`pinning.audit.hipify.lookup`): a HIP equivalent with another name is ``swap``; a
  HIP equivalent that HIP deprecated, removed or marks experimental is ``port``; no HIP
  equivalent (empty HIP cell) is ``port`` too, not ``blocked``: one identifier without an
  equivalent costs a local rewrite around one call (another API, a HIP-side emulation or
  dropping a feature query), it does not stop the move on its own; what does stop it (inline
  PTX, tensor-core PTX, TMA, dynamic parallelism, CUTLASS / TensorRT) has its own ``blocked``
  rules. Identifiers whose HIP name is the same and current (``__syncthreads``,
  ``__shfl_down_sync`` since HIP 6.2) compile as they are and are not reported. Only names in
  CUDA's namespaces are looked up (``cuda*``, ``cu[A-Z]*``, ``cublas*`` ... ``CU*``,
  ``nvrtc*``, ``make_cu*``, ``__*``): the tables also list bare device names (``umax``,
  ``saturate``, ``fdivide``) that collide with user code and are left out.
* What HIPIFY does not catch (HIP's porting guide, FAQ and kernel language reference, AMD's GPU
  specifications, the rocWMMA and Composable Kernel documentation): inline PTX, 32-bit lane
  masks and hard-coded warp size 32 (wrong results on wave64 GPUs), tensor-core intrinsics,
  ``__CUDA_ARCH__``, ``--maxregcount``, CUDA libraries with and without a ROCm equivalent,
  dynamic parallelism (a launch inside a ``__global__`` function).
* CMake: the CUDA language, FindCUDA / CUDAToolkit, ``CUDA_ARCHITECTURES``, ``-arch=sm_XX`` /
  ``-gencode``, ``--maxregcount``.

Every pattern here is linear (checked by ``tests/unit/util/test_regex.py``).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pinning.audit import hipify
from pinning.audit.files import read_text
from pinning.audit.model import Citation, Context, FileScan, Finding, Kind, Verdict

__all__ = ["scan_cmake", "scan_cuda_text", "scan_source"]

# -- sources -----------------------------------------------------------------------------------

_UNDATED = "the file carries no date; read at the commit named"
PORTING_GUIDE = Citation(
    source="ROCm/HIP@09e54c6b66d7ce09c3d287488721d27fc3d6133b:docs/how-to/hip_porting_guide.rst",
    published_unknown=_UNDATED)
"""HIP's porting guide: sections warpSize ("Code should not assume a warp size of 32 or
64"), ``__CUDA_ARCH__`` (use ``__HIP_DEVICE_COMPILE__`` / ``__HIP_ARCH_HAS_<FEATURE>__``) and
maxregcount (``amdclang++`` does not support ``--maxregcount``)."""
FAQ = Citation(source="ROCm/HIP@17cb54c0ad734aa83b74a9a2381f9d2039fa72ad:docs/how-to/faq.md",
               published_unknown=_UNDATED)
"""HIP's FAQ: "PTX assembly" and "Dynamic parallelism" are not supported (HIP-Clang takes
inline GCN assembly); HIP's 64-bit wave size "expands the return type for cross-lane
functions like ballot and shuffle from 32-bit integers to 64-bit integers"."""
KERNEL_LANGUAGE = Citation(
    source="ROCm/HIP@814ac15c86e21fb2b1fed499ce797633842ec3a8:docs/reference/kernel_language.rst",
    published_unknown=_UNDATED)
"""HIP's kernel language reference: ``warpSize`` ("AMD devices return 64 for gfx9 and 32 for
gfx10 and above"); warp cross-lane functions: "All mask values either returned or accepted by
these builtins are 64-bit unsigned integer values", the ``_sync`` variants "are made available
in ROCm 6.2, but disabled by default" (``HIP_ENABLE_WARP_SYNC_BUILTINS``), "enabled
unconditionally in ROCm 6.3", with a static assert on the mask type; ``__ballot`` and
``__activemask`` return 64 bits; "HIP does not support kernel language warp matrix types or
functions"; no dynamic parallelism."""
GPU_SPECS = Citation(
    source="https://rocmdocs.amd.com/en/develop/reference/gpu-arch-specs.html",
    published=dt.date(2026, 2, 20))
"""AMD's GPU hardware specifications table: wavefront size 64 for MI355X / MI350X (CDNA4,
gfx950), MI325X / MI300X / MI300A (CDNA3, gfx942) and MI250X / MI250 / MI210 (CDNA2, gfx90a).
The page shows the date 2026-02-20."""
ROCWMMA = Citation(
    source="https://rocm.docs.amd.com/projects/rocWMMA/en/docs-6.3.2/what-is-rocwmma.html",
    published_unknown="the versioned page (rocWMMA documentation for ROCm 6.3.2) carries no "
                      "date")
"""rocWMMA: a C++ header library for mixed-precision matrix multiply-accumulate on AMD's GPU
matrix cores, "portable with the Nvidia nvcuda::wmma library, allowing those users to easily
migrate to the AMD platform"."""
COMPOSABLE_KERNEL = Citation(
    source="https://rocm.docs.amd.com/projects/composable_kernel/en/docs-6.0.2/what-is-ck.html",
    published_unknown="the versioned page (Composable Kernel documentation for ROCm 6.0.2) "
                      "carries no date")
"""Composable Kernel: "a programming model for writing performance critical kernels for
machine learning workloads across multiple architectures including GPUs and CPUs, through
general purpose kernel languages like HIP C++" (tile-based)."""
HIPIFY_DRIVER = Citation(
    source="ROCm/HIPIFY@c62f16a4dc051be4532c3d41aaf08d43ddff3a01:"
           "docs/reference/tables/CUDA_Driver_API_functions_supported_by_HIP.md",
    published=dt.date(2025, 8, 4))
"""HIPIFY's Driver API table: the ``cuTensorMapEncode*`` rows have an empty HIP cell (no HIP
equivalent). Used when the shipped HIPIFY data has no row for the identifier."""
ROCM_LIBRARIES = Citation(
    source="https://rocm.docs.amd.com/en/docs-7.1.0/reference/api-libraries.html",
    published_unknown="a versioned documentation page (ROCm 7.1.0) that carries no date")
"""The ROCm libraries list (hipBLAS, hipBLASLt, hipFFT, hipSPARSE, hipSOLVER, hipRAND, hipCUB,
rocThrust, MIOpen, RCCL ...), which HIP's porting guide ("Library equivalents") points to."""
CMAKE_HIP = Citation(
    source="https://cmake.org/cmake/help/latest/variable/CMAKE_HIP_ARCHITECTURES.html",
    published_unknown="the CMake documentation page carries no date (added in CMake 3.21)")
"""CMake's HIP language: ``CMAKE_HIP_ARCHITECTURES`` lists the gfx targets to build for."""

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
    r"|a(?<!\w.)sm(?!\w)(?P<asm>)"
    r"|n(?<!\w.)(?:vrtc\w*+(?P<id___>)|vcuda::wmma(?!\w)(?P<wmma>))"
    r"|m(?<!\w.)ake_cu\w*+(?P<id____>)"
    r"|C(?<!\w.)(?:U|u[A-Z])\w*+(?P<id_____>)"
    r"|/(?:/[^\n]*+(?P<lc>)|\*(?P<bc>)|[ \t]*+32(?![\w.])(?P<lane>))"
    r"|=[ \t]*+(?:16[ \t]*+;(?P<loop>)|(?:0[xX][fF]{8}(?![0-9a-fA-F])[uU]?[lL]{0,2}"
    r"|4294967295[uU]?|~[ \t]*+0[uU]?|-[ \t]*+1[uU]?)(?![\w.])(?P<mval>))"
    r'|"(?:[^"\\\n]|\\(?s:.))*+"?(?P<str>)'
    r"|\#[ \t]*+(?:include[ \t]*+[<\"][^>\"\n]{1,200}(?P<inc>)"
    r"|define[ \t]++\w++[ \t]++\(?(?:0x[fF]{8}[uU]?(?![0-9a-fA-F])|~0[uU]\b)(?P<mdef>))"
    r"|<<<++(?P<launch>)"
    r"|>>[ \t]*+5(?![\w.])(?P<lane_>)"
    r"|w(?:arp_?[sS]ize\w*+(?P<ws>)|(?<!\w.)mma::(?P<wmma_>))"
    r"|W(?i:arp_?size)\w*+(?P<ws_>)"
    r"|&[ \t]*+(?:31|0x1[fF])(?![\w.])(?P<lane__>)"
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

_CMAKE = re.compile(
    r"(?P<lc>\#[^\n]*+)"
    r"|(?P<proj>[pP](?<![\w.].)(?i:roject)[ \t]*+\()"
    r"|(?P<lang>[eE](?<![\w.].)(?i:nable_language)[ \t]*+\([ \t]*+CUDA\b)"
    r"|(?P<fpkg>[fF](?<![\w.].)(?i:ind_package)[ \t]*+\([ \t]*+CUDA(?:Toolkit)?\b)"
    r"|(?P<cadd>[cC](?<![\w.].)(?i:uda_add_(?:library|executable))\b)"
    r"|(?P<carch>C(?<!\w.)(?:MAKE_CUDA|UDA)_ARCHITECTURES\b)"
    r"|(?P<sm>-(?<![\w-].)-?(?:arch|gpu-architecture)[= \t]++(?:sm|compute)_\d{2,3}[a-z]?"
    r"|-(?<![\w-].)-?gencode\b)"
    r"|(?P<mrc>-(?<![\w-].)-?maxregcount)"
)

# Secondary patterns, each tried with ``.match`` at one position a master match gave.
_MASK_ARG = re.compile(
    r"[ \t]*+\([ \t\r\n]*+(?:0x[fF]{8}(?![0-9a-fA-F])[uU]?[lL]{0,2}|~[ \t]*+0[uU]?(?![\w.])"
    r"|4294967295[uU]?|-[ \t]*+1[uU]?(?![\w.])"
    r"|\([ \t]*+(?:unsigned(?:[ \t]++int)?|(?:std::)?uint32_t)[ \t]*+\)[ \t]*+-[ \t]*+1"
    r"|(?:std::)?uint32_t\([ \t]*+-[ \t]*+1[ \t]*+\)"
    r"|static_cast[ \t]*+<[ \t]*+(?:unsigned(?:[ \t]++int)?|(?:std::)?uint32_t)[ \t]*+>"
    r"[ \t]*+\([ \t]*+-[ \t]*+1[ \t]*+\)"
    r"|(?P<name>[A-Za-z_]\w*+))[ \t\r\n]*+,")
_WS_TAIL = re.compile(r"[ \t]*+(?:[=!]=|=)?[ \t]*+\(?32(?![\w.])")
_AMASK_COMPARE = re.compile(
    r"[ \t]*+\([ \t]*+\)[ \t]*+[=!]=[ \t]*+(?:0x[fF]{8}[uU]?(?![0-9a-fA-F])|~0[uU]\b)")
_ASM_QUALIFIERS = re.compile(
    r"[ \t\r\n]*+(?:(?:volatile|__volatile__|goto|inline)[ \t\r\n]*+)*+\(")
_PTX_HINT = re.compile(r"\b(?:mov|ld|st|cvt|mma|wgmma|shfl|cp|bar|atom|red|vote|fma|add|mul|"
                       r"prmt|lop3|ldmatrix|stmatrix|setp|selp|bfe|bfi)\.[a-z]")
_PTX_TENSOR = re.compile(r"\b(?:wgmma\.\w++|mma\.sync|cp\.async(?:\.bulk(?:\.tensor)?)?)")
_LOOP_TAIL = re.compile(r"[^;)\n]{0,80};[^)\n]{0,80}(?:/=[ \t]*+2\b|>>=[ \t]*+1\b)")
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*+(?=\n)")
_BRACES = re.compile(r"[{}/\"']")
_HEAD_END = re.compile(r"[{;]")
_REV_OPERAND = re.compile(r"[ \t]*+(?:\)([^(]{0,160})\(|([\w.]++))")
"""The operand left of an operator, read in the reversed text: a parenthesised expression
(group 1) or a word with its member accesses (group 2), both reversed."""
_LANE_WORD = re.compile(r"enal|dit|di_?daerht|sdaerht|midkcolb", re.IGNORECASE)
"""Operand words of lane / warp arithmetic, reversed (searched in a reversed operand): a lane
or thread index (``lane``, ``tid``, ``threadIdx``, ``thread_id``), and thread counts
(``threads``, ``blockDim``: ``kNThreads / 32`` is a warp count that assumes 32 lanes)."""
_ASM_TOKENS = re.compile(r'[();]|"(?:[^"\\\n]|\\(?s:.))*+"?')
_LITERAL_REST = {'"': re.compile(r'(?:[^"\\\n]|\\(?s:.))*+"?'),
                 "'": re.compile(r"(?:[^'\\\n]|\\(?s:.))*+'?")}

_ASM_EXTENT = 4000
"""How far an ``asm`` statement is read for its PTX (characters): to the ``)`` that closes
it, or to a ``;`` outside its strings (an unclosed statement), or this far."""
_LOOK_BACK = 200
"""How far a rule looks left of a match (characters): the declaration before ``=``, the
operand before ``& 31``, the ``for (`` before ``= 16;``. Bounded so that every handler costs
a constant and a file's scan stays linear in its size."""
_CUDA_SUFFIXES = frozenset({".cu", ".cuh"})


# -- findings, aggregated per (rule, subject) --------------------------------------------------

@dataclass(frozen=True)
class _Rule:
    rule: str
    kind: Kind
    verdict: Verdict
    why: str
    todo: str
    citation: Citation
    replacement: str | None = None


class _Hits:
    """The findings of one text: one entry per (rule, subject) with the offsets it occurs at;
    offsets become 1-based lines and columns once, in :meth:`findings`.
    """

    def __init__(self, text: str, display: str, line_offset: int) -> None:
        self.text = text
        self.display = display
        self.offset = line_offset
        self.found: dict[tuple[str, str], tuple[_Rule, list[int]]] = {}

    def add(self, rule: _Rule, subject: str, offset: int) -> None:
        got = self.found.get((rule.rule, subject))
        if got is None:
            self.found[(rule.rule, subject)] = (rule, [offset])
        else:
            got[1].append(offset)

    def _positions(self) -> dict[int, tuple[int, int]]:
        text = self.text
        out: dict[int, tuple[int, int]] = {}
        line, last, line_start = 1 + self.offset, 0, 0
        for offset in sorted({o for _, offsets in self.found.values() for o in offsets}):
            newlines = text.count("\n", last, offset)
            if newlines:
                line += newlines
                line_start = text.rfind("\n", last, offset) + 1
            last = offset
            out[offset] = (line, offset - line_start + 1)
        return out

    def findings(self) -> list[Finding]:
        at = self._positions()
        out = []
        for (_rule_id, subject), (rule, offsets) in self.found.items():
            first = min(offsets)
            lines = sorted({at[o][0] for o in offsets})
            out.append(Finding(
                kind=rule.kind, rule=rule.rule, verdict=rule.verdict, subject=subject,
                path=self.display, line=at[first][0], column=at[first][1],
                lines=lines if len(lines) > 1 else [], why=rule.why, todo=rule.todo,
                replacement=rule.replacement, citation=rule.citation))
        out.sort(key=lambda f: (f.line or 0, f.column or 0, f.rule, f.subject))
        return out


# -- fixed rules -------------------------------------------------------------------------------

_WAVE64 = ("AMD Instinct MI200, MI300 and MI350 GPUs (gfx90a, gfx942, gfx950) have a "
           "wavefront size of 64, so code that assumes 32 lanes computes wrong results there")
_GFX9 = ("HIP's warpSize is 64 on gfx9 targets (gfx90a, gfx942, gfx950) and its lane masks are "
         "64-bit")
INLINE_PTX = _Rule(
    "kernel.inline-ptx", Kind.INLINE_PTX, Verdict.BLOCKED,
    "Inline PTX assembly is not supported by HIP-Clang (it takes inline GCN assembly only).",
    "Rewrite the asm block with HIP intrinsics, plain C++ or AMDGPU inline assembly.", FAQ)
WARP_MASK = _Rule(
    "kernel.warp-mask", Kind.WARP_SIZE, Verdict.PORT,
    f"A 32-bit lane mask passed to a *_sync function: {_GFX9}, so the mask leaves out "
    "lanes 32-63.",
    "Pass a 64-bit mask (__activemask(), or ~0ull / 0xffffffffffffffff): HIP's *_sync "
    "functions take an unsigned long long mask (ROCm 6.2 needs HIP_ENABLE_WARP_SYNC_BUILTINS; "
    "ROCm 6.3 and later enable them).", KERNEL_LANGUAGE)
WARP_MASK_STORE = _Rule(
    "kernel.warp-mask-store", Kind.WARP_SIZE, Verdict.PORT,
    f"A ballot / active mask kept in or compared with 32 bits loses lanes 32-63: {_GFX9} "
    "(__ballot and __activemask return 64 bits).",
    "Keep lane masks in unsigned long long (uint64_t) and compare with 64-bit constants.",
    KERNEL_LANGUAGE)
WARP_SIZE = _Rule(
    "kernel.warp-size", Kind.WARP_SIZE, Verdict.PORT,
    f"A hard-coded warp size of 32: {_WAVE64}.",
    "Use the warpSize built-in in device code (query it from the device properties on the "
    "host) instead of the constant 32.", GPU_SPECS)
LANE_ARITH = _Rule(
    "kernel.lane-arith", Kind.WARP_SIZE, Verdict.PORT,
    f"Lane / warp index arithmetic that assumes 32 lanes (& 31, % 32, / 32, >> 5): {_WAVE64}.",
    "Compute lane and warp ids from warpSize (tid % warpSize, tid / warpSize).",
    GPU_SPECS)
WARP_LOOP = _Rule(
    "kernel.warp-loop", Kind.WARP_SIZE, Verdict.PORT,
    f"A shuffle-reduction loop starting at offset 16 covers 32 lanes only: {_WAVE64}.",
    "Start the loop at warpSize / 2.", GPU_SPECS)
WMMA = _Rule(
    "kernel.tensor-core.wmma", Kind.TENSOR_CORE, Verdict.PORT,
    "nvcuda::wmma is CUDA's warp matrix API; on AMD GPUs the matrix cores are reached through "
    "rocWMMA, a library portable with nvcuda::wmma.",
    "Port the fragments to rocWMMA and retune the tile shapes for the target's matrix cores.",
    ROCWMMA, replacement="rocWMMA")
TENSOR_PTX = _Rule(
    "kernel.tensor-core.ptx", Kind.TENSOR_CORE, Verdict.BLOCKED,
    "Tensor-core PTX (mma.sync, wgmma, cp.async) lives in an inline PTX block (see "
    "kernel.inline-ptx); on AMD GPUs such kernels are written in HIP C++, e.g. on Composable "
    "Kernel.",
    "Rewrite the kernel in HIP C++ on Composable Kernel (tile-based kernels) or rocWMMA, or "
    "call a library kernel.", COMPOSABLE_KERNEL, replacement="Composable Kernel")
TMA = _Rule(
    "kernel.tensor-core.tma", Kind.TENSOR_CORE, Verdict.BLOCKED,
    "Tensor Memory Accelerator descriptors (cuTensorMapEncode*) have no HIP equivalent "
    "(HIPIFY's driver API table leaves the HIP cell empty).",
    "Rewrite the data movement without TMA (plain loads, or Composable Kernel's tile loads).",
    HIPIFY_DRIVER, replacement="Composable Kernel")
ARCH_MACRO = _Rule(
    "kernel.arch-macro", Kind.ARCH_MACRO, Verdict.PORT,
    "__CUDA_ARCH__ is undefined under HIP-Clang, so code guarded by it silently takes the "
    "other branch.",
    "Use __HIP_DEVICE_COMPILE__ for device-pass checks and __HIP_ARCH_HAS_<FEATURE>__ macros "
    "for feature checks.", PORTING_GUIDE, replacement="__HIP_DEVICE_COMPILE__")
MAXREGCOUNT = _Rule(
    "kernel.maxregcount", Kind.BUILD_HOOK, Verdict.PORT,
    "amdclang++ does not support nvcc's --maxregcount option.",
    "Drop the flag and bound registers per kernel with __launch_bounds__.", PORTING_GUIDE,
    replacement="__launch_bounds__")
DYNAMIC_PARALLELISM = _Rule(
    "kernel.dynamic-parallelism", Kind.CUDA_API, Verdict.BLOCKED,
    "A kernel launched from device code (dynamic parallelism) is not supported by HIP.",
    "Move the launch to the host (or flatten the work into the parent kernel).", FAQ)


@dataclass(frozen=True)
class _Library:
    name: str
    rocm: str | None
    verdict: Verdict
    note: str = ""


_LIBRARIES: dict[str, _Library] = {
    "cublas": _Library("cuBLAS", "hipBLAS / rocBLAS", Verdict.SWAP),
    "cublasLt": _Library("cuBLASLt", "hipBLASLt", Verdict.SWAP),
    "cufft": _Library("cuFFT", "hipFFT / rocFFT", Verdict.SWAP),
    "cusparse": _Library("cuSPARSE", "hipSPARSE / rocSPARSE", Verdict.SWAP),
    "cusolver": _Library("cuSOLVER", "hipSOLVER / rocSOLVER", Verdict.SWAP),
    "curand": _Library("cuRAND", "hipRAND / rocRAND", Verdict.SWAP),
    "cub": _Library("CUB", "hipCUB / rocPRIM", Verdict.SWAP),
    "thrust": _Library("Thrust", "rocThrust", Verdict.SWAP),
    "cudnn": _Library("cuDNN", "MIOpen", Verdict.SWAP),
    "nccl": _Library("NCCL", "RCCL", Verdict.SWAP),
    "cutlass": _Library("CUTLASS", None, Verdict.BLOCKED,
                        "Composable Kernel is the AMD alternative (a rewrite, not a swap)"),
    "cute": _Library("CuTe (CUTLASS)", None, Verdict.BLOCKED,
                     "Composable Kernel is the AMD alternative (a rewrite, not a swap)"),
    "tensorrt": _Library("TensorRT", None, Verdict.BLOCKED, "the ROCm libraries list has no "
                         "TensorRT equivalent"),
    "nvml": _Library("NVML", None, Verdict.BLOCKED,
                     "amdsmi is the AMD management library, with a different API"),
    "nvshmem": _Library("NVSHMEM", None, Verdict.BLOCKED,
                        "rocSHMEM is the AMD OpenSHMEM library, with a different API"),
}

# Header (as written in #include) or its first path segment -> library key.
_HEADERS: dict[str, str] = {
    "cublas_v2.h": "cublas", "cublas.h": "cublas", "cublas_api.h": "cublas",
    "cublasLt.h": "cublasLt", "cufft.h": "cufft", "cufftXt.h": "cufft",
    "cusparse.h": "cusparse", "cusparse_v2.h": "cusparse", "cusolverDn.h": "cusolver",
    "cusolverSp.h": "cusolver", "cusolverRf.h": "cusolver", "cusolver_common.h": "cusolver",
    "curand.h": "curand", "curand_kernel.h": "curand", "cudnn.h": "cudnn", "nccl.h": "nccl",
    "NvInfer.h": "tensorrt", "NvInferRuntime.h": "tensorrt", "NvInferPlugin.h": "tensorrt",
    "NvOnnxParser.h": "tensorrt", "nvml.h": "nvml", "nvshmem.h": "nvshmem",
    "nvshmemx.h": "nvshmem", "cub": "cub", "thrust": "thrust", "cutlass": "cutlass",
    "cute": "cute", "cufile.h": "cufile",
}


@functools.cache
def _library_rule(key: str) -> _Rule:
    if key == "cufile":
        entry = hipify.lookup("cuFileDriverOpen")
        citation = entry.citation if entry is not None else ROCM_LIBRARIES
        return _Rule("kernel.library.cufile", Kind.LIBRARY, Verdict.PORT,
                     "cuFile (GPUDirect Storage) is not in the ROCm libraries list; HIPIFY's "
                     "cuFile table maps it to hipFile in recent HIP versions.",
                     "Port the I/O path to hipFile where the target ROCm has it, or read "
                     "through host memory.", citation, replacement="hipFile")
    lib = _LIBRARIES[key]
    if lib.rocm is not None:
        return _Rule(f"kernel.library.{key.lower()}", Kind.LIBRARY, lib.verdict,
                     f"{lib.name} is CUDA-only; ROCm ships {lib.rocm}.",
                     f"Link {lib.rocm} instead (hipify translates most calls).",
                     ROCM_LIBRARIES, replacement=lib.rocm)
    return _Rule(f"kernel.library.{key.lower()}", Kind.LIBRARY, lib.verdict,
                 f"{lib.name} is NVIDIA-only and has no ROCm equivalent: {lib.note}.",
                 f"Replace what {lib.name} does here (a rewrite).", ROCM_LIBRARIES)


@functools.cache
def _tma_rule(identifier: str) -> _Rule:
    """:data:`TMA`, cited with HIPIFY's driver table row when it lists ``identifier``."""
    entry = hipify.lookup(identifier)
    if entry is None or entry.hip is not None:
        return TMA
    return _Rule(TMA.rule, TMA.kind, TMA.verdict, TMA.why, TMA.todo, entry.citation,
                 TMA.replacement)


# -- HIPIFY classification ---------------------------------------------------------------------

def _table_stem(table: str) -> str:
    stem = table.removesuffix(".md")
    for tail in ("_supported_by_HIP_and_MIOPEN", "_supported_by_MIOPEN", "_supported_by_HIP"):
        stem = stem.removesuffix(tail)
    return stem.lower().replace("_", "-")


@functools.cache
def _api_rule(identifier: str) -> _Rule | None:
    """The rule a CUDA identifier falls under, or ``None`` (not in the tables, or the same
    current name in HIP).
    """
    entry = hipify.lookup(identifier)
    if entry is None:
        return None
    rule = f"kernel.api.{_table_stem(entry.table)}"
    target = "MIOpen" if entry.target == "MIOPEN" else "HIP"
    cuda_note = ""
    if entry.cuda_removed:
        cuda_note = f" (removed from CUDA in {entry.cuda_removed})"
    elif entry.cuda_deprecated:
        cuda_note = f" (deprecated in CUDA {entry.cuda_deprecated})"
    where = f"HIPIFY's {entry.section} table"
    if entry.hip is None:
        return _Rule(rule, Kind.CUDA_API, Verdict.PORT,
                     f"{identifier} has no {target} equivalent in {where}{cuda_note}.",
                     "Rewrite the code around it (another API, or drop the feature on ROCm).",
                     entry.citation)
    if entry.hip_removed or entry.hip_deprecated:
        state = (f"removed in {target} {entry.hip_removed}" if entry.hip_removed
                 else f"deprecated since {target} {entry.hip_deprecated}")
        return _Rule(rule, Kind.CUDA_API, Verdict.PORT,
                     f"{identifier} maps to {entry.hip}, which is {state} ({where})"
                     f"{cuda_note}.",
                     f"Use {entry.hip} only as a stopgap; move to its current replacement.",
                     entry.citation, replacement=entry.hip)
    if entry.experimental:
        since = f" (experimental in {entry.experimental_in})" if entry.experimental_in else ""
        return _Rule(rule, Kind.CUDA_API, Verdict.PORT,
                     f"{identifier} maps to {entry.hip}, still experimental in {target}"
                     f"{since} ({where}){cuda_note}.",
                     f"Use {entry.hip} and test it on the target ROCm version.",
                     entry.citation, replacement=entry.hip)
    if entry.hip == identifier:
        return None
    since = f" since {target} {entry.hip_added}" if entry.hip_added else ""
    return _Rule(rule, Kind.CUDA_API, Verdict.SWAP,
                 f"{identifier} has the {target} equivalent {entry.hip}{since} ({where})"
                 f"{cuda_note}.",
                 f"Rename to {entry.hip} (hipify does this).", entry.citation,
                 replacement=entry.hip)


# -- the scan ----------------------------------------------------------------------------------

_MASK32_TYPES = frozenset({"unsigned", "int", "uint32_t", "uint", "unsigned int", "int32_t",
                           "const unsigned", "const int", "const uint32_t", "auto32"})
_DECL_QUALIFIERS = frozenset({"const", "constexpr", "static", "inline", "volatile", "register",
                              "__device__", "__host__", "__constant__", "__shared__"})
_DECL_32_BITS = frozenset({"unsigned", "unsigned int", "int", "signed", "signed int", "uint",
                           "uint32_t", "std::uint32_t", "int32_t", "std::int32_t", "auto"})
"""Declared types of a 32-bit integer (after qualifiers are dropped): ``-1`` or ``~0`` stored
in one of them is a 32-lane mask."""


def _left(text: str, start: int) -> str:
    """At most :data:`_LOOK_BACK` characters of ``start``'s line left of it."""
    low = max(0, start - _LOOK_BACK)
    nl = text.rfind("\n", low, start)
    return text[low if nl < 0 else nl + 1:start]


def _lane_operand(text: str, start: int) -> bool:
    """Whether the operand left of ``start`` is a lane / thread index (``tid``, ``lane_id``,
    ``threadIdx.x``, or a parenthesised expression holding one). Reads at most
    :data:`_LOOK_BACK` characters back (reversed, so that one ``match`` finds the operand).
    """
    back = text[max(0, start - _LOOK_BACK):start][::-1]
    m = _REV_OPERAND.match(back)
    return m is not None and _LANE_WORD.search(m[m.lastindex or 0]) is not None


def _stored_in_32_bits(text: str, start: int) -> bool:
    """Whether ``<type> name = `` right before ``start`` declares a 32-bit integer (looks at
    most :data:`_LOOK_BACK` characters back, on the same line).
    """
    before = _left(text, start).rstrip()
    if not before.endswith("=") or before.endswith(("==", "!=", "<=", ">=")):
        return False
    words = before[:-1].split()
    if len(words) < 2:
        return False
    declared = " ".join(words[-3:-1]) if len(words) >= 3 else words[-2]
    return words[-2] in _MASK32_TYPES or declared in _MASK32_TYPES


def _declared_mask(text: str, eq_at: int, value: str) -> str | None:
    """The name that ``NAME = value`` (``=`` at ``eq_at``) makes a 32-lane mask, or ``None``.

    ``0xffffffff``, ``4294967295`` and ``~0u`` / ``-1u`` are 32 lanes whatever the declared
    type (``const unsigned long long FULL = 0xffffffff`` still leaves out lanes 32-63);
    ``-1`` and ``~0`` are 32 lanes only in a 32-bit type (``const unsigned FULL = -1``), not
    in a 64-bit one (``uint64_t FULL = -1``). Comparisons and compound assignments
    (``==``, ``|=``) are not declarations.
    """
    if eq_at and text[eq_at - 1] in "=!<>+-*/%&|^~":
        return None
    before = _left(text, eq_at)
    cut = max(before.rfind(c) for c in ";{}(,")
    words = before[cut + 1:].split()
    if not words or not (words[-1].replace("_", "a").isalnum() and not words[-1][0].isdigit()):
        return None
    value = "".join(value.split())
    if value[-1] in "uU" or value.startswith(("0", "4")):
        return words[-1]
    declared = " ".join(w for w in words[:-1] if w not in _DECL_QUALIFIERS)
    return words[-1] if declared in _DECL_32_BITS else None


class _Region:
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


def _non_blank_lines(text: str) -> int:
    """Lines holding something other than white space (the blank ones are counted, being
    fewer: a regex finds the blank lines between two newlines).
    """
    newlines = text.count("\n")
    blank = len(_BLANK_LINE.findall(text))
    blank += not text.partition("\n")[0].strip()
    if newlines:
        blank += not text[text.rfind("\n") + 1:].strip()
    return newlines + 1 - blank


def scan_cuda_text(text: str, display: str, ctx: Context, *, line_offset: int = 0) -> FileScan:
    """Scan CUDA C++ ``text`` (a ``.cu`` file's content, or a kernel string embedded in
    Python) and return its findings, with ``kernel_lines`` = its non-blank lines.

    ``display`` is the path findings name; ``line_offset`` is added to every line (the line
    before the string's first line in the embedding file). Pure and total: never raises for
    any text.
    """
    scan = _scan(text, display, line_offset=line_offset, cuda=True)
    scan.kernel_lines = _non_blank_lines(text)
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
    scan = _scan(text, display, line_offset=0, cuda=cuda)
    if cuda:
        scan.kernel_lines = _non_blank_lines(text)
    return scan


class _State:
    """One pass over one text: where the search stands and what was seen so far."""

    def __init__(self, text: str, display: str, line_offset: int, cuda: bool) -> None:
        self.text = text
        self.cuda = cuda
        self.hits = _Hits(text, display, line_offset)
        self.pos = 0
        self.kernel = _Region(text)
        self.device = _Region(text)
        self.mask_macros: set[str] = set()

    def add(self, rule: _Rule, subject: str, offset: int) -> None:
        self.hits.add(rule, subject, offset)

    def device_code(self, at: int) -> bool:
        """Whether lane / warp-size rules apply at offset ``at``: anywhere in CUDA text, only
        inside ``__global__`` / ``__device__`` function bodies in other C/C++ (host-only C++
        may well compute ``tid % 32`` for its own reasons).
        """
        return self.cuda or self.device.inside(at)


def _on_block_comment(s: _State, m: re.Match[str]) -> None:
    end = s.text.find("*/", s.pos)
    s.pos = len(s.text) if end < 0 else end + 2


def _on_identifier(s: _State, m: re.Match[str]) -> None:
    name = m.group()
    if name.startswith("cuTensorMapEncode"):
        s.add(_tma_rule(name), name, m.start())
        return
    rule = _api_rule(name)
    if rule is not None:
        s.add(rule, name, m.start())


def _on_include(s: _State, m: re.Match[str]) -> None:
    matched = m.group()
    header = matched[matched.index("include") + 7:].lstrip(" \t")[1:].strip()
    key = _HEADERS.get(header) or _HEADERS.get(header.split("/", 1)[0] if "/" in header else "")
    if key is not None:
        s.add(_library_rule(key), header, m.start())


def _asm_body_end(text: str, open_at: int) -> int:
    """The offset of the ``)`` that closes the ``asm(`` whose ``(`` is at ``open_at``
    (parentheses and ``;`` inside string literals do not count); for an unclosed statement
    the offset of the first ``;`` outside a string, else ``open_at`` + :data:`_ASM_EXTENT`
    (or the text's end).
    """
    limit = min(len(text), open_at + _ASM_EXTENT)
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
    end = _asm_body_end(text, body_at - 1)
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
    if arg is not None and (arg.group("name") is None or arg.group("name") in s.mask_macros):
        s.add(WARP_MASK, f"32-bit mask in {m.group()}", m.start())
    if m.group() == "__ballot_sync" and _stored_in_32_bits(s.text, m.start()):
        s.add(WARP_MASK_STORE, "__ballot_sync result in 32 bits", m.start())


def _on_active_mask(s: _State, m: re.Match[str]) -> None:
    if _stored_in_32_bits(s.text, m.start()) or _AMASK_COMPARE.match(s.text, s.pos):
        s.add(WARP_MASK_STORE, f"{m.group()} result in 32 bits", m.start())


def _on_mask_define(s: _State, m: re.Match[str]) -> None:
    s.mask_macros.add(m.group().replace("#", " ").split()[1])


def _on_mask_value(s: _State, m: re.Match[str]) -> None:
    name = _declared_mask(s.text, m.start(), m.group()[1:])
    if name is not None:
        s.mask_macros.add(name)


def _on_arch(s: _State, m: re.Match[str]) -> None:
    s.add(ARCH_MACRO, m.group(), m.start())


def _on_warp_size(s: _State, m: re.Match[str]) -> None:
    text = s.text
    tail = _WS_TAIL.match(text, s.pos)
    if tail is None:
        return
    word = m.start()
    low = max(0, word - _LOOK_BACK)
    while word > low and (text[word - 1].isalnum() or text[word - 1] == "_"):
        word -= 1
    s.pos = tail.end()
    if s.device_code(word):
        s.add(WARP_SIZE, " ".join(text[word:tail.end()].split()), word)


def _on_lane(s: _State, m: re.Match[str]) -> None:
    at = m.start()
    if _lane_operand(s.text, at) and (s.cuda or s.device.inside(at)):
        found = m.group()
        s.hits.add(LANE_ARITH, found if len(found) == 3 else " ".join(found.split()), at)


def _on_loop(s: _State, m: re.Match[str]) -> None:
    text, start = s.text, m.start()
    head = _left(text, start)
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
    "ws": _on_warp_size, "lane": _on_lane, "loop": _on_loop, "wmma": _on_wmma,
    "glob": _on_kernel, "dev": _on_device, "launch": _on_launch, "mrc": _on_maxregcount,
    "mval": _on_mask_value,
}
_SKIPPED = frozenset({"lc", "str", "chr"})
_HANDLERS = {name: _HANDLER_BY_RULE[name.rstrip("_")] for name in _SOURCE.groupindex}


def _scan(text: str, display: str, *, line_offset: int, cuda: bool) -> FileScan:
    s = _State(text, display, line_offset, cuda)
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
    return FileScan(findings=s.hits.findings())


# -- CMake -------------------------------------------------------------------------------------

def _cmake_rules(ctx: Context) -> dict[str, _Rule]:
    targets = ", ".join(ctx.gfx_targets)
    to = f" ({targets})" if targets else " (the gfx targets of your GPUs, e.g. gfx942)"
    return {
        "lang": _Rule("cmake.cuda-language", Kind.BUILD_HOOK, Verdict.PORT,
                      "The CUDA language is enabled; HIP-Clang builds need the HIP language.",
                      "Enable the HIP language (enable_language(HIP) / project(... LANGUAGES "
                      "HIP)) and compile the kernels as HIP sources.", CMAKE_HIP),
        "fpkg": _Rule("cmake.find-cuda", Kind.BUILD_HOOK, Verdict.PORT,
                      "The build looks for the CUDA toolkit.",
                      "find_package(hip) and the ROCm library packages (hipblas, rocblas ...) "
                      "instead.", CMAKE_HIP),
        "cadd": _Rule("cmake.cuda-add", Kind.BUILD_HOOK, Verdict.PORT,
                      "FindCUDA's cuda_add_library / cuda_add_executable build with nvcc.",
                      "Use add_library / add_executable with HIP-language sources "
                      "(or hip_add_library).", CMAKE_HIP),
        "carch": _Rule("cmake.cuda-architectures", Kind.ARCH_LIST, Verdict.PORT,
                       "CUDA_ARCHITECTURES names NVIDIA compute capabilities.",
                       f"Set CMAKE_HIP_ARCHITECTURES / GPU_TARGETS to gfx targets{to}.",
                       CMAKE_HIP),
        "sm": _Rule("cmake.nvcc-arch", Kind.ARCH_LIST, Verdict.PORT,
                    "nvcc -arch=sm_XX / -gencode flags name NVIDIA compute capabilities.",
                    f"Use --offload-arch with gfx targets{to}.", CMAKE_HIP),
        "mrc": MAXREGCOUNT,
    }


def scan_cmake(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan ``CMakeLists.txt`` / ``*.cmake`` for CUDA build hooks and NVIDIA arch lists.
    Raises :class:`~pinning.audit.model.Skip` for a file that cannot be read, nothing else.
    """
    text = read_text(path)
    rules = _cmake_rules(ctx)
    hits = _Hits(text, display, 0)
    pos, n = 0, len(text)
    while pos < n:
        m = _CMAKE.search(text, pos)
        if m is None:
            break
        group = m.lastgroup or ""
        start, pos = m.span()
        if group == "lc":
            continue
        if group == "proj":
            close = text.find(")", pos, pos + 2000)
            words = text[pos:close if close >= 0 else pos + 2000].replace('"', " ").split()
            if "LANGUAGES" in words and "CUDA" in words[words.index("LANGUAGES"):]:
                hits.add(rules["lang"], "project(... LANGUAGES CUDA)", start)
            continue
        subject = " ".join(m.group().split())
        if group == "lang":
            subject = "enable_language(CUDA)"
        elif group == "fpkg":
            subject = f"find_package({subject.split('(')[-1].strip()})"
        hits.add(rules[group], subject, start)
    return FileScan(findings=hits.findings())

