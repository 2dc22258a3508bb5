"""Read a host: files under a root directory and tool outputs through a :class:`Runner`.

``probe_host(root=Path("/"), runner=SystemRunner())`` reads this machine; with a recorded
tree and a :class:`~pinning.util.proc.ReplayRunner` it reads a recorded host the same way. Each
fact that cannot be read becomes a ``not-probed`` :class:`Reading` with the reason; only a
missing root or an unreadable recording fails the probe as a whole
(:class:`~pinning.errors.ProbeError`, exit 7).

Paths and formats: sysfs and ``/opt/rocm/.info/version`` (ROCm/rocm-systems@1b1610f,
rocm-core), ``/proc/driver/nvidia/version`` and ``nvidia-smi --query-gpu`` (NVIDIA), Triton
distribution names (ROCm/aiter@0132896:setup.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pinning import __version__
from pinning.errors import ProbeError
from pinning.lockfile.models import Model
from pinning.probe.gpus import (
    AMD_VENDOR,
    NVIDIA_VENDOR,
    amd_gpus,
    nvidia_gpus,
    pci_display_devices,
    probe_amd_software,
    probe_nvidia_software,
)
from pinning.probe.hostmodel import probe_model
from pinning.probe.models import (
    BEHAVIOUR_ENV,
    AmdFacts,
    ContainerFacts,
    GpuFacts,
    HostFacts,
    NvidiaFacts,
    OsFacts,
    ProbeInfo,
    PythonFacts,
    Reading,
)
from pinning.probe.pyenv import probe_python, site_dirs
from pinning.probe.root import HostRoot, run_tool
from pinning.util.proc import Runner
from pinning.util.text import control_chars

if TYPE_CHECKING:
    from pinning.probe.hasher import Hasher

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
    result, why = run_tool(runner, ("ldd", "--version"))
    if result is not None:
        first = (result.stdout.strip().splitlines() or [""])[0]
        match = re.search(r"(?<!\d)(\d+\.\d+)$", first)
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


# --- container --------------------------------------------------------------------


def _probe_container(host: HostRoot) -> ContainerFacts:
    no_digest = ("the container runtime does not expose the image digest inside the container; "
                 "compare the image by its digest in the registry instead")
    containerenv = host.read("/run/.containerenv")
    if containerenv is not None:
        fields = parse_os_release(containerenv)
        image = fields.get("image")
        image_id = fields.get("imageid")
        return ContainerFacts(
            inside=True, runtime=(fields.get("engine", "").split() or ["podman"])[0][:60],
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


# --- the whole probe --------------------------------------------------------------------------


def probe_host(
    root: Path = Path("/"),
    runner: Runner | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    site_packages: Sequence[str] = (),
    model_id: str | None = None,
    model: Model | None = None,
    hasher: Hasher | None = None,
    lock_path: str | None = None,
    replay: str | None = None,
    identify: Callable[[str], str | None] | None = None,
) -> HostFacts:
    """Probe the host whose filesystem is ``root`` (``/`` = this machine, live).

    ``runner`` runs tools (``None``: none are run); ``environ`` is the host's environment
    (live default: ``os.environ``; a recorded host: its recording's ``[environment]``);
    ``site_packages`` overrides Python environment discovery; ``model_id`` asks for the
    cached revisions of that Hugging Face model, ``model`` (the lock's) also for its files,
    hashed by ``hasher`` (:func:`~pinning.probe.hostmodel.probe_model`; ``lock_path``, the
    lock file, anchors a relative model folder and is left out of it); ``identify`` maps a
    PCI device ID to a pin GPU id (the matrix's identity table). Raises :class:`ProbeError`
    when ``root`` is not a directory.
    """
    from pinning.util.proc import NoRunner

    if not root.is_dir():
        raise ProbeError(f"Host root {root} is not a directory.",
                         hint="Pass --root DIR pointing at a recorded host tree, or omit it.")
    live = root.resolve() == Path("/")
    runner = runner or NoRunner()
    env: Mapping[str, str] = environ if environ is not None else (os.environ if live else {})
    host = HostRoot(root)
    notes: list[str] = []
    os_facts = _probe_os(host, runner, live)
    gpus, amd, nvidia = _probe_gpus(host, runner, env, identify or (lambda _device: None),
                                    os_facts.kernel, notes)
    vendors = {g.vendor for g in gpus}
    python = _probe_python_env(host, env, live, site_packages, notes)
    environment = {k: env[k] for k in BEHAVIOUR_ENV if k in env and not control_chars(env[k])}
    notes += [f"{k} not recorded: its value holds a control character"
              for k in BEHAVIOUR_ENV if k in env and k not in environment]
    model_facts = (probe_model(host, env, model=model, hasher=hasher,
                               lock_path=lock_path) if model is not None
                   else probe_model(host, env, model_id) if model_id else None)
    return HostFacts(
        probe=ProbeInfo(tool=f"pin {__version__}", root=str(root), replay=replay, live=live),
        vendor="none" if not vendors else vendors.pop() if len(vendors) == 1 else "mixed",
        os=os_facts, gpus=gpus, amd=amd, nvidia=nvidia, python=python,
        environment=environment, container=_probe_container(host), model=model_facts,
        notes=notes,
    )


def _probe_gpus(host: HostRoot, runner: Runner, env: Mapping[str, str],
                identify: Callable[[str], str | None], kernel: Reading, notes: list[str]
                ) -> tuple[list[GpuFacts], AmdFacts | None, NvidiaFacts | None]:
    """The host's GPUs (AMD first, then NVIDIA, indexed in that order) and each vendor's
    software facts when its devices or driver are there; a note when there is no GPU.
    """
    devices = pci_display_devices(host)
    amd_devices = [d for d in devices if d[1] == AMD_VENDOR]
    nv_devices = [d for d in devices if d[1] == NVIDIA_VENDOR]
    gpus: list[GpuFacts] = []
    amd = nvidia = None
    if amd_devices or host.exists("/sys/module/amdgpu"):
        found, tool = amd_gpus(host, runner, amd_devices, identify, 0, notes)
        gpus += found
        amd = probe_amd_software(host, env, tool, kernel)
    if nv_devices or host.exists("/proc/driver/nvidia/version"):
        found, smi_driver = nvidia_gpus(host, runner, nv_devices, identify, len(gpus))
        gpus += found
        nvidia = probe_nvidia_software(host, smi_driver)
    if not gpus:
        notes.append("no GPU found: no AMD or NVIDIA display controller under /sys/bus/pci/devices")
    return gpus, amd, nvidia


def _probe_python_env(host: HostRoot, env: Mapping[str, str], live: bool,
                      site_packages: Sequence[str], notes: list[str]) -> PythonFacts:
    """The Python environment the host's workload uses (:func:`~pinning.probe.pyenv.site_dirs`),
    with a note when a live probe reads the one pin itself runs in.
    """
    dirs, why = site_dirs(host, env, live, site_packages)
    if live and not site_packages and not (env.get("VIRTUAL_ENV") or env.get("CONDA_PREFIX")):
        import sys

        notes.append(f"read the Python environment pin runs in ({sys.prefix}); if the workload "
                     "uses another, pass --site-packages DIR or activate it first")
    return probe_python(host, dirs, why, notes)
