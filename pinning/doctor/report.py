"""``pin doctor``: read pasted environment dumps and say what is wrong with that environment.

Dumps (collect_env, vLLM's collect_env, SGLang's check_env, pip list, amd-smi, rocm-smi,
rocminfo, nvidia-smi, ``/proc/driver/nvidia/version``; several per file) are split and
parsed by :mod:`pinning.probe.formats`, merged into one :class:`~pinning.guards.checks.EnvView`, and
judged by the lock-free rules of :mod:`pinning.guards.checks` against the matrix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from pinning.guards.checks import run_checks
from pinning.guards.engine import GuardContext, guard_findings
from pinning.guards.view import EnvView, Finding, GpuView, PackageView
from pinning.matrix.load import Matrix
from pinning.util.models import Strict

REPORT_VERSION: Literal[1] = 1

_AMD_NAME = re.compile(r"\b(AMD|Radeon|Instinct|gfx\d)", re.IGNORECASE)
_NVIDIA_NAME = re.compile(r"\b(NVIDIA|Tesla|GeForce|TITAN|Quadro|RTX|[ABHLT]\d{2,3})\b")
_GFX = re.compile(r"\b(gfx[0-9a-f]{3,4})\b")


class DumpInfo(Strict):
    """One recognised dump: file, kind and first line."""

    file: str
    kind: str
    first_line: int


class DoctorReport(Strict):
    """What ``pin doctor`` read and found (``findings`` empty: nothing wrong was seen)."""

    report_version: Literal[1] = REPORT_VERSION
    dumps: list[DumpInfo]
    environment: dict[str, Any] = Field(default_factory=dict)
    findings: list[Finding] = Field(default_factory=list)


def _version_like(value: str | None) -> str | None:
    if value and re.match(r"^\d+(\.\d+)+", value.strip()):
        return value.strip()
    return None


def _gpu_from_name(name: str) -> GpuView:
    gfx = _GFX.search(name)
    vendor: Literal["amd", "nvidia"] | None = None
    if _AMD_NAME.search(name):
        vendor = "amd"
    elif _NVIDIA_NAME.search(name):
        vendor = "nvidia"
    return GpuView(vendor=vendor, name=name, gfx=gfx.group(1) if gfx else None)


def _rocm_from_hip(hip: str | None) -> str | None:
    """HIP ``6.3.42131-fa1d09cbd`` -> ROCm series ``6.3`` (the HIP build number is not a
    ROCm patch release).
    """
    m = re.match(r"^(\d+)\.(\d+)", hip or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def _torch_kind(version: str) -> Literal["rocm", "cuda", "cpu"] | None:
    if "+rocm" in version:
        return "rocm"
    if re.search(r"\+cu\d", version):
        return "cuda"
    if "+cpu" in version:
        return "cpu"
    return None


class _Merger:
    """Folds parsed sections into one :class:`EnvView` (first non-empty value wins)."""

    # Where the host's ROCm release is read from, most trusted first: amd-smi reports the
    # installed release; SGLang's HIPCC and vLLM's "ROCM Version" the host toolchain; torch's
    # "ROCM used to build" only says what the wheel was built against.
    _ROCM_PRIORITY = ("amd-smi", "sglang", "vllm", "torch-build")

    def __init__(self) -> None:
        self.view = EnvView()
        self.gpus_by_source: dict[str, list[GpuView]] = {}
        self.rocm: dict[str, str] = {}

    def rocm_from(self, source: str, value: str | None) -> None:
        if value and source not in self.rocm:
            self.rocm[source] = value

    def gpus(self, source: str, gpus: list[GpuView]) -> None:
        if gpus and source not in self.gpus_by_source:
            self.gpus_by_source[source] = gpus

    def set(self, attr: str, value: Any) -> None:
        if value and not getattr(self.view, attr):
            setattr(self.view, attr, value)

    def add(self, kind: str, parsed: Any) -> None:
        getattr(self, f"_{kind}")(parsed)

    def _collect_env(self, c: Any) -> None:
        self.set("torch_version", c.torch_version)
        self.set("torch_kind", c.torch_build)
        if c.torch_build == "cuda":
            self.set("torch_cuda", _version_like(c.cuda_built))
        if c.torch_build == "rocm":
            self.set("torch_hip", c.rocm_built)
            self.rocm_from("torch-build", _rocm_from_hip(c.rocm_built))
        self.set("nvidia_driver", _version_like(c.nvidia_driver_version))
        if c.vllm_rocm_version:
            self.rocm_from("vllm", _rocm_from_hip(c.vllm_rocm_version))
        self.gpus("collect_env", [_gpu_from_name(n) for n in c.gpus])
        for name, version in (c.pip_packages or {}).items():
            self.view.packages.append(PackageView(name, version, "pip"))
        for name, pkg in (c.conda_packages or {}).items():
            if (pkg.channel or "").lower() == "pypi":
                continue  # conda lists pip installs from the `pypi` channel: the same copy
            self.view.packages.append(PackageView(name, pkg.version, "conda"))
        for k, v in c.env.items():
            self.view.environment.setdefault(k, v)

    def _sglang_check_env(self, s: Any) -> None:
        torch = s.packages.get("torch")
        if torch:
            self.set("torch_version", torch)
            self.set("torch_kind", _torch_kind(torch))
        self.rocm_from("sglang", _rocm_from_hip(s.hip_version or s.hipcc))
        if s.rocm_driver_version:
            self.set("amdgpu_version", s.rocm_driver_version)
            self.set("amdgpu_kind", "dkms")
        self.set("nvidia_driver", _version_like(s.cuda_driver_version))
        self.gpus("sglang", [_gpu_from_name(n) for n in s.gpus])
        for name, version in s.packages.items():
            self.view.packages.append(PackageView(name, version, "pip"))

    def _pip_list(self, packages: dict[str, str]) -> None:
        for name, version in packages.items():
            self.view.packages.append(PackageView(name, version, "pip"))
        torch = packages.get("torch")
        if torch:
            self.set("torch_version", torch)
            self.set("torch_kind", _torch_kind(torch))

    def _amd_smi_version(self, v: Any) -> None:
        from pinning.probe.formats.amd_smi import is_inbox_driver_string

        if v.rocm and v.rocm != "N/A":
            self.rocm_from("amd-smi", v.rocm)
        if v.amdgpu and v.amdgpu != "N/A":
            self.set("amdgpu_version", v.amdgpu)
            self.set("amdgpu_kind", "inbox" if is_inbox_driver_string(v.amdgpu) else "dkms")

    def _amd_smi_static(self, statics: list[Any]) -> None:
        self.gpus("amd-smi static", [
            GpuView(vendor="amd", name=s.market_name or s.product_name, device_id=s.device_id,
                    gfx=s.target_graphics_version) for s in statics])
        for s in statics:
            if s.driver_version:
                from pinning.probe.formats.amd_smi import is_inbox_driver_string

                self.set("amdgpu_version", s.driver_version)
                self.set("amdgpu_kind",
                         "inbox" if is_inbox_driver_string(s.driver_version) else "dkms")

    def _amd_smi_firmware(self, _fws: list[Any]) -> None:
        return

    def _rocm_smi(self, r: Any) -> None:
        if r.driver_version:
            from pinning.probe.formats.amd_smi import is_inbox_driver_string

            self.set("amdgpu_version", r.driver_version)
            self.set("amdgpu_kind",
                     "inbox" if is_inbox_driver_string(r.driver_version) else "dkms")
        gpus = [GpuView(vendor="amd", device_id=g.device_id) for g in r.gpus if g.device_id]
        self.gpus("rocm-smi", gpus)

    def _rocminfo(self, info: Any) -> None:
        if info.rock_module_version:
            self.set("amdgpu_version", info.rock_module_version)
            self.set("amdgpu_kind", "dkms")
        elif info.rock_module_state == "loaded":
            self.set("amdgpu_kind", "inbox")
        self.gpus("rocminfo", [
            GpuView(vendor="amd", name=a.marketing_name, device_id=a.chip_id, gfx=a.gfx_target)
            for a in info.gpus])

    def _nvidia_smi_query(self, rows: list[Any]) -> None:
        self.gpus("nvidia-smi", [
            GpuView(vendor="nvidia", name=r.name, device_id=r.device_id,
                    compute_capability=r.compute_cap) for r in rows])
        for r in rows:
            self.set("nvidia_driver", r.driver_version)

    def _nvidia_smi(self, banner: tuple[str | None, str | None]) -> None:
        self.set("nvidia_driver", banner[0])

    def _nvidia_proc_version(self, module: Any) -> None:
        self.set("nvidia_driver", module.version)

    def finish(self) -> EnvView:
        for source in self._ROCM_PRIORITY:
            if source in self.rocm:
                self.view.rocm_version = self.rocm[source]
                break
        # The richest GPU list wins: tools that print device IDs and targets over names.
        order = ["amd-smi static", "rocminfo", "nvidia-smi", "rocm-smi", "sglang", "collect_env"]
        for source in order:
            if source in self.gpus_by_source:
                self.view.gpus = self.gpus_by_source[source]
                break
        seen: set[tuple[str, str, str]] = set()
        unique = []
        for pkg in self.view.packages:  # the same dump pasted twice lists packages twice
            key = (pkg.name.lower(), pkg.version, pkg.source)
            if key not in seen:
                seen.add(key)
                unique.append(pkg)
        self.view.packages = unique
        return self.view


def doctor(files: Sequence[tuple[str, str]], matrix: Matrix) -> DoctorReport:
    """Diagnose the dumps in ``files`` (``(name, text)`` pairs) against ``matrix``.

    Raises :class:`~pinning.errors.FormatError` (exit 7) naming the file when one contains
    no recognisable dump.
    """
    from pinning.probe.formats.split import parse_section, split_dump

    merger = _Merger()
    dumps: list[DumpInfo] = []
    for name, text in files:
        for section in split_dump(text, source=name):
            parsed = parse_section(section, source=f"{name}:{section.first_line}")
            merger.add(section.kind, parsed)
            dumps.append(DumpInfo(file=name, kind=section.kind, first_line=section.first_line))
    view = merger.finish()
    summary = {
        "gpus": [g.name or g.device_id or "?" for g in view.gpus],
        "torch": view.torch_version,
        "torch-build": view.torch_kind,
        "rocm": view.rocm_version,
        "amdgpu": view.amdgpu_version,
        "nvidia-driver": view.nvidia_driver,
        "packages": len(view.packages),
    }
    findings = run_checks(view, matrix)
    findings += guard_findings(GuardContext(view=view), "verify")
    return DoctorReport(
        dumps=dumps,
        environment={k: v for k, v in summary.items() if v not in (None, [], 0)},
        findings=findings,
    )
