"""The lock-free judgements that need the matrix: the NVIDIA driver a CUDA build needs, the
gfx targets ROCm validates, and a DKMS amdgpu module older than the ROCm user space. Each
takes an :class:`~pinning.guards.view.EnvView` and the :class:`~pinning.matrix.load.Matrix`
and returns :class:`~pinning.guards.view.Finding` objects citing the matrix rows used;
:func:`pinning.guards.checks.run_checks` runs them with the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pinning.guards.view import EnvView, Finding
from pinning.matrix.names import DATACENTER_NVIDIA
from pinning.util.versions import at_least, numeric_parts, series_less

if TYPE_CHECKING:
    from pinning.matrix.load import Matrix


def row_source(file_name: str, row: object) -> str:
    """``"<source> <url> (<date>)"`` of a matrix row, for a finding's ``source`` (the URL
    only when the row has one its source text does not already carry).
    """
    src = getattr(row, "source", file_name)
    url = getattr(row, "url", None)
    if url and str(url) not in str(src):
        src = f"{src} <{url}>"  # the address a user opens, where the source text omits it
    date = getattr(row, "published", None) or getattr(row, "checked", None)
    return f"{src} ({date})" if date else str(src)


def check_cuda_driver(view: EnvView, matrix: Matrix) -> list[Finding]:
    """A CUDA torch build needs the NVIDIA driver its CUDA release requires."""
    if view.torch_kind != "cuda" or not view.torch_cuda or not view.nvidia_driver:
        return []
    if not numeric_parts(view.nvidia_driver):
        return []
    hit = matrix.driver_rule_for(view.torch_cuda)
    if hit is None:
        return [Finding(
            code="cuda-driver-rule-unknown", fact="kernel_driver.version", status="not-probed",
            severity="info", actual=view.nvidia_driver,
            message=f"No driver rule for CUDA {view.torch_cuda} in the matrix; the driver "
                    f"{view.nvidia_driver} was not checked.")]
    rule, f = hit
    ok = at_least(view.nvidia_driver, rule.min_driver)
    nvidia = [g for g in view.gpus if g.vendor == "nvidia"]
    if ok is False and view.cuda_compat and nvidia and all(
            g.product in DATACENTER_NVIDIA for g in nvidia):
        return [Finding(
            code="driver-below-cuda-with-compat", fact="kernel_driver.version",
            status="hazard", severity="warning", expected=f">={rule.min_driver}",
            actual=view.nvidia_driver,
            source=row_source(f.name, rule) + "; NVIDIA CUDA forward compatibility "
                   "(cuda-compat, Data Center GPUs), "
                   "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html",
            message=f"torch {view.torch_version} is built with CUDA {view.torch_cuda}, which "
                    f"needs NVIDIA driver {rule.min_driver} or newer; the host has "
                    f"{view.nvidia_driver} with the cuda-compat libraries on a Data Center GPU, "
                    "which NVIDIA supports (they must be on LD_LIBRARY_PATH).")]
    if ok is False:
        return [Finding(
            code="driver-too-old-for-cuda", fact="kernel_driver.version",
            status="outside-validated", severity="error", expected=f">={rule.min_driver}",
            actual=view.nvidia_driver, source=row_source(f.name, rule),
            message=f"torch {view.torch_version} is built with CUDA {view.torch_cuda}, which "
                    f"needs NVIDIA driver {rule.min_driver} or newer; the host has "
                    f"{view.nvidia_driver}, so CUDA initialisation fails. Upgrade the driver or "
                    "install a torch build for an older CUDA.")]
    return []


def _targets_source(matrix: Matrix) -> str:
    """The matrix rows the known gfx targets come from: the ROCm releases read and each
    distinct source with its date.
    """
    rows = [rr for rr in matrix.releases() if rr.release.runtime == "rocm" and rr.release.targets]
    if not rows:
        return "no ROCm row with GPU targets in the matrix"
    versions = sorted((rr.release.version for rr in rows), key=numeric_parts)
    sources = sorted({row_source(rr.file.name, rr.release) for rr in rows})
    return (f"GPU targets of ROCm {versions[0]} to {versions[-1]} ({len(rows)} rows): "
            + "; ".join(sources))


def _known_targets(matrix: Matrix) -> dict[str, list[str]]:
    """Gfx target -> ROCm releases (newest first) whose matrix row lists it."""
    out: dict[str, list[str]] = {}
    for rr in matrix.releases():
        if rr.release.runtime != "rocm" or not rr.release.targets:
            continue
        for t in rr.release.targets:
            out.setdefault(t, []).append(rr.release.version)
    return out


def check_gfx_targets(view: EnvView, matrix: Matrix) -> list[Finding]:
    """Each AMD GPU's gfx target must be one ROCm validates: for the host's ROCm release when
    known, else for any release in the matrix.
    """
    findings: list[Finding] = []
    known = _known_targets(matrix)
    release = None
    if view.rocm_version:
        # An exact release, or for a series ("6.3", from a HIP version) its newest release.
        release = next((rr for rr in matrix.releases()
                        if rr.release.runtime == "rocm"
                        and (rr.release.version == view.rocm_version
                             or rr.release.version.startswith(view.rocm_version + "."))), None)
    seen: set[str] = set()
    for i, gpu in enumerate(view.gpus):
        if gpu.vendor != "amd" or not gpu.gfx:
            continue
        gfx = gpu.gfx.split(":")[0]
        if gfx in seen:
            continue
        seen.add(gfx)
        if release is not None and release.release.targets and release.release.targets_complete:
            if gfx not in release.release.targets:
                findings.append(Finding(
                    code="unsupported-gfx-target", fact="target.gfx_target", gpu=i,
                    status="outside-validated", severity="error", actual=gfx,
                    expected=", ".join(release.release.targets),
                    source=row_source(release.file.name, release.release),
                    message=f"{gfx} is not a target ROCm {release.release.version} validates; its "
                            "libraries carry no code objects for it (hipErrorNoBinaryForGpu / "
                            "invalid device function)."))
        elif gfx not in known:
            findings.append(Finding(
                code="unsupported-gfx-target", fact="target.gfx_target", gpu=i,
                status="outside-validated", severity="error", actual=gfx,
                source=_targets_source(matrix),
                message=f"{gfx} ({gpu.name or 'GPU'}) is not a target of any ROCm release in the "
                        "matrix, so ROCm libraries ship no code objects for it and HIP fails "
                        "with a missing-binary error."))
    return findings

def check_kmd(view: EnvView, matrix: Matrix) -> list[Finding]:
    """A DKMS amdgpu module older than the ROCm user space.

    The module numbering has no published mapping to ROCm releases; the matrix's observed
    pairings (``amd-kmd-modules``) let us say only this much: a module older than one seen
    with ROCm S, where S precedes the host's user space, is older than that user space.
    """
    if view.amdgpu_kind not in (None, "dkms") or not view.amdgpu_version or not view.rocm_version:
        return []
    module = numeric_parts(view.amdgpu_version)
    if len(module) < 2:
        return []
    for row, f in matrix.kmd_modules():
        if module < numeric_parts(row.module) and series_less(row.rocm, view.rocm_version):
            return [Finding(
                code="kmd-older-than-user-space", fact="kernel_driver.version",
                status="hazard", severity="warning", actual=view.amdgpu_version,
                expected=f"a driver from the ROCm {view.rocm_version} window",
                source=f"{row_source(f.name, row)}; driver/user-space window: AMD ROCm "
                       "compatibility matrix footnote kfd_support (https://rocm.docs.amd.com/en/"
                       "latest/compatibility/compatibility-matrix.html, copy 2026-01-21)",
                message=f"amdgpu module {view.amdgpu_version} predates module {row.module}, "
                        f"which was seen with ROCm {row.rocm}, so the kernel driver is older "
                        f"than the ROCm {view.rocm_version} user space. From ROCm 6.4 AMD "
                        "supports driver and user space released up to one year apart (before: "
                        "two releases); check AMD's user/kernel-space compatibility table or "
                        "install the amdgpu driver released with this ROCm.")]
    return []
