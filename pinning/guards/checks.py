"""The coded rules: lock-free judgements that need the matrix or several facts at once.

Shared by ``pin verify`` and ``pin doctor``. Each check takes an
:class:`~pinning.guards.view.EnvView` and returns :class:`~pinning.guards.view.Finding`
objects, each with a stable ``code``, the facts involved and the source that makes the
combination wrong (the install-hazard notes below); those that need the matrix are in
:mod:`pinning.guards.matrix_checks`, and :func:`run_checks` runs both. Rules that need only
package names, versions, variables and the vendor are data in ``rules.toml`` instead
(:mod:`pinning.guards.engine`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pinning.guards.matrix_checks import check_cuda_driver, check_gfx_targets, check_kmd
from pinning.guards.view import EnvView, Finding, package_key
from pinning.matrix.names import TRITON_DISTRIBUTIONS
from pinning.util.versions import at_least

if TYPE_CHECKING:
    from pinning.matrix.load import Matrix

# SR-IOV virtual-function PCI device IDs (pciutils/pciids@c1c1254:pci.ids).
SRIOV_VF_IDS: dict[str, str] = {"0x74b5": "Instinct MI300X VF", "0x74b9": "Instinct MI325X VF"}

# The public sources of each install hazard (upstream issues, pull requests and files).
_GH = "https://github.com/"
SOURCE_CUDA_OVER_ROCM = (
    "Dao-AILab/flash-attention@0251105:setup.py (torch left out of install_requires so pip "
    f"does not install CUDA torch over ROCm torch); {_GH}vllm-project/vllm/pull/38337; "
    f"{_GH}pytorch/pytorch/issues/164346")
SOURCE_ROCM_ON_NVIDIA = (
    "PyTorch HIP semantics (torch.version.hip is set only in ROCm builds): "
    "pytorch/pytorch@0180055:docs/source/notes/hip.rst")
SOURCE_TWO_TORCH = (
    f"{_GH}pytorch/pytorch/issues/28321 (pip torch 1.2.0 beside conda pytorch 1.3.0 in one "
    "environment)")
SOURCE_TRITON = (
    "ROCm/aiter@0132896:setup.py (Triton distribution names, AITER_USE_SYSTEM_TRITON); "
    f"{_GH}ROCm/pytorch/pull/2518 (triton vs pytorch-triton-rocm by ROCm release)")
SOURCE_JAX_SKEW = (
    f"{_GH}jax-ml/jax/pull/26975 (plugin and jaxlib pinned 1:1); jax-ml/jax:setup.py "
    "(extra rocm)")
SOURCE_JAX_PLUGIN = (
    f"{_GH}jax-ml/jax/pull/33067 (jax-rocm7-plugin naming); {_GH}ROCm/jax/issues/268 "
    f"(rocm60 plugin needs librocm_smi64.so.6); {_GH}ROCm/rocm_smi_lib/issues/215")
SOURCE_NUMERICS = (
    "pytorch/pytorch@0180055:docs/source/notes/hip.rst (variables that change kernels or "
    "numerics on ROCm: HIPBLASLT_ALLOW_TF32, TORCH_BLAS_PREFER_HIPBLASLT, "
    "HIPBLAS_WORKSPACE_CONFIG, PYTORCH_TUNABLEOP_*)")
SOURCE_COLLECT_ENV = (
    f"{_GH}pytorch/pytorch/blob/main/torch/utils/collect_env.py (prints 'Could not collect' "
    "for a value it could not read)")
SOURCE_TORCH_BUILD = (
    "pytorch/pytorch@0180055:docs/source/notes/hip.rst (torch.version.hip is set only in ROCm "
    "builds, torch.version.cuda only in CUDA builds); pytorch/pytorch:"
    "tools/generate_torch_version.py (writes torch/version.py at build time)")
SOURCE_TORCH_FILES = (
    "pytorch/pytorch:tools/generate_torch_version.py (torch/version.py __version__ written at "
    "build time); https://packaging.python.org/en/latest/specifications/core-metadata/ "
    "(the dist-info METADATA Version)")
SOURCE_HSA_OVERRIDE = (
    f"{_GH}pytorch/pytorch/issues/164346; {_GH}ROCm/legacy-rocm-build/issues/2536; "
    f"{_GH}likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU/issues/37 "
    "(HSA_STATUS_ERROR_INVALID_ISA)")


# Package names (PEP 503) the coded rules look for: JAX's ROCm plugin (CUDA runtime wheels:
# :func:`_cuda_wheel`).
_JAX_PLUGIN = re.compile(r"jax-rocm(\d+)-(plugin|pjrt)")

#: What of a view's packages and environment the coded rules read (besides its GPUs, torch
#: build, drivers and runtime): these PEP 503 names, those :func:`checked_package` accepts,
#: these variables. A check that comes to read another package or variable must be named
#: here: :func:`pinning.guards.engine.rule_reads` keys ``pin fleet verify``'s memory of
#: rule findings on them (tests/unit/guards/test_rule_reads.py holds each check to it).
CHECKED_NAMES = frozenset({"torch", "pytorch", "jax", "jaxlib", *TRITON_DISTRIBUTIONS})
CHECKED_ENV = frozenset({"HSA_OVERRIDE_GFX_VERSION"})


@functools.lru_cache(maxsize=8192)
def _cuda_wheel(key: str) -> bool:
    """Whether the PEP 503 name ``key`` is an NVIDIA CUDA runtime wheel (``nvidia-*-cu1N``);
    remembered, as it is asked for every package of every host.
    """
    return re.fullmatch(r"nvidia-.*-cu1\d", key) is not None


def checked_package(key: str) -> bool:
    """Whether a coded rule reads the package whose PEP 503 name is ``key``: one of
    :data:`CHECKED_NAMES`, a CUDA runtime wheel or a JAX ROCm plugin. Raises nothing.
    """
    return key in CHECKED_NAMES or _cuda_wheel(key) or _JAX_PLUGIN.fullmatch(key) is not None


# --- the rules --------------------------------------------------------------------------------


def check_torch_vendor(view: EnvView) -> list[Finding]:
    """A torch build for the other vendor, or a CPU-only build."""
    if view.torch_kind is None or view.torch_version is None:
        return []
    out: list[Finding] = []
    if view.torch_files_version and view.torch_files_version != view.torch_version:
        out.append(Finding(
            code="torch-files-differ-from-metadata", fact="frameworks.pytorch.version",
            status="hazard", severity="error", expected=view.torch_version,
            actual=view.torch_files_version, source=SOURCE_TORCH_FILES,
            message=f"torch's files say {view.torch_files_version} but its metadata says "
                    f"{view.torch_version}: another torch was copied over the installed one. "
                    "Reinstall torch."))
    if view.torch_kind == "cuda" and view.amd and not view.nvidia:
        out.append(Finding(
            code="cuda-torch-on-amd", fact="frameworks.pytorch.build", status="hazard",
            severity="error", actual=view.torch_version, source=SOURCE_CUDA_OVER_ROCM,
            message=f"torch {view.torch_version} is a CUDA build on an AMD host "
                    "(torch.version.hip is None): pip resolved torch from PyPI over the ROCm "
                    "build. Reinstall torch from the ROCm index."))
    elif view.torch_kind == "rocm" and view.nvidia and not view.amd:
        out.append(Finding(
            code="rocm-torch-on-nvidia", fact="frameworks.pytorch.build", status="hazard",
            severity="error", actual=view.torch_version, source=SOURCE_ROCM_ON_NVIDIA,
            message=f"torch {view.torch_version} is a ROCm build on an NVIDIA host."))
    elif view.torch_kind == "unknown":
        out.append(Finding(
            code="torch-build-unknown", fact="frameworks.pytorch.build", status="not-probed",
            severity="info", actual=view.torch_version,
            source=SOURCE_COLLECT_ENV,
            message=f"The dump does not say which build torch {view.torch_version} is (CUDA "
                    "used to build PyTorch: Could not collect); the CUDA/ROCm/CPU build "
                    "checks were not run."))
    elif view.torch_kind == "cpu":
        out.append(Finding(
            code="cpu-only-torch-build", fact="frameworks.pytorch.build", status="hazard",
            severity="error" if view.gpus else "warning", actual=view.torch_version,
            source=SOURCE_TORCH_BUILD,
            message=f"torch {view.torch_version} is built with neither CUDA nor ROCm, so no GPU "
                    "can be used; install a CUDA or ROCm build of PyTorch."))
    return out


def check_cuda_wheels(view: EnvView) -> list[Finding]:
    """NVIDIA CUDA runtime wheels (``nvidia-*-cu1N``) on an AMD-only host: a CUDA install
    took place over the ROCm stack.
    """
    if not view.amd or view.nvidia:
        return []
    cu = sorted(p.name for p in view.packages if _cuda_wheel(package_key(p.name)))
    if not cu:
        return []
    beside = f" beside torch {view.torch_version}" if view.torch_version else ""
    return [Finding(
        code="cuda-libraries-on-amd", fact="packages.nvidia-cuda", status="hazard",
        severity="warning", actual=", ".join(cu[:5]), source=SOURCE_CUDA_OVER_ROCM,
        message=f"NVIDIA CUDA wheels are installed{beside} on an AMD host.")]


def check_distributions(view: EnvView) -> list[Finding]:
    """Two torch copies (pip and conda), several Triton distributions, a CUDA Triton beside a
    ROCm torch, and JAX plugin consistency.
    """
    out: list[Finding] = []
    torch_copies = sorted(
        {(p.source, p.version) for p in view.packages if package_key(p.name) in
         ("torch", "pytorch")}
    )
    if len(torch_copies) > 1:
        listed = "; ".join(f"{src} {ver}" for src, ver in torch_copies)
        out.append(Finding(
            code="multiple-torch-distributions", fact="packages.torch", status="hazard",
            severity="error", actual=listed, source=SOURCE_TWO_TORCH,
            message=f"More than one torch is installed ({listed}); which copy is imported "
                    "depends on path order. Remove all but one."))
    tritons = sorted({(package_key(p.name), p.version) for p in view.packages
                      if package_key(p.name) in TRITON_DISTRIBUTIONS})
    if len(tritons) > 1:
        listed = ", ".join(f"{n}=={v}" for n, v in tritons)
        out.append(Finding(
            code="multiple-triton-distributions", fact="packages.triton", status="hazard",
            severity="error", actual=listed, source=SOURCE_TRITON,
            message=f"Several distributions install the `triton` package ({listed}); the last "
                    "one written wins (AMD's AITER replaces Triton unless "
                    "AITER_USE_SYSTEM_TRITON=1). Keep exactly the one torch requires."))
    if view.torch_kind == "rocm":
        for name, version in tritons:
            if name == "triton" and not re.search(r"rocm|amd", version):
                out.append(Finding(
                    code="cuda-triton-with-rocm-torch", fact="packages.triton", status="hazard",
                    severity="error", actual=f"{name}=={version}",
                    source=SOURCE_TRITON,
                    message=f"`triton {version}` carries no ROCm/AMD marker beside ROCm torch "
                            f"{view.torch_version}: it is likely a CUDA or upstream Triton build, "
                            "and it shadows the ROCm Triton torch was built against."))
    out += _check_jax(view)
    return out


def _check_jax(view: EnvView) -> list[Finding]:
    versions: dict[str, str] = {}
    majors: set[str] = set()
    for p in view.packages:
        name = package_key(p.name)
        if not name.startswith("jax"):
            continue
        m = _JAX_PLUGIN.fullmatch(name)
        if name in ("jax", "jaxlib") or m:
            versions[name] = p.version
        if m:
            majors.add(m.group(1))  # "60" (ROCm 6.x naming), "7", "10" (major only)
    out: list[Finding] = []
    if len(versions) > 1 and len({v.split("+")[0] for v in versions.values()}) > 1:
        listed = ", ".join(f"{k}=={v}" for k, v in sorted(versions.items()))
        out.append(Finding(
            code="jax-version-skew", fact="packages.jax", status="hazard", severity="error",
            actual=listed, source=SOURCE_JAX_SKEW,
            message=f"jax, jaxlib and the ROCm plugin must be one version: {listed}."))
    if majors and view.rocm_version:
        out += _jax_plugin_for_host(majors, view.rocm_version)
    return out


def _jax_plugin_for_host(majors: set[str], rocm: str) -> list[Finding]:
    """A JAX ROCm plugin built for another ROCm major, or the rocm60 plugin on ROCm >= 6.2:
    it loads ``librocm_smi64.so.6`` and those releases ship ``.so.7`` (ROCm/jax#268).
    """
    out: list[Finding] = []
    host_major = rocm.split(".")[0]
    for digits in sorted(majors):
        # ROCm 6.x plugins are named rocm60; from ROCm 7 the name carries the major only.
        plugin_major = "6" if digits == "60" else digits
        if plugin_major != host_major:
            out.append(Finding(
                code="jax-plugin-rocm-major", fact="packages.jax", status="hazard",
                severity="error", actual=f"jax-rocm{digits}-plugin",
                expected=f"jax-rocm{host_major}*-plugin", source=SOURCE_JAX_PLUGIN,
                message=f"The JAX plugin is built for ROCm {plugin_major}.x but the host runs "
                        f"ROCm {rocm}; it fails to initialise (librocm_smi64.so.N mismatch)."))
        elif digits == "60" and at_least(rocm, "6.2") is True:
            out.append(Finding(
                code="jax-plugin-rocm-smi-soname", fact="packages.jax", status="hazard",
                severity="error", actual=f"jax-rocm60-plugin on ROCm {rocm}",
                expected="a JAX plugin built for this ROCm release", source=SOURCE_JAX_PLUGIN,
                message=f"jax-rocm60-plugin loads librocm_smi64.so.6, but ROCm {rocm} ships "
                        "librocm_smi64.so.7, so jax_plugins.xla_rocm60.initialize() fails "
                        "(ROCm/jax#268). Install the plugin wheels built for this ROCm "
                        "release."))
    return out


SOURCE_EXTENSION_TARGETS = (
    f"{_GH}pytorch/pytorch/issues/132570 (ROCm wheels carry code objects only for their gfx "
    f"target list); {_GH}vllm-project/vllm/issues/32895 (a kernel without gfx950 code on "
    "MI355X)")


def check_extension_targets(view: EnvView) -> list[Finding]:
    """An extension built for gfx targets that leave out an AMD GPU's own target: it has no
    code object for that GPU (``hipErrorNoBinaryForGpu`` / invalid device function). AMD only:
    a gfx code object has no fallback, unlike NVIDIA's PTX. Extensions whose targets are not
    known are not judged.
    """
    gpu_targets = sorted({(g.gfx or "").split(":")[0] for g in view.gpus
                          if g.vendor == "amd" and g.gfx})
    out: list[Finding] = []
    for ext in view.extensions:
        if not ext.targets or not gpu_targets:
            continue
        built = {t.split(":")[0] for t in ext.targets}
        missing = [t for t in gpu_targets if t not in built]
        if missing:
            out.append(Finding(
                code="extension-without-gpu-target", fact=f"extensions.{ext.name}",
                status="hazard", severity="error", expected=", ".join(missing),
                actual=", ".join(ext.targets), source=SOURCE_EXTENSION_TARGETS,
                message=f"{ext.name} {ext.version or ''} was built for "
                        f"{', '.join(ext.targets)}, not for {', '.join(missing)}: it has no "
                        "code object for this GPU and its kernels fail to load "
                        "(hipErrorNoBinaryForGpu). Rebuild it with "
                        f"{', '.join(missing)} in its target list.".replace("  ", " ")))
    return out


def check_host_driver(view: EnvView) -> list[Finding]:
    """Inbox amdgpu, SR-IOV guests and behaviour-changing variables."""
    out: list[Finding] = []
    if view.amdgpu_kind == "inbox":
        out.append(Finding(
            code="inbox-amdgpu-driver", fact="kernel_driver.version", status="hazard",
            severity="warning", actual=view.amdgpu_version,
            source="AMD ROCm 7.x release notes, firmware and driver table: ROCm is validated "
                   "with the listed AMD GPU Driver releases (ROCm/ROCm:RELEASE.md, copy "
                   "alanina/ROCm@599328c, 2026-01-21); inbox detection: no "
                   "/sys/module/amdgpu/version (ROCm/rocm-systems@1b1610f rocm_smi.cc)",
            message="The distribution's in-kernel (inbox) amdgpu is loaded instead of the AMD GPU "
                    "Driver released with ROCm; AMD's matrix validates ROCm with its own driver "
                    "releases."))
    for i, gpu in enumerate(view.gpus):
        if gpu.device_id in SRIOV_VF_IDS:
            out.append(Finding(
                code="sriov-guest", fact="target.gpu", gpu=i, status="hazard", severity="info",
                actual=f"{gpu.device_id} ({SRIOV_VF_IDS[gpu.device_id]})",
                source="pciutils/pciids@c1c1254:pci.ids; ROCm/ROCm#5231",
                message=f"Device {gpu.device_id} is an SR-IOV virtual function: this is a guest "
                        "VM. Host-level settings such as the power cap belong to the "
                        "hypervisor host; the SMI in the guest does not offer changing them "
                        "(ROCm/ROCm#5231)."))
            break
    override = view.environment.get("HSA_OVERRIDE_GFX_VERSION")
    if override:
        out.append(Finding(
            code="hsa-override-gfx-version", fact="environment.HSA_OVERRIDE_GFX_VERSION",
            status="hazard", severity="warning", actual=override,
            source=SOURCE_HSA_OVERRIDE,
            message=f"HSA_OVERRIDE_GFX_VERSION={override} makes ROCm load code objects for "
                    "another gfx target; results are unvalidated and a wrong value gives "
                    "HSA_STATUS_ERROR_INVALID_ISA."))
    return out


def run_checks(view: EnvView, matrix: Matrix) -> list[Finding]:
    """Every lock-free rule over ``view``, in a stable order."""
    return [
        *check_gfx_targets(view, matrix),
        *check_torch_vendor(view),
        *check_cuda_wheels(view),
        *check_cuda_driver(view, matrix),
        *check_kmd(view, matrix),
        *check_distributions(view),
        *check_host_driver(view),
        *check_extension_targets(view),
    ]


@dataclass(frozen=True)
class CodedRule:
    """A coded judgement that a rule in ``rules.toml`` may name with ``check``: the finding
    ``code`` it reports, the function over an :class:`EnvView` that reports it (no matrix:
    those run only through :func:`run_checks`), and the view fields it ``needs`` (a rule
    naming it is skipped while one of them is unknown).
    """

    code: str
    run: Callable[[EnvView], list[Finding]]
    needs: tuple[str, ...] = ()

    def needs_text(self, names: list[str]) -> str:
        """``names`` of view fields in words, for a skip reason."""
        words = {"gpus": "the GPU vendor", "torch_kind": "the torch build",
                 "packages": "the installed packages", "rocm_version": "the ROCm release",
                 "extensions": "the extensions' build targets"}
        return ", ".join(words.get(n, n) for n in names)


CODED_RULES: dict[str, CodedRule] = {c.code: c for c in (
    CodedRule("cuda-torch-on-amd", check_torch_vendor, ("gpus", "torch_kind")),
    CodedRule("cuda-libraries-on-amd", check_cuda_wheels, ("gpus", "packages")),
    CodedRule("multiple-triton-distributions", check_distributions, ("packages",)),
    CodedRule("jax-plugin-rocm-major", check_distributions, ("packages", "rocm_version")),
    CodedRule("hsa-override-gfx-version", check_host_driver),
    CodedRule("extension-without-gpu-target", check_extension_targets, ("gpus", "extensions")),
)}
"""The coded judgements rules may name, by finding code."""
