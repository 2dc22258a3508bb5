"""Fold the parsed sections of pasted dumps into one :class:`~pinning.guards.view.EnvView`
(for the rules) and one :class:`~pinning.doctor.facts.DoctorFacts` (for the report).

:class:`Merger` has one method per section kind (``_<kind>``, called by :meth:`Merger.add`);
the first non-empty value of a fact wins, except the ROCm release and the GPU list, which
come from the most trusted tool that gave them.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pinning.doctor.facts import (
    DoctorFacts,
    FactCollector,
    FirmwareFact,
    GpuFact,
    PackageFact,
    flatten,
    known,
)
from pinning.guards.view import EnvView, GpuView, PackageView
from pinning.util.versions import normalize_name

_AMD_NAME = re.compile(r"\b(AMD|Radeon|Instinct|gfx\d)", re.IGNORECASE)
_NVIDIA_NAME = re.compile(r"\b(NVIDIA|Tesla|GeForce|TITAN|Quadro|RTX|[ABHLT]\d{2,3})\b")
_GFX = re.compile(r"\b(gfx[0-9a-f]{3,4})\b")


def _version_like(value: str | None) -> str | None:
    """``value`` stripped when it starts like a dotted version, else ``None``."""
    if value and re.match(r"^\d+(\.\d+)+", value.strip()):
        return value.strip()
    return None


def _gpu_from_name(name: str) -> GpuView:
    """A GPU known by its name alone; the vendor and gfx target when the name says them."""
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
    """The torch build a version's local label names (``+rocm6.1``, ``+cu121``, ``+cpu``)."""
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
    """How an amdgpu driver string says the module came: the distribution's (inbox) or DKMS."""
    from pinning.probe.formats.amd_smi import is_inbox_driver_string

    return "inbox" if is_inbox_driver_string(driver) else "dkms"


def _details(parsed: Any, shown: set[str]) -> dict[str, str]:
    """Every field of one parsed GPU (:func:`~pinning.doctor.facts.flatten`) but those the
    view already shows (``shown``, by top-level field name).
    """
    return {k: v for k, v in flatten(parsed).items() if k.split(".", 1)[0] not in shown}


class Merger:
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
        """Record the ROCm release ``source`` gave (its first one); see :meth:`finish`."""
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
        """Record GPU ``gpu``'s firmware versions (name -> version) as ``source`` listed them."""
        if firmware:
            self.facts.firmware.append(FirmwareFact(source=source, gpu=gpu, firmware=firmware))

    def set(self, attr: str, value: Any) -> None:
        """Set the view's ``attr`` to ``value`` unless it is empty or ``attr`` already set."""
        if value and not getattr(self.view, attr):
            setattr(self.view, attr, value)

    def package(self, name: str, version: str, source: str, tool: str, **conda: Any) -> None:
        """Record one installed package (``source`` pip or conda, ``tool`` the listing;
        ``conda``: its ``build``, ``channel``, ``pip_copy``).
        """
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
        """Torch's version, build and ROCm tag from a package listing (name -> version)."""
        torch = packages.get("torch")
        if torch:
            self.set("torch_version", torch)
            self.set("torch_kind", _torch_kind(torch))
            self.rocm_from("torch-build", _rocm_from_tag(torch))
            self.facts.put("torch", "version", torch)

    def amdgpu(self, version: str, kind: Literal["inbox", "dkms"] | None = None) -> None:
        """Record the amdgpu module ``version`` and ``kind`` (default: read from ``version``)."""
        self.set("amdgpu_version", version)
        self.set("amdgpu_kind", kind or _inbox(version))

    def add(self, kind: str, parsed: Any) -> None:
        """Fold one parsed section of ``kind`` (a :mod:`pinning.probe.formats.split` kind)
        in, through the method ``_<kind>``.
        """
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
            self.amdgpu(s.rocm_driver_version, "dkms")
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
            self.amdgpu(v.amdgpu)

    def _amd_smi_static(self, statics: list[Any]) -> None:
        shown = {"gpu", "market_name", "device_id", "target_graphics_version"}
        self.gpus("amd-smi static", [
            GpuView(vendor="amd", name=s.market_name or s.product_name, device_id=s.device_id,
                    gfx=s.target_graphics_version) for s in statics],
            [{"index": s.gpu, "details": _details(s, shown)} for s in statics])
        for s in statics:
            if s.driver_version:
                self.amdgpu(s.driver_version)

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
            self.amdgpu(r.driver_version)
        shown = {"index", "device_id", "name", "telemetry", "firmware"}
        for g in r.gpus:
            self.firmware("rocm-smi", g.index, dict(g.firmware))
        # rocm-smi lists AMD GPUs only (ROCm/rocm_smi_lib), so every GPU it prints is AMD.
        self.gpus("rocm-smi", [GpuView(vendor="amd", name=g.name, device_id=g.device_id)
                               for g in r.gpus],
                  [{"index": g.index, "telemetry": dict(g.telemetry),
                    "firmware": dict(g.firmware), "details": _details(g, shown)}
                   for g in r.gpus])

    def _rocminfo(self, info: Any) -> None:
        if info.rock_module_version:
            self.amdgpu(info.rock_module_version, "dkms")
        elif info.rock_module_state == "loaded":
            self.set("amdgpu_kind", "inbox")
        shown = {"marketing_name", "chip_id", "gfx_target"}
        self.gpus("rocminfo", [
            GpuView(vendor="amd", name=a.marketing_name, device_id=a.chip_id, gfx=a.gfx_target)
            for a in info.gpus],
            [{"details": _details(a, shown)} for a in info.gpus])

    def _nvidia_smi_query(self, rows: list[Any]) -> None:
        shown = {"index", "name", "device_id", "compute_cap"}
        self.gpus("nvidia-smi", [
            GpuView(vendor="nvidia", name=r.name, device_id=r.device_id,
                    compute_capability=r.compute_cap) for r in rows],
            [{"index": r.index, "details": _details(r, shown)} for r in rows])
        for r in rows:
            self.set("nvidia_driver", r.driver_version)

    def _nvidia_smi(self, banner: tuple[str | None, str | None]) -> None:
        self.set("nvidia_driver", banner[0])

    def _nvidia_proc_version(self, module: Any) -> None:
        self.set("nvidia_driver", module.version)

    def finish(self) -> tuple[EnvView, DoctorFacts]:
        """The merged view (ROCm release and GPU list from the most trusted tool that gave
        them, packages listed once) and every fact read.
        """
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
        first: dict[tuple[str, str, str], PackageView] = {}
        for pkg in self.view.packages:  # the same dump pasted twice lists packages twice
            first.setdefault((pkg.name.lower(), pkg.version, pkg.source), pkg)
        self.view.packages = list(first.values())
        v = self.view
        self.facts.set("nvidia_driver", v.nvidia_driver)
        self.facts.set("amdgpu", v.amdgpu_version)
        self.facts.set("amdgpu_kind", v.amdgpu_kind)
        return v, self.facts.build(gpu_facts, v.rocm_version)
