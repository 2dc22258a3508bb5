"""pin doctor: every diagnosis in the shared fixture dumps is reported, negative fixtures say
nothing is wrong, and hazards from FACTS.md §3 are found in pasted dumps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.doctor.report import DoctorReport, doctor
from pinning.errors import PinError
from pinning.guards.checks import check_host_driver
from pinning.guards.view import EnvView
from pinning.matrix.load import Matrix
from tests.support.paths import DUMPS

FIXTURES = sorted(p for p in DUMPS.glob("*.json"))

# Fixture diagnosis code -> pin's finding code.
CODE_MAP = {
    "sriov-guest-power-cap": "sriov-guest",
    "inbox-amdgpu-driver": "inbox-amdgpu-driver",
    "unsupported-gfx-target": "unsupported-gfx-target",
    "cpu-only-torch-build": "cpu-only-torch-build",
    "driver-too-old-for-cuda": "driver-too-old-for-cuda",
    "multiple-torch-distributions": "multiple-torch-distributions",
}


def diagnose(matrix: Matrix, *texts: str) -> DoctorReport:
    return doctor([(f"dump{i}.txt", t) for i, t in enumerate(texts)], matrix)


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_fixture_diagnosis(matrix: Matrix, fixture: Path) -> None:
    expected = json.loads(fixture.read_text())
    text = fixture.with_suffix(".txt").read_text()
    report = doctor([(fixture.with_suffix(".txt").name, text)], matrix)
    assert [d.kind for d in report.dumps] == expected["kind"]
    want = {CODE_MAP[d["code"]] for d in expected["diagnosis"]}
    got = {f.code for f in report.findings}
    assert got == want, [f.message for f in report.findings]
    for f in report.findings:
        assert f.source and f.message


def test_driver_findings_name_the_minimum(matrix: Matrix) -> None:
    report = doctor([("d", (DUMPS / "pytorch-pytorch-37320.txt").read_text())], matrix)
    f = next(f for f in report.findings if f.code == "driver-too-old-for-cuda")
    assert (f.expected, f.actual) == (">=440.33", "410.104")
    assert f.source is not None
    assert "CUDA 10.2" in f.message and "Table 2" in f.source


def test_combined_dump_finds_triton_hazards(matrix: Matrix) -> None:
    report = doctor([("c", (DUMPS / "combined-dump.txt").read_text())], matrix)
    codes = {f.code for f in report.findings}
    assert {"multiple-triton-distributions", "cuda-triton-with-rocm-torch"} <= codes
    assert len(report.dumps) == 6


def test_old_kmd_under_new_rocm(matrix: Matrix) -> None:
    sglang = (
        "Python: 3.12.3\nROCM available: True\nGPU 0: AMD Instinct MI300X\n"
        "ROCM_HOME: /opt/rocm\nHIPCC: HIP version: 7.2.26015-fc0010cf6a\n"
        "ROCM Driver Version: 6.8.5\nPyTorch: 2.9.1+rocm7.2\n"
    )
    codes = {f.code for f in diagnose(matrix, sglang).findings}
    assert "kmd-older-than-user-space" in codes


def test_cuda_torch_on_amd_and_jax_plugin_major(matrix: Matrix) -> None:
    pip = ("torch 2.5.1+cu124\nnvidia-cuda-runtime-cu12 12.4.127\njax 0.4.35\njaxlib 0.4.35\n"
           "jax-rocm60-plugin 0.4.35\njax-rocm60-pjrt 0.4.35\n")
    amd = ("AMDSMI Tool: 26.2.0+021c61fc | AMDSMI Library version: 26.2.0 | ROCm version: 7.1.1 "
           "| amdgpu version: 6.16.6 | amd_hsmp version: N/A\n")
    rocminfo = (DUMPS / "rocminfo-full.txt").read_text()
    report = diagnose(matrix, pip, amd, rocminfo)
    codes = {f.code for f in report.findings}
    assert {"cuda-torch-on-amd", "cuda-libraries-on-amd", "jax-plugin-rocm-major"} <= codes


def test_jax_version_skew(matrix: Matrix) -> None:
    report = diagnose(matrix, "jax 0.8.2\njaxlib 0.8.2\njax-rocm7-plugin 0.8.0\n"
                              "jax-rocm7-pjrt 0.8.2\n")
    assert [f.code for f in report.findings] == ["jax-version-skew"]


def test_hsa_override_is_reported() -> None:
    found = check_host_driver(EnvView(environment={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}))
    assert [f.code for f in found] == ["hsa-override-gfx-version"]
    assert found[0].source is not None
    assert "github.com/pytorch/pytorch/issues/164346" in found[0].source
    assert "FACTS" not in found[0].source


def test_unrecognised_file_is_a_format_error(matrix: Matrix) -> None:
    with pytest.raises(PinError) as exc:
        diagnose(matrix, "hello world\n")
    assert exc.value.exit_code == 7 and "dump0.txt" in exc.value.message


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300) | st.lists(st.sampled_from([
    "PyTorch version: 2.1.0", "CUDA used to build PyTorch: 12.1", "ROCM used to build PyTorch: N/A",
    "Nvidia driver version: 470.1", "GPU 0: NVIDIA H100", "[pip3] torch==2.1.0", "torch 2.1.0",
    "ROCk module version 6.8.5 is loaded", "  Name:  gfx1010", "AMDSMI Tool: 1 | ROCm version: 7",
    "GPU[0]\t\t: Driver version: 6.1", "NVRM version: NVIDIA UNIX Kernel Module  1.2  x",
    "", "*******", "Agent 2", "  Device Type:  GPU"]), max_size=20).map("\n".join))
def test_doctor_never_crashes(matrix: Matrix, text: str) -> None:
    try:
        report = diagnose(matrix, text)
    except PinError:
        return
    assert isinstance(report.findings, list)
