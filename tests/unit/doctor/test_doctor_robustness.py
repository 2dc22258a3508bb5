"""pin doctor on odd pastes: the same answer whatever the order or the package listing.
(Regressions found by trying to break probe / verify / freeze / doctor.)"""

from __future__ import annotations

from pinning.doctor.report import doctor
from pinning.matrix.load import Matrix


def test_conda_pypi_rows_are_not_a_second_torch(matrix: Matrix) -> None:
    env = ("PyTorch version: 2.7.0+cu126\nCUDA used to build PyTorch: 12.6\n"
           "Versions of relevant libraries:\n[pip3] torch==2.7.0+cu126\n"
           "[conda] torch                     2.7.0+cu126              pypi_0    pypi\n")
    report = doctor([("env.txt", env)], matrix)
    assert "multiple-torch-distributions" not in {f.code for f in report.findings}
    twice = doctor([("a", env), ("b", env)], matrix)
    assert twice.environment["packages"] == 1


def test_doctor_host_rocm_does_not_depend_on_paste_order(matrix: Matrix) -> None:
    env = ("PyTorch version: 2.7.0+rocm6.3\nCUDA used to build PyTorch: N/A\n"
           "ROCM used to build PyTorch: 6.3.42131-fa1d09cbd\n")
    pip = "jax 0.7.1\njaxlib 0.7.1\njax-rocm7-plugin 0.7.1\njax-rocm7-pjrt 0.7.1\n"
    smi = ("AMDSMI Tool: 26.2.0+021c61fc | AMDSMI Library version: 26.2.0 | ROCm version: 7.1.1 "
           "| amdgpu version: 6.16.6 | amd_hsmp version: N/A\n")
    for order in ((env, pip, smi), (smi, env, pip)):
        report = doctor([(f"d{i}", t) for i, t in enumerate(order)], matrix)
        assert report.environment["rocm"] == "7.1.1"
        assert report.findings == []
