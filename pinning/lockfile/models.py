"""The lockfile model (``lock-version = 1``).

The stack is vendor-symmetric: target, firmware, kernel driver, OS and kernel, runtime (ROCm
or CUDA user space), frameworks, model, container image and environment. Each value is a
:class:`Pinned`: the value (or ``None`` with the reason), where it came from, and the set or
constraint the matrix allows.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pinning.util.models import Strict

LOCK_VERSION: Literal[1] = 1

Origin = Literal["matrix", "user", "host", "derived", "unknown"]


class Pinned(Strict):
    """One locked value with provenance.

    ``origin``: ``matrix`` (a matrix row, named in ``ref``), ``user`` (a flag), ``host``
    (frozen from a host later), ``derived`` (computed from other values) or ``unknown``.
    ``allowed`` is the set the matrix allows, ``constraint`` a version rule (``>=580``).
    A ``None`` value must say why in ``reason``, or give ``allowed`` / ``constraint``.
    """

    value: str | None = None
    origin: Origin
    ref: str | None = None
    allowed: list[str] | None = None
    constraint: str | None = None
    reason: str | None = None

    @model_validator(mode="after")
    def _explained(self) -> Pinned:
        if self.value is None and not (self.reason or self.allowed or self.constraint):
            raise ValueError("a value left empty needs `reason`, `allowed` or `constraint`")
        return self


class Generator(Strict):
    """What wrote the lock, and the command that regenerates it."""

    name: Literal["pin"] = "pin"
    version: str
    command: str


class Request(Strict):
    """The constraints as the user gave them (normalised)."""

    gpu: str
    frameworks: list[str]
    rocm: str | None = None
    cuda: str | None = None
    os: str | None = None
    model: str | None = None
    as_of: str | None = None


class MatrixSource(Strict):
    """One matrix file the resolution read, with the sha256 of its bytes."""

    name: str
    sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    overlay: bool = False
    path: str | None = Field(default=None, description="Overlay path as given (overlays only).")


class RowRef(Strict):
    """A matrix row that decided a value, with its source and date."""

    ref: str
    source: str
    url: str | None = None
    published: str | None = None
    checked: str | None = None


class MatrixProvenance(Strict):
    """Which matrix data the lock was resolved against."""

    sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    as_of: str | None = None
    sources: list[MatrixSource]
    rows: list[RowRef]


class Target(Strict):
    """The GPU: vendor, product, gfx target (AMD) or compute capability (NVIDIA)."""

    vendor: Literal["amd", "nvidia"]
    gpu: Pinned
    gfx_target: Pinned | None = None
    compute_capability: Pinned | None = None
    pci_device_ids: list[str] = Field(default_factory=list)
    count: Pinned | None = Field(
        default=None, description="Number of GPU agents of this vendor (frozen from a host)."
    )


class Firmware(Strict):
    """GPU firmware: PLDM bundle / BKC / IFWI / VBIOS (AMD) or VBIOS (NVIDIA).

    ``vbios`` (the VBIOS/IFWI string) and ``blocks`` (per-engine microcode, block -> version
    as the host printed it, e.g. sysfs ``mec`` or amd-smi ``CP_MEC1``) are frozen from a host.
    """

    kind: str
    version: Pinned
    vbios: Pinned | None = None
    blocks: dict[str, str] | None = None


class KernelDriver(Strict):
    """Kernel driver: amdgpu (KMD) or the NVIDIA kernel module."""

    name: Literal["amdgpu", "nvidia"]
    version: Pinned
    flavor: Pinned | None = Field(
        default=None,
        description="dkms or inbox (amdgpu), open or proprietary (NVIDIA); frozen from a host.",
    )


class Runtime(Strict):
    """User space: ROCm or CUDA."""

    name: Literal["rocm", "cuda"]
    version: Pinned
    hip: Pinned | None = None
    toolkit_driver: Pinned | None = None
    toolkit: Pinned | None = Field(
        default=None, description="The system CUDA toolkit (/usr/local/cuda), frozen from a host."
    )


class Framework(Strict):
    """A framework: version, build or wheel variant, support status and notes."""

    name: str
    version: Pinned
    build: Pinned
    status: str
    notes: list[str] = Field(default_factory=list)


class Model(Strict):
    """A model by Hugging Face id and 40-hex commit revision."""

    id: str
    revision: str = Field(pattern=r"^[0-9a-f]{40}$")
    origin: Origin = "user"


class Image(Strict):
    """The container image: base reference and digest, and the built manifest digest.

    ``ref`` is where ``pin build`` pushed it (``host/repo@sha256:...``); ``epoch`` the fixed
    time (seconds since 1970) written into every file and the config of the image.
    """

    base: Pinned
    base_digest: Pinned
    digest: Pinned
    ref: Pinned | None = None
    epoch: int | None = None


class Wheel(Strict):
    """One wheel the image installs, by file name and sha256 (``pip --require-hashes``)."""

    name: str
    version: str
    filename: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class Frozen(Strict):
    """Where ``pin freeze`` took the host values from.

    ``snapshot`` is the sha256 of the host snapshot's canonical JSON
    (:func:`pinning.probe.models.snapshot_hash`); ``host`` says how it was probed (the root,
    or ``live``). ``forced`` is true when the host was outside what the matrix validated and
    ``--force`` recorded it anyway; ``deviations`` then lists each such fact.
    """

    snapshot: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    host: str
    probed_by: str
    forced: bool = False
    deviations: list[str] = Field(default_factory=list)


class Lockfile(Strict):
    """A whole lockfile. ``content_hash`` is the sha256 of the canonical JSON of everything
    else (see :func:`pinning.lockfile.io.content_hash`).
    """

    lock_version: Literal[1] = LOCK_VERSION
    content_hash: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    generator: Generator
    request: Request
    matrix: MatrixProvenance
    target: Target
    firmware: Firmware
    kernel_driver: KernelDriver
    os: Pinned
    kernel: Pinned
    runtime: Runtime
    frameworks: list[Framework]
    model: Model | None = None
    image: Image
    environment: dict[str, str] = Field(default_factory=dict)
    packages: dict[str, str] | None = Field(
        default=None,
        description="Exact Python distributions (PEP 503 name -> version), frozen from a host.",
    )
    frozen: Frozen | None = None
    wheels: list[Wheel] | None = Field(
        default=None, description="The wheels the image installs, recorded by the first pin build."
    )
    build_steps: list[str] | None = Field(
        default=None,
        description="Shell commands the image build runs after the locked install, each as its "
                    "own step under the build-time guard (files from the wheel house are in "
                    "/tmp/pin-wheels).",
    )
    notes: list[str] = Field(default_factory=list)
