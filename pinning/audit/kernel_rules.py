"""The rules of the CUDA / C++ kernel scanner (:mod:`pinning.audit.kernels`), their sources, the
CUDA libraries and the headers that name them, and the CMake rules.

What the rules find:

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
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass

from pinning.audit import hipify
from pinning.audit.model import Citation, Context, Kind, Verdict

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
CUTE_MMA_SM80 = Citation(
    source="NVIDIA/cutlass@629f4653c3ea3db3264030382956fabe715f3436:include/cute/arch/mma_sm80.hpp",
    published_unknown=_UNDATED)
"""CuTe's SM80 MMA atoms: each ``struct SM80_<shape>_<types>_TN`` wraps one ``mma.sync`` PTX
instruction in an ``asm volatile`` (its SM90 / SM100 siblings wrap ``wgmma`` / TMA the same
way), so code built on them assumes NVIDIA tensor cores."""
CMAKE_HIP = Citation(
    source="https://cmake.org/cmake/help/latest/variable/CMAKE_HIP_ARCHITECTURES.html",
    published_unknown="the CMake documentation page carries no date (added in CMake 3.21)")
"""CMake's HIP language: ``CMAKE_HIP_ARCHITECTURES`` lists the gfx targets to build for."""


@dataclass(frozen=True)
class Rule:
    """One rule of the kernel scanner: its id, kind, verdict, why and todo, source, and the
    replacement a finding names (``None``: no single replacement).
    """

    rule: str
    kind: Kind
    verdict: Verdict
    why: str
    todo: str
    citation: Citation
    replacement: str | None = None


# -- fixed rules -------------------------------------------------------------------------------

_WAVE64 = ("AMD Instinct MI200, MI300 and MI350 GPUs (gfx90a, gfx942, gfx950) have a "
           "wavefront size of 64, so code that assumes 32 lanes computes wrong results there")
_GFX9 = ("HIP's warpSize is 64 on gfx9 targets (gfx90a, gfx942, gfx950) and its lane masks are "
         "64-bit")
INLINE_PTX = Rule(
    "kernel.inline-ptx", Kind.INLINE_PTX, Verdict.BLOCKED,
    "Inline PTX assembly is not supported by HIP-Clang (it takes inline GCN assembly only).",
    "Rewrite the asm block with HIP intrinsics, plain C++ or AMDGPU inline assembly.", FAQ)
WARP_MASK = Rule(
    "kernel.warp-mask", Kind.WARP_SIZE, Verdict.PORT,
    f"A 32-bit lane mask passed to a *_sync function: {_GFX9}, so the mask leaves out "
    "lanes 32-63.",
    "Pass a 64-bit mask (__activemask(), or ~0ull / 0xffffffffffffffff): HIP's *_sync "
    "functions take an unsigned long long mask (ROCm 6.2 needs HIP_ENABLE_WARP_SYNC_BUILTINS; "
    "ROCm 6.3 and later enable them).", KERNEL_LANGUAGE)
WARP_MASK_STORE = Rule(
    "kernel.warp-mask-store", Kind.WARP_SIZE, Verdict.PORT,
    f"A ballot / active mask kept in or compared with 32 bits loses lanes 32-63: {_GFX9} "
    "(__ballot and __activemask return 64 bits).",
    "Keep lane masks in unsigned long long (uint64_t) and compare with 64-bit constants.",
    KERNEL_LANGUAGE)
WARP_SIZE = Rule(
    "kernel.warp-size", Kind.WARP_SIZE, Verdict.PORT,
    f"A hard-coded warp size of 32: {_WAVE64}.",
    "Use the warpSize built-in in device code (query it from the device properties on the "
    "host) instead of the constant 32.", GPU_SPECS)
LANE_ARITH = Rule(
    "kernel.lane-arith", Kind.WARP_SIZE, Verdict.PORT,
    f"Lane / warp index arithmetic that assumes 32 lanes (& 31, % 32, / 32, >> 5): {_WAVE64}.",
    "Compute lane and warp ids from warpSize (tid % warpSize, tid / warpSize).",
    GPU_SPECS)
WARP_LOOP = Rule(
    "kernel.warp-loop", Kind.WARP_SIZE, Verdict.PORT,
    f"A shuffle-reduction loop starting at offset 16 covers 32 lanes only: {_WAVE64}.",
    "Start the loop at warpSize / 2.", GPU_SPECS)
WMMA = Rule(
    "kernel.tensor-core.wmma", Kind.TENSOR_CORE, Verdict.PORT,
    "nvcuda::wmma is CUDA's warp matrix API; on AMD GPUs the matrix cores are reached through "
    "rocWMMA, a library portable with nvcuda::wmma.",
    "Port the fragments to rocWMMA and retune the tile shapes for the target's matrix cores.",
    ROCWMMA, replacement="rocWMMA")
TENSOR_PTX = Rule(
    "kernel.tensor-core.ptx", Kind.TENSOR_CORE, Verdict.BLOCKED,
    "Tensor-core PTX (mma.sync, wgmma, cp.async, ldmatrix / stmatrix) lives in an inline PTX "
    "block (see "
    "kernel.inline-ptx); on AMD GPUs such kernels are written in HIP C++, e.g. on Composable "
    "Kernel.",
    "Rewrite the kernel in HIP C++ on Composable Kernel (tile-based kernels) or rocWMMA, or "
    "call a library kernel.", COMPOSABLE_KERNEL, replacement="Composable Kernel")
CUTE_ATOM = Rule(
    "kernel.tensor-core.cute-atom", Kind.TENSOR_CORE, Verdict.BLOCKED,
    "A CuTe / CUTLASS architecture atom (SM80_*, SM90_* ...) or CUTLASS tag "
    "(cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80 ...) selects NVIDIA tensor-core or "
    "copy PTX (mma.sync, wgmma, cp.async, TMA, ldmatrix); no ROCm build of CUTLASS or CuTe "
    "provides it.",
    "Rewrite the kernel on Composable Kernel (tile-based kernels) or rocWMMA, or call a library "
    "kernel.", CUTE_MMA_SM80, replacement="Composable Kernel")
TMA = Rule(
    "kernel.tensor-core.tma", Kind.TENSOR_CORE, Verdict.BLOCKED,
    "Tensor Memory Accelerator descriptors (cuTensorMapEncode*) have no HIP equivalent "
    "(HIPIFY's driver API table leaves the HIP cell empty).",
    "Rewrite the data movement without TMA (plain loads, or Composable Kernel's tile loads).",
    HIPIFY_DRIVER, replacement="Composable Kernel")
ARCH_MACRO = Rule(
    "kernel.arch-macro", Kind.ARCH_MACRO, Verdict.PORT,
    "__CUDA_ARCH__ is undefined under HIP-Clang, so code guarded by it silently takes the "
    "other branch.",
    "Use __HIP_DEVICE_COMPILE__ for device-pass checks and __HIP_ARCH_HAS_<FEATURE>__ macros "
    "for feature checks.", PORTING_GUIDE, replacement="__HIP_DEVICE_COMPILE__")
MAXREGCOUNT = Rule(
    "kernel.maxregcount", Kind.BUILD_HOOK, Verdict.PORT,
    "amdclang++ does not support nvcc's --maxregcount option.",
    "Drop the flag and bound registers per kernel with __launch_bounds__.", PORTING_GUIDE,
    replacement="__launch_bounds__")
DYNAMIC_PARALLELISM = Rule(
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
HEADERS: dict[str, str] = {
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
def library_rule(key: str) -> Rule:
    """The rule for an ``#include`` of the CUDA library ``key`` (a value of :data:`HEADERS`):
    swap for one with a ROCm equivalent, blocked for one without, port for cuFile.
    """
    if key == "cufile":
        entry = hipify.lookup("cuFileDriverOpen")
        citation = entry.citation if entry is not None else ROCM_LIBRARIES
        return Rule("kernel.library.cufile", Kind.LIBRARY, Verdict.PORT,
                     "cuFile (GPUDirect Storage) is not in the ROCm libraries list; HIPIFY's "
                     "cuFile table maps it to hipFile in recent HIP versions.",
                     "Port the I/O path to hipFile where the target ROCm has it, or read "
                     "through host memory.", citation, replacement="hipFile")
    lib = _LIBRARIES[key]
    if lib.rocm is not None:
        return Rule(f"kernel.library.{key.lower()}", Kind.LIBRARY, lib.verdict,
                     f"{lib.name} is CUDA-only; ROCm ships {lib.rocm}.",
                     f"Link {lib.rocm} instead (hipify translates most calls).",
                     ROCM_LIBRARIES, replacement=lib.rocm)
    return Rule(f"kernel.library.{key.lower()}", Kind.LIBRARY, lib.verdict,
                 f"{lib.name} is NVIDIA-only and has no ROCm equivalent: {lib.note}.",
                 f"Replace what {lib.name} does here (a rewrite).", ROCM_LIBRARIES)


@functools.cache
def tma_rule(identifier: str) -> Rule:
    """:data:`TMA`, cited with HIPIFY's driver table row when it lists ``identifier``."""
    entry = hipify.lookup(identifier)
    if entry is None or entry.hip is not None:
        return TMA
    return Rule(TMA.rule, TMA.kind, TMA.verdict, TMA.why, TMA.todo, entry.citation,
                 TMA.replacement)


# -- HIPIFY classification ---------------------------------------------------------------------

def _table_stem(table: str) -> str:
    stem = table.removesuffix(".md")
    for tail in ("_supported_by_HIP_and_MIOPEN", "_supported_by_MIOPEN", "_supported_by_HIP"):
        stem = stem.removesuffix(tail)
    return stem.lower().replace("_", "-")


@functools.cache
def api_rule(identifier: str) -> Rule | None:
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
        return Rule(rule, Kind.CUDA_API, Verdict.PORT,
                     f"{identifier} has no {target} equivalent in {where}{cuda_note}.",
                     "Rewrite the code around it (another API, or drop the feature on ROCm).",
                     entry.citation)
    if entry.hip_removed or entry.hip_deprecated:
        state = (f"removed in {target} {entry.hip_removed}" if entry.hip_removed
                 else f"deprecated since {target} {entry.hip_deprecated}")
        return Rule(rule, Kind.CUDA_API, Verdict.PORT,
                     f"{identifier} maps to {entry.hip}, which is {state} ({where})"
                     f"{cuda_note}.",
                     f"Use {entry.hip} only as a stopgap; move to its current replacement.",
                     entry.citation, replacement=entry.hip)
    if entry.experimental:
        since = f" (experimental in {entry.experimental_in})" if entry.experimental_in else ""
        return Rule(rule, Kind.CUDA_API, Verdict.PORT,
                     f"{identifier} maps to {entry.hip}, still experimental in {target}"
                     f"{since} ({where}){cuda_note}.",
                     f"Use {entry.hip} and test it on the target ROCm version.",
                     entry.citation, replacement=entry.hip)
    if entry.hip == identifier:
        return None
    since = f" since {target} {entry.hip_added}" if entry.hip_added else ""
    return Rule(rule, Kind.CUDA_API, Verdict.SWAP,
                 f"{identifier} has the {target} equivalent {entry.hip}{since} ({where})"
                 f"{cuda_note}.",
                 f"Rename to {entry.hip} (hipify does this).", entry.citation,
                 replacement=entry.hip)


# -- CMake -------------------------------------------------------------------------------------

def cmake_rules(ctx: Context) -> dict[str, Rule]:
    """The CMake rules by the group name of the CMake pattern that finds them (``lang``,
    ``fpkg``, ``cadd``, ``carch``, ``sm``, ``mrc``); the todo names ``ctx.gfx_targets``.
    """
    targets = ", ".join(ctx.gfx_targets)
    to = f" ({targets})" if targets else " (the gfx targets of your GPUs, e.g. gfx942)"
    return {
        "lang": Rule("cmake.cuda-language", Kind.BUILD_HOOK, Verdict.PORT,
                      "The CUDA language is enabled; HIP-Clang builds need the HIP language.",
                      "Enable the HIP language (enable_language(HIP) / project(... LANGUAGES "
                      "HIP)) and compile the kernels as HIP sources.", CMAKE_HIP),
        "fpkg": Rule("cmake.find-cuda", Kind.BUILD_HOOK, Verdict.PORT,
                      "The build looks for the CUDA toolkit.",
                      "find_package(hip) and the ROCm library packages (hipblas, rocblas ...) "
                      "instead.", CMAKE_HIP),
        "cadd": Rule("cmake.cuda-add", Kind.BUILD_HOOK, Verdict.PORT,
                      "FindCUDA's cuda_add_library / cuda_add_executable build with nvcc.",
                      "Use add_library / add_executable with HIP-language sources "
                      "(or hip_add_library).", CMAKE_HIP),
        "carch": Rule("cmake.cuda-architectures", Kind.ARCH_LIST, Verdict.PORT,
                       "CUDA_ARCHITECTURES names NVIDIA compute capabilities.",
                       f"Set CMAKE_HIP_ARCHITECTURES / GPU_TARGETS to gfx targets{to}.",
                       CMAKE_HIP),
        "sm": Rule("cmake.nvcc-arch", Kind.ARCH_LIST, Verdict.PORT,
                    "nvcc -arch=sm_XX / -gencode flags name NVIDIA compute capabilities.",
                    f"Use --offload-arch with gfx targets{to}.", CMAKE_HIP),
        "mrc": MAXREGCOUNT,
    }
