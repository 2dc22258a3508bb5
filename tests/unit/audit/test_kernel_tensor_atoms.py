"""What the kernel scanner missed before issue 31: CuTe / CUTLASS architecture atoms,
``ldmatrix`` / ``stmatrix`` PTX, PTX in headers, and CUDA-only types named with HIPIFY's
equivalents."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinning.audit.kernels import scan_cuda_text, scan_source
from pinning.audit.model import Context, Kind, Verdict

CTX = Context()


@pytest.mark.parametrize("atom", [
    "SM80_16x8x16_F32BF16BF16F32_TN", "SM80_CP_ASYNC_CACHEGLOBAL", "SM90_TMA_LOAD",
    "SM90_64x128x16_F32BF16BF16_SS", "SM75_U32x4_LDSM_N", "SM70_8x8x4_F16F16F16F16_TN",
    "SM100_MMA_F16BF16_SS"])
def test_cute_atoms_are_blocked_tensor_core_items(atom: str) -> None:
    text = f"using Atom = MMA_Atom<{atom}>;\n"
    (f,) = scan_cuda_text(text, "gemm.cuh", CTX).findings
    assert (f.rule, f.kind, f.verdict, f.subject, f.line) == (
        "kernel.tensor-core.cute-atom", Kind.TENSOR_CORE, Verdict.BLOCKED, atom, 1)
    assert f.citation.source.startswith("NVIDIA/cutlass@")


@pytest.mark.parametrize("name", ["SM80_ENABLED", "SM90_SUPPORTED", "KSM80_16x8x8", "SM8_1x1x1",
                                  "my_SM80_16x8x8"])
def test_project_macros_named_like_an_arch_are_not_atoms(name: str) -> None:
    assert scan_cuda_text(f"#ifdef {name}\nint {name}_x = 1;\n#endif\n", "k.cu", CTX).findings \
        == []


def test_ldmatrix_and_stmatrix_are_tensor_core_ptx() -> None:
    text = ('__device__ void f() {\n'
            '  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n"'
            ' : "=r"(a) : "r"(b));\n'
            '  asm volatile("stmatrix.sync.aligned.x4.m8n8.shared.b16 [%0], {%1};" :: "r"(a));\n'
            '}\n')
    found = [(f.subject, f.line, f.verdict) for f in scan_cuda_text(text, "k.cu", CTX).findings
             if f.rule == "kernel.tensor-core.ptx"]
    assert found == [("ldmatrix", 2, Verdict.BLOCKED), ("stmatrix", 3, Verdict.BLOCKED)]


@pytest.mark.parametrize("suffix", [".h", ".hpp", ".cuh", ".inl"])
def test_inline_ptx_in_headers_is_found(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"copy{suffix}"
    path.write_text('__device__ inline void cp(void* d, const void* s) {\n'
                    '  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), '
                    '"l"(s));\n}\n', encoding="utf-8")
    rules = {(f.rule, f.line) for f in scan_source(path, path.name, CTX).findings}
    assert {("kernel.inline-ptx", 2), ("kernel.tensor-core.ptx", 2)} <= rules


def test_cuda_only_types_name_their_hip_equivalents_from_hipify() -> None:
    text = ("__device__ void f() {\n  __nv_bfloat162 a; __nv_fp8_e4m3 b; nv_bfloat16 c;\n"
            "  nv_bfloat162 d;\n}\n")
    found = {f.subject: (f.verdict, f.replacement) for f in
             scan_cuda_text(text, "k.cu", CTX).findings}
    assert found["__nv_bfloat162"] == (Verdict.SWAP, "__hip_bfloat162")
    assert found["__nv_fp8_e4m3"] == (Verdict.SWAP, "__hip_fp8_e4m3_fnuz")
    assert found["nv_bfloat16"] == (Verdict.SWAP, "hip_bfloat16")
    assert found["nv_bfloat162"] == (Verdict.PORT, None)  # HIPIFY's HIP cell is empty


def test_user_names_starting_with_nv_are_not_looked_up_as_cuda() -> None:
    assert scan_cuda_text("int nv_count = 0; float nv_scale;\n", "k.cu", CTX).findings == []



def test_cutlass_tensor_op_and_arch_tags_are_tensor_core_items() -> None:
    # Shapes of grouped_gemm 0.3.0 csrc/grouped_gemm.cu and DeepSpeed 0.19.8's
    # evoformer_attn/gemm_kernel_utils.h: a CUTLASS GEMM picked by its operator class and arch.
    text = ("using Gemm = cutlass::gemm::kernel::DefaultGemmGrouped<\n"
            "  ::cutlass::arch::OpClassTensorOp,\n  ::cutlass::arch::Sm80,\n"
            "  // cutlass::arch::Sm90 in a comment\n  my_arch::Sm80x>;\n")
    found = [(f.subject, f.line, f.verdict) for f in scan_cuda_text(text, "g.cu", CTX).findings
             if f.rule == "kernel.tensor-core.cute-atom"]
    assert found == [("OpClassTensorOp", 2, Verdict.BLOCKED), ("arch::Sm80", 3, Verdict.BLOCKED)]


def test_cutlass_simt_class_is_not_a_tensor_core_item() -> None:
    text = "using OpClass = cutlass::arch::OpClassSimt;\nint OpClassTensorOpCount = 0;\n"
    assert [f for f in scan_cuda_text(text, "g.cu", CTX).findings
            if f.rule == "kernel.tensor-core.cute-atom"] == []
