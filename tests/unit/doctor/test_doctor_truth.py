"""pin doctor counts conda's pip copies, reads pip freeze's wheel references, carries every
parsed field in its JSON facts, and cites public sources in its findings.

Dumps: tests/data/dumps (see its README); the conda and pip freeze lines below are real
`conda list` / `pip freeze` layouts (conda-list-pytorch-32369.txt, pytorch/pytorch#28321).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from pinning.doctor.report import doctor
from pinning.errors import FormatError
from pinning.matrix.load import Matrix
from pinning.probe.formats.pip_list import parse_pip_list
from pinning.probe.formats.split import parse_section, split_dump
from tests.support.paths import DUMPS

ROCMINFO = (DUMPS / "rocminfo-full.txt").read_text()
CONDA_HEADER = ("# packages in environment at /home/u/miniconda3/envs/t:\n#\n"
                "# Name                    Version                   Build  Channel\n")


def _codes(text: str, matrix: Matrix) -> set[str]:
    return {f.code for f in doctor([("d", text)], matrix).findings}


def test_conda_pypi_copies_count_without_a_pip_list(matrix: Matrix) -> None:
    conda = CONDA_HEADER + (
        "numpy                     1.26.4                   pypi_0    pypi\n"
        "torch                     2.5.1+cu124              pypi_0    pypi\n"
        "triton                    3.1.0                    pypi_0    pypi\n"
        "pytorch-triton-rocm       3.1.0                    pypi_0    pypi\n")
    report = doctor([("d", ROCMINFO + "\n" + conda)], matrix)
    codes = {f.code for f in report.findings}
    assert {"cuda-torch-on-amd", "multiple-triton-distributions"} <= codes
    torch = [p for p in report.facts.packages if p.name == "torch"]
    assert [(p.version, p.source) for p in torch] == [("2.5.1+cu124", "pip")]


def test_conda_pytorch_beside_pip_torch_is_two_copies(matrix: Matrix) -> None:
    for pip_line in ("torch                     1.6.0                     <pip>\n",
                     "torch                     1.6.0                    pypi_0    pypi\n"):
        conda = CONDA_HEADER + (
            "pytorch                   1.5.0           py3.7_cuda10.2.89_cudnn7.6.5_0    pytorch\n"
            + pip_line)
        assert "multiple-torch-distributions" in _codes(conda, matrix)


def test_conda_pip_copy_listed_by_pip_is_one_copy(matrix: Matrix) -> None:
    text = CONDA_HEADER + (
        "python                    3.7.7                hcff3b4d_5\n"
        "torch                     1.6.0                     <pip>\n"
        "\nPackage     Version\n----------- -------\ntorch       1.6.0\n")
    report = doctor([("d", text)], matrix)
    assert "multiple-torch-distributions" not in {f.code for f in report.findings}
    assert [p.source for p in report.facts.packages if p.name == "torch"] == ["pip"]


def test_pip_freeze_direct_wheel_reference(matrix: Matrix) -> None:
    freeze = ("torch @ https://download.pytorch.org/whl/cu124/"
              "torch-2.5.1%2Bcu124-cp311-cp311-linux_x86_64.whl\nnumpy==1.26.4\n")
    assert parse_pip_list(freeze) == {"torch": "2.5.1+cu124", "numpy": "1.26.4"}
    report = doctor([("d", ROCMINFO + "\n$ pip freeze\n" + freeze)], matrix)
    assert report.facts.torch["version"] == "2.5.1+cu124"
    assert "cuda-torch-on-amd" in {f.code for f in report.findings}
    # A reference that names no wheel of that distribution gives no version.
    with pytest.raises(FormatError):
        parse_pip_list("torch @ git+https://github.com/pytorch/pytorch@v2.5.1\n")


def _facts(name: str, matrix: Matrix) -> dict[str, Any]:
    report = doctor([(name, (DUMPS / name).read_text())], matrix)
    facts: dict[str, Any] = json.loads(report.facts.model_dump_json(by_alias=True))
    return facts


def test_rocm_smi_numa_table_gpus_are_facts_not_judged(matrix: Matrix) -> None:
    name = "ROCm-legacy-rocm-build-4740.txt"
    report = doctor([(name, (DUMPS / name).read_text())], matrix)
    assert report.facts.gpu_count == 8 and not report.judged
    details = [g.details for g in report.facts.gpus]
    assert details[4]["numa_node"] == "1" and details[4]["numa_affinity"] == "1"


def test_partitions_firmware_vbios_vram_reach_the_facts(matrix: Matrix) -> None:
    gpu = _facts("ROCm-ROCm-5231.txt", matrix)["gpus"][0]
    assert gpu["details"]["partitions.memory"] == "NPS1"
    assert gpu["details"]["partitions.compute"] == "SPX" and gpu["details"]["node"] == "1"
    fw = _facts("amd-smi-firmware.txt", matrix)
    assert fw["gpu-count"] == 2 and sum(len(f["firmware"]) for f in fw["firmware"]) == 10
    static = _facts("amd-smi-static.txt", matrix)["gpus"][0]["details"]
    assert static["vram_mib"] == "64289"
    assert static["vbios_version"] == "022.040.003.043.000001"
    assert static["product_name"] == "Aqua Vanjaram [Instinct MI300A]"
    assert "subsystem_id" in static


def test_collect_env_placeholders_are_stated(matrix: Matrix) -> None:
    facts = _facts("collect-env-vllm-rocm.txt", matrix)
    assert facts["cudnn"] is None and facts["stated"]["cudnn"] == "Could not collect"
    assert facts["stated"]["cuda_runtime"] == "Could not collect"
    assert facts["torch"]["debug_build"] == "False"


def test_text_for_firmware_only_does_not_say_no_gpu(matrix: Matrix) -> None:
    from pinning.cli.render_host import doctor_text

    report = doctor([("d", (DUMPS / "amd-smi-firmware.txt").read_text())], matrix)
    text = doctor_text(report)
    assert not report.judged and "show no GPU" not in text
    assert "Firmware: 10 entries for 2 GPU(s)" in text


def _leaves(obj: Any) -> list[str]:
    if isinstance(obj, BaseModel):
        return [x for k in type(obj).model_fields for x in _leaves(getattr(obj, k))]
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in _leaves(v)]
    if isinstance(obj, list | tuple):
        return [x for v in obj for x in _leaves(v)]
    if obj is None or obj is False or str(obj).strip() == "":
        return []
    return [str(obj)]


def _json_values(obj: Any) -> set[str]:
    if isinstance(obj, dict):
        return {x for v in obj.values() for x in _json_values(v)}
    if isinstance(obj, list):
        return {x for v in obj for x in _json_values(v)}
    return {str(obj)}


# nvidia-smi --query-gpu output without a header has no line to detect: `pin probe` reads it
# (it ran the command), `pin doctor` cannot tell it from any CSV, and says so (exit 7).
PROBE_ONLY = {"nvidia-smi-query-noheader-nounits.txt"}


def test_a_headerless_query_is_refused_by_doctor_not_misread() -> None:
    for name in PROBE_ONLY:
        with pytest.raises(FormatError):
            split_dump((DUMPS / name).read_text(), source=name)


@pytest.mark.parametrize("dump", sorted(p.name for p in DUMPS.glob("*.txt")
                                        if p.name not in PROBE_ONLY))
def test_every_parsed_field_reaches_the_json_facts(dump: str, matrix: Matrix) -> None:
    text = (DUMPS / dump).read_text()
    sections = split_dump(text, source=dump)
    report = doctor([(dump, text)], matrix)
    values = _json_values(json.loads(report.facts.model_dump_json(by_alias=True)))
    for section in sections:
        parsed = parse_section(section, source=dump)
        missing = [v for v in _leaves(parsed) if v not in values]
        assert not missing, f"{section.kind}: {missing[:5]}"


def test_finding_sources_are_public(matrix: Matrix) -> None:
    text = ("Collecting environment information...\nPyTorch version: 2.5.1+cpu\n"
            "Is debug build: False\nCUDA used to build PyTorch: None\n"
            "ROCM used to build PyTorch: N/A\n")
    report = doctor([("d", ROCMINFO.replace("gfx942", "gfx999") + "\n" + text)], matrix)
    sources = {f.code: f.source or "" for f in report.findings}
    assert "compatibility-matrix.html" in sources["unsupported-gfx-target"]
    assert "hip.rst" in sources["cpu-only-torch-build"]
    for src in sources.values():
        assert "pin's matrix" not in src and "FACTS" not in src and "shared/" not in src
