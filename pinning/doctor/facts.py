"""Every fact ``pin doctor`` parsed from the dumps, as one model (``pin doctor --format json``).

The rules see only the small :class:`~pinning.guards.view.EnvView`; this model keeps
everything read, so a user can check what pin understood. Values are as printed; a fact no
dump gave is ``None`` (or empty). Placeholders such as ``Could not collect``, ``N/A`` and
``No CUDA`` are not values: the fact stays ``None`` and ``stated`` keeps the text as printed.
``sections`` carries every field of every parsed dump, flattened, so nothing read is lost.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from pinning.util.models import Strict

__all__ = ["DoctorFacts", "FactCollector", "FirmwareFact", "GpuFact", "PackageFact",
           "SectionFacts", "flatten", "known", "one_line"]

_PLACEHOLDERS = {"", "none", "n/a", "na", "could not collect", "no cuda", "not available",
                 "not set"}


def known(value: str | None) -> str | None:
    """``value`` stripped, or ``None`` when it is empty or a placeholder (``N/A``, ``Could
    not collect``, ``No CUDA``, ``None``).
    """
    if value is None:
        return None
    v = value.strip()
    return None if v.lower() in _PLACEHOLDERS else v


def one_line(value: str) -> str:
    """A value a dump printed over several lines, on one: ``cuDNN version: Probably one of
    the following:`` then one library per line reads ``Probably one of the following:
    /usr/lib/.../libcudnn.so.9.1.0, /usr/lib/.../libcudnn_adv.so.9.1.0``: lines after one
    ending in ``:`` are joined with ``, ``, other lines with ``; ``. Every line is kept, so
    nothing read is lost; a one-line value is returned stripped.
    """
    lines = [line.strip() for line in value.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].endswith(":"):
        return f"{lines[0]} {', '.join(lines[1:])}"
    return "; ".join(lines)


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Every non-empty leaf of a parsed model, dict, list or tuple as ``path -> text``:
    ``gpus.0.partitions.memory -> NPS1``; numbers and booleans as printed by ``str``.
    """
    if isinstance(value, BaseModel):
        value = {k: getattr(value, k) for k in type(value).model_fields}
    if isinstance(value, dict):
        items: list[tuple[str, Any]] = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list | tuple):
        items = [(str(i), v) for i, v in enumerate(value)]
    else:
        text = "" if value is None or value is False else str(value)
        return {prefix or "value": text} if text.strip() else {}
    out: dict[str, str] = {}
    for key, item in items:
        out.update(flatten(item, f"{prefix}.{key}" if prefix else key))
    return out


class SectionFacts(Strict):
    """One parsed dump: its kind, file and first line, and ``fields``: every non-empty value
    its parser read, keyed by its path in the parsed model (:func:`flatten`).
    """

    kind: str
    file: str
    first_line: int
    fields: dict[str, str] = Field(default_factory=dict)


class FirmwareFact(Strict):
    """The firmware of one GPU as a tool printed it: block (``CP_MEC1``, ``MEC``) -> version."""

    source: str
    gpu: int
    firmware: dict[str, str] = Field(default_factory=dict)


class GpuFact(Strict):
    """One GPU as the richest dump showed it; ``source`` names that dump's tool.

    ``telemetry`` holds readings as printed (temperatures, power, clocks, fan, use);
    ``details`` every other per-GPU fact that tool printed (VBIOS, VRAM in MiB, product name,
    subsystem ID, NUMA node and affinity, partitions, PCI bus, ...), keyed as the parser names
    it; ``firmware`` block -> version.
    """

    source: str
    index: int | None = None
    vendor: str | None = None
    name: str | None = None
    device_id: str | None = None
    gfx: str | None = None
    compute_capability: str | None = None
    telemetry: dict[str, str] = Field(default_factory=dict)
    details: dict[str, str] = Field(default_factory=dict)
    firmware: dict[str, str] = Field(default_factory=dict)


class PackageFact(Strict):
    """One installed package: PEP 503 name (conda's name as printed for conda entries),
    version as printed, its wheel build tag (``rocm6.1`` of ``2.4.0+rocm6.1``), the kind of
    listing (``pip`` or ``conda``) and the tool that printed it; conda entries also carry
    ``build`` and ``channel``, and ``pip_copy`` when conda marks the entry as pip's own copy.
    """

    name: str
    version: str
    build_tag: str | None = None
    source: str
    tool: str
    build: str | None = None
    channel: str | None = None
    pip_copy: bool = False


class DoctorFacts(Strict):
    """What the dumps said, merged (the first dump that gives a fact wins).

    ``compilers`` maps ``gcc``/``clang``/``cmake``/``hipcc``/``nvcc`` to the version line as
    printed. ``torch`` maps ``version``, ``build`` (``rocm``/``cuda``/``cpu``/``unknown``),
    ``build_tag``, ``cuda_built``, ``rocm_built`` and ``cuda_available``. ``amd_smi`` maps
    ``tool``, ``library``, ``rocm``, ``amdgpu``, ``amd_hsmp`` and ``platform``; ``rocm_smi``
    maps ``smi`` and ``lib``. ``gpu_count`` is the number of GPUs the richest listing showed;
    ``firmware`` the firmware each GPU reported. ``packages`` lists pip entries (conda's
    ``<pip>``/``pypi`` entries among them unless a pip listing names the package) and conda's
    own entries; ``conda`` every conda entry. ``stated`` maps a fact whose value is ``None``
    to what the dump printed instead (``cudnn``: ``Could not collect``). ``sections`` holds
    every parsed field of every dump (:class:`SectionFacts`).
    """

    os: str | None = None
    python: str | None = None
    python_platform: str | None = None
    libc: str | None = None
    compilers: dict[str, str] = Field(default_factory=dict)
    gpu_count: int = 0
    gpus: list[GpuFact] = Field(default_factory=list)
    firmware: list[FirmwareFact] = Field(default_factory=list)
    amd_smi: dict[str, str] = Field(default_factory=dict)
    rocm_smi: dict[str, str] = Field(default_factory=dict)
    rocm: str | None = None
    amdgpu: str | None = None
    amdgpu_kind: str | None = None
    nvidia_driver: str | None = None
    cuda_runtime: str | None = None
    cudnn: str | None = None
    hip_runtime: str | None = None
    miopen: str | None = None
    torch: dict[str, str] = Field(default_factory=dict)
    vllm: dict[str, str] = Field(default_factory=dict)
    packages: list[PackageFact] = Field(default_factory=list)
    conda: list[PackageFact] = Field(default_factory=list)
    environment: dict[str, str] = Field(default_factory=dict)
    stated: dict[str, str] = Field(default_factory=dict)
    sections: list[SectionFacts] = Field(default_factory=list)


class FactCollector:
    """Accumulates facts dump by dump; :meth:`build` returns the :class:`DoctorFacts`."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.maps: dict[str, dict[str, str]] = {
            "compilers": {}, "amd_smi": {}, "rocm_smi": {}, "torch": {}, "vllm": {},
            "environment": {}, "stated": {}}
        self.packages: list[PackageFact] = []
        self.conda: list[PackageFact] = []
        self.firmware: list[FirmwareFact] = []
        self.sections: list[SectionFacts] = []

    def set(self, key: str, value: str | None) -> None:
        """Record ``key`` unless a dump already gave it or ``value`` is a placeholder; a
        value printed over several lines is kept on one (:func:`one_line`).
        """
        v = known(value)
        if v is not None and key not in self.values:
            self.values[key] = one_line(v)
        elif v is None and value and value.strip():
            self.maps["stated"].setdefault(key, one_line(value))

    def put(self, group: str, key: str, value: str | None) -> None:
        """Record ``group[key]`` (first wins; placeholders skipped; on one line)."""
        v = known(value)
        if v is not None:
            self.maps[group].setdefault(key, one_line(v))
        elif value and value.strip():
            self.maps["stated"].setdefault(f"{group}.{key}", one_line(value))

    def package(self, fact: PackageFact) -> None:
        """Record one package: conda entries go to ``conda``, and to ``packages`` too unless
        conda marks them as pip's copy; the same name, version and source is kept once.
        """
        if fact.source == "conda":
            self.conda.append(fact)
            if fact.pip_copy:
                return
        key = (fact.name.lower(), fact.version, fact.source)
        if all((p.name.lower(), p.version, p.source) != key for p in self.packages):
            self.packages.append(fact)

    def build(self, gpus: list[GpuFact], rocm: str | None) -> DoctorFacts:
        """The merged facts, with the GPUs chosen by the caller and the ROCm release it
        trusts most.
        """
        return DoctorFacts(
            **self.values, **self.maps, gpus=gpus, gpu_count=len(gpus), rocm=rocm,
            packages=self.packages, conda=self.conda, firmware=self.firmware,
            sections=self.sections)
