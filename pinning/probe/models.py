"""Host facts: what ``pin probe`` read from a machine (schema ``schemas/host.schema.json``).

Every fact that can fail to be read is a :class:`Reading`: the value and where it came
from, or ``None`` with the reason (``not-probed``). A snapshot is the JSON of
:class:`HostFacts`; its hash (:func:`snapshot_hash`) is what ``pin freeze`` records.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pinning.lockfile.models import ModelFile
from pinning.util.digests import canonical_json as canonical_json_bytes
from pinning.util.digests import sha256_digest
from pinning.util.models import DistName, EnvName, FormatVersion, OneLine, Strict, Token
from pinning.util.versions import normalize_name

HOST_VERSION: Literal[1] = 1

# Environment variables that change kernels, numerics or device selection
# (pytorch/pytorch@0180055:docs/source/notes/hip.rst, ROCm/aiter@0132896:setup.py); probes
# record the ones that are set.
BEHAVIOUR_ENV: tuple[str, ...] = (
    "HSA_OVERRIDE_GFX_VERSION",
    "AITER_USE_SYSTEM_TRITON",
    "HIPBLASLT_ALLOW_TF32",
    "TORCH_BLAS_PREFER_HIPBLASLT",
    "HIPBLAS_WORKSPACE_CONFIG",
    "TORCH_ROCM_FA_PREFER_CK",
    "USE_ROCM_CK_SDPA",
    "PYTORCH_TUNABLEOP_ENABLED",
    "PYTORCH_TUNABLEOP_TUNING",
    "PYTORCH_TUNABLEOP_FILENAME",
    "FLASH_ATTENTION_TRITON_AMD_ENABLE",
    "FLASH_ATTENTION_USE_SYSTEM_TRITON",
    "VLLM_USE_TRITON_AWQ",
    "ROCM_PATH",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "CUBLAS_WORKSPACE_CONFIG",
    "NVIDIA_TF32_OVERRIDE",
    "LD_LIBRARY_PATH",
)

# Variables that pick devices or library paths for one run: recorded, never frozen or judged.
RUN_SCOPED_ENV: tuple[str, ...] = (
    "LD_LIBRARY_PATH",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
)

# Recorded by probe, but they say where things are, not what they are: never frozen or judged.
NOT_JUDGED_ENV: tuple[str, ...] = (*RUN_SCOPED_ENV, "ROCM_PATH")



class Reading(Strict):
    """One probed value: ``value`` and its ``source`` (a path or a command), or ``None``
    with ``reason`` saying why it could not be read (shown as ``not-probed``).

    ``absent`` marks a known absence: the probe looked where the fact lives and found it
    is not there (amdgpu not loaded, no ROCm installed), as opposed to "could not tell".
    """

    value: str | None = None
    source: str | None = None
    reason: str | None = None
    absent: bool | None = None

    @model_validator(mode="after")
    def _explained(self) -> Reading:
        if self.value is None and not self.reason:
            raise ValueError("a reading without a value needs a `reason`")
        return self

    @classmethod
    def of(cls, value: str, source: str) -> Reading:
        """A successful reading."""
        return cls(value=value, source=source)

    @classmethod
    def missing(cls, reason: str, source: str | None = None, *, absent: bool = False) -> Reading:
        """A fact that could not be read, with the reason (``absent``: known not there)."""
        return cls(reason=reason, source=source, absent=True if absent else None)

    @property
    def known(self) -> bool:
        """True when a value was read."""
        return self.value is not None


class ProbeInfo(Strict):
    """How the facts were gathered: the root read as ``/`` and the command recording."""

    tool: str
    root: str
    replay: str | None = None
    live: bool


class OsFacts(Strict):
    """Operating system from os-release, the running kernel and glibc."""

    id: Reading
    version_id: Reading
    version: Reading
    pretty_name: Reading
    kernel: Reading
    glibc: Reading


class GpuFacts(Strict):
    """One GPU (one agent: an MI250X shows two, one per GCD).

    ``pci_device_id`` is lowercase ``0x%04x``; ``product`` is the pin GPU id the PCI ID maps
    to (``mi300x``) or ``None``. ``firmware`` maps a block (``mec``, ``sos``, amd-smi's
    ``CP_MEC1``...) to its version string as the source printed it. ``memory_mib`` in MiB.
    """

    index: int
    vendor: Literal["amd", "nvidia"]
    pci_bus: str | None = None
    pci_device_id: str | None = None
    product: str | None = None
    name: Reading
    gfx_target: Reading | None = None
    target_id: str | None = None
    compute_capability: Reading | None = None
    memory_mib: Reading
    vbios: Reading
    firmware: dict[str, str] = Field(default_factory=dict)
    firmware_source: str | None = None
    pldm_bundle: Reading | None = None


class AmdFacts(Strict):
    """AMD host software below and at user space.

    ``driver`` is the amdgpu kernel-module version (``/sys/module/amdgpu/version``); with
    the distribution's inbox driver there is none and ``driver_kind`` is ``inbox`` (the
    kernel release stands in). ``rocm`` is the ROCm user space (``/opt/rocm/.info/version``).
    """

    driver: Reading
    driver_kind: Literal["dkms", "inbox", "not-loaded"] | None = None
    rocm: Reading
    rocm_path: str | None = None
    amd_smi: Reading


class NvidiaFacts(Strict):
    """NVIDIA kernel module (``/proc/driver/nvidia/version``) and CUDA toolkit."""

    driver: Reading
    module_kind: Literal["proprietary", "open"] | None = None
    cuda_toolkit: Reading
    cuda_compat: str | None = Field(
        default=None,
        description="Folder of the cuda-compat forward-compatibility libraries, when present.",
    )


class Distribution(Strict):
    """An installed Python distribution (dist-info metadata, or a pasted pip/conda list).

    ``name`` is a PEP 508 name and ``version`` one word: ``pin freeze`` copies both into the
    lock, and an image build writes them into its requirements file.
    """

    name: DistName
    version: Token
    installer: str | None = None
    direct_url: str | None = None
    source: Literal["dist-info", "pip", "conda"] = "dist-info"
    build: str | None = None


class TorchBuild(Strict):
    """PyTorch's accelerator build, read from ``torch/version.py`` without importing torch.

    ``kind``: ``rocm`` (``hip`` set), ``cuda`` (``cuda`` set), ``cpu`` or ``unknown``.
    ``files_version`` is ``__version__`` in ``torch/version.py``; it differs from ``version``
    (the dist-info) when another torch was copied over the installed one.
    """

    version: str
    kind: Literal["rocm", "cuda", "cpu", "unknown"]
    hip: str | None = None
    cuda: str | None = None
    source: str
    files_version: str | None = None


class TritonDist(Strict):
    """One distribution that installs the ``triton`` import package; ``name``
    and ``version`` as in :class:`Distribution`.

    ``owns_import`` is true when its RECORD lists ``triton/__init__.py`` (the copy that
    ``import triton`` finds when several are installed is the last one written).
    """

    name: DistName
    version: Token
    installer: str | None = None
    direct_url: str | None = None
    owns_import: bool | None = None


class PythonFacts(Strict):
    """The Python environment the workload runs in."""

    site_packages: list[str] = Field(default_factory=list)
    reason: str | None = None
    distributions: list[Distribution] = Field(default_factory=list)
    torch: TorchBuild | None = None
    tritons: list[TritonDist] = Field(default_factory=list)

    def version_of(self, name: str) -> str | None:
        """The installed version of distribution ``name`` (PEP 503-normalised), or ``None``."""
        key = normalize_name(name)
        for dist in self.distributions:
            if normalize_name(dist.name) == key:
                return dist.version
        return None


class ContainerFacts(Strict):
    """Whether the probe ran inside a container, and the image when the runtime says."""

    inside: bool
    runtime: str | None = None
    evidence: str | None = None
    image: Reading
    image_digest: Reading


class ModelFileProblem(Strict):
    """Something wrong with one file of the model on the host: ``path`` relative to the
    model folder, ``kind`` (``missing``, ``incomplete``, ``blob-mismatch``, ``unreadable``,
    ``not-a-file``; see :class:`pinning.probe.modelfiles.ModelProblem`) and a one-line
    ``detail``.
    """

    path: str
    kind: Literal["missing", "incomplete", "blob-mismatch", "unreadable", "not-a-file"]
    detail: str


class ModelFacts(Strict):
    """The lock's model as the host holds it (no network).

    ``id`` is a Hugging Face model id, ``path`` a local model folder (as the lock names it);
    ``cache`` is the Hugging Face hub cache looked in and ``revisions`` the 40-hex commits
    with a snapshot there, empty with ``reason`` when the model is not cached or the cache
    could not be read. The files are read only for a lock's model (``pin probe --lock``,
    ``pin verify``, ``pin freeze``): ``source`` says from where (``hf-cache``: the
    revision's snapshot; ``directory``: the folder), ``location`` the snapshot or folder
    read (a host path), ``files`` every regular file with its size in bytes and sha256
    (sorted by path), ``problems`` what was wrong per file (a blob whose bytes do not match
    its name, a half-downloaded file), ``content-hash``
    :func:`~pinning.lockfile.models.model_content_hash` of ``files``. ``source`` unset: the
    files were not read; ``files`` empty with ``reason``: the model is not there.
    """

    id: str | None = None
    path: str | None = None
    cache: str | None = None
    revisions: list[str] = Field(default_factory=list)
    reason: str | None = None
    revision: str | None = None
    source: Literal["hf-cache", "directory"] | None = None
    location: str | None = None
    files: list[ModelFile] = Field(default_factory=list)
    problems: list[ModelFileProblem] = Field(default_factory=list)
    content_hash: str | None = None

    @property
    def label(self) -> str:
        """The model id, or the folder path, for messages."""
        return self.id or self.path or "the model"


class HostFacts(Strict):
    """Everything ``pin probe`` read from one host (live, or a recorded root tree)."""

    host_version: FormatVersion = HOST_VERSION
    probe: ProbeInfo
    vendor: Literal["amd", "nvidia", "mixed", "none"]
    os: OsFacts
    gpus: list[GpuFacts] = Field(default_factory=list)
    amd: AmdFacts | None = None
    nvidia: NvidiaFacts | None = None
    python: PythonFacts
    environment: dict[EnvName, OneLine] = Field(
        default_factory=dict,
        description="Behaviour-changing variables that were set (`pin freeze` copies them into "
                    "the lock's [environment]): POSIX names, values without control characters.",
    )
    container: ContainerFacts
    model: ModelFacts | None = None
    notes: list[str] = Field(default_factory=list)


def canonical_json(facts: HostFacts) -> bytes:
    """Canonical JSON bytes of a snapshot (sorted keys, no whitespace, UTF-8)."""
    return canonical_json_bytes(facts.model_dump(mode="json", by_alias=True, exclude_none=True))


def snapshot_hash(facts: HostFacts) -> str:
    """``sha256:<hex>`` of :func:`canonical_json` — the identity ``pin freeze`` records."""
    return sha256_digest(canonical_json(facts))
