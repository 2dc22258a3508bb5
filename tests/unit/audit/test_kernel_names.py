"""32-lane names followed from their definitions to their uses across files (issue 31 §1,
"Macros, constants and wrappers"): mask macros and constants, warp-size names, wrappers whose
mask parameter reaches a ``*_sync`` call, and ``32 / kNThreadsPerRow`` lane arithmetic.

The snippets are shaped like real projects: FasterTransformer's ``#define FINAL_MASK
0xffffffff`` in ``reduce_kernel_utils.cuh`` used by kernels in other files, vLLM's
``csrc/cuda_compat.h`` (``WARP_SIZE`` 64 under ``USE_ROCM``, 32 otherwise), exllamav2's
``__shfl_xor_sync(0xffffffff, ...)`` and DeepSpeed-style reduction helpers that take the mask
as a parameter (``csrc/includes/reduction_utils.h``).
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from pinning.audit.follow import join_names
from pinning.audit.kernels import scan_cuda_text
from pinning.audit.model import Context, FileScan, Finding, Verdict
from pinning.audit.run import AuditRequest, audit

CTX = Context()

REDUCE_H = """\
#pragma once
#define FINAL_MASK 0xffffffff
#define THREADS_PER_WARP 32
static constexpr int kWarpSize = 32;

template <typename T>
__device__ __forceinline__ T warp_reduce_sum(unsigned mask, T val) {
  for (int offset = 8; offset > 0; offset >>= 1)
    val += __shfl_xor_sync(mask, val, offset, 32);
  return val;
}

__device__ __forceinline__ float warp_max(float val, uint64_t lanes) {
  return fmaxf(val, __shfl_down_sync(lanes, val, 1));
}
"""

LAYERNORM_CU = """\
#include "reduce_kernel_utils.cuh"
template <int kNThreadsPerRow>
__global__ void layernorm(const float* x, float* y, int n) {
  float v = x[threadIdx.x];
  v += __shfl_xor_sync(FINAL_MASK, v, 1, 32);
  v = warp_reduce_sum(0xffffffff, v);
  v = warp_max(v, 0xFFFFFFFF);
  const int lane = threadIdx.x % kWarpSize;
  constexpr int kRowsPerWarp = kWarpSize / kNThreadsPerRow;
  constexpr int kRowsPerWarp2 = 32 / kNThreadsPerRow;
  y[lane] = v;
}
"""


def _scan(*files: tuple[str, str]) -> tuple[list[FileScan], list[Finding]]:
    scans = [scan_cuda_text(text, path, CTX) for path, text in files]
    joined = join_names([d for s in scans for d in s.defines], [u for s in scans for u in s.uses])
    return scans, joined


def _subjects(findings: list[Finding], path: str) -> list[tuple[int | None, str, str]]:
    return [(f.line, f.rule, f.subject) for f in findings if f.path == path]


def test_a_mask_macro_in_a_header_is_followed_to_its_use_in_another_file() -> None:
    _scans, joined = _scan(("csrc/reduce_kernel_utils.cuh", REDUCE_H),
                           ("csrc/layernorm.cu", LAYERNORM_CU))
    uses = _subjects(joined, "csrc/layernorm.cu")
    assert (5, "kernel.warp-mask", "FINAL_MASK (0xffffffff at csrc/reduce_kernel_utils.cuh:2) "
            "in __shfl_xor_sync") in uses
    assert _subjects(joined, "csrc/reduce_kernel_utils.cuh") == [
        (2, "kernel.warp-mask", "FINAL_MASK defined as 0xffffffff (32 lanes), the mask of "
         "*_sync calls in 1 other file")]
    assert {f.verdict for f in joined} == {Verdict.PORT}


def test_a_wrapper_mask_parameter_is_followed_to_its_callers() -> None:
    scans, joined = _scan(("csrc/reduce_kernel_utils.cuh", REDUCE_H),
                          ("csrc/layernorm.cu", LAYERNORM_CU))
    header = [(f.line, f.subject) for f in scans[0].findings if f.rule == "kernel.warp-mask"]
    # the 32-bit parameter is a finding where it is declared (torch-scatter 2.1.2's
    # csrc/cuda/utils.cuh: __shfl_up_sync(const unsigned mask, const at::Half var, ...)); the
    # uint64_t one is not
    assert header == [(7, "32-bit mask parameter mask of warp_reduce_sum"),
                      (9, "mask (a 32-bit parameter of warp_reduce_sum) in __shfl_xor_sync")]
    uses = _subjects(joined, "csrc/layernorm.cu")
    assert (6, "kernel.warp-mask", "0xffffffff passed to warp_reduce_sum (its mask reaches "
            "__shfl_xor_sync at csrc/reduce_kernel_utils.cuh:9)") in uses
    assert (7, "kernel.warp-mask", "0xFFFFFFFF passed to warp_max (its mask reaches "
            "__shfl_down_sync at csrc/reduce_kernel_utils.cuh:14)") in uses


def test_warp_size_names_are_followed_into_lane_arithmetic() -> None:
    scans, joined = _scan(("csrc/reduce_kernel_utils.cuh", REDUCE_H),
                          ("csrc/layernorm.cu", LAYERNORM_CU))
    definitions = {f.subject for f in scans[0].findings if f.rule == "kernel.warp-size"}
    assert definitions == {"THREADS_PER_WARP 32", "kWarpSize = 32"}
    uses = _subjects(joined, "csrc/layernorm.cu")
    assert (8, "kernel.lane-arith", "% kWarpSize (kWarpSize is 32 at "
            "csrc/reduce_kernel_utils.cuh:4)") in uses
    assert (9, "kernel.lane-arith", "kWarpSize / kNThreadsPerRow (kWarpSize is 32 at "
            "csrc/reduce_kernel_utils.cuh:4)") in uses
    local = [(f.line, f.subject) for f in scans[1].findings if f.rule == "kernel.lane-arith"]
    assert local == [(10, "32 / kNThreadsPerRow")]


def test_names_defined_and_used_in_one_file_resolve_there() -> None:
    text = ("#define WARP_SIZE 32\nconstexpr int kThreadsPerWarp = 32;\n"
            "__global__ void k(int* out) {\n  int w = threadIdx.x / WARP_SIZE;\n"
            "  int rows = WARP_SIZE / THREADS_PER_ROW;\n}\n")
    scan = scan_cuda_text(text, "k.cu", CTX)
    got = {(f.line, f.rule, f.subject) for f in scan.findings}
    assert {(1, "kernel.warp-size", "WARP_SIZE 32"),
            (2, "kernel.warp-size", "kThreadsPerWarp = 32"),
            (4, "kernel.lane-arith", "/ WARP_SIZE (WARP_SIZE is 32)"),
            (5, "kernel.lane-arith", "WARP_SIZE / THREADS_PER_ROW (WARP_SIZE is 32)")} <= got
    assert scan.uses == []


def test_the_join_runs_in_pin_audit_over_folders_and_archives(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "csrc").mkdir(parents=True)
    (project / "csrc" / "reduce_kernel_utils.cuh").write_text(REDUCE_H)
    (project / "csrc" / "layernorm.cu").write_text(LAYERNORM_CU)
    folder = audit(AuditRequest(paths=[str(project)], hipify_perl=False))
    subjects = {f.subject for f in folder.findings}
    assert any(s.startswith("FINAL_MASK (0xffffffff at ") for s in subjects)
    assert any(s.startswith("0xffffffff passed to warp_reduce_sum") for s in subjects)

    sdist = tmp_path / "proj-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for path in sorted(project.rglob("*.cu*")):
            data = path.read_bytes()
            info = tarfile.TarInfo(f"proj-1.0/{path.relative_to(project).as_posix()}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    packed = audit(AuditRequest(paths=[str(sdist)], hipify_perl=False))
    uses = [f for f in packed.findings if f.subject.startswith("FINAL_MASK (0xffffffff at ")]
    assert [(f.path, f.line) for f in uses] == [(f"{sdist}!proj-1.0/csrc/layernorm.cu", 5)]
    assert f"at {sdist}!proj-1.0/csrc/reduce_kernel_utils.cuh:2)" in uses[0].subject


def test_threads_per_warp_defined_in_a_header_is_followed_to_lane_math() -> None:
    header = "#pragma once\n#define THREADS_PER_WARP 32\n#define WARPS_PER_BLOCK 32\n"
    kernel = ("__global__ void k(int* out) {\n  int lane = threadIdx.x % THREADS_PER_WARP;\n"
              "  int warp = threadIdx.x / THREADS_PER_WARP;\n  int b = WARPS_PER_BLOCK;\n}\n")
    scans, joined = _scan(("include/common.h", header), ("src/k.cu", kernel))
    assert [f.subject for f in scans[0].findings] == ["THREADS_PER_WARP 32"]
    assert _subjects(joined, "src/k.cu") == [
        (2, "kernel.lane-arith", "% THREADS_PER_WARP (THREADS_PER_WARP is 32 at "
         "include/common.h:2)"),
        (3, "kernel.lane-arith", "/ THREADS_PER_WARP (THREADS_PER_WARP is 32 at "
         "include/common.h:2)")]


def test_the_definition_named_is_the_one_nearest_the_use() -> None:
    # DeepSpeed 0.19.8 defines WARP_SIZE 32 in several headers (csrc/includes/context.h,
    # csrc/transformer/inference/includes/inference_cuda_layers.h, ...)
    _scans, joined = _scan(
        ("csrc/fp_quantizer/includes/fp_context.h", "#define WARP_SIZE 32\n"),
        ("csrc/transformer/inference/includes/inference_cuda_layers.h", "#define WARP_SIZE 32\n"),
        ("csrc/transformer/inference/csrc/softmax.cu",
         "__global__ void k(int* o) {\n  o[0] = threadIdx.x / WARP_SIZE;\n}\n"))
    assert _subjects(joined, "csrc/transformer/inference/csrc/softmax.cu") == [
        (2, "kernel.lane-arith", "/ WARP_SIZE (WARP_SIZE is 32 at "
         "csrc/transformer/inference/includes/inference_cuda_layers.h:1)")]


def test_a_lane_mask_spelled_32_minus_1_is_lane_math() -> None:
    # torch-sparse 0.6.18's csrc/cuda/spmm_cuda.cu: int lane_idx = thread_idx & (32 - 1);
    text = ("__global__ void spmm(int n) {\n  int thread_idx = blockDim.x * blockIdx.x + "
            "threadIdx.x;\n  int lane_idx = thread_idx & (32 - 1);\n  int m = n & (32 - 1);\n}\n")
    got = [(f.line, f.subject) for f in scan_cuda_text(text, "spmm_cuda.cu", CTX).findings
           if f.rule == "kernel.lane-arith"]
    assert got == [(3, "& (32 - 1)")]


def test_a_mask_name_passed_to_a_wrapper_in_a_third_file_is_followed() -> None:
    masks = "#pragma once\nconstexpr unsigned kFullMask = 0xffffffffu;\n"
    caller = ("#include \"masks.h\"\n#include \"reduce_kernel_utils.cuh\"\n"
              "__global__ void k(float* x, unsigned long long active) {\n"
              "  x[0] = warp_reduce_sum(kFullMask, x[0]);\n"
              "  x[1] = warp_reduce_sum(kActiveMask, x[1]);\n}\n")
    _scans, joined = _scan(("csrc/masks.h", masks), ("csrc/reduce_kernel_utils.cuh", REDUCE_H),
                           ("csrc/k.cu", caller))
    assert _subjects(joined, "csrc/k.cu") == [
        (4, "kernel.warp-mask", "kFullMask (0xffffffffu at csrc/masks.h:2) passed to "
         "warp_reduce_sum (its mask reaches __shfl_xor_sync at "
         "csrc/reduce_kernel_utils.cuh:9)")]


def test_hostile_runs_of_names_and_masks_stay_bounded() -> None:
    # every reader looks a bounded distance back (the scan of 40,000 such arguments was
    # quadratic before the line look-back was bounded)
    for text in ("MASK" * 20000 + " f(" + "FULL_MASK, " * 5000 + ")",
                 "f(" + "0xffffffff," * 5000 + ")",
                 "__device__ void g(unsigned m) {" + " __shfl_sync(m, v, 1); m;" * 3000 + "}",
                 "WARP_SIZE / " * 5000, "32 / kThreads " * 5000):
        scan = scan_cuda_text(text, "k.cu", CTX)
        assert isinstance(scan, FileScan)
