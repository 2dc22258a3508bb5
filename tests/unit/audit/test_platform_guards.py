"""Platform guards: code an AMD build never compiles is "CUDA-only branch, already ported"
(ready), code under a condition pin cannot decide keeps its verdict and says so, and the
conditions are evaluated with the macros hipcc and PyTorch's ROCm build define."""

from __future__ import annotations

import pytest

from pinning.audit.kernels import scan_cuda_text, scan_source
from pinning.audit.model import Context, Finding, Verdict
from pinning.audit.preproc import Guards
from pinning.audit.preproc_eval import evaluate

CTX = Context()


def _findings(text: str, rule: str) -> list[Finding]:
    return [f for f in scan_cuda_text(text, "k.cu", CTX).findings if f.rule == rule]


# -- the condition evaluator -------------------------------------------------------------------

@pytest.mark.parametrize(("expression", "taken"), [
    ("defined(USE_ROCM)", True),
    ("!defined(USE_ROCM)", False),
    ("defined __HIP_PLATFORM_AMD__", True),
    ("defined(__HIP_PLATFORM_HCC__) || defined(__HIP_PLATFORM_AMD__)", True),
    ("defined(__HIPCC__) && defined(__HIP__)", True),
    ("defined(__HIP_PLATFORM_NVIDIA__)", False),
    ("defined(__NVCC__)", False),
    ("__CUDA_ARCH__ >= 800", False),              # undefined identifiers are 0 in #if
    ("defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800", False),
    ("!defined(__CUDA_ARCH__)", True),
    ("defined(__HIP_DEVICE_COMPILE__)", True),    # the device pass compiles it
    ("!defined(__HIP_DEVICE_COMPILE__)", True),   # the host pass compiles it
    ("defined(__CUDACC__)", True),                # HIPIFY renames it to __HIPCC__
    ("defined(PTX_AVAILABLE) && !defined(USE_ROCM)", False),  # decided either way
    ("defined(PTX_AVAILABLE) || defined(USE_ROCM)", True),
    ("defined(PTX_AVAILABLE)", None),
    ("PTX_AVAILABLE", None),
    ("TORCH_VERSION_MAJOR >= 2", None),
    ("__has_include(<cuda_fp8.h>)", None),        # an unknown function-like macro
    ("1 +", None),                                # not an expression
    ('"text"', None),
])
def test_conditions_are_evaluated_for_an_amd_build(expression: str, taken: bool | None) -> None:
    assert evaluate(expression) is taken


def test_the_files_own_defines_decide_conditions() -> None:
    assert evaluate("ARCH >= 2", {"ARCH": 3}) is True
    assert evaluate("defined(HAS_BF16)", {"HAS_BF16": None}) is True
    assert evaluate("HAS_BF16", {"HAS_BF16": None}) is None  # defined, value not an integer
    assert evaluate("defined(X)", unknown=frozenset({"X"})) is None


# -- the branch walk ---------------------------------------------------------------------------

def test_else_elif_and_nesting_follow_the_chain() -> None:
    text = ("#if defined(USE_ROCM)\nA\n#elif defined(FOO)\nB\n#else\nC\n#endif\n"
            "#ifdef FOO\n#ifndef USE_ROCM\nD\n#endif\nE\n#endif\n")
    g = Guards(text)
    states = {}
    for line_no, line in enumerate(text.split("\n"), 1):
        at = sum(len(x) + 1 for x in text.split("\n")[:line_no - 1])
        stripped = line.lstrip("#")
        if line.startswith("#"):
            name = stripped.split()[0]
            g.directive(name, at, at + 1 + len(name))
        elif line:
            guard = g.at(at)
            states[line] = None if guard is None else (guard.live, guard.directive, guard.line)
    assert states == {
        "A": None,
        "B": (False, "#elif defined(FOO)", 3),
        "C": (False, "#else of #if defined(USE_ROCM)", 5),
        "D": (False, "#ifndef USE_ROCM", 9),  # a skipped branch wins over an unknown one
        "E": (None, "#ifdef FOO", 8),
    }


def test_a_directive_line_belongs_to_the_code_around_it() -> None:
    text = "#if __CUDA_ARCH__ >= 800\n  asm volatile(\"cp.async.ca.shared.global [%0], [%1], 16;\");\n#endif\n"
    arch = _findings(text, "kernel.arch-macro")
    assert [(f.line, f.verdict) for f in arch] == [(1, Verdict.PORT)]
    ptx = _findings(text, "kernel.inline-ptx")
    assert [(f.line, f.verdict) for f in ptx] == [(2, Verdict.BLOCKED)]
    assert "#if __CUDA_ARCH__ >= 800 (line 1)" in ptx[0].why


# -- the reproductions of issue 31 -------------------------------------------------------------

ROCM_ELSE_PTX = """\
__device__ inline unsigned lane_id() {
#ifdef USE_ROCM
  return __lane_id();
#else
  unsigned id;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
#endif
}
"""


def test_rocm_ifdef_else_inline_ptx_gives_no_blocked_item() -> None:
    scan = scan_cuda_text(ROCM_ELSE_PTX, "k.cu", CTX)
    assert [f.verdict for f in scan.findings if f.verdict is Verdict.BLOCKED] == []
    (ptx,) = [f for f in scan.findings if f.rule == "kernel.inline-ptx"]
    assert (ptx.line, ptx.verdict) == (6, Verdict.READY)
    assert ptx.why.startswith("CUDA-only branch, already ported: #else of #ifdef USE_ROCM "
                              "(line 4)")
    assert ptx.citation.source.startswith("ROCm/HIP@")


@pytest.mark.parametrize("guard", [
    "#if !defined(USE_ROCM)", "#ifndef __HIP_PLATFORM_AMD__", "#ifndef __HIP_PLATFORM_HCC__",
    "#if !defined(__HIPCC__) && !defined(__HIP__)",
    "#if defined(__NVCC__)", "#ifdef __HIP_PLATFORM_NVIDIA__"])
def test_cuda_only_guards_make_ptx_ready(guard: str) -> None:
    text = f'{guard}\n__device__ void f() {{ asm("mma.sync.aligned.m16n8k16"); }}\n#endif\n'
    found = [f for f in scan_cuda_text(text, "k.cu", CTX).findings
             if f.rule in ("kernel.inline-ptx", "kernel.tensor-core.ptx")]
    assert {f.verdict for f in found} == {Verdict.READY}
    assert len(found) == 2


PTX_AVAILABLE = """\
#include "ds_kernel_utils.h"
#ifdef PTX_AVAILABLE
__device__ void load(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\n" :: "r"(dst), "l"(src));
}
#endif
"""


def test_an_unknown_project_macro_keeps_the_finding_and_says_so() -> None:
    found = _findings(PTX_AVAILABLE, "kernel.inline-ptx")
    assert [(f.line, f.verdict) for f in found] == [(4, Verdict.BLOCKED)]
    assert "under #ifdef PTX_AVAILABLE (line 2) (unknown for an AMD build)" in found[0].why


def test_live_and_skipped_occurrences_of_one_subject_are_two_findings() -> None:
    text = ("#ifndef USE_ROCM\n__device__ int a(int lane) { return lane & 31; }\n#endif\n"
            "__device__ int b(int tid) { return tid & 31; }\n")
    found = _findings(text, "kernel.lane-arith")
    assert [(f.line, f.verdict) for f in found] == [(2, Verdict.READY), (4, Verdict.PORT)]


def test_an_include_guard_and_a_default_define_are_taken() -> None:
    text = ("#ifndef KERNEL_UTILS_H\n#define KERNEL_UTILS_H\n"
            "#ifndef WARP_SIZE\n#define WARP_SIZE 32\n#endif\n"
            "__device__ int lane(int tid) { return tid % 32; }\n#endif\n")
    scan = scan_cuda_text(text, "k.cuh", CTX)
    assert [(f.rule, f.verdict) for f in scan.findings] == [
        ("kernel.warp-size", Verdict.PORT), ("kernel.lane-arith", Verdict.PORT)]
    assert all("unknown" not in f.why for f in scan.findings)


def test_a_macro_the_file_defines_for_rocm_decides_later_guards() -> None:
    text = ("#if defined(USE_ROCM)\n#define HAS_PTX 0\n#else\n#define HAS_PTX 1\n#endif\n"
            "#if HAS_PTX\n__device__ void f() { asm(\"mov.b32 %0, 1;\"); }\n#endif\n")
    (ptx,) = _findings(text, "kernel.inline-ptx")
    assert (ptx.line, ptx.verdict) == (7, Verdict.READY)


def test_directives_in_comments_and_strings_are_not_directives() -> None:
    text = ('/*\n#ifndef USE_ROCM\n*/\nconst char* s = "\\n#if 0";\n'
            '__device__ void f() { asm("mov.b32 %0, 1;"); }\n')
    (ptx,) = _findings(text, "kernel.inline-ptx")
    assert ptx.verdict is Verdict.BLOCKED


def test_continuation_lines_and_comments_in_a_condition() -> None:
    text = ("#if !defined(USE_ROCM) /* CUDA */ && \\\n    defined(FOO)  // both\n"
            "__device__ void f() { asm(\"mov.b32 %0, 1;\"); }\n#endif\n")
    (ptx,) = _findings(text, "kernel.inline-ptx")
    assert (ptx.line, ptx.verdict) == (3, Verdict.READY)


def test_guards_apply_to_headers_scanned_as_cpp(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "utils.h"
    path.write_text("#ifndef USE_ROCM\n__device__ void f() { asm volatile(\"mov.b32 %0, 1;\"); }\n"
                    "#endif\n__device__ void g() { asm volatile(\"mov.b32 %0, 2;\"); }\n",
                    encoding="utf-8")
    found = [(f.line, f.verdict) for f in scan_source(path, "utils.h", CTX).findings
             if f.rule == "kernel.inline-ptx"]
    assert found == [(2, Verdict.READY), (4, Verdict.BLOCKED)]


def test_a_branch_skipped_for_cuda_arch_alone_is_not_called_ported() -> None:
    """``__CUDA_ARCH__`` is undefined under HIP-Clang, so the AMD build compiles the other
    branch (in auto-gptq's Marlin kernel: nothing): the item stays, with the guard named."""
    text = ("__global__ void k(float* out, float v) {\n#if __CUDA_ARCH__ >= 800\n"
            "  if ((threadIdx.x & 31) == 0) out[0] = v;\n#endif\n}\n")
    scan = scan_cuda_text(text, "k.cu", CTX)
    (lane,) = [f for f in scan.findings if f.rule == "kernel.lane-arith"]
    assert lane.verdict is Verdict.PORT
    assert ("CUDA-only branch: #if __CUDA_ARCH__ >= 800 (line 2) is false for an AMD build, "
            "which compiles the other branch instead") in lane.why
    assert "already ported" not in lane.why
    (arch,) = [f for f in scan.findings if f.rule == "kernel.arch-macro"]
    assert (arch.line, arch.verdict) == (2, Verdict.PORT)  # the guard itself is an item too


def test_deepspeed_style_ptx_available_defined_only_for_cuda() -> None:
    text = ("#ifdef __HIP_PLATFORM_AMD__\n#define HALF_PRECISION_AVAILABLE = 1\n#else\n"
            "#if __CUDA_ARCH__ >= 530\n#define HALF_PRECISION_AVAILABLE = 1\n"
            "#define PTX_AVAILABLE\n#endif\n#endif\n"
            "#ifdef PTX_AVAILABLE\n__device__ void f() { asm(\"mov.b32 %0, 1;\"); }\n#endif\n")
    (ptx,) = [f for f in scan_cuda_text(text, "k.cuh", CTX).findings
              if f.rule == "kernel.inline-ptx"]
    assert (ptx.line, ptx.verdict) == (10, Verdict.READY)
    assert "#ifdef PTX_AVAILABLE (line 9)" in ptx.why


def test_if_0_is_never_compiled_and_cplusplus_is_defined() -> None:
    text = ('#if 0\n__device__ void old() { asm("mov.b32 %0, 1;"); }\n#endif\n'
            '#ifdef __cplusplus\nextern "C" {\n#endif\n'
            '__device__ void f() { asm("mov.b32 %0, 2;"); }\n'
            '#ifndef __cplusplus\n__device__ void c() { asm("mov.b32 %0, 3;"); }\n#endif\n')
    found = [(f.line, f.verdict, f.why.split(":")[0])
             for f in _findings(text, "kernel.inline-ptx")]
    assert found == [(2, Verdict.READY, "never compiled"),
                     (7, Verdict.BLOCKED, "Inline PTX assembly is not supported by HIP-Clang (it "
                                          "takes inline GCN assembly only)."),
                     (9, Verdict.READY, "not compiled for AMD")]
