"""The CUDA / C++ source scanner: every rule with a positive and a negative case, lines
asserted, API identifiers classified with HIPIFY's real tables."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pinning.audit.cmake import scan_cmake
from pinning.audit.kernels import scan_cuda_text, scan_source
from pinning.audit.model import Context, FileScan, Finding, Kind, Skip, Verdict

CTX = Context()


def _scan(text: str) -> FileScan:
    return scan_cuda_text(text, "k.cu", CTX)


def _by_rule(scan: FileScan, rule: str) -> list[Finding]:
    return [f for f in scan.findings if f.rule == rule]


def _one(text: str, rule: str) -> Finding:
    found = _by_rule(_scan(text), rule)
    assert len(found) == 1, [f.subject for f in _scan(text).findings]
    return found[0]


def _none(text: str, rule: str) -> None:
    assert _by_rule(_scan(text), rule) == []


# -- HIPIFY classification ---------------------------------------------------------------------

def test_runtime_api_with_a_hip_equivalent_is_a_swap_with_its_lines() -> None:
    text = "void f() {\n  float* p;\n  cudaMalloc(&p, 4);\n  cudaMalloc(&p, 8);\n}\n"
    f = _one(text, "kernel.api.cuda-runtime-api-functions")
    assert (f.subject, f.verdict, f.kind, f.replacement) == (
        "cudaMalloc", Verdict.SWAP, Kind.CUDA_API, "hipMalloc")
    assert (f.path, f.line, f.column, f.lines) == ("k.cu", 3, 3, [3, 4])
    assert "since HIP 1.5.0" in f.why
    assert f.citation.source.startswith("ROCm/HIPIFY@")


def test_hip_deprecated_api_is_a_port() -> None:
    scan = _scan("CUcontext c;\ncuCtxCreate(&c, 0, 0);\n")
    found = _by_rule(scan, "kernel.api.cuda-driver-api-functions")
    assert [(g.subject, g.verdict, g.line) for g in found] == [
        ("CUcontext", Verdict.SWAP, 1), ("cuCtxCreate", Verdict.PORT, 2)]
    f = found[1]
    assert (f.subject, f.verdict, f.line, f.replacement) == (
        "cuCtxCreate", Verdict.PORT, 2, "hipCtxCreate")
    assert "deprecated since HIP" in f.why


def test_api_without_hip_equivalent_is_a_port() -> None:
    f = _one("__device__ void g() { char c = __bfloat162char_rz(x); }\n",
             "kernel.api.cuda-device-api")
    assert (f.subject, f.verdict, f.replacement) == ("__bfloat162char_rz", Verdict.PORT, None)
    assert "no HIP equivalent" in f.why


def test_same_name_hip_functions_and_unknown_names_are_not_reported() -> None:
    scan = _scan("__global__ void k(float* v) {\n  __syncthreads();\n"
                 "  v[0] = __shfl_down_sync(__activemask(), v[0], 1);\n"
                 "  int current = 0; int cudaLike_user = 1; hipMalloc(0, 0);\n}\n")
    assert scan.findings == []


def test_identifiers_in_comments_and_strings_are_not_reported() -> None:
    text = ('// cudaMalloc(&p, 4); asm volatile("mov.u32 %0, 1;");\n'
            '/* cudaFree(p);\n   asm volatile("trap;"); */\n'
            'const char* s = "cudaMemcpy asm volatile";\n'
            "char c = '\"'; int x = 0;\n"
            "cudaFree(p);\n")
    scan = _scan(text)
    assert [(f.subject, f.line) for f in scan.findings] == [("cudaFree", 6)]


# -- inline PTX and tensor cores ---------------------------------------------------------------

def test_inline_ptx_is_blocked_and_tensor_core_ptx_named() -> None:
    text = ("__device__ void m() {\n"
            '  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0}, {%1};"\n'
            '               : "=f"(d) : "r"(a));\n'
            '  asm("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(g));\n}\n')
    scan = _scan(text)
    ptx = _by_rule(scan, "kernel.inline-ptx")
    assert [(f.subject, f.line, f.verdict) for f in ptx] == [
        ("asm volatile", 2, Verdict.BLOCKED), ("asm", 4, Verdict.BLOCKED)]
    assert ptx[0].citation.source.endswith("docs/how-to/faq.md")
    tensor = _by_rule(scan, "kernel.tensor-core.ptx")
    assert [(f.subject, f.line, f.kind) for f in tensor] == [
        ("mma.sync", 2, Kind.TENSOR_CORE), ("cp.async", 4, Kind.TENSOR_CORE)]
    assert tensor[0].citation.source == (
        "https://rocm.docs.amd.com/projects/composable_kernel/en/docs-6.0.2/what-is-ck.html")
    assert tensor[0].replacement == "Composable Kernel"


def test_asm_volatile_in_a_comment_or_a_name_is_not_inline_ptx() -> None:
    _none("// asm volatile(\"mov.u32 %0, 1;\");\nint asm_count = 0; my_asm(1);\n",
          "kernel.inline-ptx")


def test_host_asm_in_cpp_is_left_alone_but_ptx_in_a_header_is_not(tmp_path: Path) -> None:
    host = tmp_path / "cpu.cpp"
    host.write_text('void f() {\n  __asm__ __volatile__("cpuid" : "=a"(a) : "a"(0));\n}\n')
    assert scan_source(host, "cpu.cpp", CTX).findings == []
    header = tmp_path / "ptx.h"
    header.write_text('\n__device__ int lane() {\n  int r; asm("mov.u32 %0, %%laneid;" : "=r"(r));'
                      "\n  return r;\n}\n")
    found = scan_source(header, "ptx.h", CTX)
    assert [(f.rule, f.line, f.column) for f in found.findings] == [("kernel.inline-ptx", 3, 10)]
    assert found.kernel_lines == 0


def test_wmma_is_a_port_to_rocwmma() -> None:
    f = _one("#include <mma.h>\nusing namespace nvcuda;\n"
             "__global__ void k() {\n  wmma::fragment<wmma::matrix_a, 16, 16, 16, half> a;\n}\n",
             "kernel.tensor-core.wmma")
    assert (f.line, f.verdict, f.replacement) == (4, Verdict.PORT, "rocWMMA")
    assert f.citation.source == (
        "https://rocm.docs.amd.com/projects/rocWMMA/en/docs-6.3.2/what-is-rocwmma.html")
    _none("int my_wmma = 0; // wmma::fragment\n", "kernel.tensor-core.wmma")


def test_tma_descriptor_is_blocked() -> None:
    f = _one("CUtensorMap m;\ncuTensorMapEncodeTiled(&m, 0, 2, p, 0, 0, 0, 0, 0, 0, 0, 0, 0);\n",
             "kernel.tensor-core.tma")
    assert (f.subject, f.line, f.verdict) == ("cuTensorMapEncodeTiled", 2, Verdict.BLOCKED)
    assert f.citation.source == (
        "ROCm/HIPIFY@c62f16a4dc051be4532c3d41aaf08d43ddff3a01:"
        "docs/reference/tables/CUDA_Driver_API_functions_supported_by_HIP.md")
    assert f.citation.published == dt.date(2025, 8, 4)
    _none("CUtensorMap m;\n", "kernel.tensor-core.tma")


# -- warp size ---------------------------------------------------------------------------------

def test_32_bit_mask_in_shfl_sync_is_flagged() -> None:
    f = _one("__device__ float r(float v) {\n"
             "  v += __shfl_down_sync(0xffffffff, v, 16);\n  return v;\n}\n",
             "kernel.warp-mask")
    assert (f.subject, f.line, f.column, f.verdict, f.kind) == (
        "32-bit mask in __shfl_down_sync", 2, 8, Verdict.PORT, Kind.WARP_SIZE)
    assert f.citation.source == (
        "ROCm/HIP@814ac15c86e21fb2b1fed499ce797633842ec3a8:docs/reference/kernel_language.rst")
    assert "64-bit" in f.why and "HIP_ENABLE_WARP_SYNC_BUILTINS" in f.todo


@pytest.mark.parametrize("mask", ["0xFFFFFFFF", "0xffffffffu", "~0u", "(unsigned)-1",
                                  "uint32_t(-1)", "FULL", "-1", "~0", "static_cast<unsigned>(-1)",
                                  "static_cast<uint32_t>(-1)", "static_cast<unsigned int>( -1 )"])
def test_32_bit_mask_spellings(mask: str) -> None:
    text = f"#define FULL 0xffffffff\n__device__ void f() {{ __ballot_sync({mask}, 1); }}\n"
    assert _one(text, "kernel.warp-mask").line == 2


@pytest.mark.parametrize("mask", ["__activemask()", "~0ull", "0xffffffffffffffff", "mask",
                                  "-1ll", "static_cast<unsigned long long>(-1)", "x - 1"])
def test_64_bit_or_variable_masks_are_not_flagged(mask: str) -> None:
    _none("__device__ float r(float v) {\n  unsigned long long mask = __activemask();\n"
          f"  return __shfl_down_sync({mask}, v, 1);\n}}\n", "kernel.warp-mask")


@pytest.mark.parametrize("decl", [
    "const unsigned FULL_MASK = 0xffffffff;", "constexpr unsigned FULL_MASK = 0xFFFFFFFFu;",
    "static const uint32_t FULL_MASK = 0xffffffff;", "constexpr uint32_t FULL_MASK = ~0u;",
    "const unsigned FULL_MASK = -1;", "static constexpr int FULL_MASK = ~0;",
    "__device__ const unsigned int FULL_MASK = 4294967295u;",
    "const unsigned long long FULL_MASK = 0xffffffff;",  # a 64-bit name, 32 lanes in it
    "enum { FULL_MASK = 0xffffffff };"])
def test_32_bit_mask_constants_are_mask_names(decl: str) -> None:
    f = _one(f"{decl}\n__device__ float r(float v) {{\n"
             "  return __shfl_down_sync(FULL_MASK, v, 1);\n}\n", "kernel.warp-mask")
    assert (f.subject, f.line, f.column) == ("32-bit mask in __shfl_down_sync", 3, 10)


@pytest.mark.parametrize("decl", [
    "const unsigned long long FULL_MASK = ~0ull;", "const uint64_t FULL_MASK = -1;",
    "constexpr unsigned long long FULL_MASK = 0xffffffffffffffffull;",
    "uint64_t FULL_MASK = ~0;", "// const unsigned FULL_MASK = 0xffffffff;",
    'const char* s = "const unsigned FULL_MASK = 0xffffffff;";',
    "unsigned long long FULL_MASK = __activemask(); bool all = FULL_MASK == 0xffffffff;",
    "unsigned long long FULL_MASK = 1; FULL_MASK |= 0xffffffff;"])
def test_64_bit_mask_constants_and_comparisons_are_not_mask_names(decl: str) -> None:
    _none(f"{decl}\n__device__ float r(float v) {{\n"
          "  return __shfl_down_sync(FULL_MASK, v, 1);\n}\n", "kernel.warp-mask")


def test_active_mask_kept_in_32_bits() -> None:
    f = _one("__device__ void f() {\n  unsigned m = __activemask();\n"
             "  bool all = __activemask() == 0xffffffff;\n}\n", "kernel.warp-mask-store")
    assert (f.line, f.lines) == (2, [2, 3])
    assert f.citation.source.endswith("docs/reference/kernel_language.rst")
    _none("__device__ void f() {\n  unsigned long long m = __activemask();\n"
          "  uint64_t b = __ballot_sync(__activemask(), 1);\n}\n", "kernel.warp-mask-store")


def test_hard_coded_warp_size() -> None:
    scan = _scan("#define WARP_SIZE 32\nconstexpr int kWarpSize = 32;\n"
                 "__device__ bool w() { return warpSize == 32; }\n"
                 "__device__ bool v() { if (warpSize != 32) return false; return true; }\n")
    assert [(f.subject, f.line) for f in _by_rule(scan, "kernel.warp-size")] == [
        ("WARP_SIZE 32", 1), ("kWarpSize = 32", 2), ("warpSize == 32", 3),
        ("warpSize != 32", 4)]
    cited = _by_rule(scan, "kernel.warp-size")[0].citation
    assert (cited.source, cited.published) == (
        "https://rocmdocs.amd.com/en/develop/reference/gpu-arch-specs.html", dt.date(2026, 2, 20))
    _none("#define WARP_SIZE 64\nint n = x % warpSize; int w = warp_size * 2;\n"
          "bool odd = warpSize != kExpected; bool big = warpSize != 320;\n", "kernel.warp-size")


def test_lane_arithmetic_on_thread_ids() -> None:
    scan = _scan("__global__ void k() {\n  int lane = threadIdx.x & 31;\n"
                 "  int warp = tid / 32;\n  int l2 = lane_id % 32;\n"
                 "  int w2 = (threadIdx.x + 1) >> 5;\n}\n")
    got = [(f.subject, f.line) for f in _by_rule(scan, "kernel.lane-arith")]
    assert got == [("& 31", 2), ("/ 32", 3), ("% 32", 4), (">> 5", 5)]
    _none("int blocks = n / 32; int r = bytes % 32; int s = size >> 5;\n",
          "kernel.lane-arith")


def test_32_lane_shuffle_loop() -> None:
    scan = _scan("__device__ float r(float v) {\n"
                 "  for (int offset = 16; offset > 0; offset /= 2) v += 1;\n"
                 "  for (int mask = 16; mask >= 1; mask >>= 1) v += 2;\n  return v;\n}\n")
    loop = _by_rule(scan, "kernel.warp-loop")[0]
    assert loop.lines == [2, 3]
    assert "gfx942" in loop.why and loop.citation.source.endswith("gpu-arch-specs.html")
    _none("__device__ void r() {\n"
          "  for (int offset = warpSize / 2; offset > 0; offset /= 2) {}\n"
          "  int x = 16;\n  for (int i = 16; i < n; ++i) {}\n}\n", "kernel.warp-loop")


# -- macros, flags, libraries, dynamic parallelism ---------------------------------------------

def test_cuda_arch_macro() -> None:
    f = _one("#if __CUDA_ARCH__ >= 800\n#endif\n", "kernel.arch-macro")
    assert (f.line, f.verdict, f.replacement) == (1, Verdict.PORT, "__HIP_DEVICE_COMPILE__")
    assert f.citation.source.endswith("docs/how-to/hip_porting_guide.rst")
    _none("#ifdef __HIP_DEVICE_COMPILE__\n#endif\n", "kernel.arch-macro")


def test_libraries_with_and_without_rocm_equivalents() -> None:
    scan = _scan('#include <cublas_v2.h>\n#include "cutlass/gemm/device/gemm.h"\n'
                 "#include <thrust/sort.h>\n#include <NvInfer.h>\n#include <nccl.h>\n"
                 "#include <vector>\n")
    got = [(f.rule, f.subject, f.line, f.verdict, f.replacement) for f in scan.findings]
    assert got == [
        ("kernel.library.cublas", "cublas_v2.h", 1, Verdict.SWAP, "hipBLAS / rocBLAS"),
        ("kernel.library.cutlass", "cutlass/gemm/device/gemm.h", 2, Verdict.BLOCKED, None),
        ("kernel.library.thrust", "thrust/sort.h", 3, Verdict.SWAP, "rocThrust"),
        ("kernel.library.tensorrt", "NvInfer.h", 4, Verdict.BLOCKED, None),
        ("kernel.library.nccl", "nccl.h", 5, Verdict.SWAP, "RCCL"),
    ]
    assert all(f.kind is Kind.LIBRARY for f in scan.findings)
    assert _scan("// #include <cudnn.h>\n").findings == []


def test_dynamic_parallelism() -> None:
    text = ("__global__ void child(float* p) {}\n__global__ void parent(float* p) {\n"
            "  if (p) { child<<<1, 1>>>(p); }\n}\nvoid host(float* p) {\n"
            "  parent<<<1, 1>>>(p);\n}\n")
    f = _one(text, "kernel.dynamic-parallelism")
    assert (f.line, f.verdict) == (3, Verdict.BLOCKED)
    _none("__global__ void k(float* p);\nvoid host(float* p) {\n  k<<<1, 1>>>(p);\n}\n",
          "kernel.dynamic-parallelism")


def test_line_offset_and_kernel_lines_of_embedded_text() -> None:
    scan = scan_cuda_text("\nextern \"C\" __global__ void k() {\n\n  cudaFree(0);\n}\n",
                          "model.py", CTX, line_offset=10)
    assert [(f.path, f.line) for f in scan.findings] == [("model.py", 14)]
    assert scan.kernel_lines == 3


# -- files ---------------------------------------------------------------------------------------

def test_scan_source_counts_kernel_lines_of_cu_files_only(tmp_path: Path) -> None:
    (tmp_path / "a.cu").write_text("#include <cufft.h>\n\n__global__ void k() {}\n")
    (tmp_path / "b.cpp").write_text("#include <cufft.h>\n\nint main() {}\n")
    cu = scan_source(tmp_path / "a.cu", "a.cu", CTX)
    cpp = scan_source(tmp_path / "b.cpp", "b.cpp", CTX)
    assert (cu.kernel_lines, cpp.kernel_lines) == (2, 0)
    assert [f.rule for f in cu.findings] == [f.rule for f in cpp.findings] == [
        "kernel.library.cufft"]


def test_binary_file_is_a_skip(tmp_path: Path) -> None:
    (tmp_path / "x.cu").write_bytes(b"\0\1\2cudaMalloc")
    with pytest.raises(Skip):
        scan_source(tmp_path / "x.cu", "x.cu", CTX)


def test_hostile_text_is_linear_and_total() -> None:
    for text in ('"' * 20000, "/*" * 20000, "'" * 20000, "__" * 20000, "#include <" * 5000,
                 "asm " * 5000, "=" + " " * 50000 + "16", "\\" * 10000 + "\n"):
        assert isinstance(_scan(text), FileScan)


# -- CMake ---------------------------------------------------------------------------------------

def test_cmake_cuda_hooks_and_arch_lists(tmp_path: Path) -> None:
    cmake = tmp_path / "CMakeLists.txt"
    cmake.write_text(
        "cmake_minimum_required(VERSION 3.18)\n"
        "project(ops LANGUAGES CXX CUDA)\n"
        "# enable_language(CUDA) in a comment\n"
        "find_package(CUDAToolkit REQUIRED)\n"
        "set_target_properties(ops PROPERTIES CUDA_ARCHITECTURES \"80;90\")\n"
        'set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -gencode arch=compute_80,code=sm_80 '
        '--maxregcount=64")\n'
        "enable_language(CUDA)\n")
    scan = scan_cmake(cmake, "CMakeLists.txt", Context(gfx_targets=("gfx942",)))
    got = [(f.rule, f.line, f.kind) for f in scan.findings]
    assert got == [
        ("cmake.cuda-language", 2, Kind.BUILD_HOOK),
        ("cmake.find-cuda", 4, Kind.BUILD_HOOK),
        ("cmake.cuda-architectures", 5, Kind.ARCH_LIST),
        ("cmake.nvcc-arch", 6, Kind.ARCH_LIST),
        ("kernel.maxregcount", 6, Kind.BUILD_HOOK),
        ("cmake.cuda-language", 7, Kind.BUILD_HOOK),
    ]
    arch = next(f for f in scan.findings if f.rule == "cmake.cuda-architectures")
    assert "gfx942" in arch.todo


def test_cmake_for_hip_is_clean(tmp_path: Path) -> None:
    cmake = tmp_path / "ops.cmake"
    cmake.write_text("project(ops LANGUAGES CXX HIP)\nenable_language(HIP)\n"
                     "find_package(hip REQUIRED)\nset(CMAKE_HIP_ARCHITECTURES gfx942)\n")
    assert scan_cmake(cmake, "ops.cmake", CTX).findings == []


# -- cases found on real sdists (tests/integration/test_audit_real_sdists.py) -----------------

def test_asm_body_runs_to_its_closing_parenthesis_not_the_first_semicolon() -> None:
    text = ('__global__ void k() {\n  asm volatile(\n    "{ .reg .b64 p;\\n"\n'
            '    "cp.async.cg.shared.global [%0], [%1], 16;\\n}" :: "r"(a), "l"(b));\n}\n')
    f = _one(text, "kernel.tensor-core.ptx")
    assert (f.subject, f.line) == ("cp.async", 4)
    # a cp.async after the asm statement is not part of it
    _none('__global__ void k() {\n  asm volatile("mov.u32 %0, 1;" : "=r"(x));\n}\n'
          "// cp.async in a comment\n", "kernel.tensor-core.ptx")


def test_braces_in_comments_do_not_keep_a_kernel_open() -> None:
    text = ("__global__ void k(int* p) {\n  // if (p != nullptr) {\n  p[0] = 1;\n}\n"
            "void host() {\n  k<<<1, 1>>>(nullptr);\n}\n")
    _none(text, "kernel.dynamic-parallelism")
    nested = ("__global__ void parent(int* p) {\n  /* } */ const char* s = \"}\";\n"
              "  child<<<1, 1>>>(p);\n}\n")
    assert _one(nested, "kernel.dynamic-parallelism").line == 3


def test_a_thread_count_divided_by_32_is_a_warp_count_of_32_lanes() -> None:
    f = _one("constexpr int kNWarps = kNThreads / 32;\n", "kernel.lane-arith")
    assert (f.line, f.verdict) == (1, Verdict.PORT)
    _none("int blocks = n_elements / 32;\n", "kernel.lane-arith")


# -- warp-size rules in host C++ (review item 7) ----------------------------------------------

_LANE_RULES = ("kernel.lane-arith", "kernel.warp-size", "kernel.warp-loop")
_HOST_ONLY = ("// tokenizer hashing, CPU only\n"
              "int bucket(int tid) { return tid % 32; }\n"
              "int shard(int thread_id) { return thread_id & 31; }\n"
              "unsigned hash(unsigned lane_count) { return lane_count >> 5; }\n"
              "constexpr int kWarpSize = 32;\n"
              "void halve(int* v) { for (int o = 16; o > 0; o /= 2) v[o] = 0; }\n")


def _lane_findings(scan: FileScan) -> list[tuple[str, int]]:
    return [(f.rule, f.line or 0) for f in scan.findings if f.rule in _LANE_RULES]


@pytest.mark.parametrize("name", ["host.cpp", "host.h", "host.cc"])
def test_host_only_cpp_gets_no_warp_size_findings(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(_HOST_ONLY)
    assert _lane_findings(scan_source(tmp_path / name, name, CTX)) == []


def test_the_same_code_in_a_cu_file_or_embedded_kernel_is_reported(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(_HOST_ONLY)
    expected = [("kernel.lane-arith", 2), ("kernel.lane-arith", 3), ("kernel.lane-arith", 4),
                ("kernel.warp-loop", 6), ("kernel.warp-size", 5)]
    assert sorted(_lane_findings(scan_source(tmp_path / "k.cu", "k.cu", CTX))) == expected
    assert sorted(_lane_findings(_scan(_HOST_ONLY))) == expected


def test_cpp_device_functions_get_warp_size_findings_host_functions_none(
        tmp_path: Path) -> None:
    text = ("int host_bucket(int tid) { return tid % 32; }\n"
            "__host__ __device__ inline int lane(int tid) {\n"
            "  if (tid) { return tid & 31; }\n  return 0;\n}\n"
            "int host_again(int tid) { return tid & 31; }\n"
            "__device__ int counter;\n"
            "int host_third(int tid) { return tid >> 5; }\n"
            "template <int N> __global__ void k(float* v) {\n"
            "  for (int o = 16; o > 0; o /= 2) v[0] += 1;\n"
            "  if (warpSize == 32) v[1] = 0;\n}\n")
    (tmp_path / "ops.hpp").write_text(text)
    got = _lane_findings(scan_source(tmp_path / "ops.hpp", "ops.hpp", CTX))
    assert sorted(got) == [("kernel.lane-arith", 3), ("kernel.warp-loop", 10),
                           ("kernel.warp-size", 11)]


# -- linear scans (review item 4): the same answers on long repeated input -------------------

def test_every_launch_of_a_long_kernel_is_found_once_per_line() -> None:
    text = "__global__ void k() {\n" + "  k<<<1, 1>>>();\n" * 3000 + "}\nvoid h() { k<<<1,1>>>(); }\n"
    f = _one(text, "kernel.dynamic-parallelism")
    assert (f.line, f.lines) == (2, list(range(2, 3002)))


def test_a_second_kernel_is_tracked_after_the_first_closes() -> None:
    text = ("__global__ void a() {\n  { }\n}\n"
            "void host() {\n  a<<<1, 1>>>();\n}\n"
            "__global__ void b();\n"
            "void host2() {\n  b<<<1, 1>>>();\n}\n"
            "__global__ void c() {\n  // }\n  a<<<1, 1>>>();\n}\n")
    assert _one(text, "kernel.dynamic-parallelism").lines == []
    assert _one(text, "kernel.dynamic-parallelism").line == 13


def test_a_run_of_launch_brackets_is_one_launch() -> None:
    f = _one("__global__ void k() {" + "<" * 30000 + "\n}\n", "kernel.dynamic-parallelism")
    assert (f.line, f.column, f.lines) == (1, 22, [])


def test_code_after_an_asm_statement_is_read_and_an_unclosed_one_ends_at_a_semicolon() -> None:
    text = ('__global__ void k() {\n  asm volatile("mov.u32 %0, 1;" : "=r"(x)); cudaFree(p);\n'
            '  asm("bar.sync 0;" ; cudaMalloc(&p, 4);\n}\n')
    scan = _scan(text)
    assert [(f.subject, f.line) for f in scan.findings] == [
        ("asm volatile", 2), ("cudaFree", 2), ("asm", 3), ("cudaMalloc", 3)]


def test_many_asm_openings_are_one_finding_and_an_unclosed_body_is_read_once() -> None:
    f = _one("asm(;\n" * 5000, "kernel.inline-ptx")
    assert (f.subject, f.line, f.lines) == ("asm", 1, list(range(1, 5001)))
    # no ")" and no ";": each statement is read for 4,000 characters, which are not read again
    f = _one("asm(\n" * 5000, "kernel.inline-ptx")
    assert (f.line, f.lines[:3]) == (1, [1, 802, 1603])


def test_repeated_masks_on_one_line_keep_their_columns() -> None:
    scan = _scan("unsigned m = __activemask(); " * 2000 + "\n" + "tid&31;" * 3000 + "\n")
    store = _by_rule(scan, "kernel.warp-mask-store")[0]
    lane = _by_rule(scan, "kernel.lane-arith")[0]
    assert (store.line, store.column, store.lines) == (1, 14, [])
    assert (lane.subject, lane.line, lane.column) == ("&31", 2, 4)
