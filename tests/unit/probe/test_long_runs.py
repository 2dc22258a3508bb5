"""A long run of blanks in a dump changes nothing and costs linear time: every recorded dump
parses to the same facts with 2,000 spaces and a tab after each line (before the patterns
were made linear, the ten shared dumps took 7.8 s this way, now 0.03 s), and single lines with
a 64 KiB run inside a value parse to the stripped value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pinning.errors import FormatError
from pinning.probe.formats.collect_env import parse_collect_env
from pinning.probe.formats.common import KEY_LINE
from pinning.probe.formats.pip_list import parse_pip_list, pip_entry
from pinning.probe.formats.rocm_smi import parse_rocm_smi
from pinning.probe.formats.split import parse_section, split_dump
from pinning.resolve.constraints import parse_framework
from pinning.util.versions import or_later
from tests.support.paths import DUMPS

PAD = " " * 2000 + "\t"
RUN = " " * 65536


def _facts(text: str, name: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for section in split_dump(text, source=name):
        parsed = parse_section(section, source=name)
        dumped = parsed.model_dump() if hasattr(parsed, "model_dump") else parsed
        out.append((section.kind, dumped))
    return out


def _dumps() -> list[Path]:
    found = []
    for path in sorted(DUMPS.glob("*.txt")):
        try:
            split_dump(path.read_text(encoding="utf-8"), source=path.name)
        except FormatError:
            continue  # a dump only `pin probe` reads (no header to detect)
        found.append(path)
    return found


@pytest.mark.parametrize("path", _dumps(), ids=lambda p: p.name)
def test_trailing_blanks_on_every_line_change_no_fact(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    padded = "\n".join(line + PAD for line in text.split("\n"))
    assert _facts(padded, path.name) == _facts(text, path.name)


def test_the_dumps_cover_every_tool_format() -> None:
    kinds = {kind for path in _dumps()
             for kind, _ in _facts(path.read_text(encoding="utf-8"), path.name)}
    assert {"collect_env", "sglang_check_env", "pip_list", "rocminfo", "rocm_smi",
            "amd_smi_version", "amd_smi_firmware", "amd_smi_static", "nvidia_smi",
            "nvidia_smi_query", "nvidia_proc_version"} <= kinds


def test_a_64k_run_inside_rocm_smi_values() -> None:
    text = ("========================= ROCm System Management Interface =========================\n"
            f"ROCM-SMI version: 3.0.0{RUN}\n"
            f"ROCM-SMI-LIB version:{RUN}7.4.0{RUN}\n"
            f"Driver version:{RUN}6.10.5{RUN}x\n"
            f"GPU[0]{RUN}: ASD firmware version: {RUN}0x00000000{RUN}\n"
            f"GPU[0]{RUN}: SMU{RUN}firmware version:{RUN}85.69.0{RUN}\n")
    report = parse_rocm_smi(text)
    assert report.version is not None
    assert (report.version.smi, report.version.lib) == ("3.0.0", "7.4.0")
    assert report.driver_version == f"6.10.5{RUN}x"
    assert report.gpus[0].firmware == {"ASD": "0x00000000", "SMU": "85.69.0"}


def test_a_64k_run_in_collect_env_and_pip_lines() -> None:
    env = parse_collect_env(
        f"PyTorch version: 2.7.0+rocm6.3{RUN}\n"
        f"GPU models and configuration:{RUN}\n"
        f"GPU 0:{RUN}NVIDIA H100 80GB HBM3{RUN}(UUID: GPU-1){RUN}\n"
        "Versions of relevant libraries:\n"
        f"[pip3]{RUN}numpy=={RUN}2.1.0{RUN}\n")
    assert env.torch_version == "2.7.0+rocm6.3"
    assert env.gpus == ["NVIDIA H100 80GB HBM3"]
    assert env.pip_packages == {"numpy": "2.1.0"}
    assert pip_entry(f"numpy{RUN}[extra]{RUN}=={RUN}2.1.0") == ("numpy", "2.1.0")
    assert pip_entry(f"numpy{RUN}x") is None
    assert parse_pip_list(f"Package Version\n------- -------{RUN}\nnumpy{RUN}2.1.0{RUN}x\n") == {
        "numpy": "2.1.0"}
    match = KEY_LINE.match(f"{RUN}Key{RUN}:{RUN}value{RUN}")
    assert match is not None and (match.group(1).strip(), match.group(2).strip()) == (
        "Key", "value")


def test_a_64k_run_in_flags_and_lock_entries() -> None:
    assert or_later(f"{RUN}01.25.05.00{RUN}(or later){RUN}") == ("01.25.05.00", True)
    assert or_later(f"01.25{RUN}") == ("01.25", False)
    framework = parse_framework("pytorch  ==2.13.0 ")
    assert (framework.name, str(framework.spec)) == ("pytorch", "==2.13.0")


def test_digit_runs_past_pythons_int_limit_are_not_numbers() -> None:
    """A GPU index or a byte count of 5,000 digits (or a Unicode digit) is no number pin
    reads: never the ValueError int() raises past 4,300 digits (exit 1)."""
    from pinning.probe.formats.amd_smi_gpu import parse_amd_smi_firmware
    from pinning.util.text import ascii_int

    long = "1" * 5000
    assert ascii_int(long) is None and ascii_int("²") is None and ascii_int("-7") is None
    assert ascii_int("-7", signed=True) == -7 and ascii_int("0042") == 42
    report = parse_rocm_smi(
        "========================= ROCm System Management Interface =========================\n"
        f"GPU[{long}] : ASD firmware version: 0x1\nGPU[0] : SMU firmware version: 85.69.0\n")
    assert [g.index for g in report.gpus] == [0]
    firmware = parse_amd_smi_firmware(f"GPU: {long}\n    FW_ID: CP_CE\n    FW_VERSION: 37\n")
    assert all(g.gpu < 10**9 for g in firmware)  # the long number is no GPU index
