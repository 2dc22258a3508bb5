"""Read a host: files under a root directory and tool outputs through a :class:`Runner`.

``probe_host(root=Path("/"), runner=SystemRunner())`` reads this machine; with a recorded
tree and a :class:`~pinning._proc.ReplayRunner` it reads a recorded host the same way. Each
fact that cannot be read becomes a ``not-probed`` :class:`Reading` with the reason; only a
missing root or an unreadable recording fails the probe as a whole
(:class:`~pinning.errors.ProbeError`, exit 7).

Paths and formats: FACTS.md §2.5–2.8 (sysfs, ``/opt/rocm/.info/version``,
``/proc/driver/nvidia/version``, ``nvidia-smi --query-gpu``), §3.1–3.3 (Triton names).
"""

from __future__ import annotations

import ast
import errno
import fnmatch
import json
import os
import re
import stat
import sysconfig
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pinning import __version__
from pinning._proc import CommandResult, Runner
from pinning.errors import PinError, ProbeError, UsageError
from pinning.probe.formats.rocminfo import RocminfoAgent
from pinning.probe.models import (
    BEHAVIOUR_ENV,
    TRITON_DISTRIBUTIONS,
    AmdFacts,
    ContainerFacts,
    Distribution,
    GpuFacts,
    HostFacts,
    ModelFacts,
    NvidiaFacts,
    OsFacts,
    ProbeInfo,
    PythonFacts,
    Reading,
    TorchBuild,
    TritonDist,
    normalize_name,
)

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

# Where Python environments live on common images when no VIRTUAL_ENV/CONDA_PREFIX is set.
_SITE_GLOBS: tuple[str, ...] = (
    "usr/local/lib/python3*/dist-packages",
    "usr/local/lib/python3*/site-packages",
    "usr/lib/python3/dist-packages",
    "usr/lib/python3*/site-packages",
    "opt/conda/lib/python3*/site-packages",
    "opt/venv/lib/python3*/site-packages",
)


MAX_READ_BYTES = 16 * 1024 * 1024  # larger files are read only this far
_MAX_LINKS = 40


def _read_bounded(path: Path) -> bytes:
    """At most :data:`MAX_READ_BYTES` of ``path``, in 64 KiB reads (procfs and sysfs refuse
    one huge read). Raises ``OSError``.
    """
    chunks: list[bytes] = []
    total = 0
    with path.open("rb") as fh:
        while total < MAX_READ_BYTES:
            chunk = fh.read(min(65536, MAX_READ_BYTES - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    return b"".join(chunks)


class HostRoot:
    """Read-only view of a host's filesystem rooted at ``root``.

    ``read("/etc/os-release")`` reads ``<root>/etc/os-release``. Symbolic links are followed
    inside the root: an absolute target (``/etc/x``) means ``<root>/etc/x``, never this
    machine's file. Only regular files are read (a FIFO or device reads as absent), at most
    :data:`MAX_READ_BYTES`, as UTF-8 with undecodable bytes replaced. Nothing raises: an
    absent or unreadable file reads as ``None`` and :meth:`why` says which.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.live = root.resolve() == Path("/")

    def path(self, abs_path: str) -> Path:
        """The real path of host path ``abs_path``, links resolved inside the root.

        Raises ``OSError`` (ELOOP) after 40 links.
        """
        if self.live:
            return Path("/" + abs_path.lstrip("/"))
        parts = [x for x in abs_path.split("/") if x not in ("", ".")]
        resolved: list[str] = []
        hops = 0
        while parts:
            name = parts.pop(0)
            if name == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = self.root.joinpath(*resolved, name)
            if candidate.is_symlink():
                hops += 1
                if hops > _MAX_LINKS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links", abs_path)
                target = os.readlink(candidate)
                if target.startswith("/"):
                    resolved = []
                parts = [x for x in target.split("/") if x not in ("", ".")] + parts
            else:
                resolved.append(name)
        return self.root.joinpath(*resolved)

    def why(self, abs_path: str) -> str:
        """Why ``abs_path`` reads as ``None``: absent, not a regular file, a link loop, ..."""
        try:
            st = self.path(abs_path).stat()
        except FileNotFoundError:
            return f"{abs_path} is absent"
        except OSError as exc:
            return f"{abs_path} cannot be read ({exc.strerror or exc})"
        if not stat.S_ISREG(st.st_mode):
            return f"{abs_path} is not a regular file"
        return f"{abs_path} cannot be read"

    def read(self, abs_path: str) -> str | None:
        """Text of ``abs_path``, or ``None`` (see the class docstring)."""
        try:
            real = self.path(abs_path)
            if not stat.S_ISREG(real.stat().st_mode):
                return None
            data = _read_bounded(real)
        except OSError:
            return None
        return data.decode("utf-8", errors="replace")

    def read_line(self, abs_path: str) -> str | None:
        """First non-empty line of ``abs_path`` stripped, or ``None`` when absent or empty."""
        text = self.read(abs_path)
        if not text or not text.strip():
            return None
        return text.strip().splitlines()[0].strip() or None

    def show(self, real: Path) -> str:
        """How a real path under the root is reported: as an absolute path on the host."""
        if self.live:
            return str(real)
        try:
            return "/" + str(real.relative_to(self.root)).lstrip("/")
        except ValueError:
            return str(real)

    def exists(self, abs_path: str) -> bool:
        """True when ``abs_path`` exists under the root."""
        try:
            return self.path(abs_path).exists()
        except OSError:
            return False

    def is_dir(self, abs_path: str) -> bool:
        """True when ``abs_path`` is a directory under the root."""
        try:
            return self.path(abs_path).is_dir()
        except OSError:
            return False

    def glob(self, pattern: str) -> list[str]:
        """Host paths matching ``pattern`` (``*``, ``?``, ``[...]`` per component), sorted."""
        found = ["/"]
        for part in [x for x in pattern.split("/") if x]:
            nxt: list[str] = []
            for base in found:
                prefix = base.rstrip("/")
                if not any(ch in part for ch in "*?["):
                    nxt.append(f"{prefix}/{part}")
                    continue
                try:
                    names = sorted(os.listdir(self.path(base)))
                except OSError:
                    continue
                nxt += [f"{prefix}/{n}" for n in names if fnmatch.fnmatchcase(n, part)]
            found = nxt
        return sorted(f for f in found if self.exists(f))


def _run(runner: Runner, argv: Sequence[str]) -> tuple[CommandResult | None, str]:
    """Run and describe: the result (``None`` if the tool is absent) and a reason text."""
    result = runner.run(argv)
    if result is None:
        cmd = " ".join(a for a in argv[:2] if not a.startswith("--query"))
        return None, f"`{cmd}` is not available (tool not installed, or not in the recording)"
    if not result.ok:
        return None, result.describe()
    return result, ""


# --- OS ---------------------------------------------------------------------------------


def parse_os_release(text: str) -> dict[str, str]:
    """Parse os-release ``KEY=value`` lines (quotes and backslash escapes removed)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = re.sub(r"\\(.)", r"\1", value)
    return out


def _probe_os(host: HostRoot, runner: Runner, live: bool) -> OsFacts:
    text = host.read("/etc/os-release")
    src = "/etc/os-release"
    if text is None:
        text, src = host.read("/usr/lib/os-release"), "/usr/lib/os-release"
    fields = parse_os_release(text) if text else {}

    def field(key: str) -> Reading:
        if text is None:
            return Reading.missing(f"{host.why('/etc/os-release')}; "
                                   f"{host.why('/usr/lib/os-release')}")
        if not fields.get(key, "").strip():
            return Reading.missing(f"{src} has no {key}" if key not in fields
                                   else f"{key} is empty in {src}", src)
        return Reading.of(fields[key].strip()[:200], src)

    osrelease = "/proc/sys/kernel/osrelease"
    kernel_text = host.read_line(osrelease)
    if kernel_text:
        kernel = Reading.of(kernel_text[:200], osrelease)
    elif host.read(osrelease) is not None:
        kernel = Reading.missing(f"{osrelease} is empty", osrelease)
    else:
        kernel = Reading.missing(host.why(osrelease))
    return OsFacts(
        id=field("ID"),
        version_id=field("VERSION_ID"),
        version=field("VERSION"),
        pretty_name=field("PRETTY_NAME"),
        kernel=kernel,
        glibc=_probe_glibc(runner, live),
    )


def _probe_glibc(runner: Runner, live: bool) -> Reading:
    result, why = _run(runner, ("ldd", "--version"))
    if result is not None:
        first = (result.stdout.strip().splitlines() or [""])[0]
        match = re.search(r"(\d+\.\d+)\s*$", first)
        if match and ("GLIBC" in first.upper() or "GNU" in first.upper()):
            return Reading.of(match.group(1), "ldd --version")
        why = f"`ldd --version` does not name glibc (first line: {first[:80]!r})"
    if live:
        try:
            conf = os.confstr("CS_GNU_LIBC_VERSION")
        except (ValueError, OSError):
            conf = None
        if conf and conf.startswith("glibc "):
            return Reading.of(conf.split()[1], "confstr(CS_GNU_LIBC_VERSION)")
    return Reading.missing(why)


# --- GPUs -------------------------------------------------------------------------------


def _pci_display_devices(host: HostRoot) -> list[tuple[str, str, str]]:
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
            if len(parts) == 2 and parts[1].lstrip("-").isdigit():
                props[parts[0]] = int(parts[1])
        gfx = gfx_from_target_version(props.get("gfx_target_version", 0))
        if gfx is None:
            continue
        loc, domain = props.get("location_id", 0), props.get("domain", 0)
        bus = f"{domain:04x}:{loc >> 8:02x}:{(loc >> 3) & 0x1F:02x}.{loc & 0x7:x}"
        nodes[bus] = (gfx, props_path)
    return nodes


def _sysfs_firmware(host: HostRoot, base: str) -> dict[str, str]:
    """Per-block firmware versions from ``<device>/fw_version/*_fw_version`` (FACTS.md §2.6)."""
    out = {}
    for f in host.glob(f"{base}/fw_version/*_fw_version"):
        value = host.read_line(f)
        if value:
            out[f.rsplit("/", 1)[-1].removesuffix("_fw_version")] = value[:64]
    return out


def _amd_gpus(
    host: HostRoot, runner: Runner, devices: list[tuple[str, str, str]],
    identify: Callable[[str], str | None], start: int,
) -> tuple[list[GpuFacts], Reading]:
    """AMD GPUs from sysfs + KFD, completed with ``amd-smi static`` / ``firmware``."""
    from pinning.probe.formats.amd_smi import parse_amd_smi_firmware, parse_amd_smi_static

    kfd = _kfd_nodes(host)
    agents = _rocminfo_agents(runner)
    static_res, static_why = _run(runner, ("amd-smi", "static"))
    fw_res, fw_why = _run(runner, ("amd-smi", "firmware"))
    statics, fws = [], []
    notes: list[str] = []
    if static_res is not None:
        try:
            statics = parse_amd_smi_static(static_res.stdout)
        except PinError as exc:
            static_why = exc.message
            notes.append(static_why)
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
        vbios_text = host.read_line(f"{base}/vbios_version")
        if vbios_text:
            vbios = Reading.of(vbios_text, f"{base}/vbios_version")
        elif static is not None and static.vbios_version:
            vbios = Reading.of(static.vbios_version, "amd-smi static")
        else:
            why = static_why or "no VBIOS in amd-smi static"
            vbios = Reading.missing(f"no {base}/vbios_version and {why}")
        agent = agents.get(_bdfid(bus))
        if bus in kfd:
            gfx = Reading.of(kfd[bus][0], kfd[bus][1])
        elif agent is not None and agent.gfx_target:
            gfx = Reading.of(agent.gfx_target, "rocminfo")
        elif static is not None and static.target_graphics_version:
            gfx = Reading.of(static.target_graphics_version, "amd-smi static")
        else:
            gfx = Reading.missing("no KFD topology node for this device (amdgpu/KFD not loaded?)")
        vram = host.read_line(f"{base}/mem_info_vram_total")
        if vram and vram.isdigit():
            memory = Reading.of(str(int(vram) // (1024 * 1024)), f"{base}/mem_info_vram_total")
        elif static is not None and static.vram_mib is not None:
            memory = Reading.of(str(static.vram_mib), "amd-smi static")
        else:
            memory = Reading.missing(f"no {base}/mem_info_vram_total")
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
        name_value = (static.market_name or static.product_name) if static is not None else None
        if not name_value and agent is not None:
            name_value = agent.marketing_name
        name = (
            Reading.of(name_value, "amd-smi static" if static is not None else "rocminfo")
            if name_value
            else Reading.missing("marketing name comes from amd-smi static: "
                                 + (static_why or "not shown"))
        )
        gpus.append(
            GpuFacts(
                index=start + n, vendor="amd", pci_bus=bus, pci_device_id=device,
                product=identify(device), name=name, gfx_target=gfx, memory_mib=memory,
                target_id=_target_id(agent),
                vbios=vbios, firmware=firmware, firmware_source=fw_source, pldm_bundle=pldm,
            )
        )
    smi_version, why = _run(runner, ("amd-smi", "version"))
    if smi_version is not None:
        from pinning.probe.formats.amd_smi import parse_amd_smi_version

        try:
            parsed = parse_amd_smi_version(smi_version.stdout)
            tool = (
                Reading.of(parsed.tool, "amd-smi version") if parsed.tool
                else Reading.missing("amd-smi version printed no tool version", "amd-smi version")
            )
        except PinError as exc:
            tool = Reading.missing(exc.message, "amd-smi version")
    else:
        tool = Reading.missing(why)
    return gpus, tool


def _bdfid(bus: str) -> int | None:
    """The rocminfo ``BDFID`` of a PCI address ``0000:05:00.0``: bus << 8 | device << 3 | fn."""
    m = re.fullmatch(r"[0-9a-f]{4}:([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", bus)
    if not m:
        return None
    return (int(m.group(1), 16) << 8) | (int(m.group(2), 16) << 3) | int(m.group(3))


def _rocminfo_agents(runner: Runner) -> dict[int | None, RocminfoAgent]:
    """GPU agents of ``rocminfo`` keyed by BDFID (FACTS.md §2.5); empty when unavailable."""
    from pinning.probe.formats.rocminfo import parse_rocminfo

    result, _why = _run(runner, ("rocminfo",))
    if result is None:
        return {}
    try:
        info = parse_rocminfo(result.stdout)
    except PinError:
        return {}
    out: dict[int | None, RocminfoAgent] = {}
    for agent in info.gpus:
        raw = agent.fields.get("BDFID", "")
        if raw.isdigit():
            out[int(raw)] = agent
    return out


def _target_id(agent: RocminfoAgent | None) -> str | None:
    """Full target ID with features (``gfx942:sramecc+:xnack-``) from the agent's first ISA."""
    if agent is None or not agent.isa:
        return None
    return agent.isa[0].removeprefix("amdgcn-amd-amdhsa--")


def _nvidia_gpus(
    host: HostRoot, runner: Runner, devices: list[tuple[str, str, str]],
    identify: Callable[[str], str | None], start: int,
) -> tuple[list[GpuFacts], str | None]:
    """NVIDIA GPUs from PCI sysfs, completed with ``nvidia-smi --query-gpu`` (matched by bus)."""
    from pinning.probe.formats.nvidia import parse_nvidia_smi_query

    result, why = _run(runner, NVIDIA_QUERY)
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


def _probe_amd_software(host: HostRoot, env: Mapping[str, str], tool: Reading,
                        kernel: Reading) -> AmdFacts:
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


def _probe_nvidia_software(host: HostRoot, smi_driver: str | None) -> NvidiaFacts:
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
            value = json.loads(raw)["cuda"]["version"]
            toolkit = Reading.of(str(value), "/usr/local/cuda/version.json")
        except (ValueError, KeyError, TypeError):
            toolkit = Reading.missing("/usr/local/cuda/version.json has no cuda.version")
    else:
        line = host.read_line("/usr/local/cuda/version.txt")
        m = re.search(r"CUDA Version\s+(\d+(?:\.\d+)*)", line or "")
        if m:
            toolkit = Reading.of(m.group(1), "/usr/local/cuda/version.txt")
    return NvidiaFacts(driver=driver, module_kind=kind, cuda_toolkit=toolkit)


# --- Python -------------------------------------------------------------------------------


def _site_dirs(host: HostRoot, env: Mapping[str, str], live: bool,
               explicit: Sequence[str]) -> tuple[list[str], str | None]:
    """Host paths of the site-packages to read, and why none were found.

    Raises :class:`~pinning.errors.UsageError` (exit 2) for an explicit directory that does
    not exist on the host (under the root).
    """
    if explicit:
        for d in explicit:
            if not host.is_dir(d):
                where = "" if host.live else f" under {host.root}"
                raise UsageError(f"--site-packages {d}: no such directory on the host{where}.",
                                 hint="Give the site-packages path as the host sees it.")
        return list(explicit), None
    dirs: list[str] = []
    looked: list[str] = []
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(var)
        if prefix:
            looked.append(f"{var}={prefix}")
            dirs += host.glob(f"{prefix}/lib/python3*/site-packages")
    if dirs:
        return dirs, None
    if looked:
        return [], (f"{' and '.join(looked)} has no lib/python3*/site-packages on the host; "
                    "pass --site-packages DIR")
    if live:
        paths = sysconfig.get_paths()
        return sorted({paths["purelib"], paths["platlib"]}), None
    dirs = [d for pattern in _SITE_GLOBS for d in host.glob(pattern)]
    why = None if dirs else ("no site-packages in the usual places (" + ", ".join(
        "/" + g for g in _SITE_GLOBS) + "); pass --site-packages DIR")
    return dirs, why


def _read_regular(path: Path) -> str | None:
    """Text of a regular file (bounded, undecodable bytes replaced), else ``None``."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
        return _read_bounded(path).decode("utf-8", errors="replace")
    except OSError:
        return None


def _torch_build(dist_dir: Path, version: str, location: str) -> TorchBuild:
    """Read ``torch/version.py`` literals (``__version__``, ``cuda``, ``hip``) with :mod:`ast`."""
    path = dist_dir / "torch" / "version.py"
    src = f"{location}/torch/version.py"
    values: dict[str, object] = {}
    text = _read_regular(path)
    try:
        tree = ast.parse(text) if text is not None else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    if tree is not None:
        for node in tree.body:
            target = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            if isinstance(target, ast.Name):
                try:
                    values[target.id] = ast.literal_eval(value)
                except ValueError:
                    continue
    hip, cuda = values.get("hip"), values.get("cuda")
    hip_s = hip if isinstance(hip, str) else None
    cuda_s = cuda if isinstance(cuda, str) else None
    if tree is None:
        kind = "unknown"
        if "+rocm" in version:
            kind = "rocm"
        elif "+cu" in version:
            kind = "cuda"
        src = f"{location} (dist-info version; torch/version.py unreadable)"
    else:
        kind = "rocm" if hip_s else "cuda" if cuda_s else "cpu"
    return TorchBuild(version=version, kind=kind, hip=hip_s, cuda=cuda_s, source=src)


def _probe_python(host: HostRoot, dirs: list[str], why_none: str | None,
                  notes: list[str]) -> PythonFacts:
    from importlib import metadata

    if not dirs:
        return PythonFacts(reason=why_none or "no Python site-packages directory found")
    dists: dict[str, Distribution] = {}
    tritons: list[TritonDist] = []
    torch: TorchBuild | None = None
    real_dirs = []
    for d in dirs:
        try:
            real_dirs.append(str(host.path(d)))
        except OSError:
            notes.append(f"{d}: {host.why(d)}")
    for dist in metadata.distributions(path=real_dirs):
        try:
            got = _read_distribution(dist)
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            where = getattr(dist, "_path", "a dist-info")
            notes.append(f"skipped unreadable Python metadata {host.show(Path(str(where)))}: "
                         f"{type(exc).__name__}")
            continue
        if got is None:
            continue
        name, version, installer, direct_url, record = got
        key = normalize_name(name)
        if key in dists:  # first on the path wins, as for the import system
            continue
        dists[key] = Distribution(name=key, version=version, installer=installer,
                                  direct_url=direct_url)
        location = Path(str(dist.locate_file("")))
        if key in TRITON_DISTRIBUTIONS:
            tritons.append(TritonDist(
                name=key, version=version, installer=installer, direct_url=direct_url,
                owns_import="triton/__init__.py," in record if record else None,
            ))
        if key == "torch":
            torch = _torch_build(location, version, host.show(location))
    return PythonFacts(
        site_packages=list(dirs),
        distributions=sorted(dists.values(), key=lambda d: d.name),
        torch=torch,
        tritons=sorted(tritons, key=lambda t: t.name),
    )


def _read_distribution(
    dist: Any,
) -> tuple[str, str, str | None, str | None, str] | None:
    """``(name, version, installer, direct_url, RECORD text)`` of one dist-info, or ``None``
    when its METADATA names no Name/Version. Raises ``OSError`` / ``ValueError`` (undecodable
    or unreadable metadata) for the caller to skip it.
    """
    name, version = dist.name, dist.version
    if not isinstance(name, str) or not isinstance(version, str) or not name or not version:
        return None
    installer = ((dist.read_text("INSTALLER") or "").strip() or None)
    direct_url = None
    raw = dist.read_text("direct_url.json")
    if raw:
        try:
            url = json.loads(raw).get("url")
            direct_url = str(url) if url else None
        except (ValueError, AttributeError):
            direct_url = None
    record = dist.read_text("RECORD") or ""
    return name, version, installer, direct_url, record


# --- container and model --------------------------------------------------------------------


def _probe_container(host: HostRoot) -> ContainerFacts:
    no_digest = ("the container runtime does not expose the image digest inside the container; "
                 "compare the image by its digest in the registry instead")
    containerenv = host.read("/run/.containerenv")
    if containerenv is not None:
        fields = parse_os_release(containerenv)
        image = fields.get("image")
        image_id = fields.get("imageid")
        return ContainerFacts(
            inside=True, runtime=fields.get("engine", "podman").split()[0] or "podman",
            evidence="/run/.containerenv",
            image=Reading.of(image, "/run/.containerenv") if image
            else Reading.missing("/run/.containerenv names no image"),
            image_digest=Reading.of(f"sha256:{image_id}", "/run/.containerenv (image ID)")
            if image_id else Reading.missing(no_digest),
        )
    runtime, evidence = None, None
    if host.exists("/.dockerenv"):
        runtime, evidence = "docker", "/.dockerenv"
    else:
        cgroup = host.read("/proc/1/cgroup") or ""
        for marker, name in (("docker", "docker"), ("kubepods", "kubernetes"),
                             ("containerd", "containerd"), ("libpod", "podman")):
            if marker in cgroup:
                runtime, evidence = name, "/proc/1/cgroup"
                break
    if runtime is None:
        outside = "not inside a container"
        return ContainerFacts(inside=False, image=Reading.missing(outside),
                              image_digest=Reading.missing(outside))
    return ContainerFacts(inside=True, runtime=runtime, evidence=evidence,
                          image=Reading.missing(no_digest), image_digest=Reading.missing(no_digest))


def hf_cache_dir(env: Mapping[str, str]) -> str:
    """The Hugging Face hub cache path a host uses (``HF_HUB_CACHE``, ``HF_HOME/hub``, or
    ``~/.cache/huggingface/hub`` with ``HOME`` from the host environment, ``/root`` if unset).
    """
    if env.get("HF_HUB_CACHE"):
        return env["HF_HUB_CACHE"]
    if env.get("HF_HOME"):
        return env["HF_HOME"].rstrip("/") + "/hub"
    home = env.get("HOME") or "/root"
    return home.rstrip("/") + "/.cache/huggingface/hub"


def probe_model(host: HostRoot, env: Mapping[str, str], model_id: str) -> ModelFacts:
    """Revisions of ``model_id`` cached locally, by huggingface_hub's cache scan (offline)."""
    cache = hf_cache_dir(env)
    if not host.is_dir(cache):
        return ModelFacts(id=model_id, cache=cache, reason=f"no Hugging Face cache at {cache}")
    real = host.path(cache)
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        info = scan_cache_dir(real)
    except (CacheNotFound, OSError, ValueError) as exc:
        return ModelFacts(id=model_id, cache=cache, reason=f"cannot scan {cache}: {exc}")
    for repo in info.repos:
        if repo.repo_type == "model" and repo.repo_id == model_id:
            revs = sorted(r.commit_hash for r in repo.revisions)
            return ModelFacts(id=model_id, cache=cache, revisions=revs)
    folder = "models--" + model_id.replace("/", "--")
    problems = [str(w) for w in info.warnings if folder in str(w)]
    if problems:
        return ModelFacts(id=model_id, cache=cache,
                          reason=f"the cache entry for {model_id} is unreadable: {problems[0]}")
    return ModelFacts(id=model_id, cache=cache, reason=f"{model_id} is not in the cache at {cache}")


# --- the whole probe --------------------------------------------------------------------------


def probe_host(
    root: Path = Path("/"),
    runner: Runner | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    site_packages: Sequence[str] = (),
    model_id: str | None = None,
    replay: str | None = None,
    identify: Callable[[str], str | None] | None = None,
) -> HostFacts:
    """Probe the host whose filesystem is ``root`` (``/`` = this machine, live).

    ``runner`` runs tools (``None``: none are run); ``environ`` is the host's environment
    (live default: ``os.environ``; a recorded host: its recording's ``[environment]``);
    ``site_packages`` overrides Python environment discovery; ``model_id`` asks for the
    cached revisions of that Hugging Face model; ``identify`` maps a PCI device ID to a pin
    GPU id (the matrix's identity table). Raises :class:`ProbeError` when ``root`` is not a
    directory.
    """
    from pinning._proc import NoRunner

    if not root.is_dir():
        raise ProbeError(f"Host root {root} is not a directory.",
                         hint="Pass --root DIR pointing at a recorded host tree, or omit it.")
    live = root.resolve() == Path("/")
    runner = runner or NoRunner()
    env: Mapping[str, str] = environ if environ is not None else (os.environ if live else {})
    identify = identify or (lambda _device: None)
    host = HostRoot(root)
    notes: list[str] = []
    os_facts = _probe_os(host, runner, live)

    devices = _pci_display_devices(host)
    amd_devices = [d for d in devices if d[1] == AMD_VENDOR]
    nv_devices = [d for d in devices if d[1] == NVIDIA_VENDOR]
    gpus: list[GpuFacts] = []
    amd = nvidia = None
    if amd_devices or host.exists("/sys/module/amdgpu"):
        amd_gpus, tool = _amd_gpus(host, runner, amd_devices, identify, 0)
        gpus += amd_gpus
        amd = _probe_amd_software(host, env, tool, os_facts.kernel)
    if nv_devices or host.exists("/proc/driver/nvidia/version"):
        nv_gpus, smi_driver = _nvidia_gpus(host, runner, nv_devices, identify, len(gpus))
        gpus += nv_gpus
        nvidia = _probe_nvidia_software(host, smi_driver)
    vendors = {g.vendor for g in gpus}
    vendor = "none" if not vendors else vendors.pop() if len(vendors) == 1 else "mixed"
    if not gpus:
        notes.append("no GPU found: no AMD or NVIDIA display controller under /sys/bus/pci/devices")

    dirs, why = _site_dirs(host, env, live, site_packages)
    python = _probe_python(host, dirs, why, notes)
    environment = {k: env[k] for k in BEHAVIOUR_ENV if k in env}
    model = probe_model(host, env, model_id) if model_id else None
    return HostFacts(
        probe=ProbeInfo(tool=f"pin {__version__}", root=str(root), replay=replay, live=live),
        vendor=vendor,
        os=os_facts,
        gpus=gpus,
        amd=amd,
        nvidia=nvidia,
        python=python,
        environment=environment,
        container=_probe_container(host),
        model=model,
        notes=notes,
    )


def iter_readings(facts: HostFacts) -> Iterable[tuple[str, Reading]]:
    """Every :class:`Reading` in ``facts`` with a dotted path (``gpus[0].vbios``)."""

    def walk(prefix: str, obj: object) -> Iterable[tuple[str, Reading]]:
        if isinstance(obj, Reading):
            yield prefix, obj
        elif isinstance(obj, list):
            for i, item in enumerate(obj):
                yield from walk(f"{prefix}[{i}]", item)
        elif hasattr(obj, "model_fields"):
            for name in type(obj).model_fields:
                yield from walk(f"{prefix}.{name}" if prefix else name, getattr(obj, name))

    yield from walk("", facts)
