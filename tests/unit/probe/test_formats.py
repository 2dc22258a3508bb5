"""Tests of the pure tool-output parsers in pinning.probe.formats (FACTS.md §1.13, §2.1-§2.9)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinning.errors import FormatError, ProbeError
from pinning.probe.formats.amd_smi import (
    AmdSmiVersion,
    is_inbox_driver_string,
    kernel_from_banner,
    parse_amd_smi_version,
)
from pinning.probe.formats.amd_smi_gpu import (
    AmdSmiStatic,
    GpuFirmware,
    parse_amd_smi_firmware,
    parse_amd_smi_static,
)
from pinning.probe.formats.collect_env import CollectEnv, parse_collect_env
from pinning.probe.formats.nvidia import (
    NvidiaKernelModule,
    parse_nvidia_smi_banner,
    parse_nvidia_smi_query,
    parse_proc_driver_nvidia_version,
)
from pinning.probe.formats.pip_list import parse_pip_list
from pinning.probe.formats.rocm_smi import RocmSmiReport, parse_rocm_smi
from pinning.probe.formats.rocminfo import Rocminfo, parse_rocminfo
from pinning.probe.formats.sglang import SglangCheckEnv, parse_sglang_check_env
from pinning.probe.formats.split import parse_section, split_dump
from tests.support.paths import DUMPS

FIXTURES = sorted(DUMPS.glob("*.json"))


def read(name: str) -> str:
    return (DUMPS / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- fixtures
# One checker per fact key. A fact key without a checker fails the test.


def _lookup(matrix: Any, device_id: str | None) -> Any:
    assert device_id is not None
    hit = matrix.find_gpu(device_id)
    assert not isinstance(hit, list), hit
    return hit


# One branch per expected-fact key of the rocm-smi fixtures, mirroring FACTS' key list.
def _check_rocm_smi(key: str, want: Any, models: list[Any], matrix: Any) -> None:  # noqa: C901
    (rep,) = models
    assert isinstance(rep, RocmSmiReport)
    if key == "rocm_smi_version":
        assert rep.version is not None and rep.version.smi == want
    elif key == "rocm_smi_lib_version":
        assert rep.version is not None and rep.version.lib == want
    elif key == "rocm_version":
        assert want is None  # rocm-smi never prints a ROCm release; nothing to read
    elif key == "gpu_count":
        assert len(rep.gpus) == want
    elif key == "gpus":
        assert len(rep.gpus) == len(want)
        for gpu, exp in zip(rep.gpus, want, strict=True):
            for k, v in exp.items():
                if k == "index":
                    assert gpu.index == v
                elif k == "node":
                    assert gpu.node == v
                elif k == "device_id":
                    assert gpu.device_id == v
                elif k == "product_from_device_id":
                    ident = _lookup(matrix, gpu.device_id)
                    assert ident.id == "mi300x"
                    assert "MI300X" in v and "VF" in v
                    assert "0x74b5" in ident.pci_device_ids
                elif k == "gfx_from_device_id":
                    assert _lookup(matrix, gpu.device_id).gfx_target == v
                else:
                    assert gpu.telemetry[k] == v, k
    elif key == "partitions":
        assert rep.gpus[0].partitions == want
    elif key == "telemetry":
        assert rep.gpus[0].telemetry == want
    elif key == "numa_node_by_gpu":
        assert [g.numa_node for g in rep.gpus] == want
    elif key == "numa_affinity_by_gpu":
        assert [g.numa_affinity for g in rep.gpus] == want
    else:
        pytest.fail(f"no mapping for rocm_smi fact {key!r}")


def _check_pip(key: str, want: Any, models: list[Any], matrix: Any) -> None:
    (pkgs,) = models
    if key == "packages":
        assert pkgs == want
    elif key == "jax_rocm_plugin_built_for":
        plugins = [n for n in pkgs if n.startswith("jax-rocm") and n.endswith("-plugin")]
        assert plugins == ["jax-rocm60-plugin"]
        assert "rocm60" in plugins[0] and "rocm60" in want and "6.0" in want
    else:
        pytest.fail(f"no mapping for pip_list fact {key!r}")


def _check_amd_version(key: str, want: Any, models: list[Any], matrix: Any) -> None:
    (ver,) = models
    assert isinstance(ver, AmdSmiVersion)
    attr = {
        "amd_smi_tool": "tool",
        "amd_smi_library": "library",
        "rocm_version": "rocm",
        "amdgpu_version": "amdgpu",
        "amd_hsmp_version": "amd_hsmp",
    }
    if key in attr:
        assert getattr(ver, attr[key]) == want
    elif key == "amdgpu_driver_kind":
        assert want.startswith("inbox")
        assert ver.amdgpu is not None and is_inbox_driver_string(ver.amdgpu)
    elif key == "kernel":
        assert ver.amdgpu is not None and kernel_from_banner(ver.amdgpu) == want
    else:
        pytest.fail(f"no mapping for amd_smi_version fact {key!r}")


def _check_rocminfo(key: str, want: Any, models: list[Any], matrix: Any) -> None:
    (info,) = models
    assert isinstance(info, Rocminfo)
    if key == "gpu_count":
        assert len(info.gpus) == want
    elif key == "gpus":
        assert len(info.gpus) == len(want)
        attr = {"gfx": "gfx_target", "name": "marketing_name", "vendor": "vendor_name"}
        for agent, exp in zip(info.gpus, want, strict=True):
            for k, v in exp.items():
                assert getattr(agent, attr.get(k, k)) == v, k
    elif key == "queue":
        assert info.gpus[0].queue == want
    else:
        pytest.fail(f"no mapping for rocminfo fact {key!r}")


_CE_ATTR = {
    "torch_version": "torch_version",
    "torch_cuda": "cuda_built",
    "torch_hip": "rocm_built",
    "debug_build": "debug_build",
    "os": "os",
    "gcc_version": "gcc_version",
    "cmake_version": "cmake_version",
    "python_version": "python_version",
    "cuda_available": "cuda_available",
    "cuda_runtime_version": "cuda_runtime_version",
    "gpu_models": "gpu_models",
    "nvidia_driver_version": "nvidia_driver_version",
    "cudnn_version": "cudnn_version",
}


def _check_collect_env(key: str, want: Any, models: list[Any], matrix: Any) -> None:
    (env,) = models
    assert isinstance(env, CollectEnv)
    if key in _CE_ATTR:
        assert getattr(env, _CE_ATTR[key]) == want, key
    elif key == "torch_build":
        assert env.torch_build == want
    elif key == "gpu_count":
        assert len(env.gpus) == want
    elif key == "gpus":
        assert [{"index": i, "name": n} for i, n in enumerate(env.gpus)] == want
    elif key == "pip_packages":
        assert env.pip_packages == (None if want == "Could not collect" else want)
    elif key == "conda_packages":
        if want == "Could not collect":
            assert env.conda_packages is None
        else:
            assert env.conda_packages is not None
            got = {
                n: p.model_dump(exclude_none=True) for n, p in env.conda_packages.items()
            }
            assert got == want
    else:
        pytest.fail(f"no mapping for collect_env fact {key!r}")


CHECKERS: dict[str, Callable[[str, Any, list[Any], Any], None]] = {
    "rocm_smi": _check_rocm_smi,
    "pip_list": _check_pip,
    "amd_smi_version": _check_amd_version,
    "rocminfo": _check_rocminfo,
    "collect_env": _check_collect_env,
}


def test_fixture_directory_holds_every_shared_fixture() -> None:
    assert len(FIXTURES) >= 10
    for fx in FIXTURES:
        assert fx.with_suffix(".txt").is_file(), fx


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.stem for f in FIXTURES])
def test_fixture_facts(fixture: Path, matrix: Any) -> None:
    meta = json.loads(fixture.read_text(encoding="utf-8"))
    text = fixture.with_suffix(".txt").read_text(encoding="utf-8")
    sections = split_dump(text, source=fixture.name)
    assert [s.kind for s in sections] == meta["kind"]
    (kind,) = set(meta["kind"])
    checker = CHECKERS.get(kind)
    assert checker is not None, f"no checker for kind {kind}"
    models = [parse_section(s) for s in sections]
    for key, want in meta["facts"].items():
        checker(key, want, models, matrix)


# --------------------------------------------------------------------------- amd-smi


def test_amd_smi_version_lines() -> None:
    v = parse_amd_smi_version(
        "AMDSMI Tool: 23.4.2+505b858 | AMDSMI Library version: 24.2.0.0 | ROCm version: 6.1.0"
    )
    assert (v.tool, v.library, v.rocm, v.amdgpu, v.amd_hsmp) == (
        "23.4.2+505b858", "24.2.0.0", "6.1.0", None, None,
    )
    v = parse_amd_smi_version(read("amd-smi-version-7.1.1.txt"))
    assert v.tool == "26.2.0+021c61fc" and v.library == "26.2.0" and v.rocm == "7.1.1"
    assert v.amdgpu == "6.16.6" and v.amd_hsmp == "N/A"
    assert not is_inbox_driver_string(v.amdgpu)
    assert v.fields["amd_hsmp version"] == "N/A"


def test_amd_smi_banner() -> None:
    v = parse_amd_smi_version(read("amd-smi-banner.txt"))
    assert v.tool == "26.1.0" and v.rocm == "7.1.0" and v.platform == "Linux Baremetal"
    old = parse_amd_smi_version("Version: 24.7.0.0 | ROCm version: 6.2.2")
    assert old.tool == "24.7.0.0" and old.rocm == "6.2.2"


def test_kernel_banner_helpers() -> None:
    nix = "Linuxversion6.19.11(nixbld@localhost)(gcc)#1-NixOS SMP"
    assert is_inbox_driver_string(nix) and kernel_from_banner(nix) == "6.19.11"
    spaced = "Linux version 6.8.0-79-generic (buildd@lcy02) #79-Ubuntu SMP"
    assert is_inbox_driver_string(spaced)
    assert kernel_from_banner(spaced) == "6.8.0-79-generic"
    assert not is_inbox_driver_string("6.12.12")
    assert kernel_from_banner("6.12.12") is None


def test_amd_smi_firmware_text() -> None:
    gpus = parse_amd_smi_firmware(read("amd-smi-firmware.txt"))
    assert [g.gpu for g in gpus] == [0, 1]
    assert gpus[0].firmware == {
        "CP_MEC1": "32959",
        "CP_MEC2": "32959",
        "RLC": "69",
        "TA_RAS": "1B.36.02.1A",
        "TA_XGMI": "20.00.00.14",
        "PM": "00.85.129.03",
        "PLDM_BUNDLE": "01.25.03.12",
    }
    assert gpus[1].firmware == {
        "PSP_SOSDRV": "00.45.00.29", "PM": "04.86.15.106", "PLDM_BUNDLE": "01.25.17.07",
    }


def test_amd_smi_firmware_json() -> None:
    (gpu,) = parse_amd_smi_firmware(read("amd-smi-firmware-json.txt"))
    assert gpu == GpuFirmware(
        gpu=0,
        firmware={
            "CP_MEC1": "32959",
            "TA_RAS": "1B.36.02.1A",
            "PM": "00.85.129.03",
            "PLDM_BUNDLE": "01.25.03.12",
        },
    )
    wrapped = json.dumps(
        {"gpu_data": [{"gpu": 3, "fw_list": [{"fw_id": "PM", "fw_version": 8513}]}]}
    )
    assert parse_amd_smi_firmware(wrapped) == [GpuFirmware(gpu=3, firmware={"PM": "8513"})]


def test_amd_smi_static_text() -> None:
    (s,) = parse_amd_smi_static(read("amd-smi-static.txt"))
    assert s == AmdSmiStatic(
        gpu=0,
        market_name="MI308X",
        vendor_id="0x1002",
        device_id="0x74a2",
        subsystem_id="0x74a2",
        target_graphics_version="gfx942",
        vbios_name="AMD MI300X_HW_SRIOV_CVS_1VF",
        vbios_version="022.040.003.043.000001",
        vbios_build_date="2024/10/17 16:32",
        vbios_part_number="113-M3000100-103",
        driver_name="amdgpu",
        driver_version="6.9.0-rc5+",
        vram_type="HBM",
        vram_mib=64289,
        product_name="Aqua Vanjaram [Instinct MI300A]",
    )


def test_amd_smi_static_json() -> None:
    (s,) = parse_amd_smi_static(read("amd-smi-static-json.txt"))
    assert s.device_id == "0x74a1" and s.market_name == "MI300X"
    assert s.vram_mib == 196592 and s.vram_type == "HBM"
    assert s.vbios_version == "022.040.003.043.000001" and s.driver_version == "6.12.12"
    assert s.product_name is None


def test_amd_smi_static_inbox_driver() -> None:
    text = "GPU: 0\n    DRIVER:\n        NAME: amdgpu\n        VERSION: Linuxversion6.19.11(nixbld@localhost)#1\n"
    (s,) = parse_amd_smi_static(text)
    assert s.driver_version is not None and is_inbox_driver_string(s.driver_version)
    assert kernel_from_banner(s.driver_version) == "6.19.11"


# -------------------------------------------------------------------------- rocm-smi


def test_rocm_smi_showfw_and_vbios() -> None:
    rep = parse_rocm_smi(read("rocm-smi-showfw.txt"))
    (gpu,) = rep.gpus
    assert gpu.firmware == {
        "MEC": "138",
        "MEC2": "138",
        "RLC": "63",
        "SDMA": "19",
        "SMC": "00.85.91.00",
        "SOS": "0x0036024b",
        "TA RAS": "00.00.00.00",
    }
    assert "DMCU" not in gpu.firmware
    assert gpu.vbios == "113-D67301-063"


def test_rocm_smi_driver_version() -> None:
    rep = parse_rocm_smi(read("rocm-smi-showdriverversion.txt"))
    assert rep.driver_version == "6.12.12" and rep.gpus == [] and rep.version is None


def test_rocm_smi_6_0_table_with_model_column() -> None:
    text = (
        "Device  [Model : Revision]    Temp    Power   Partitions      SCLK    MCLK    Fan  Perf  PwrCap  VRAM%  GPU%\n"
        "        Name (20 chars)       (Edge)  (Avg)   (Mem, Compute)\n"
        "==========================================================================================================\n"
        "0       [0x74a1 : 0x00]       35.0°C  139.0W  NPS1, SPX       132Mhz  900Mhz  0%   auto  750.0W    0%   0%\n"
        "        AMD Instinct MI300X\n"
        "==========================================================================================================\n"
    )
    (gpu,) = parse_rocm_smi(text).gpus
    assert gpu.device_id == "0x74a1" and gpu.guid is None
    assert gpu.name == "AMD Instinct MI300X"
    assert gpu.telemetry["temp_edge"] == "35.0°C" and gpu.telemetry["avg_power"] == "139.0W"
    assert gpu.partitions == {"memory": "NPS1", "compute": "SPX"}
    assert gpu.telemetry["power_cap"] == "750.0W"


# -------------------------------------------------------------------------- rocminfo


def test_rocminfo_full(matrix: Any) -> None:
    info = parse_rocminfo(read("rocminfo-full.txt"))
    assert info.rock_module_version == "6.12.12" and info.rock_module_state == "loaded"
    assert info.runtime_version == "1.15" and info.runtime_ext_version == "1.7"
    assert [a.device_type for a in info.agents] == ["CPU", "GPU"]
    (gpu,) = info.gpus
    assert gpu.name == "gfx942" and gpu.gfx_target == "gfx942"
    assert gpu.uuid == "GPU-adaa93110835edcd"
    assert gpu.marketing_name == "AMD Instinct MI300X VF"
    assert gpu.chip_id == "0x74b5" and gpu.compute_units == 304 and gpu.node == 1
    assert gpu.packet_processor_ucode == "177" and gpu.sdma_ucode == "24"
    assert gpu.isa == [
        "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",
        "amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-",
    ]
    assert gpu.queue == {
        "max_queue_number": "128(0x80)",
        "min_size": "64(0x40)",
        "max_size": "131072(0x20000)",
        "type": "MULTI",
    }
    assert gpu.fields["Max Clock Freq. (MHz)"] == "2100"
    assert _lookup(matrix, gpu.chip_id).gfx_target == gpu.gfx_target
    cpu = info.agents[0]
    assert cpu.gfx_target is None and cpu.isa == [] and cpu.compute_units == 192


@pytest.mark.parametrize(
    ("line", "state", "version"),
    [
        ("ROCk module version 6.16.6 is loaded", "loaded", "6.16.6"),
        ("ROCk module is loaded", "loaded", None),
        ("ROCk module is NOT live, possibly no GPU devices", "not-live", None),
        ("ROCk module is NOT loaded, possibly no GPU devices", "not-loaded", None),
    ],
)
def test_rocminfo_rock_line(line: str, state: str, version: str | None) -> None:
    info = parse_rocminfo(line + "\n")
    assert info.rock_module_state == state and info.rock_module_version == version
    assert info.agents == []


def test_rocminfo_gfx_from_isa_when_name_is_not_gfx() -> None:
    text = "*******\nAgent 2\n*******\n  Name:  weird\n  Device Type:  GPU\n  ISA Info:\n    ISA 1\n      Name:   amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-\n*** Done ***\n"
    (gpu,) = parse_rocminfo(text).gpus
    assert gpu.gfx_target == "gfx90a"


# --------------------------------------------------------------------------- nvidia


def test_nvidia_query_with_header_and_units() -> None:
    (gpu,) = parse_nvidia_smi_query(read("nvidia-smi-query-header.txt"))
    assert gpu.index == 0 and gpu.name == "NVIDIA GeForce RTX 3080"
    assert gpu.driver_version == "550.90.07" and gpu.vbios_version == "94.02.71.40.66"
    assert gpu.pci_bus_id == "00000000:05:00.0" and gpu.memory_mib == 10240


def test_nvidia_query_compute_cap() -> None:
    gpus = parse_nvidia_smi_query(read("nvidia-smi-query-compute-cap.txt"))
    assert [(g.index, g.name, g.compute_cap) for g in gpus] == [
        (0, "NVIDIA RTX A5000", "8.6"),
        (1, "NVIDIA H100", "9.0"),
    ]


def test_nvidia_query_noheader_nounits() -> None:
    text = read("nvidia-smi-query-noheader-nounits.txt")
    fields = ["index", "name", "pci.device_id", "memory.total", "uuid"]
    gpus = parse_nvidia_smi_query(text, fields=fields)
    assert [g.index for g in gpus] == [0, 1]
    assert gpus[0].device_id == "0x2335" and gpus[0].memory_mib == 143771
    assert gpus[0].uuid is None and gpus[1].uuid == "GPU-0000"
    with pytest.raises(FormatError, match="nvidia-smi --query-gpu"):
        parse_nvidia_smi_query(text)


def test_nvidia_proc_version() -> None:
    prop = parse_proc_driver_nvidia_version(read("nvidia-proc-version-proprietary.txt"))
    assert prop == NvidiaKernelModule(
        version="550.54.14", kind="proprietary", arch="x86_64", gcc="12.3.0"
    )
    opn = parse_proc_driver_nvidia_version(read("nvidia-proc-version-open.txt"))
    assert opn == NvidiaKernelModule(version="555.58.02", kind="open", arch="x86_64", gcc="14.2.1")
    arm = parse_proc_driver_nvidia_version(
        "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release Build\n"
    )
    assert (arm.version, arm.kind, arm.arch, arm.gcc) == ("580.95.05", "open", "aarch64", None)


def test_nvidia_banner() -> None:
    assert parse_nvidia_smi_banner(read("nvidia-smi-banner.txt")) == ("575.51.03", "12.9")


# ---------------------------------------------------------------------------- dumps


def test_collect_env_vllm_rocm() -> None:
    env = parse_collect_env(read("collect-env-vllm-rocm.txt"))
    assert env.torch_version == "2.9.1+rocm7.2.0.lw.git7e1940d4"
    assert env.torch_build == "rocm"
    assert env.cuda_built == "N/A" and env.rocm_built == "7.2.53211-c2d9476115"
    assert env.debug_build == "False" and env.cuda_available == "True"
    assert env.os == "Ubuntu 22.04.5 LTS (x86_64)" and env.libc_version == "glibc-2.35"
    assert env.cuda_module_loading == "LAZY"
    assert env.gpus == ["AMD Instinct MI300X (gfx942:sramecc+:xnack-)"]
    assert env.hip_runtime_version == "7.2.53211" and env.miopen_runtime_version == "3.5.1"
    assert env.pip_packages == {
        "numpy": "1.26.4",
        "pytorch-triton-rocm": "3.5.1",
        "torch": "2.9.1+rocm7.2.0.lw.git7e1940d4",
        "transformers": "4.57.1",
    }
    assert env.conda_packages is None
    assert env.vllm_rocm_version == "7.2.53211-c2d9476115"
    assert env.vllm_version == "0.11.1rc2.dev161+g8a2978ab0 (git sha: 8a2978ab0)"
    assert env.vllm_build_flags == "CUDA Archs: Not Set; ROCm: Disabled; XPU: Disabled"
    assert env.env == {"PYTORCH_ROCM_ARCH": "gfx942", "VLLM_USE_TRITON_FLASH_ATTN": "0"}
    assert "Architecture" not in env.fields  # lscpu block is not collect_env data


def test_collect_env_torch_build_variants() -> None:
    assert parse_collect_env("PyTorch version: 2.4.0\nCUDA used to build PyTorch: 12.1\n").torch_build == "cuda"
    # N/A and "Could not collect" say nothing about the build; only "None" says CPU-only.
    assert parse_collect_env("PyTorch version: 2.4.0\nCUDA used to build PyTorch: N/A\nROCM used to build PyTorch: N/A\n").torch_build == "unknown"
    assert parse_collect_env("PyTorch version: 2.4.0\nCUDA used to build PyTorch: None\nROCM used to build PyTorch: N/A\n").torch_build == "cpu"
    assert parse_collect_env("Is debug build: False\n").torch_build is None
    env = parse_collect_env(
        "PyTorch version: 1.7.0a0\nIs debug build: True\nCUDA used to build PyTorch: N/A\n"
        "ROCM used to build PyTorch: 3.7.20315-077bcfa0\nGPU models and configuration: Device 66a1\n"
        "HIP runtime version: 3.18.2\nMIOpen runtime version: 2.6.0\n"
    )
    assert env.torch_build == "rocm" and env.gpus == ["Device 66a1"]
    assert env.hip_runtime_version == "3.18.2" and env.miopen_runtime_version == "2.6.0"


def test_sglang_check_env() -> None:
    sg = parse_sglang_check_env(read("sglang-check-env.txt"))
    assert isinstance(sg, SglangCheckEnv)
    assert sg.rocm_available == "True" and sg.cuda_available is None
    assert sg.rocm_home == "/opt/rocm"
    assert sg.hipcc == "HIP version: 6.3.42131-fa1d09cbd"
    assert sg.hip_version == "6.3.42131-fa1d09cbd"
    assert sg.rocm_driver_version == "6.10.5" and sg.compute_capability == "9.4"
    assert sg.gpus == ["AMD Instinct MI300X"] * 8
    assert sg.packages == {
        "torch": "2.6.0a0+git8d4926e",
        "sglang": "0.4.6.post5",
        "sgl-kernel": "0.1.4",
        "triton": "3.2.0+gitcddf0fc3",
        "transformers": "4.51.1",
    }
    assert sg.fields["ulimit soft"] == "1048576"


def test_pip_list_and_freeze() -> None:
    want = {"jax": "0.8.2", "jax-rocm7-pjrt": "0.8.2", "jax-rocm7-plugin": "0.8.2", "jaxlib": "0.8.2"}
    assert parse_pip_list(read("pip-list.txt")) == {**want, "pytorch-triton-rocm": "3.5.1"}
    assert parse_pip_list(read("pip-freeze.txt")) == want


def test_split_dump_combined() -> None:
    text = read("combined-dump.txt")
    sections = split_dump(text, source="combined-dump.txt")
    assert [s.kind for s in sections] == [
        "collect_env",
        "rocminfo",
        "amd_smi_version",
        "sglang_check_env",
        "nvidia_proc_version",
        "pip_list",
    ]
    lines = text.splitlines()
    assert lines[sections[0].first_line - 1] == "Collecting environment information..."
    assert lines[sections[1].first_line - 1].startswith("ROCk module version")
    models = [parse_section(s) for s in sections]
    assert models[0].vllm_rocm_version == "7.2.53211-c2d9476115"
    assert models[1].gpus[0].chip_id == "0x74b5"
    assert models[2].rocm == "7.1.1"
    assert models[3].rocm_driver_version == "6.10.5"
    assert models[4].kind == "open"
    assert models[5]["jax-rocm7-plugin"] == "0.8.2"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("amd-smi-firmware.txt", "amd_smi_firmware"),
        ("amd-smi-firmware-json.txt", "amd_smi_firmware"),
        ("amd-smi-static.txt", "amd_smi_static"),
        ("amd-smi-static-json.txt", "amd_smi_static"),
        ("amd-smi-banner.txt", "amd_smi_version"),
        ("rocm-smi-showfw.txt", "rocm_smi"),
        ("rocm-smi-showdriverversion.txt", "rocm_smi"),
        ("rocminfo-full.txt", "rocminfo"),
        ("nvidia-smi-query-header.txt", "nvidia_smi_query"),
        ("nvidia-smi-banner.txt", "nvidia_smi"),
        ("nvidia-proc-version-proprietary.txt", "nvidia_proc_version"),
        ("sglang-check-env.txt", "sglang_check_env"),
        ("collect-env-vllm-rocm.txt", "collect_env"),
        ("pip-freeze.txt", "pip_list"),
    ],
)
def test_split_dump_single_samples(name: str, kind: str) -> None:
    sections = split_dump(read(name))
    assert [s.kind for s in sections] == [kind]
    parse_section(sections[0])


# ------------------------------------------------------------------ errors and fuzzing

PARSERS: dict[str, Callable[..., Any]] = {
    "amd-smi version": parse_amd_smi_version,
    "amd-smi firmware": parse_amd_smi_firmware,
    "amd-smi static": parse_amd_smi_static,
    "rocm-smi": parse_rocm_smi,
    "rocminfo": parse_rocminfo,
    "nvidia-smi --query-gpu": parse_nvidia_smi_query,
    "nvidia-smi": parse_nvidia_smi_banner,
    "/proc/driver/nvidia/version": parse_proc_driver_nvidia_version,
    "collect_env": parse_collect_env,
    "sglang check_env": parse_sglang_check_env,
    "pip list": parse_pip_list,
    "dump": split_dump,
}


@pytest.mark.parametrize("default_source", sorted(PARSERS))
@pytest.mark.parametrize("text", ["", "   \n\n", "hello world\nthis is not a tool output\n"])
def test_format_error_names_source(default_source: str, text: str) -> None:
    parser = PARSERS[default_source]
    with pytest.raises(FormatError) as exc:
        parser(text)
    assert exc.value.message.startswith(f"{default_source}:")
    assert isinstance(exc.value, ProbeError) and exc.value.exit_code == 7
    with pytest.raises(FormatError, match=r"^my-file\.txt: "):
        parser(text, source="my-file.txt")


def test_nvidia_proc_version_error_names_line() -> None:
    with pytest.raises(FormatError, match=r"proc: line 2: "):
        parse_proc_driver_nvidia_version("x\nNVRM version: NVIDIA UNIX Kernel Module\n", source="proc")


KEYWORDS = [
    "GPU: 0", "GPU: 1", "    FW_LIST:", "        FW 0:", "FW_0:", "            FW_ID: PM",
    "FW_VERSION: 00.85", "FW_VERSION:", "    ASIC:", "    VRAM:", "        SIZE: 12 MB",
    "SIZE: x GB", "DEVICE_ID: 0x74a1", "DEVICE_ID: zz", "MARKET_NAME:", "AMDSMI Tool: 1 | ROCm version: 6",
    "AMD System Management Interface | Version: 1 | Platform: x", "amdgpu version: Linuxversion6.8(x)#1",
    "ROCM-SMI version: 3.0.0", "ROCM-SMI-LIB version: 7.5.0", "Driver version: 6.8",
    "GPU[0]\t\t: MEC firmware version: \t138", "GPU[1]\t\t: (Topology) Numa Node: x",
    "GPU[2]\t\t: get_firmware_version_MC, Not supported", "GPU[0]\t\t: VBIOS version:",
    "Device  Node  IDs  Temp  Power  Partitions  SCLK", "              (DID,     GUID)  (Junction)",
    "GPU  Temp (DieEdge)  AvgPwr  SCLK", "0       1     0x74b5,   00000  39.0°C", "0 [0x74a1 : 0x00",
    "0", "  AMD Instinct", "=====", "ROCm System Management Interface", "End of ROCm SMI Log",
    "ROCk module version 6.12.12 is loaded", "ROCk module is NOT live", "HSA System Attributes",
    "HSA Agents", "*******", "Agent 1", "*** Done ***", "  Name:  gfx942", "Name:", "  ISA Info:",
    "    ISA 1", "      Name:   amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", "  Chip ID:  29877(0x74b5)",
    "  Chip ID:  (0x)", "  Compute Unit:  x", "Node: 99999999999999999999", "Packet Processor uCode:: 1",
    "  Device Type: GPU", "  Pool Info:", "Runtime Version: 1.15", "name, compute_cap",
    "name, memory.total [MiB]", "NVIDIA H100, 80 GiB", "0x233510DE, [N/A]", '"unterminated, x',
    "index, pci.device_id", "1e400, 1.5 MiB", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  555.58.02",
    "NVRM version: Module", "GCC version:  gcc version 12", "| NVIDIA-SMI 575.51.03   Driver Version: 575.51.03   CUDA Version: 12.9 |",
    "Collecting environment information...", "PyTorch version: 2.4.0", "PyTorch version 1.5.0",
    "CUDA used to build PyTorch: None", "ROCM used to build PyTorch: 6.2", "Os: x", "GPU models and configuration:",
    "GPU 0： Tesla", "GPU 0: Tesla T4", "cuDNN version: Probably one of the following:", "/usr/lib/x.so",
    "CPU:", "Versions of relevant libraries:", "[pip3] numpy==1.0", "[pip3] Could not collect",
    "[conda] mkl 1.0 x y", "[conda] x", "vLLM Info", "vLLM Build Flags:", "  CUDA Archs: x",
    "GPU Topology:", "Environment Variables", "A=B", "Python: 3.10.12", "ROCM available: True",
    "GPU 0,1 Compute Capability: 9.4", "GPU 0,1: AMD", "HIPCC: HIP version: 6.3", "PyTorch: 2.6",
    "AMD Topology:", "ulimit soft: 1", "triton: Module Not Found", "Package    Version", "-------- -------",
    "jax 0.5.0", "jax==0.5.0", "torch @ file:///x", "-e git+x", "[", "{", "[{\"gpu\": 0, \"fw_list\": [1]}]",
    '{"gpu": "x", "asic": {"device_id": 7}, "vram": {"size": {"value": "a"}}}', "]", "}", "\t", ":", "::",
]

fuzz_text = st.one_of(
    st.text(max_size=400),
    st.lists(
        st.one_of(
            st.sampled_from(KEYWORDS),
            st.builds(
                lambda a, b: a + b,
                st.sampled_from(KEYWORDS),
                st.text(alphabet=" \t:,()[]{}0x9aF.-|#\"：", max_size=12),
            ),
            st.text(max_size=30),
        ),
        max_size=40,
    ).map("\n".join),
)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(text=fuzz_text)
def test_parsers_return_model_or_format_error(name: str, text: str) -> None:
    try:
        result = PARSERS[name](text)
    except FormatError as exc:
        assert exc.message.startswith(f"{name}:")
        return
    assert result is not None


@FUZZ
@given(text=fuzz_text)
def test_split_sections_parse_or_format_error(text: str) -> None:
    try:
        sections = split_dump(text)
    except FormatError:
        return
    lines = text.splitlines()
    for s in sections:
        assert 1 <= s.first_line <= max(1, len(lines))
        with contextlib.suppress(FormatError):
            parse_section(s)


@FUZZ
@given(text=fuzz_text, fields=st.lists(st.sampled_from(["name", "index", "memory.total", "pci.device_id", "x"]), max_size=5))
def test_nvidia_query_with_fields_fuzz(text: str, fields: list[str]) -> None:
    with contextlib.suppress(FormatError):
        parse_nvidia_smi_query(text, fields=fields)


# ----------------------------------------------------------------------- large inputs
# Speed is measured by `make bench` (bench/bench_probe.py), not asserted here.


def test_large_dumps_parse_completely() -> None:
    base = read("collect-env-vllm-rocm.txt").split("==============================\nVersions")[0]
    pkgs = "\n".join(f"[pip3] pkg{i}=={i}.0" for i in range(5000))
    big_env = base + "==============================\nVersions of relevant libraries\n==============================\n" + pkgs + "\n"
    assert len(big_env.splitlines()) > 5000
    env = parse_collect_env(big_env)
    assert env.pip_packages is not None and env.pip_packages["pkg4999"] == "4999.0"
    agent = read("rocminfo-full.txt").split("HSA Agents\n==========\n")[1].replace("*** Done ***\n", "")
    big_info = read("rocminfo-full.txt").split("HSA Agents")[0] + "HSA Agents\n==========\n" + agent * 70 + "*** Done ***\n"
    assert len(big_info.splitlines()) > 5000
    assert len(parse_rocminfo(big_info).gpus) == 70
    kinds = [s.kind for s in split_dump(big_env + "\n" + big_info)]
    assert kinds == ["collect_env", "rocminfo"]
