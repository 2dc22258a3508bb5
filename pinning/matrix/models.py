"""Wire models of the compatibility matrix (``pinning/matrix/data/*.toml`` and site overlays).

Every row carries its provenance: ``source`` (who published it, and where) and a
``published`` or ``checked`` date. A value the source does not state is ``None`` with a
reason in the row's ``unknown`` table, never a guess.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, field_validator, model_validator

from pinning.matrix.provenance import Provenance, pep440
from pinning.util.models import FormatVersion, Reason, Strict

Vendor = Literal["amd", "nvidia"]
RuntimeName = Literal["rocm", "cuda"]


class GpuIdentity(Provenance):
    """One GPU product: names, gfx target (AMD) or compute capability (NVIDIA), PCI IDs, memory.

    ``memory_gib`` is the product's specified memory in GiB (AMD) or GB as named in the
    product name (NVIDIA; see ``memory_note``).
    """

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Stable slug, e.g. `mi300x`.")
    vendor: Vendor
    name: str = Field(description="Marketing name, e.g. `Instinct MI300X`.")
    aliases: list[str] = Field(default_factory=list)
    arch: str | None = None
    gfx_target: str | None = Field(default=None, pattern=r"^gfx[0-9a-f]+$")
    compute_capability: str | None = Field(default=None, pattern=r"^[0-9]+\.[0-9]+$")
    pci_vendor_id: str = Field(pattern=r"^0x[0-9a-f]{4}$")
    pci_device_ids: list[str] = Field(default_factory=list)
    memory_gib: float | None = None
    memory_note: str | None = None
    family: str | None = Field(
        default=None, description="Firmware family used by the release notes, e.g. `MI300X`."
    )

    @field_validator("pci_device_ids")
    @classmethod
    def _pci(cls, v: list[str]) -> list[str]:
        for item in v:
            if not (item.startswith("0x") and len(item) == 6):
                raise ValueError(f"PCI device ID {item!r} must look like 0x74a1")
            int(item, 16)
        return v

    @model_validator(mode="after")
    def _target(self) -> GpuIdentity:
        if self.vendor == "amd" and not self.gfx_target:
            raise ValueError("an AMD GPU needs `gfx-target`")
        if self.vendor == "nvidia" and not self.compute_capability:
            raise ValueError("an NVIDIA GPU needs `compute-capability`")
        return self

    @property
    def target(self) -> str:
        """The gfx target (AMD) or compute capability (NVIDIA)."""
        return self.gfx_target or self.compute_capability or ""


class FrameworkSupport(Strict):
    """Framework versions a runtime release validates.

    ``versions`` are as the source writes them: ``2.9.1`` is one release, ``2.9`` the whole
    2.9 series. ``targets``, when set, restricts the entry to those gfx targets / compute
    capabilities. ``min_runtime_by_target`` maps a target to the lowest runtime version it
    needs (vLLM on gfx950 needs ROCm >= 7.0).
    """

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    versions: list[str] | None = None
    versions_unknown: Reason | None = None
    builds: list[str] | None = Field(
        default=None,
        description="Builds the source names that are not PEP 440 versions (llama.cpp "
        "`b6652`, a commit `85f95ae`), exactly as written; with `versions-unknown`.")
    targets: list[str] | None = None
    min_runtime: str | None = None
    min_runtime_by_target: dict[str, str] = Field(default_factory=dict)
    status: Literal["validated", "upstream", "stable", "experimental"] = "validated"
    notes: list[str] = Field(default_factory=list)
    source: str | None = None
    published: dt.date | None = None
    checked: dt.date | None = None

    @model_validator(mode="after")
    def _known(self) -> FrameworkSupport:
        if self.versions is None and not self.versions_unknown:
            raise ValueError("`versions` is missing: give the list or `versions-unknown` reason")
        return self

    @field_validator("versions")
    @classmethod
    def _pep440_versions(cls, v: list[str] | None) -> list[str] | None:
        for item in v or []:
            pep440(item)
        return v

    @field_validator("min_runtime")
    @classmethod
    def _pep440_min_runtime(cls, v: str | None) -> str | None:
        return None if v is None else pep440(v)

    @field_validator("min_runtime_by_target")
    @classmethod
    def _pep440_min_by_target(cls, v: dict[str, str]) -> dict[str, str]:
        for target, version in v.items():
            pep440(version, f"{target} = ")
        return v


class Release(Provenance):
    """One runtime release row (ROCm or CUDA user space) and what it validates.

    ``targets`` lists gfx targets (AMD) or compute capabilities; when the source lists only
    some, ``targets_complete`` is false. ``kmd`` lists the AMD GPU Driver (amdgpu / KMD)
    versions the release supports, as the source writes them (``6.4.x``, ``30.20.1``).
    ``unknown`` maps a field left ``None`` to the reason it is unknown.
    """

    vendor: Vendor
    runtime: RuntimeName
    version: str = Field(pattern=r"^[0-9]+(\.[0-9]+)*$")
    column: str | None = Field(default=None, description="The source column, e.g. `7.0.1/7.0.0`.")
    targets: list[str] | None = None
    targets_complete: bool = True
    os: list[str] | None = None
    kmd: list[str] | None = None
    hip: str | None = None
    min_driver: str | None = None
    tested_user_space: list[str] | None = Field(
        default=None,
        description="AMD's `Tested user space versions` row (copies up to ROCm 6.3): the "
        "user-space series tested with this release's kernel driver (KFD), e.g. `6.2.x`. Not "
        "the drivers this user space allows.",
    )
    components: dict[str, str] = Field(
        default_factory=dict,
        description="Library and tool versions the source validates with the release, by pin "
        "name (`hipblaslt`, `rocblas`, `miopen`, `rccl`, `composable-kernel`, `amd-smi`, "
        "`rocm-smi`), exactly as the source's cells write them.",
    )
    frameworks: list[FrameworkSupport] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    framework_notes: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Notes that matter only when a framework is asked for, by framework name "
        "(a framework the column lists but a footnote keeps off this release).")
    unknown: dict[str, Reason] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _unknowns(self) -> Release:
        for name in ("targets", "os", "kmd"):
            if getattr(self, name) is None and name not in self.unknown:
                raise ValueError(f"`{name}` is missing: give it or a reason in `unknown.{name}`")
        return self

    @property
    def key(self) -> str:
        """``rocm-7.2.0`` / ``cuda-13.0``: the release's identity across matrix revisions."""
        return f"{self.runtime}-{self.version}"


class FirmwareValue(Strict):
    """One firmware version as a release note writes it; ``or_later`` keeps AMD's wording."""

    value: str
    or_later: bool = False


class FirmwareRow(Provenance):
    """Per ROCm release and GPU family: the firmware (PLDM bundle, BKC, IFWI or VBIOS) and the
    AMD GPU Driver (amdgpu) versions the release notes list.

    ``firmware_kind`` names what ``firmware`` versions are: ``pldm-bundle`` (MI355X, MI350X,
    MI325X, MI300X), ``bkc`` (MI300A), ``ifwi`` (MI250X, MI250, MI210) or ``vbios`` (MI100).
    """

    runtime_version: str
    gpu: str = Field(description="Release-note GPU column, e.g. `MI300X`.")
    firmware_kind: Literal["pldm-bundle", "bkc", "ifwi", "vbios"]
    firmware: list[FirmwareValue]
    kmd: list[str]
    gim: str | None = None
    notes: list[str] = Field(default_factory=list)
    unknown: dict[str, Reason] = Field(default_factory=dict)


class OsRestriction(Provenance):
    """A footnote restricting which OS a GPU may use with some releases.

    ``mode``: ``only-these-os`` (the GPUs run only on ``os``), ``not-these-os`` (the GPUs
    never on ``os``), ``os-only-on-gpus`` (the ``os`` entries are for the listed GPUs only),
    ``only-these-gpus`` (the gfx ``targets`` are supported only as the listed GPUs, on the
    ``os`` named for them: another product of those targets gets no OS).
    ``runtimes`` is a PEP 440 specifier over runtime versions, e.g. ``>=7.0.0,<7.1.0``.
    ``change`` says how the source states the list: ``replace`` (the whole list, the
    default), ``add`` (the listed GPUs gain the listed OS on top of the list in effect:
    "extends SLES 15 SP7 support to MI355X"), ``remove`` (they lose it); an ``add`` or
    ``remove`` row keeps the list of the same ``mode`` stated for the release, or else the
    one in effect for the previous release (:mod:`pinning.matrix.restrictions`).
    """

    mode: Literal["only-these-os", "not-these-os", "os-only-on-gpus", "only-these-gpus"]
    change: Literal["replace", "add", "remove"] = Field(
        default="replace", description="Whole list (replace), or a change to the list in "
        "effect (add, remove).")
    gpus: list[str]
    os: list[str]
    targets: list[str] = Field(
        default_factory=list, description="gfx targets of an `only-these-gpus` row.")
    runtimes: str
    vendor: Vendor = "amd"
    footnote: str | None = Field(default=None, description="The source's footnote name.")
    note: str | None = Field(
        default=None, description="What the source says that the rule cannot express."
    )

    @field_validator("runtimes")
    @classmethod
    def _pep440_specifier(cls, v: str) -> str:
        from packaging.specifiers import SpecifierSet

        try:
            for spec in SpecifierSet(v):  # each clause's version is parsed only when compared
                if spec.operator != "===":
                    pep440(spec.version.removesuffix(".*"))
        except ValueError as exc:  # InvalidSpecifier, or a number too long for int()
            raise ValueError(f"{v!r} is not a PEP 440 specifier (e.g. >=7.0.0,<7.1.0)") from exc
        return v


class DriverRule(Provenance):
    """NVIDIA toolkit -> driver rule: a CUDA major's minimum (and maximum) driver under
    minor-version compatibility (11.x and later), or, with ``cuda_minor``, the minimum driver
    of one pre-11 toolkit release (no minor-version compatibility before CUDA 11).
    """

    cuda_major: str = Field(pattern=r"^[0-9]+$")
    cuda_minor: str | None = Field(default=None, pattern=r"^[0-9]+$")
    min_driver: str
    max_driver_below: str | None = None

    @property
    def key(self) -> str:
        """Row reference: ``cuda-13.x`` (a major) or ``cuda-10.2.x`` (one minor)."""
        if self.cuda_minor is None:
            return f"cuda-{self.cuda_major}.x"
        return f"cuda-{self.cuda_major}.{self.cuda_minor}.x"

    def applies_to(self, cuda_version: str) -> bool:
        """True when this rule covers CUDA ``cuda_version`` (``12.4``, ``10.1.243``)."""
        parts = cuda_version.split(".")
        if parts[0] != self.cuda_major:
            return False
        return self.cuda_minor is None or (len(parts) > 1 and parts[1] == self.cuda_minor)


class CudaToolkit(Provenance):
    """A CUDA toolkit release and the Linux x86_64 driver bundled in its runfile."""

    version: str = Field(pattern=r"^[0-9]+(\.[0-9]+)*$")
    bundled_driver: str | None = None
    unknown: dict[str, Reason] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known(self) -> CudaToolkit:
        if self.bundled_driver is None and "bundled-driver" not in self.unknown:
            raise ValueError("`bundled-driver` is missing: give it or `unknown.bundled-driver`")
        return self


class WheelVariant(Provenance):
    """An accelerator build a framework publishes for one release series (upstream wheels).

    For NVIDIA this is the validated pairing: PyTorch builds and tests these wheels for the
    listed compute capabilities. For ROCm it is information only; AMD's matrix is what
    validates a ROCm pairing.
    """

    framework: str
    series: str = Field(pattern=r"^[0-9]+\.[0-9]+$")
    accelerator: RuntimeName
    accelerator_version: str
    status: Literal["stable", "experimental"]
    build: str | None = Field(default=None, description="Exact toolkit the wheel is built with.")
    targets: list[str] | None = None
    python: str | None = None
    unknown: dict[str, Reason] = Field(default_factory=dict)

    @property
    def tag(self) -> str:
        """Wheel local-version tag: ``cu130``, ``rocm7.2``."""
        if self.accelerator == "cuda":
            return "cu" + self.accelerator_version.replace(".", "")
        return "rocm" + self.accelerator_version


class KmdModule(Provenance):
    """An amdgpu kernel-module version (``/sys/module/amdgpu/version``) observed together with
    a ROCm user-space release in a public dump. The module numbering (``6.16.6``) is neither
    the ROCm release nor the AMD GPU Driver release (``30.20.1``), and AMD publishes no table
    between them, so these pairings are observations, not a vendor mapping.
    """

    module: str = Field(pattern=r"^[0-9]+(\.[0-9]+)+$")
    rocm: str = Field(pattern=r"^[0-9]+(\.[0-9]+)*$",
                      description="ROCm release (or series, e.g. 6.3) seen with the module.")


class MatrixFile(Strict):
    """One matrix data file, shipped or a site overlay.

    ``family`` groups revisions of the same table (two dated copies of AMD's matrix share
    one): within a family a newer row for the same release supersedes an older one, which
    is how ``--as-of`` sees the matrix as published on a date.
    """

    schema_version: FormatVersion = 1
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    family: str | None = None
    description: str = ""
    gpus: list[GpuIdentity] = Field(default_factory=list)
    releases: list[Release] = Field(default_factory=list)
    firmware: list[FirmwareRow] = Field(default_factory=list)
    os_restrictions: list[OsRestriction] = Field(default_factory=list)
    driver_rules: list[DriverRule] = Field(default_factory=list)
    cuda_toolkits: list[CudaToolkit] = Field(default_factory=list)
    wheels: list[WheelVariant] = Field(default_factory=list)
    kmd_modules: list[KmdModule] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _bounded_versions(cls, data: object) -> object:
        """Refuse a version past the bounds of :mod:`pinning.util.versions` (64 characters,
        18 digits a number) in a file as read, naming its field (exit 3 on load).
        """
        from pinning.util.versions import version_fields_problem

        problem = version_fields_problem(data, MATRIX_VERSION_FIELDS, {"runtimes"})
        if problem:
            raise ValueError(problem)
        return data


#: Keys of matrix files whose values are versions (checked by ``MatrixFile`` on load).
MATRIX_VERSION_FIELDS = frozenset({
    "version", "versions", "min-runtime", "min-runtime-by-target", "kmd", "hip", "min-driver",
    "max-driver-below", "runtime-version", "value", "accelerator-version", "build",
    "bundled-driver", "module", "rocm", "series", "cuda-major", "cuda-minor", "components",
    "tested-user-space"})
