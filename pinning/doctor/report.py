"""``pin doctor``: read pasted environment dumps and say what is wrong with that environment.

Dumps (collect_env, vLLM's collect_env, SGLang's check_env, pip list / freeze / inspect, uv
pip list / freeze, uv tree, pipdeptree, conda list (text and ``--json``), amd-smi, rocm-smi,
rocminfo, nvidia-smi, ``/proc/driver/nvidia/version``; several per file) are split and
parsed by :mod:`pinning.probe.formats`, merged into one :class:`~pinning.guards.view.EnvView`
for the rules and one :class:`~pinning.doctor.facts.DoctorFacts` for the report, and judged
by the lock-free rules of :mod:`pinning.guards.checks` against the matrix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from pinning.doctor.facts import (
    DoctorFacts,
    FactCollector,
    FirmwareFact,
    GpuFact,
    PackageFact,
    SectionFacts,
    flatten,
    known,
)
from pinning.guards.checks import run_checks
from pinning.guards.engine import GuardContext, guard_findings
from pinning.guards.view import EnvView, Finding, GpuView, PackageView
from pinning.matrix.load import Matrix
from pinning.util.models import Strict
from pinning.util.versions import normalize_name

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
    """What ``pin doctor`` read and found.

    ``facts`` holds every fact parsed; ``environment`` the short summary the text form
    prints. ``judged`` is false when no rule had any input (no GPU, torch, package, driver,
    ROCm release or variable was read): then an empty ``findings`` means nothing was
    judged, not that nothing is wrong.
    """

    report_version: Literal[1] = REPORT_VERSION
    dumps: list[DumpInfo]
    facts: DoctorFacts = Field(default_factory=DoctorFacts)
    environment: dict[str, Any] = Field(default_factory=dict)
    judged: bool = True
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


def _rocm_from_tag(version: str) -> str | None:
    """``torch 2.4.0+rocm6.1`` -> ``6.1``: the ROCm release the wheel was built for."""
    m = re.search(r"\+rocm(\d+\.\d+(?:\.\d+)?)", version)
    return m.group(1) if m else None


def _inbox(driver: str) -> Literal["inbox", "dkms"]:
    from pinning.probe.formats.amd_smi import is_inbox_driver_string

    return "inbox" if is_inbox_driver_string(driver) else "dkms"


class _Merger:
    """Folds parsed sections into one :class:`EnvView` (first non-empty value wins) and
    records every fact in a :class:`FactCollector`.
    """

    # Where the host's ROCm release is read from, most trusted first: amd-smi reports the
    # installed release; SGLang's HIPCC and vLLM's "ROCM Version" the host toolchain; torch's
    # "ROCM used to build" and a `+rocmX.Y` wheel tag only say what the wheel was built for.
    _ROCM_PRIORITY = ("amd-smi", "sglang", "vllm", "torch-build")
    # The richest GPU list wins: tools that print device IDs and targets over names.
    _GPU_ORDER = ("amd-smi static", "rocminfo", "nvidia-smi", "rocm-smi", "sglang", "collect_env",
                  "amd-smi firmware")

    def __init__(self) -> None:
        self.view = EnvView()
        self.facts = FactCollector()
        self.gpus_by_source: dict[str, tuple[list[GpuView], list[GpuFact]]] = {}
        self.rocm: dict[str, str] = {}
        self.pip_copies: list[PackageFact] = []
        self.pip_names: set[str] = set()

    def rocm_from(self, source: str, value: str | None) -> None:
        if value and source not in self.rocm:
            self.rocm[source] = value

    def gpus(self, source: str, gpus: list[GpuView],
             extra: list[dict[str, Any]] | None = None) -> None:
        """Record the GPUs one tool listed; ``extra`` gives per GPU the :class:`GpuFact`
        fields beyond the view (``index``, ``telemetry``, ``details``, ``firmware``).
        """
        if gpus and source not in self.gpus_by_source:
            more = extra or [{} for _ in gpus]
            facts = [GpuFact(source=source, vendor=g.vendor, name=g.name, device_id=g.device_id,
                             gfx=g.gfx, compute_capability=g.compute_capability, **x)
                     for g, x in zip(gpus, more, strict=True)]
            self.gpus_by_source[source] = (gpus, facts)

    def firmware(self, source: str, gpu: int, firmware: dict[str, str]) -> None:
        if firmware:
            self.facts.firmware.append(FirmwareFact(source=source, gpu=gpu, firmware=firmware))

    def set(self, attr: str, value: Any) -> None:
        if value and not getattr(self.view, attr):
            setattr(self.view, attr, value)

    def package(self, name: str, version: str, source: str, tool: str, **conda: Any) -> None:
        from pinning.probe.formats.packages import build_tag

        fact = PackageFact(name=name, version=version, build_tag=build_tag(version),
                           source=source, tool=tool, **conda)
        self.facts.package(fact)
        if fact.pip_copy:
            self.pip_copies.append(fact)
        else:
            self.view.packages.append(PackageView(name, version, source))
            if source == "pip":
                self.pip_names.add(normalize_name(name))

    def _add_pip_copies(self) -> None:
        """Conda's ``<pip>`` / ``pypi`` entries are the pip-installed copy: each counts as a
        pip package unless a pip listing already names it (then it is that same copy).
        """
        copies: dict[str, str] = {}
        for c in self.pip_copies:
            name = normalize_name(c.name)
            if name in self.pip_names or name in copies:
                continue
            copies[name] = c.version
            self.view.packages.append(PackageView(name, c.version, "pip"))
            self.facts.package(PackageFact(
                name=name, version=c.version, build_tag=c.build_tag, source="pip",
                tool=f"{c.tool} (pip's copy)"))
        if self.view.torch_version is None:
            self.torch_from_packages(copies)

    def torch_from_packages(self, packages: dict[str, str]) -> None:
        torch = packages.get("torch")
        if torch:
            self.set("torch_version", torch)
            self.set("torch_kind", _torch_kind(torch))
            self.rocm_from("torch-build", _rocm_from_tag(torch))
            self.facts.put("torch", "version", torch)

    def add(self, kind: str, parsed: Any) -> None:
        getattr(self, f"_{kind}")(parsed)

    def _collect_env(self, c: Any) -> None:
        f = self.facts
        for key, value in (("os", c.os), ("python", c.python_version),
                           ("python_platform", c.python_platform), ("libc", c.libc_version),
                           ("cuda_runtime", c.cuda_runtime_version), ("cudnn", c.cudnn_version),
                           ("hip_runtime", c.hip_runtime_version),
                           ("miopen", c.miopen_runtime_version)):
            f.set(key, value)
        for key, value in (("gcc", c.gcc_version), ("clang", c.clang_version),
                           ("cmake", c.cmake_version)):
            f.put("compilers", key, value)
        for key, value in (("version", c.torch_version), ("build", c.torch_build),
                           ("debug_build", c.debug_build),
                           ("cuda_built", c.cuda_built), ("rocm_built", c.rocm_built),
                           ("cuda_available", c.cuda_available),
                           ("cuda_module_loading", c.cuda_module_loading),
                           ("xnnpack_available", c.xnnpack_available)):
            f.put("torch", key, value)
        for key, value in (("version", c.vllm_version), ("rocm", c.vllm_rocm_version),
                           ("build_flags", c.vllm_build_flags)):
            f.put("vllm", key, value)
        self.set("torch_version", c.torch_version)
        self.set("torch_kind", c.torch_build)
        if c.torch_build == "cuda":
            self.set("torch_cuda", _version_like(c.cuda_built))
        if c.torch_build == "rocm":
            self.set("torch_hip", known(c.rocm_built))
            self.rocm_from("torch-build", _rocm_from_hip(c.rocm_built)
                           or _rocm_from_tag(c.torch_version or ""))
        self.set("nvidia_driver", _version_like(c.nvidia_driver_version))
        f.set("nvidia_driver", c.nvidia_driver_version)
        if c.vllm_rocm_version:
            self.rocm_from("vllm", _rocm_from_hip(c.vllm_rocm_version))
        self.gpus("collect_env", [_gpu_from_name(n) for n in c.gpus])
        for name, version in (c.pip_packages or {}).items():
            self.package(name, version, "pip", "collect_env [pip]")
        for name, pkg in (c.conda_packages or {}).items():
            # conda lists pip installs as the `pypi` channel (conda >= 4.6) or with a `<pip>`
            # build (older conda): that is the copy pip lists, not a second one.
            pip_copy = (pkg.channel or "").lower() == "pypi" or pkg.build == "<pip>"
            self.package(name, pkg.version, "conda", "collect_env [conda]", build=pkg.build,
                         channel=pkg.channel, pip_copy=pip_copy)
        for k, v in c.env.items():
            self.view.environment.setdefault(k, v)
            f.put("environment", k, v)

    def _sglang_check_env(self, s: Any) -> None:
        self.torch_from_packages(s.packages)
        self.rocm_from("sglang", _rocm_from_hip(s.hip_version or s.hipcc))
        self.facts.put("compilers", "hipcc", s.hipcc)
        self.facts.put("compilers", "nvcc", s.nvcc)
        self.facts.set("python", s.python)
        if s.rocm_driver_version:
            self.set("amdgpu_version", s.rocm_driver_version)
            self.set("amdgpu_kind", "dkms")
        self.set("nvidia_driver", _version_like(s.cuda_driver_version))
        self.gpus("sglang", [_gpu_from_name(n) for n in s.gpus])
        for name, version in s.packages.items():
            self.package(name, version, "pip", "sglang check_env")

    def _pip_list(self, packages: dict[str, str]) -> None:
        for name, version in packages.items():
            self.package(name, version, "pip", "pip list")
        self.torch_from_packages(packages)

    def _listing(self, listing: Any) -> None:
        conda = listing.tool.startswith("conda")
        for p in listing.packages:
            extra = ({"build": p.build, "channel": p.channel, "pip_copy": p.pip_copy}
                     if conda else {})
            self.package(p.name, p.version, "conda" if conda else "pip", listing.tool, **extra)
        named = {p.name: p.version for p in listing.packages if not p.pip_copy}
        if conda and "pytorch" in named and "torch" not in named:
            named["torch"] = named["pytorch"]
        self.torch_from_packages(named)

    _conda_list = _conda_list_json = _pip_inspect = _dep_tree = _listing

    def _amd_smi_version(self, v: Any) -> None:
        for key, value in (("tool", v.tool), ("library", v.library), ("rocm", v.rocm),
                           ("amdgpu", v.amdgpu), ("amd_hsmp", v.amd_hsmp),
                           ("platform", v.platform)):
            self.facts.put("amd_smi", key, value)
        if v.rocm and v.rocm != "N/A":
            self.rocm_from("amd-smi", v.rocm)
        if v.amdgpu and v.amdgpu != "N/A":
            self.set("amdgpu_version", v.amdgpu)
            self.set("amdgpu_kind", _inbox(v.amdgpu))

    def _amd_smi_static(self, statics: list[Any]) -> None:
        shown = {"gpu", "market_name", "device_id", "target_graphics_version"}
        self.gpus("amd-smi static", [
            GpuView(vendor="amd", name=s.market_name or s.product_name, device_id=s.device_id,
                    gfx=s.target_graphics_version) for s in statics],
            [{"index": s.gpu, "details": {k: v for k, v in flatten(s).items()
                                          if k not in shown}} for s in statics])
        for s in statics:
            if s.driver_version:
                self.set("amdgpu_version", s.driver_version)
                self.set("amdgpu_kind", _inbox(s.driver_version))

    def _amd_smi_firmware(self, fws: list[Any]) -> None:
        for fw in fws:
            self.firmware("amd-smi firmware", fw.gpu, dict(fw.firmware))
        # amd-smi lists AMD GPUs only; firmware gives no model, so rules learn only "AMD".
        self.gpus("amd-smi firmware", [GpuView(vendor="amd") for _ in fws],
                  [{"index": fw.gpu, "firmware": dict(fw.firmware)} for fw in fws])

    def _rocm_smi(self, r: Any) -> None:
        if r.version is not None:
            self.facts.put("rocm_smi", "smi", r.version.smi)
            self.facts.put("rocm_smi", "lib", r.version.lib)
        if r.driver_version:
            self.set("amdgpu_version", r.driver_version)
            self.set("amdgpu_kind", _inbox(r.driver_version))
        shown = {"index", "device_id", "name", "telemetry", "firmware"}
        for g in r.gpus:
            self.firmware("rocm-smi", g.index, dict(g.firmware))
        # rocm-smi lists AMD GPUs only (ROCm/rocm_smi_lib), so every GPU it prints is AMD.
        self.gpus("rocm-smi", [GpuView(vendor="amd", name=g.name, device_id=g.device_id)
                               for g in r.gpus],
                  [{"index": g.index, "telemetry": dict(g.telemetry),
                    "firmware": dict(g.firmware),
                    "details": {k: v for k, v in flatten(g).items()
                                if k.split(".", 1)[0] not in shown}} for g in r.gpus])

    def _rocminfo(self, info: Any) -> None:
        if info.rock_module_version:
            self.set("amdgpu_version", info.rock_module_version)
            self.set("amdgpu_kind", "dkms")
        elif info.rock_module_state == "loaded":
            self.set("amdgpu_kind", "inbox")
        shown = {"marketing_name", "chip_id", "gfx_target"}
        self.gpus("rocminfo", [
            GpuView(vendor="amd", name=a.marketing_name, device_id=a.chip_id, gfx=a.gfx_target)
            for a in info.gpus],
            [{"details": {k: v for k, v in flatten(a).items()
                          if k.split(".", 1)[0] not in shown}} for a in info.gpus])

    def _nvidia_smi_query(self, rows: list[Any]) -> None:
        shown = {"index", "name", "device_id", "compute_cap"}
        self.gpus("nvidia-smi", [
            GpuView(vendor="nvidia", name=r.name, device_id=r.device_id,
                    compute_capability=r.compute_cap) for r in rows],
            [{"index": r.index, "details": {k: v for k, v in flatten(r).items()
                                            if k.split(".", 1)[0] not in shown}} for r in rows])
        for r in rows:
            self.set("nvidia_driver", r.driver_version)

    def _nvidia_smi(self, banner: tuple[str | None, str | None]) -> None:
        self.set("nvidia_driver", banner[0])

    def _nvidia_proc_version(self, module: Any) -> None:
        self.set("nvidia_driver", module.version)

    def finish(self) -> tuple[EnvView, DoctorFacts]:
        self._add_pip_copies()
        for source in self._ROCM_PRIORITY:
            if source in self.rocm:
                self.view.rocm_version = self.rocm[source]
                break
        gpu_facts: list[GpuFact] = []
        for source in self._GPU_ORDER:
            if source in self.gpus_by_source:
                views, gpu_facts = self.gpus_by_source[source]
                self.view.gpus = [g for g in views if g.vendor is not None]
                break
        seen: set[tuple[str, str, str]] = set()
        unique = []
        for pkg in self.view.packages:  # the same dump pasted twice lists packages twice
            key = (pkg.name.lower(), pkg.version, pkg.source)
            if key not in seen:
                seen.add(key)
                unique.append(pkg)
        self.view.packages = unique
        v = self.view
        self.facts.set("nvidia_driver", v.nvidia_driver)
        self.facts.set("amdgpu", v.amdgpu_version)
        self.facts.set("amdgpu_kind", v.amdgpu_kind)
        return v, self.facts.build(gpu_facts, v.rocm_version)


def _judged(view: EnvView) -> bool:
    """True when some rule has an input: a GPU with a model, target or device ID, a torch
    version, a package, a driver, a ROCm release or an environment variable. A GPU known
    only by vendor and index (rocm-smi's NUMA table, amd-smi firmware) gives no rule an input
    on its own.
    """
    identified = any(g.name or g.gfx or g.device_id or g.compute_capability for g in view.gpus)
    return bool(identified or view.torch_version or view.packages or view.nvidia_driver
                or view.rocm_version or view.amdgpu_version or view.amdgpu_kind
                or view.environment)


def doctor(files: Sequence[tuple[str, str]], matrix: Matrix) -> DoctorReport:
    """Diagnose the dumps in ``files`` (``(name, text)`` pairs) against ``matrix``.

    The report carries every parsed fact; when no rule had an input it is returned with
    ``judged`` false and no findings (the CLI exits 14). Raises
    :class:`~pinning.errors.FormatError` (exit 7) naming the file when one contains no
    recognisable dump.
    """
    from pinning.probe.formats.split import parse_section, split_dump

    merger = _Merger()
    dumps: list[DumpInfo] = []
    for name, text in files:
        for section in split_dump(text, source=name):
            parsed = parse_section(section, source=f"{name}:{section.first_line}")
            merger.add(section.kind, parsed)
            merger.facts.sections.append(SectionFacts(
                kind=section.kind, file=name, first_line=section.first_line,
                fields=flatten(parsed)))
            dumps.append(DumpInfo(file=name, kind=section.kind, first_line=section.first_line))
    view, facts = merger.finish()
    summary = {
        "gpus": [g.name or g.device_id or g.gfx or f"{(g.vendor or 'unknown').upper()} GPU"
                 for g in view.gpus],
        "torch": view.torch_version,
        "torch-build": view.torch_kind,
        "rocm": view.rocm_version,
        "amdgpu": view.amdgpu_version,
        "nvidia-driver": view.nvidia_driver,
        "packages": len(view.packages),
    }
    judged = _judged(view)
    findings = run_checks(view, matrix) if judged else []
    if judged:
        findings += guard_findings(GuardContext(view=view), "verify")
    return DoctorReport(
        dumps=dumps,
        facts=facts,
        environment={k: v for k, v in summary.items() if v not in (None, [], 0)},
        judged=judged,
        findings=findings,
    )
