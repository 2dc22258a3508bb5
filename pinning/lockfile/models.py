"""The lockfile model (``lock-version = 1``).

The stack is vendor-symmetric: target, firmware, kernel driver, OS and kernel, runtime (ROCm
or CUDA user space), frameworks, model, container image and environment. Each value is a
:class:`Pinned`: the value (or ``None`` with the reason), where it came from, and the set or
constraint the matrix allows.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from pinning.lockfile.serving import Extension, Serving
from pinning.lockfile.status import LockStatus
from pinning.lockfile.values import DIGEST_PATTERN, Origin
from pinning.lockfile.wheels import PythonTarget, Wheel
from pinning.util.models import (
    DistName,
    EnvName,
    FormatVersion,
    OneLine,
    Reason,
    Script,
    Strict,
    Token,
)

LOCK_VERSION: Literal[1] = 1
# The characters an image reference may hold (the grammar is pinning.oci.reference's): no
# space, quote, `$`, backtick or control character can reach a Dockerfile `FROM`.
_IMAGE_REF = re.compile(r"[A-Za-z0-9._:/@\[\]-]+")
# The latest epoch a tar header and an image config date can hold (seconds since 1970).
MAX_EPOCH = 8**11 - 1


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
    reason: Reason | None = None

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
    """The constraints of the request in one spelling: ``gpu`` is the matrix id (``mi300x``
    for ``MI300X`` or ``Instinct MI300X``), ``frameworks`` are ``name`` plus a normalised PEP
    440 specifier by matrix name (``torch == 2.13.0`` -> ``pytorch==2.13.0``), sorted; what
    ``pin lock upgrade`` and ``pin lock check`` re-resolve.
    """

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
    sha256: str = Field(pattern=DIGEST_PATTERN)
    overlay: bool = False
    path: str | None = Field(default=None, description="Overlay path as given (overlays only).")


class RowRef(Strict):
    """A matrix row that decided a value, with its source and date."""

    ref: str
    source: str
    url: str | None = None
    published: str | None = None
    published_unknown: Reason | None = Field(
        default=None, description="Why the row has no publication date (then `--as-of` "
        "cannot date it; it is kept at every date).")
    checked: str | None = None


class MatrixProvenance(Strict):
    """Which matrix data the lock was resolved against."""

    sha256: str = Field(pattern=DIGEST_PATTERN)
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
    components: dict[str, Pinned] = Field(
        default_factory=dict,
        description="ROCm libraries and tools AMD's matrix validates with the release "
                    "(`hipblaslt`, `rocblas`, `miopen`, `rccl`, `composable-kernel`, "
                    "`amd-smi`, `rocm-smi`), each the version of the matrix row; `pin verify` "
                    "compares those the host shows.",
    )


class Framework(Strict):
    """A framework: version, build or wheel variant, support status and notes."""

    name: str
    version: Pinned
    build: Pinned
    status: str
    notes: list[str] = Field(default_factory=list)


def _model_file_path(value: str) -> str:
    """``value`` unchanged when it is a path relative to a model folder: ``/``-separated,
    no leading ``/``, no empty, ``.`` or ``..`` part, no control character or backslash,
    valid UTF-8 (no lone surrogate, as ``os.fsdecode`` makes of a name's undecodable bytes),
    at most 4096 characters.
    """
    if not 0 < len(value) <= 4096:
        raise ValueError("a model file path has 1 to 4096 characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{value!a} is not valid UTF-8 (a file name whose bytes are "
                         "not UTF-8)") from None
    if any(ord(ch) < 32 or ord(ch) == 127 or ch == "\\" for ch in value):
        raise ValueError("a model file path has no control character or backslash")
    if any(part in ("", ".", "..") for part in value.split("/")):
        raise ValueError(f"{value!r} is not a path inside the model folder (an empty, `.` "
                         "or `..` part, or a leading `/`)")
    return value


ModelFilePath = Annotated[str, AfterValidator(_model_file_path)]


class ModelFile(Strict):
    """One file of a model: ``path`` relative to the model folder (``/``-separated), ``size``
    in bytes and the ``sha256`` of its bytes (64 hex).
    """

    path: ModelFilePath
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


def model_content_hash(files: Iterable[ModelFile]) -> str:
    """One digest over a model's files: ``sha256:`` + the sha256 of the lines
    ``<path>\\0<size>\\0<sha256>\\n`` sorted by path (UTF-8). Two models have the same
    content hash exactly when they have the same files with the same bytes, whatever the
    order they were listed in or where they lie.
    """
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.path):
        h.update(f"{f.path}\0{f.size}\0{f.sha256}\n".encode())
    return "sha256:" + h.hexdigest()


class Model(Strict):
    """The model a trial ran: a Hugging Face model by ``id`` and 40-hex commit ``revision``,
    or a local model folder by ``path`` (a converted checkpoint), with every file pinned.

    ``files`` lists every file with its size and sha256 (empty when they were not read:
    ``files-unknown`` says why, e.g. the model was not in the local cache); ``missing``
    names files the cache lists for the revision whose bytes are not there (a
    half-downloaded cache): the lock says so rather than guessing their digests.
    ``content-hash`` is :func:`model_content_hash` of ``files`` (checked on load).
    """

    id: str | None = None
    revision: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")
    path: str | None = None
    origin: Origin = "user"
    files: list[ModelFile] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    files_unknown: Reason | None = None
    content_hash: str | None = Field(default=None, pattern=DIGEST_PATTERN)

    @model_validator(mode="after")
    def _shape(self) -> Model:
        if (self.id is None) == (self.path is None):
            raise ValueError("a model has exactly one of `id` (a Hugging Face model) and "
                             "`path` (a local folder)")
        if self.id is not None and self.revision is None:
            raise ValueError("a Hugging Face model needs its 40-hex commit `revision`")
        if self.path is not None and self.revision is not None:
            raise ValueError("a local model folder has no `revision`")
        paths = [f.path for f in self.files]
        if len(set(paths)) != len(paths):
            raise ValueError("`files` lists a path twice")
        if self.files and self.files_unknown is not None:
            raise ValueError("`files` and `files-unknown` exclude each other")
        expected = model_content_hash(self.files) if self.files else None
        if self.content_hash != expected:
            raise ValueError(f"`content-hash` {self.content_hash} does not match the files "
                             f"listed ({expected})")
        return self

    @property
    def label(self) -> str:
        """``ORG/NAME@REVISION`` or the folder path, for messages."""
        return f"{self.id}@{self.revision}" if self.id is not None else str(self.path)


class Image(Strict):
    """The container image: base reference and digest, and the built manifest digest.

    ``ref`` is where ``pin build`` pushed it (``host/repo@sha256:...``); ``epoch`` the fixed
    time (seconds since 1970, at most ``8**11 - 1``, what a tar header holds) written into
    every file and the config of the image. A known ``base`` or ``ref`` holds only the
    characters of an image reference (letters, digits, ``. _ - / : @ [ ]``: nothing that can
    end a Dockerfile ``FROM`` line); a known ``base-digest`` or ``digest`` is
    ``sha256:<64 hex>``.
    """

    base: Pinned
    base_digest: Pinned
    digest: Pinned
    ref: Pinned | None = None
    epoch: int | None = Field(default=None, ge=0, le=MAX_EPOCH)

    @model_validator(mode="after")
    def _references(self) -> Image:
        for name, pinned in (("base", self.base), ("ref", self.ref)):
            if pinned is not None and pinned.value is not None \
                    and not _IMAGE_REF.fullmatch(pinned.value):
                raise ValueError(f"`{name}` {pinned.value!r} is not an image reference "
                                 "(HOST/REPO[:TAG][@sha256:DIGEST])")
        for name, pinned in (("base-digest", self.base_digest), ("digest", self.digest)):
            if pinned.value is not None and not re.fullmatch(DIGEST_PATTERN, pinned.value):
                raise ValueError(f"`{name}` {pinned.value!r} is not sha256:<64 hex>")
        return self


class Frozen(Strict):
    """Where ``pin freeze`` took the host values from.

    ``snapshot`` is the sha256 of the host snapshot's canonical JSON
    (:func:`pinning.probe.models.snapshot_hash`); ``host`` says how it was probed (the root,
    or ``live``). ``forced`` is true when the host was outside what the matrix validated and
    ``--force`` recorded it anyway; ``deviations`` then lists each such fact.
    """

    snapshot: str = Field(pattern=DIGEST_PATTERN)
    host: str
    probed_by: str
    forced: bool = False
    deviations: list[str] = Field(default_factory=list)


class Lockfile(Strict):
    """A whole lockfile. ``content_hash`` is the sha256 of the canonical JSON of everything
    else (see :func:`pinning.lockfile.io.content_hash`).

    Values that reach an image build are checked here, so a hostile lock fails
    ``pin lock validate`` (exit 5) naming the field: ``environment`` names are POSIX names
    (``[A-Za-z_][A-Za-z0-9_]*``) and values have no control characters; ``packages`` maps PEP
    508 names to one-word versions; ``build-steps`` have no control character but line feed
    and tab. ``lock-version`` is the integer 1 (not ``true``); files are read in strict mode
    (no coercion, :func:`pinning.lockfile.io.read_lock`).
    """

    lock_version: FormatVersion = LOCK_VERSION
    content_hash: str = Field(pattern=DIGEST_PATTERN)
    status: LockStatus | None = Field(
        default=None, description="`validated`, or `unconfirmed` with each reason and the "
        "source that would settle it; absent in locks written before pin recorded it (their "
        "status is not recorded, never validated).")
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
    environment: dict[EnvName, OneLine] = Field(default_factory=dict)
    packages: dict[DistName, Token] | None = Field(
        default=None,
        description="Exact Python distributions (PEP 503 name -> version), frozen from a host.",
    )
    frozen: Frozen | None = None
    serving: Serving | None = Field(
        default=None, description="The serving choices: quantization method and backend, "
                                  "attention implementation (pin resolve --quantization, "
                                  "--attention).")
    extensions: list[Extension] | None = Field(
        default=None, description="Compiled extensions with their build and targets (pin "
                                  "resolve --extension; pin freeze records those installed).")
    wheels: list[Wheel] | None = Field(
        default=None, description="The wheels the image installs, recorded by pin lock packages "
                                  "(with their URLs) or the first pin build."
    )
    python: PythonTarget | None = Field(
        default=None, description="The Python version, platform, indexes and requirements pin "
                                  "lock packages resolved [packages] and [[wheels]] for.")
    build_steps: list[Script] | None = Field(
        default=None,
        description="Shell commands the image build runs after the locked install, each as its "
                    "own step under the build-time guard (files from the wheel house are in "
                    "/tmp/pin-wheels).",
    )
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(
        default_factory=list,
        description="Locks written before `status`: what the sources leave unconfirmed "
                    "(a GPU target a row does not state, a restriction whose source stops "
                    "before the release). Newer locks say it in `status.reasons`.",
    )
