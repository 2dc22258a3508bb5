"""The porting bill's vocabulary: verdicts, finding kinds, findings, skipped inputs, and the
contract every scanner of ``pin audit`` implements.

A *finding* says where (file and line, or package), what (the identifier, package or
construct), why (one sentence), what to do, and its public source with the date that source
carries (or why the date is unknown). Scanners never raise for bad input: what cannot be read
becomes a :class:`Skipped` entry with its reason (pip-audit's skipped-with-reason).

Shapes on the wire are the kebab-case JSON of these pydantic models
(``schemas/audit-report.schema.json``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from pydantic import Field, model_validator

from pinning.audit.lane_names import NameDef, NameUse
from pinning.audit.project_defines import ProjectDefine
from pinning.util.models import Strict


class Verdict(StrEnum):
    """What a finding costs on ROCm, from nothing to everything.

    ``ready``: works as it is. ``swap``: a ROCm build or a replacement exists (another index,
    package or name). ``port``: code or a source build has to change, with limits.
    ``blocked``: no ROCm equivalent; a rewrite or a different design. ``no-data``: pin's data
    says nothing about it (never guessed; does not count toward ``--fail-on``).
    """

    READY = "ready"
    SWAP = "swap"
    PORT = "port"
    BLOCKED = "blocked"
    NO_DATA = "no-data"

    @property
    def rank(self) -> int:
        """Order for ``--fail-on``: ready 0 < swap 1 < port 2 < blocked 3; no-data -1."""
        return _RANK[self]


_RANK = {Verdict.NO_DATA: -1, Verdict.READY: 0, Verdict.SWAP: 1, Verdict.PORT: 2,
         Verdict.BLOCKED: 3}

VERDICTS_SHOWN = (Verdict.BLOCKED, Verdict.PORT, Verdict.SWAP, Verdict.NO_DATA, Verdict.READY)
"""The order the bill lists verdict groups in: the most expensive first."""


class Kind(StrEnum):
    """The finding kinds: the keys of an ``--effort`` file (hours per finding of that kind)."""

    PACKAGE = "package"            # a declared or installed distribution
    INDEX = "index"                # a CUDA (or ROCm) wheel index in requirements / pyproject
    BASE_IMAGE = "base-image"      # Dockerfile FROM nvidia/cuda..., nvcr.io/...
    ARCH_LIST = "arch-list"        # TORCH_CUDA_ARCH_LIST, CUDA_ARCHITECTURES, -arch=sm_XX
    EXTENSION = "extension"        # a compiled ELF extension with CUDA or HIP device code
    CUDA_API = "cuda-api"          # a CUDA API identifier classified with HIPIFY's tables
    INLINE_PTX = "inline-ptx"      # asm / asm volatile in CUDA code
    WARP_SIZE = "warp-size"        # 32-bit lane masks, warp size 32 arithmetic
    TENSOR_CORE = "tensor-core"    # wmma, mma.sync, wgmma, cp.async, TMA
    ARCH_MACRO = "arch-macro"      # __CUDA_ARCH__
    LIBRARY = "library"            # cuBLAS, cuDNN, NCCL, CUTLASS, TensorRT, NVML ... in C/C++
    BUILD_HOOK = "build-hook"      # CUDAExtension, BuildExtension, load_inline, CMake CUDA
    EMBEDDED_KERNEL = "embedded-kernel"  # cupy.RawKernel, numba.cuda.jit, pycuda SourceModule
    DEVICE_STRING = "device-string"      # torch.device("rocm")
    NVML = "nvml"                  # pynvml / nvidia-ml-py in Python
    NVIDIA_SMI = "nvidia-smi"      # nvidia-smi called from Python
    TF32 = "tf32"                  # TF32 switches (numerics differ on MI300)


class Citation(Strict):
    """A public source a user can open (URL or ``owner/repo@commit:path``) and the date it
    carries; ``published-unknown`` says why there is none (exactly one of the two is set).
    """

    source: str = Field(min_length=1, description="URL or owner/repo@commit:path.")
    published: dt.date | None = Field(default=None, description="Date the source carries.")
    published_unknown: str | None = Field(
        default=None, description="Why the source's date is unknown (no `published`).")

    @model_validator(mode="after")
    def _one_date(self) -> Citation:
        if (self.published is None) == (self.published_unknown is None):
            raise ValueError("a citation needs exactly one of `published` and "
                             "`published-unknown`")
        return self


CPP_EXTENSION = Citation(
    source="pytorch/pytorch@0011ec5c5d6171a395bb339b873343a4cdfebd18:"
           "torch/utils/cpp_extension.py",
    published_unknown="the source file carries no date; the commit was read from a code "
                      "index without its commit date")
"""PyTorch's extension builder: on a ROCm build of torch it hipifies CUDA sources and compiles
them with hipcc for ``PYTORCH_ROCM_ARCH`` (not ``TORCH_CUDA_ARCH_LIST``); cited by the rules
on extension builds in Python, Dockerfiles and compiled extensions."""


class Finding(Strict):
    """One item of the bill.

    ``path`` is the file as the user named it (relative to the scanned root when under one);
    ``line``/``column`` are 1-based (``None`` for a whole file or a package from an index);
    ``lines`` lists every line of the same subject in the file when it occurs more than once
    (the first is ``line``). ``package`` names the distribution a finding belongs to (a
    package finding, or a finding inside an installed distribution). ``subject`` is what was
    found (``flash-attn==2.7.4``, ``cudaMalloc``, ``asm volatile``); ``why`` one sentence;
    ``todo`` what to do; ``replacement`` the HIP / ROCm name when there is one.
    ``copies`` lists the other files with the same bytes as ``path`` (counted once, here);
    ``binaries`` the compiled files a package finding speaks for (``PATH: SUBJECT`` each).
    """

    kind: Kind
    rule: str = Field(min_length=1, description="Stable rule id, e.g. `kernel.inline-ptx`.")
    verdict: Verdict
    subject: str
    path: str | None = None
    line: int | None = Field(default=None, ge=1)
    column: int | None = Field(default=None, ge=1)
    lines: list[int] = Field(default_factory=list)
    package: str | None = None
    why: str
    todo: str
    replacement: str | None = None
    citation: Citation
    copies: list[str] = Field(
        default_factory=list,
        description="Other files with the same bytes as `path`; their findings are these.")
    binaries: list[str] = Field(
        default_factory=list,
        description="The compiled files of the package this finding speaks for (an installed "
                    "distribution's `.so` files), each with what it carries: `PATH: SUBJECT`.")


class Skipped(Strict):
    """An input that was not scanned, and why (``reason`` one line)."""

    path: str
    reason: str


@dataclass
class FileScan:
    """What one scanner made of one file: findings, declared packages (judged later against
    the package knowledge, so each scanner stays small), lines of kernel code (``.cu`` /
    ``.cuh`` and kernel strings embedded in Python) and what it skipped. ``defines`` and
    ``uses`` are what the C/C++ scanner leaves for the audit-wide name join
    (:mod:`pinning.audit.follow`): names defined with a 32-lane meaning, and uses of names the
    file could not resolve itself.
    """

    findings: list[Finding] = field(default_factory=list)
    packages: list[DeclaredPackage] = field(default_factory=list)
    kernel_lines: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    defines: list[NameDef] = field(default_factory=list)
    uses: list[NameUse] = field(default_factory=list)


@dataclass(frozen=True)
class DeclaredPackage:
    """A distribution a project asks for or an environment holds.

    ``name`` is the PEP 503 normalised name; ``raw`` the requirement as written; ``version``
    the exact version when pinned (``==`` / a lock / installed), ``specifier`` the rest
    (``>=2.1,<3``; empty when none); ``local`` the local version label (``cu121``,
    ``rocm6.2``); ``extras`` as written; ``index_urls`` the indexes that file names for it
    (requirements ``--index-url``, uv sources); ``path``/``line`` where it was declared;
    ``origin`` the input kind (``requirements``, ``pyproject``, ``uv.lock``, ``pylock``,
    ``poetry.lock``, ``conda``, ``setup.py``, ``setup.cfg``, ``dockerfile``,
    ``site-packages``, ``host``, ``closure``).
    """

    name: str
    raw: str
    origin: str
    version: str | None = None
    specifier: str = ""
    local: str | None = None
    extras: tuple[str, ...] = ()
    index_urls: tuple[str, ...] = ()
    path: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class Context:
    """What every scanner may consult: the GPU targets the move is for (``gfx942`` ...;
    empty when no ``--gpu``), that GPU's name for messages (``None`` without ``--gpu``) and
    the audited folders (:attr:`roots`).
    """

    gfx_targets: tuple[str, ...] = ()
    gpu_name: str | None = None
    roots: tuple[Path, ...] = ()
    """The folders being audited, resolved (symbolic links followed). A scanner that follows a
    reference to another file (a requirements ``-r`` include) reads it only when it lies under
    one of them; empty means no limit (a scanner called on its own)."""
    build_defines: tuple[ProjectDefine, ...] = ()
    """The macros the project's own build (setup.py, CMake) defines, for an AMD build or for
    CUDA builds only, with where each was read (:mod:`pinning.audit.build_defines`); the
    platform guards of the kernel scanner use them. Empty for a file audited on its own."""

    def inside(self, path: Path) -> bool:
        """Whether ``path`` (resolved, links followed) lies under one of :attr:`roots`;
        always true when no roots are set.
        """
        if not self.roots:
            return True
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            return False
        return any(real == root or real.is_relative_to(root) for root in self.roots)


class Skip(Exception):
    """Raised by a scanner for a file it cannot read (binary, too large, not UTF-8 ...); the
    orchestrator records ``Skipped(path, reason)``. Never escapes ``pin audit``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


Scanner = Callable[[Path, str, "Context"], FileScan]
"""A scanner: ``(absolute path, display path, context) -> FileScan``. It reads the file itself
(through :func:`pinning.audit.files.read_text` for text), raises :class:`Skip` for a file it
cannot read, and never raises anything else for bad input."""
