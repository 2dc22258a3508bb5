"""Write the recorded hosts under tests/data/hosts/ (run: python tests/data/hosts/make_hosts.py).

Each host is ``<name>/root/`` (a tree read as ``/``) and ``<name>/commands.toml`` (recorded
tool outputs and the host environment, replayed by ``pin probe --replay``). Formats follow
../shared/FACTS.md §2 (sysfs, amd-smi, nvidia-smi, /proc/driver/nvidia/version,
/opt/rocm/.info/version) and the public dumps in ../shared/fixtures/env-dumps/; tool output
values are taken from the samples cited there ([5231] for MI300X amd-smi lines). Values not
shown by any sample (serials, bus addresses, byte counts) are placeholders of the right shape.
The trees are committed; this script documents and regenerates them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def os_release(root: Path, pretty: str, os_id: str, version_id: str, version: str) -> None:
    write(root / "etc/os-release", (
        f'PRETTY_NAME="{pretty}"\nNAME="{pretty.split()[0]}"\nVERSION_ID="{version_id}"\n'
        f'VERSION="{version}"\nID={os_id}\n'
    ))


def pci(root: Path, bus: str, vendor: str, device: str, klass: str) -> Path:
    dev = root / "sys/bus/pci/devices" / bus
    write(dev / "vendor", vendor + "\n")
    write(dev / "device", device + "\n")
    write(dev / "class", klass + "\n")
    return dev


def kfd_node(root: Path, node: int, gfx_target_version: int, bus: str, device_id: int) -> None:
    _domain, b, df = bus.split(":")
    dev, fn = df.split(".")
    location = (int(b, 16) << 8) | (int(dev, 16) << 3) | int(fn, 16)
    props = {
        "cpu_cores_count": 0, "simd_count": 1216, "gfx_target_version": gfx_target_version,
        "vendor_id": 4098, "device_id": device_id, "location_id": location, "domain": 0,
        "drm_render_minor": 128 + node,
    }
    text = "".join(f"{k} {v}\n" for k, v in props.items())
    write(root / f"sys/class/kfd/kfd/topology/nodes/{node}/properties", text)


def cpu_node(root: Path) -> None:
    write(root / "sys/class/kfd/kfd/topology/nodes/0/properties",
          "cpu_cores_count 96\nsimd_count 0\ngfx_target_version 0\nvendor_id 0\ndevice_id 0\n"
          "location_id 0\ndomain 0\n")


def dist(site: Path, name: str, version: str, *, installer: str = "pip",
         owns: str | None = None, files: dict[str, str] | None = None,
         direct_url: str | None = None) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    write(info / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    write(info / "INSTALLER", installer + "\n")
    record = [f"{info.name}/METADATA,,", f"{info.name}/INSTALLER,,"]
    if owns:
        record.append(f"{owns}/__init__.py,,")
    for rel, text in (files or {}).items():
        write(site / rel, text)
        record.append(f"{rel},,")
    write(info / "RECORD", "\n".join(record) + "\n")
    if direct_url:
        write(info / "direct_url.json", json.dumps({"url": direct_url, "dir_info": {}}) + "\n")


def torch_version_py(version: str, *, cuda: str | None, hip: str | None) -> str:
    return (
        "from typing import Optional\n\n"
        f"__version__ = '{version}'\ndebug = False\n"
        f"cuda: Optional[str] = {cuda!r}\ngit_version = 'placeholder'\n"
        f"hip: Optional[str] = {hip!r}\nxpu: Optional[str] = None\n"
    )


def commands(host: Path, entries: list[tuple[list[str], str]], env: dict[str, str]) -> None:
    lines = []
    for argv, out in entries:
        fname = "out/" + "-".join(a.strip("-").replace("=", "_").replace(",", "_")[:40]
                                  for a in argv) + ".txt"
        write(host / fname, out)
        lines.append(f"[[command]]\nargv = {json.dumps(argv)}\nstdout = \"{fname}\"\n")
    env_lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in sorted(env.items()))
    write(host / "commands.toml", "# Recorded tool outputs and environment of this host.\n\n"
          + "\n".join(lines) + "\n[environment]\n" + env_lines)


AMD_SMI_FIRMWARE_MI300X = """GPU: {gpu}
    FW_LIST:
        FW 0:
            FW_ID: CP_MEC1
            FW_VERSION: 32959
        FW 1:
            FW_ID: CP_MEC2
            FW_VERSION: 32959
        FW 2:
            FW_ID: RLC
            FW_VERSION: 69
        FW 3:
            FW_ID: SDMA0
            FW_VERSION: 25
        FW 4:
            FW_ID: SDMA1
            FW_VERSION: 25
        FW 5:
            FW_ID: VCN
            FW_VERSION: 09.11.80.15
        FW 6:
            FW_ID: RLC_RESTORE_LIST_GPM_MEM
            FW_VERSION: 4
        FW 7:
            FW_ID: RLC_RESTORE_LIST_SRM_MEM
            FW_VERSION: 4
        FW 8:
            FW_ID: RLC_RESTORE_LIST_CNTL
            FW_VERSION: 4
        FW 9:
            FW_ID: TA_RAS
            FW_VERSION: 1B.36.02.1A
        FW 10:
            FW_ID: TA_XGMI
            FW_VERSION: 20.00.00.14
        FW 11:
            FW_ID: PM
            FW_VERSION: 00.85.129.03
        FW 12:
            FW_ID: PLDM_BUNDLE
            FW_VERSION: {pldm}
"""

AMD_SMI_STATIC = """GPU: {gpu}
    ASIC:
        MARKET_NAME: {market}
        VENDOR_ID: 0x1002
        VENDOR_NAME: Advanced Micro Devices Inc. [AMD/ATI]
        SUBVENDOR_ID: 0x1002
        DEVICE_ID: {device}
        SUBSYSTEM_ID: {device}
        REV_ID: 0x00
        ASIC_SERIAL: 0x0000000000000000
        OAM_ID: {gpu}
        NUM_COMPUTE_UNITS: {cus}
        TARGET_GRAPHICS_VERSION: {gfx}
    VBIOS:
        NAME: {vbios_name}
        BUILD_DATE: 2024/10/17 16:32
        PART_NUMBER: 113-M3000100-103
        VERSION: {vbios}
    DRIVER:
        NAME: amdgpu
        VERSION: {driver}
    VRAM:
        TYPE: HBM
        VENDOR: N/A
        SIZE: {vram} MB
"""


ROCMINFO_HEAD = """ROCk module version {module} is loaded
=====================
HSA System Attributes
=====================
Runtime Version:         1.18
Runtime Ext Version:     1.14
XNACK enabled:           NO
DMAbuf Support:          YES
VMM Support:             YES

==========
HSA Agents
==========
*******
Agent 1
*******
  Name:                    AMD EPYC 9654 96-Core Processor
  Marketing Name:          AMD EPYC 9654 96-Core Processor
  Vendor Name:             CPU
  Node:                    0
  Device Type:             CPU
  ISA Info:
"""

ROCMINFO_GPU = """*******
Agent {agent}
*******
  Name:                    {gfx}
  Uuid:                    GPU-{uuid}
  Marketing Name:          {market}
  Vendor Name:             AMD
  Feature:                 KERNEL_DISPATCH
  Profile:                 BASE_PROFILE
  Node:                    {node}
  Device Type:             GPU
  Chip ID:                 {chip_dec}({chip})
  BDFID:                   {bdfid}
  Compute Unit:            {cus}
  Packet Processor uCode:: 177
  SDMA engine uCode::      24
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--{gfx}:sramecc+:xnack-
      Machine Models:          HSA_MACHINE_MODEL_LARGE
      Profiles:                HSA_PROFILE_BASE
"""


def rocminfo(module: str, gpus: list[tuple[str, str, str, int]]) -> str:
    """rocminfo text (FACTS.md §2.5 layout) for ``(bus, gfx, chip, CUs)`` GPU agents."""
    out = ROCMINFO_HEAD.format(module=module)
    for i, (bus, gfx, chip, cus) in enumerate(gpus):
        _d, b, df = bus.split(":")
        dev, fn = df.split(".")
        bdfid = (int(b, 16) << 8) | (int(dev, 16) << 3) | int(fn, 16)
        out += ROCMINFO_GPU.format(agent=i + 2, gfx=gfx, uuid=f"{i:016x}",
                                   market="AMD Instinct MI300X", node=i + 1,
                                   chip_dec=int(chip, 16), chip=chip, bdfid=bdfid, cus=cus)
    return out + "*** Done ***\n"


def mi300x_rocm71(name: str = "mi300x-rocm7.1") -> None:
    """MI300X x2, Ubuntu 24.04.3, amdgpu 6.16.6 (DKMS), ROCm 7.1.1, torch 2.7.0+rocm6.3."""
    host = HERE / name
    root = host / "root"
    os_release(root, "Ubuntu 24.04.3 LTS", "ubuntu", "24.04", "24.04.3 LTS (Noble Numbat)")
    write(root / "proc/sys/kernel/osrelease", "6.8.0-85-generic\n")
    write(root / "sys/module/amdgpu/version", "6.16.6\n")
    write(root / "sys/module/amdgpu/initstate", "live\n")
    write(root / "opt/rocm/.info/version", "7.1.1-38\n")
    cpu_node(root)
    fw = {"mec": "0x000080bf", "mec2": "0x000080bf", "rlc": "0x00000045", "sdma": "0x00000019",
          "sos": "0x0036025d", "ta_ras": "0x1b36021a", "ta_xgmi": "0x20000014", "vcn": "0x09118015"}
    statics, fws = [], []
    for i, bus in enumerate(("0000:05:00.0", "0000:26:00.0")):
        dev = pci(root, bus, "0x1002", "0x74a1", "0x120000")
        write(dev / "vbios_version", "022.040.003.043.000001\n")
        write(dev / "mem_info_vram_total", str(196592 * 1024 * 1024) + "\n")
        for block, value in fw.items():
            write(dev / f"fw_version/{block}_fw_version", value + "\n")
        kfd_node(root, i + 1, 90402, bus, 0x74A1)
        statics.append(AMD_SMI_STATIC.format(
            gpu=i, market="MI300X", device="0x74a1", cus=304, gfx="gfx942",
            vbios_name="AMD MI300X_HW_SRIOV_CVS_1VF", vbios="022.040.003.043.000001",
            driver="6.16.6", vram=196592))
        fws.append(AMD_SMI_FIRMWARE_MI300X.format(gpu=i, pldm="01.25.03.12"))
    site = root / "opt/venv/lib/python3.12/site-packages"
    dist(site, "torch", "2.7.0+rocm6.3", owns="torch", files={"torch/version.py": torch_version_py(
        "2.7.0+rocm6.3", cuda=None, hip="6.3.42131-fa1d09cbd")})
    dist(site, "pytorch-triton-rocm", "3.3.0", owns="triton")
    dist(site, "numpy", "2.1.2", owns="numpy")
    dist(site, "filelock", "3.16.1", owns="filelock")
    write(root / "root/.cache/huggingface/hub/.keep", "")
    commands(host, [
        (["ldd", "--version"], "ldd (Ubuntu GLIBC 2.39-0ubuntu8.6) 2.39\n"
         "Copyright (C) 2024 Free Software Foundation, Inc.\n"),
        (["amd-smi", "version"], "AMDSMI Tool: 26.2.0+021c61fc | AMDSMI Library version: 26.2.0 "
         "| ROCm version: 7.1.1 | amdgpu version: 6.16.6 | amd_hsmp version: N/A\n"),
        (["amd-smi", "static"], "".join(statics)),
        (["amd-smi", "firmware"], "".join(fws)),
        (["rocminfo"], rocminfo("6.16.6", [("0000:05:00.0", "gfx942", "0x74a1", 304),
                                           ("0000:26:00.0", "gfx942", "0x74a1", 304)])),
    ], {"VIRTUAL_ENV": "/opt/venv", "HOME": "/root", "PATH": "/opt/venv/bin:/usr/bin"})


def mi250x_rocm63() -> None:
    """MI250X (one OAM = two GCD agents), Ubuntu 22.04.5, amdgpu 6.10.5, ROCm 6.3.3."""
    host = HERE / "mi250x-rocm6.3"
    root = host / "root"
    os_release(root, "Ubuntu 22.04.5 LTS", "ubuntu", "22.04", "22.04.5 LTS (Jammy Jellyfish)")
    write(root / "proc/sys/kernel/osrelease", "5.15.0-125-generic\n")
    write(root / "sys/module/amdgpu/version", "6.10.5\n")
    write(root / "sys/module/amdgpu/initstate", "live\n")
    write(root / "opt/rocm/.info/version", "6.3.3-74\n")
    cpu_node(root)
    for i, bus in enumerate(("0000:c1:00.0", "0000:c6:00.0")):
        dev = pci(root, bus, "0x1002", "0x7408", "0x120000")
        write(dev / "vbios_version", "113-D65201-042\n")
        write(dev / "mem_info_vram_total", str(65520 * 1024 * 1024) + "\n")
        write(dev / "fw_version/mec_fw_version", "0x0000008a\n")
        write(dev / "fw_version/sos_fw_version", "0x0036024b\n")
        write(dev / "fw_version/smc_fw_version", "0x00555b00\n")
        kfd_node(root, i + 1, 90010, bus, 0x7408)
    site = root / "usr/local/lib/python3.10/dist-packages"
    dist(site, "torch", "2.4.1+rocm6.1", owns="torch", files={"torch/version.py": torch_version_py(
        "2.4.1+rocm6.1", cuda=None, hip="6.1.40091-a8dbc0c19")})
    dist(site, "pytorch-triton-rocm", "3.0.0", owns="triton")
    commands(host, [
        (["ldd", "--version"], "ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35\n"),
        (["amd-smi", "version"],
         "AMDSMI Tool: 24.7.1+8dc45db | AMDSMI Library version: 25.1.0.0 | ROCm version: 6.3.3\n"),
    ], {"HOME": "/root"})


def radeon_inbox() -> None:
    """Radeon RX 7900 XTX on Ubuntu's inbox amdgpu (no module version), ROCm 7.2.0."""
    host = HERE / "radeon-inbox"
    root = host / "root"
    os_release(root, "Ubuntu 24.04.3 LTS", "ubuntu", "24.04", "24.04.3 LTS (Noble Numbat)")
    write(root / "proc/sys/kernel/osrelease", "6.14.0-29-generic\n")
    write(root / "sys/module/amdgpu/initstate", "live\n")
    write(root / "opt/rocm/.info/version", "7.2.0\n")
    cpu_node(root)
    dev = pci(root, "0000:03:00.0", "0x1002", "0x744c", "0x030000")
    write(dev / "vbios_version", "113-D7020100-102\n")
    write(dev / "mem_info_vram_total", str(24560 * 1024 * 1024) + "\n")
    write(dev / "fw_version/mec_fw_version", "0x000000e4\n")
    kfd_node(root, 1, 110000, "0000:03:00.0", 0x744C)
    site = root / "home/user/venv/lib/python3.12/site-packages"
    dist(site, "torch", "2.11.0+rocm7.2", owns="torch", files={"torch/version.py": torch_version_py(
        "2.11.0+rocm7.2", cuda=None, hip="7.2.26015-fc0010cf6a")})
    dist(site, "triton-rocm", "3.6.0", owns="triton")
    banner = ("Linuxversion6.14.0-29-generic(buildd@lcy02-amd64-049)(x86_64-linux-gnu-gcc-13"
              "(Ubuntu13.3.0-6ubuntu2~24.04)13.3.0,GNUld(GNUBinutilsforUbuntu)2.42)"
              "#29~24.04.1-UbuntuSMPPREEMPT_DYNAMIC")
    commands(host, [
        (["ldd", "--version"], "ldd (Ubuntu GLIBC 2.39-0ubuntu8.6) 2.39\n"),
        (["amd-smi", "version"], "AMDSMI Tool: 26.2.0+021c61fc | AMDSMI Library version: 26.2.0 "
         f"| ROCm version: 7.2.0 | amdgpu version: {banner} | amd_hsmp version: N/A\n"),
    ], {"VIRTUAL_ENV": "/home/user/venv", "HOME": "/home/user"})


def h200_cuda(name: str = "h200-cuda13", driver: str = "580.95.05") -> None:
    """One H200 SXM, Ubuntu 22.04.5, NVIDIA open kernel module, torch 2.13.0+cu130."""
    host = HERE / name
    root = host / "root"
    os_release(root, "Ubuntu 22.04.5 LTS", "ubuntu", "22.04", "22.04.5 LTS (Jammy Jellyfish)")
    write(root / "proc/sys/kernel/osrelease", "5.15.0-140-generic\n")
    write(root / "proc/driver/nvidia/version",
          f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {driver}  Release Build  "
          "(dvs-builder@U16-I3-B03-4-3)  Tue Jun 25 01:26:03 UTC 2024\n"
          "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")
    write(root / "usr/local/cuda/version.json",
          json.dumps({"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}, indent=3) + "\n")
    pci(root, "0000:19:00.0", "0x10de", "0x2335", "0x030200")
    site = root / "usr/local/lib/python3.12/dist-packages"
    dist(site, "torch", "2.13.0+cu130", owns="torch", files={"torch/version.py": torch_version_py(
        "2.13.0+cu130", cuda="13.0", hip=None)})
    dist(site, "triton", "3.7.1", owns="triton")
    dist(site, "nvidia-cuda-runtime-cu13", "13.0.96", owns="nvidia")
    csv = ("index, name, driver_version, vbios_version, compute_cap, pci.bus_id, pci.device_id, "
           "memory.total [MiB], uuid\n"
           f"0, NVIDIA H200, {driver}, 96.00.AF.00.01, 9.0, 00000000:19:00.0, 0x233510DE, "
           "143771 MiB, GPU-00000000-0000-0000-0000-000000000000\n")
    commands(host, [
        (["ldd", "--version"], "ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35\n"),
        (["nvidia-smi", "--query-gpu=index,name,driver_version,vbios_version,compute_cap,"
          "pci.bus_id,pci.device_id,memory.total,uuid", "--format=csv"], csv),
    ], {"HOME": "/root"})


def no_gpu() -> None:
    """A Debian 12 build machine: no GPU, no ROCm, no CUDA."""
    host = HERE / "no-gpu"
    root = host / "root"
    os_release(root, "Debian GNU/Linux 12 (bookworm)", "debian", "12", "12 (bookworm)")
    write(root / "proc/sys/kernel/osrelease", "6.1.0-28-amd64\n")
    dist(root / "usr/lib/python3/dist-packages", "numpy", "1.24.2", installer="debian")
    commands(host, [(["ldd", "--version"], "ldd (Debian GLIBC 2.36-9+deb12u9) 2.36\n")], {})


def main() -> None:
    for name in ("mi300x-rocm7.1", "mi250x-rocm6.3", "radeon-inbox", "h200-cuda13", "no-gpu"):
        shutil.rmtree(HERE / name, ignore_errors=True)
    mi300x_rocm71()
    mi250x_rocm63()
    radeon_inbox()
    h200_cuda()
    no_gpu()


if __name__ == "__main__":
    main()
