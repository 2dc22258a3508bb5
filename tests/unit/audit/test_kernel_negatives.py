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


# -- names followed across files (pinning.audit.follow): what must not be claimed ------------

def _joined(*files: tuple[str, str]) -> list[tuple[str | None, str]]:
    from pinning.audit.follow import join_names

    scans = [scan_cuda_text(text, path, CTX) for path, text in files]
    own = [(f.path, f.subject) for s in scans for f in s.findings if f.rule in _LANE_RULES]
    joined = join_names([d for s in scans for d in s.defines], [u for s in scans for u in s.uses])
    return own + [(f.path, f.subject) for f in joined]


MASKS_H = "#define FULL_MASK 0xffffffff\nstatic const unsigned kLowWord = 0xffffffffu;\n"


def test_a_mask_name_used_over_data_is_not_lane_math() -> None:
    # bit unpacking with a header's all-ones constant: no *_sync call, nothing to claim
    data = ("__global__ void unpack(const uint64_t* w, uint32_t* out) {\n"
            "  uint64_t v = w[threadIdx.x];\n  out[2 * threadIdx.x] = v & FULL_MASK;\n"
            "  out[2 * threadIdx.x + 1] = (v >> 32) & kLowWord;\n"
            "  out[0] = hash32(v, 0xffffffff) ^ mix(v & 0xffffffff, 3);\n}\n")
    assert _joined(("masks.h", MASKS_H), ("unpack.cu", data)) == []


def test_a_local_64_bit_variable_shadows_a_header_mask_name() -> None:
    use = ("__device__ float r(float v) {\n  unsigned long long FULL_MASK = __activemask();\n"
           "  return __shfl_down_sync(FULL_MASK, v, 1);\n}\n")
    assert _joined(("masks.h", MASKS_H), ("r.cu", use)) == []


def test_commented_or_quoted_wrapper_calls_and_64_bit_wrappers_are_not_claimed() -> None:
    wrapper = ("__device__ float warp_sum(unsigned long long mask, float v) {\n"
               "  return v + __shfl_xor_sync(mask, v, 1);\n}\n")
    calls = ("__global__ void k(float* x) {\n  // x[0] = warp_sum(0xffffffff, x[0]);\n"
             "  /* warp_sum(0xffffffff, v) */ const char* s = \"warp_sum(0xffffffff, v)\";\n"
             "  x[0] = warp_sum(__activemask(), x[0]);\n}\n")
    assert _joined(("wrap.cuh", wrapper), ("k.cu", calls)) == []


def test_a_warp_size_defined_32_only_for_cuda_is_not_claimed_in_other_files() -> None:
    # vLLM's csrc/cuda_compat.h: the AMD build sees WARP_SIZE 64
    compat = ("#ifdef USE_ROCM\n  #define WARP_SIZE 64\n#else\n  #define WARP_SIZE 32\n#endif\n")
    use = "__global__ void k(int* o) {\n  o[0] = threadIdx.x % WARP_SIZE;\n}\n"
    scans = [scan_cuda_text(compat, "cuda_compat.h", CTX), scan_cuda_text(use, "k.cu", CTX)]
    assert {f.verdict for f in scans[0].findings} == {Verdict.READY}
    assert _joined(("cuda_compat.h", compat), ("k.cu", use)) == [
        ("cuda_compat.h", "WARP_SIZE 32")]


@pytest.mark.parametrize("code", [
    "int vecs = bytes / 32;", "constexpr int kElts = 32 / sizeof(T);",
    "constexpr int kPerWord = 32 / kBits;", "constexpr int kVals = 32 / BITS_PER_VALUE;",
    "int n = 32 / 4;", "int w = tid % warpSize;", "int r = warpSize / kNThreadsPerRow;",
    "int b = WARPS_PER_BLOCK / 2;", "int q = 1.32 / kThreads;", "x /= 32 / y;"])
def test_divisions_by_or_of_data_sizes_are_not_lane_math(code: str) -> None:
    text = (f"#define WARPS_PER_BLOCK 32\n__global__ void k(int tid, int bytes) {{\n  {code}\n"
            "}\n")
    assert _joined(("k.cu", text)) == []


def test_warp_sizes_for_amd_targets_and_other_values_are_not_claimed() -> None:
    # mamba-ssm 2.3.2's csrc/selective_scan/reverse_scan.cuh: 32-wide waves on RDNA targets
    rdna = ("#if defined(__HIP_PLATFORM_AMD__)\n  #if defined(__gfx942__)\n"
            "    #define WARP_THREADS 64\n  #elif defined(__gfx1100__)\n"
            "    #define WARP_THREADS 32\n  #endif\n#endif\n"
            "__global__ void k(int* o) { o[0] = threadIdx.x % WARP_THREADS; }\n")
    assert _joined(("reverse_scan.cuh", rdna)) == []
    # a header that says 64 for the AMD build in live code: which one a file sees is unknown
    amd = "#define WARP_SIZE 64\n"
    cuda = "#define WARP_SIZE 32\n"
    use = "__global__ void k(int* o) {\n  o[0] = threadIdx.x % WARP_SIZE;\n}\n"
    assert [s for _p, s in _joined(("amd/w.h", amd), ("cuda/w.h", cuda), ("k.cu", use))
            if "WARP_SIZE is 32" in s] == []
