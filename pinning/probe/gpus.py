"""GPUs and the software right above them: PCI devices, KFD topology, sysfs firmware,
``amd-smi`` / ``rocminfo`` (AMD) and ``nvidia-smi`` / ``/proc/driver/nvidia/version`` (NVIDIA),
the amdgpu module and ROCm user space, the NVIDIA module and CUDA toolkit.

Paths and formats: ROCm/rocm-systems@1b1610f (rocm-smi-lib, rocminfo, rocm-core), ROCm/amdsmi,
pciutils/pciids@c1c1254:pci.ids, NVIDIA's nvidia-smi documentation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pinning.errors import PinError
from pinning.probe.formats.amd_smi_gpu import AmdSmiStatic, GpuFirmware
from pinning.probe.formats.rocminfo import RocminfoAgent
from pinning.probe.models import AmdFacts, GpuFacts, NvidiaFacts, Reading
from pinning.probe.root import HostRoot, run_tool
from pinning.util.jsonread import load_json
from pinning.util.proc import Runner
from pinning.util.text import ascii_int

AMD_VENDOR = "0x1002"
NVIDIA_VENDOR = "0x10de"
# PCI class codes of GPUs: VGA (0x0300), 3D (0x0302), other display (0x0380) and processing
# accelerator (0x1200, how Instinct MI200/MI300 boards enumerate).
_DISPLAY_CLASSES = ("0x0300", "0x0302", "0x0380", "0x1200")

NVIDIA_QUERY_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "driver_version",
    "vbios_version",
    "compute_cap",
    "pci.bus_id",
    "pci.device_id",
    "memory.total",
    "uuid",
)
NVIDIA_QUERY: tuple[str, ...] = (
    "nvidia-smi",
    f"--query-gpu={','.join(NVIDIA_QUERY_FIELDS)}",
    "--format=csv",
)


def pci_display_devices(host: HostRoot) -> list[tuple[str, str, str]]:
    """``(bus id, vendor, device)`` of every AMD/NVIDIA display controller, by bus id."""
    found = []
    for dev in host.glob("/sys/bus/pci/devices/*"):
        vendor = (host.read_line(f"{dev}/vendor") or "").lower()
        klass = (host.read_line(f"{dev}/class") or "").lower()
        device = (host.read_line(f"{dev}/device") or "").lower()
        if (vendor in (AMD_VENDOR, NVIDIA_VENDOR) and klass[:6] in _DISPLAY_CLASSES
                and re.fullmatch(r"0x[0-9a-f]{4}", device)):
            found.append((dev.rsplit("/", 1)[-1].lower(), vendor, device))
    return sorted(found)


def gfx_from_target_version(value: int) -> str | None:
    """KFD ``gfx_target_version`` (major*10000 + minor*100 + stepping) to a gfx target:
    ``90402`` -> ``gfx942``, ``90010`` -> ``gfx90a``, ``110000`` -> ``gfx1100``. ``0`` (a CPU
    node) gives ``None``.
    """
    if value <= 0:
        return None
    major, rest = divmod(value, 10000)
    minor, stepping = divmod(rest, 100)
    return f"gfx{major}{minor:x}{stepping:x}"


def _kfd_nodes(host: HostRoot) -> dict[str, tuple[str, str]]:
    """PCI bus id -> (gfx target, source path) from the KFD topology GPU nodes."""
    nodes: dict[str, tuple[str, str]] = {}
    for props_path in host.glob("/sys/class/kfd/kfd/topology/nodes/*/properties"):
        text = host.read(props_path) or ""
        props: dict[str, int] = {}
        for line in text.splitlines():
            parts = line.split()
            value = ascii_int(parts[1], signed=True) if len(parts) == 2 else None
            if value is not None:
                props[parts[0]] = value
        gfx = gfx_from_target_version(props.get("gfx_target_version", 0))
        if gfx is None:
            continue
        loc, domain = props.get("location_id", 0), props.get("domain", 0)
        bus = f"{domain:04x}:{loc >> 8:02x}:{(loc >> 3) & 0x1F:02x}.{loc & 0x7:x}"
        nodes[bus] = (gfx, props_path)
    return nodes


def _sysfs_firmware(host: HostRoot, base: str) -> dict[str, str]:
    """Per-block firmware versions from ``<device>/fw_version/*_fw_version``."""
    out = {}
    for f in host.glob(f"{base}/fw_version/*_fw_version"):
        value = host.read_line(f)
        if value:
            out[f.rsplit("/", 1)[-1].removesuffix("_fw_version")] = value[:64]
    return out


def amd_gpus(
    host: HostRoot, runner: Runner, devices: list[tuple[str, str, str]],
    identify: Callable[[str], str | None], start: int, notes: list[str],
) -> tuple[list[GpuFacts], Reading]:
    """AMD GPUs from sysfs + KFD, completed with ``amd-smi static`` / ``firmware``."""
    from pinning.probe.formats.amd_smi_gpu import parse_amd_smi_firmware, parse_amd_smi_static

    kfd = _kfd_nodes(host)
    agents = _rocminfo_agents(runner)
    static_res, static_why = run_tool(runner, ("amd-smi", "static"))
    fw_res, fw_why = run_tool(runner, ("amd-smi", "firmware"))
    statics, fws = [], []
    if static_res is not None:
        try:
            statics = parse_amd_smi_static(static_res.stdout)
        except PinError as exc:
            static_why = exc.message
            notes.append(f"amd-smi static: {static_why}")
    if fw_res is not None:
        try:
            fws = parse_amd_smi_firmware(fw_res.stdout)
        except PinError as exc:
            fw_why = exc.message
    gpus = []
    for n, (bus, _vendor, device) in enumerate(devices):
        base = f"/sys/bus/pci/devices/{bus}"
        # amd-smi numbers GPUs in PCI bus order, as sorted here.
        static = next((s for s in statics if s.gpu == n), None)
        fw = next((f for f in fws if f.gpu == n), None)
        agent = agents.get(_bdfid(bus))
        firmware, fw_source, pldm = _amd_firmware(host, base, fw, fw_why)
        gpus.append(
            GpuFacts(
                index=start + n, vendor="amd", pci_bus=bus, pci_device_id=device,
                product=identify(device), name=_amd_name(static, agent, static_why),
                gfx_target=_amd_gfx(kfd, bus, agent, static),
                memory_mib=_amd_memory(host, base, static), target_id=_target_id(agent),
                vbios=_amd_vbios(host, base, static, static_why), firmware=firmware,
                firmware_source=fw_source, pldm_bundle=pldm,
            )
        )
    return gpus, _amd_smi_tool(runner)


def _amd_vbios(host: HostRoot, base: str, static: AmdSmiStatic | None,
               static_why: str | None) -> Reading:
    """The VBIOS/IFWI string: sysfs ``vbios_version``, else amd-smi static."""
    vbios_text = host.read_line(f"{base}/vbios_version")
    if vbios_text:
        return Reading.of(vbios_text, f"{base}/vbios_version")
    if static is not None and static.vbios_version:
        return Reading.of(static.vbios_version, "amd-smi static")
    why = static_why or "no VBIOS in amd-smi static"
    return Reading.missing(f"no {base}/vbios_version and {why}")


def _amd_gfx(kfd: dict[str, tuple[str, str]], bus: str, agent: RocminfoAgent | None,
             static: AmdSmiStatic | None) -> Reading:
    """The gfx target: KFD topology, else rocminfo, else amd-smi static."""
    if bus in kfd:
        return Reading.of(kfd[bus][0], kfd[bus][1])
    if agent is not None and agent.gfx_target:
        return Reading.of(agent.gfx_target, "rocminfo")
    if static is not None and static.target_graphics_version:
        return Reading.of(static.target_graphics_version, "amd-smi static")
    return Reading.missing("no KFD topology node for this device (amdgpu/KFD not loaded?)")


def _amd_memory(host: HostRoot, base: str, static: AmdSmiStatic | None) -> Reading:
    """VRAM in MiB: sysfs ``mem_info_vram_total`` (bytes), else amd-smi static."""
    vram = host.read_line(f"{base}/mem_info_vram_total")
    vram_bytes = ascii_int(vram or "")
    if vram_bytes is not None:
        return Reading.of(str(vram_bytes // (1024 * 1024)), f"{base}/mem_info_vram_total")
    if static is not None and static.vram_mib is not None:
        return Reading.of(str(static.vram_mib), "amd-smi static")
    return Reading.missing(f"no {base}/mem_info_vram_total")


def _amd_firmware(host: HostRoot, base: str, fw: GpuFirmware | None, fw_why: str | None
                  ) -> tuple[dict[str, str], str | None, Reading]:
    """Per-engine firmware (sysfs ``fw_version/*`` and amd-smi firmware), where it was
    read, and the PLDM bundle (amd-smi firmware only).
    """
    firmware = _sysfs_firmware(host, base)
    fw_source = f"{base}/fw_version" if firmware else None
    if fw is not None:
        firmware.update({k: v for k, v in fw.firmware.items() if k != "PLDM_BUNDLE"})
        fw_source = f"{fw_source}, amd-smi firmware" if fw_source else "amd-smi firmware"
    if fw is not None and "PLDM_BUNDLE" in fw.firmware:
        pldm = Reading.of(fw.firmware["PLDM_BUNDLE"], "amd-smi firmware")
    elif fw is not None:
        pldm = Reading.missing("amd-smi firmware lists no PLDM_BUNDLE (shown since ROCm 6.4.2 "
                               "on supported systems)", "amd-smi firmware")
    else:
        pldm = Reading.missing(f"PLDM bundle is read from amd-smi firmware: {fw_why}")
    return firmware, fw_source, pldm


def _amd_name(static: AmdSmiStatic | None, agent: RocminfoAgent | None,
              static_why: str | None) -> Reading:
    """The marketing name: amd-smi static, else rocminfo."""
    name_value = (static.market_name or static.product_name) if static is not None else None
    if not name_value and agent is not None:
        name_value = agent.marketing_name
    if name_value:
        return Reading.of(name_value, "amd-smi static" if static is not None else "rocminfo")
    return Reading.missing("marketing name comes from amd-smi static: "
                           + (static_why or "not shown"))


def _amd_smi_tool(runner: Runner) -> Reading:
    """The amd-smi tool version (``amd-smi version``)."""
    from pinning.probe.formats.amd_smi import parse_amd_smi_version

    smi_version, why = run_tool(runner, ("amd-smi", "version"))
    if smi_version is None:
        return Reading.missing(why)
    try:
        parsed = parse_amd_smi_version(smi_version.stdout)
    except PinError as exc:
        return Reading.missing(exc.message, "amd-smi version")
    if parsed.tool:
        return Reading.of(parsed.tool, "amd-smi version")
    return Reading.missing("amd-smi version printed no tool version", "amd-smi version")


def _bdfid(bus: str) -> int | None:
    """The rocminfo ``BDFID`` of a PCI address ``0000:05:00.0``: bus << 8 | device << 3 | fn."""
    m = re.fullmatch(r"[0-9a-f]{4}:([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", bus)
    if not m:
        return None
    return (int(m.group(1), 16) << 8) | (int(m.group(2), 16) << 3) | int(m.group(3))


def _rocminfo_agents(runner: Runner) -> dict[int | None, RocminfoAgent]:
    """GPU agents of ``rocminfo`` keyed by BDFID; empty when unavailable."""
    from pinning.probe.formats.rocminfo import parse_rocminfo

    result, _why = run_tool(runner, ("rocminfo",))
    if result is None:
        return {}
    try:
        info = parse_rocminfo(result.stdout)
    except PinError:
        return {}
    out: dict[int | None, RocminfoAgent] = {}
    for agent in info.gpus:
        raw = agent.fields.get("BDFID", "")
        bdfid = ascii_int(raw)
        if bdfid is not None:
            out[bdfid] = agent
    return out


def _target_id(agent: RocminfoAgent | None) -> str | None:
    """Full target ID with features (``gfx942:sramecc+:xnack-``) from the agent's first ISA."""
    if agent is None or not agent.isa:
        return None
    return agent.isa[0].removeprefix("amdgcn-amd-amdhsa--")


def nvidia_gpus(
    host: HostRoot, runner: Runner, devices: list[tuple[str, str, str]],
    identify: Callable[[str], str | None], start: int,
) -> tuple[list[GpuFacts], str | None]:
    """NVIDIA GPUs from PCI sysfs, completed with ``nvidia-smi --query-gpu`` (matched by bus)."""
    from pinning.probe.formats.nvidia import parse_nvidia_smi_query

    result, why = run_tool(runner, NVIDIA_QUERY)
    rows = []
    if result is not None:
        try:
            rows = parse_nvidia_smi_query(result.stdout)
        except PinError as exc:
            why = exc.message
    src = "nvidia-smi --query-gpu"
    by_bus = {(r.pci_bus_id or "").lower()[-12:]: r for r in rows}
    driver = next((r.driver_version for r in rows if r.driver_version), None)
    gpus = []
    for n, (bus, _vendor, device) in enumerate(devices):
        row = by_bus.get(bus[-12:])
        if row is None and len(rows) == len(devices):
            row = rows[n]

        def pick(value: str | None, what: str, field: str, row: Any = row) -> Reading:
            if value:
                return Reading.of(value, src)
            raw = row.fields.get(field) if row is not None else None
            if raw:
                return Reading.missing(f"nvidia-smi printed {raw} for {field}", src)
            return Reading.missing(f"{what} comes from nvidia-smi: {why or 'not shown'}")

        gpus.append(
            GpuFacts(
                index=start + n, vendor="nvidia", pci_bus=bus, pci_device_id=device,
                product=identify(device),
                name=pick(row.name if row else None, "the name", "name"),
                compute_capability=pick(row.compute_cap if row else None, "compute capability",
                                        "compute_cap"),
                memory_mib=pick(
                    str(row.memory_mib) if row and row.memory_mib is not None else None, "memory",
                    "memory.total",
                ),
                vbios=pick(row.vbios_version if row else None, "the VBIOS version",
                           "vbios_version"),
            )
        )
    return gpus, driver


# --- AMD and NVIDIA software --------------------------------------------------------------


ROCM_VERSION_RE = re.compile(r"^(\d+\.\d+\.\d+(?:\.\d+)?)")


def probe_amd_software(host: HostRoot, env: Mapping[str, str], tool: Reading,
                       kernel: Reading) -> AmdFacts:
    """The amdgpu kernel module (DKMS version, inbox, or not loaded) and the ROCm user space
    (``$ROCM_PATH/.info/version``, default ``/opt/rocm``).
    """
    module = "/sys/module/amdgpu"
    version = host.read_line(f"{module}/version")
    if version:
        driver, kind = Reading.of(version, f"{module}/version"), "dkms"
    elif host.exists(module):
        reason = "inbox amdgpu (no /sys/module/amdgpu/version): the kernel release stands in"
        driver = Reading(value=kernel.value, source="/proc/sys/kernel/osrelease", reason=reason) \
            if kernel.known else Reading.missing(reason)
        kind = "inbox"
    else:
        driver = Reading.missing("the amdgpu kernel module is not loaded (no /sys/module/amdgpu)",
                                 absent=True)
        kind = "not-loaded"
    rocm_path = env.get("ROCM_PATH") or "/opt/rocm"
    info = f"{rocm_path.rstrip('/')}/.info/version"
    line = host.read_line(info)
    match = ROCM_VERSION_RE.match(line or "")
    if match:
        rocm = Reading.of(match.group(1), info)
    elif line:
        rocm = Reading.missing(f"{info} does not start with MAJOR.MINOR.PATCH: {line[:60]!r}", info)
    else:
        rocm = Reading.missing(f"no ROCm user space at {rocm_path} ({host.why(info)})",
                               absent=not host.exists(info))
    return AmdFacts(driver=driver, driver_kind=kind, rocm=rocm, rocm_path=rocm_path, amd_smi=tool)


def probe_nvidia_software(host: HostRoot, smi_driver: str | None) -> NvidiaFacts:
    """The NVIDIA kernel module from ``/proc/driver/nvidia/version`` (falling back to the
    driver nvidia-smi printed) and the CUDA toolkit under ``/usr/local/cuda``.
    """
    from pinning.probe.formats.nvidia import parse_proc_driver_nvidia_version

    path = "/proc/driver/nvidia/version"
    text = host.read(path)
    kind = None
    driver: Reading | None = None
    proc_problem = None
    if text:
        try:
            module = parse_proc_driver_nvidia_version(text, source=path)
            driver, kind = Reading.of(module.version, path), module.kind
        except PinError as exc:
            proc_problem = exc.message
    if driver is None and smi_driver:
        driver = Reading.of(smi_driver, "nvidia-smi --query-gpu")
    if driver is None:
        if proc_problem:
            driver = Reading.missing(proc_problem, path)
        else:
            driver = Reading.missing(f"{path} is absent: the NVIDIA kernel module is not loaded",
                                     absent=True)
    toolkit = Reading.missing("no CUDA toolkit at /usr/local/cuda (version.json / version.txt)",
                              absent=True)
    raw = host.read("/usr/local/cuda/version.json")
    if raw:
        try:
            value = load_json(raw, PinError, label="version.json")["cuda"]["version"]
            toolkit = Reading.of(str(value), "/usr/local/cuda/version.json")
        except (PinError, KeyError, TypeError):
            toolkit = Reading.missing("/usr/local/cuda/version.json has no cuda.version")
    else:
        line = host.read_line("/usr/local/cuda/version.txt")
        m = re.search(r"CUDA Version\s+(\d+(?:\.\d+)*)", line or "")
        if m:
            toolkit = Reading.of(m.group(1), "/usr/local/cuda/version.txt")
    compat = "/usr/local/cuda/compat"
    has_compat = bool(host.glob(f"{compat}/libcuda.so*"))
    return NvidiaFacts(driver=driver, module_kind=kind, cuda_toolkit=toolkit,
                       cuda_compat=compat if has_compat else None)
