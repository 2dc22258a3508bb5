"""Negative examples the kernel scanner must not claim (issue 31, "no false claims"):
bit-packing arithmetic over data words is not lane math, comments and strings are not code,
and a ROCm branch with inline PTX in its CUDA ``#else`` gives no blocked item."""

from __future__ import annotations

import pytest

from pinning.audit.kernels import scan_cuda_text
from pinning.audit.model import Context, Kind, Verdict

CTX = Context()
_LANE_RULES = {"kernel.lane-arith", "kernel.warp-size", "kernel.warp-loop", "kernel.warp-mask",
               "kernel.warp-mask-store"}

DEQUANT_INT4 = """\
__global__ void dequant_int4(const uint32_t* qweight, const half* scales, half* out, int n) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t w = qweight[tid];
  for (int i = 0; i < 8; ++i) {
    int q = (w >> (4 * i)) & 0xF;
    out[tid * 8 + i] = __hmul(__int2half_rn(q - 8), scales[tid / 16]);
  }
  int word = tid >> 3;
  int shift = (tid & 7) * 4;
  uint32_t nibble = (qweight[word] >> shift) & 0x0F;
  uint32_t lo = w & 0x0F0F0F0F, hi = (w >> 4) & 0x0F0F0F0F;
  uint32_t field = (w >> (tid * 5)) & 31;
  uint32_t bits5 = qweight[tid] & 0x1F;
  int packed_per_word = 32 / 4;
}
"""


def test_bit_unpacking_of_weight_words_is_not_lane_math() -> None:
    scan = scan_cuda_text(DEQUANT_INT4, "dequant.cu", CTX)
    assert [f.subject for f in scan.findings if f.rule in _LANE_RULES] == []


@pytest.mark.parametrize("code", [
    "int lane = threadIdx.x & 31;", "int warp = tid >> 5;", "int w = tid / 32;",
    "int l = (threadIdx.x + 1) % 32;"])
def test_real_lane_math_still_found_beside_the_negatives(code: str) -> None:
    text = f"__global__ void k(int tid) {{\n  {code}\n}}\n"
    rules = {f.rule for f in scan_cuda_text(text, "k.cu", CTX).findings}
    assert "kernel.lane-arith" in rules


COMMENTS_AND_STRINGS = r'''
// int lane = threadIdx.x & 31;   asm volatile("mov.u32 %0, %%laneid;");
/* __shfl_down_sync(0xffffffff, v, 16); cudaMalloc(&p, 4);
   #define FULL_MASK 0xffffffff
   for (int offset = 16; offset > 0; offset /= 2) */
const char* doc = "tid % 32 and __ballot_sync(0xffffffff, p) need wave64 care; asm(\"mma.sync\")";
const char* help = "nvcuda::wmma, cuTensorMapEncodeTiled and <<<grid, block>>> in text";
char c = '\'';
'''


def test_comments_and_strings_are_not_code() -> None:
    assert scan_cuda_text(COMMENTS_AND_STRINGS, "k.cu", CTX).findings == []


ROCM_BRANCH = r'''
__device__ __forceinline__ float fast_exp2(float x) {
#ifdef USE_ROCM
  return __builtin_amdgcn_exp2f(x);
#else
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}

__device__ __forceinline__ void mma_16816(float* d, const uint32_t* a, const uint32_t* b) {
#if defined(__HIP_PLATFORM_AMD__)
  // the MFMA path lives in the ROCm sources
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}
'''


def test_ifdef_use_rocm_else_inline_ptx_gives_no_blocked_item() -> None:
    findings = scan_cuda_text(ROCM_BRANCH, "k.cuh", CTX).findings
    assert [f for f in findings if f.verdict is Verdict.BLOCKED] == []
    ptx = [f for f in findings if f.kind in (Kind.INLINE_PTX, Kind.TENSOR_CORE)]
    assert {f.verdict for f in ptx} == {Verdict.READY}
    assert all(f.why.startswith("CUDA-only branch, already ported") for f in ptx)
    assert {f.line for f in ptx} == {7, 16}
