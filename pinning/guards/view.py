"""What the rules look at and what they say: the environment view and findings.

An :class:`EnvView` is the small, vendor-neutral picture ``pin verify``, ``pin doctor`` and
the resolve-phase guards build: from probed :class:`~pinning.probe.models.HostFacts`
(:func:`view_from_facts`), from pasted dumps, or from a lock. Every rule, coded
(:mod:`pinning.guards.checks`) or data (``rules.toml``), returns :class:`Finding` objects.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pinning.util.models import Strict
from pinning.util.versions import normalize_name

if TYPE_CHECKING:
    from pinning.probe.models import HostFacts

Status = Literal["match", "mismatch", "missing", "not-probed", "outside-validated", "not-locked",
                 "cannot-compare", "hazard"]
Severity = Literal["error", "warning", "info"]


@functools.lru_cache(maxsize=8192)
def package_key(name: str) -> str:
    """:func:`~pinning.util.versions.normalize_name` of a distribution ``name`` (PEP 503:
    ``Pytorch_Triton.ROCm`` -> ``pytorch-triton-rocm``), remembered: the rules and the
    package comparison ask it for every installed distribution of every host, and a
    fleet's hosts share their names (a regular expression per call cost ~4,800 calls,
    over 2 ms, per host of 300 packages). Raises nothing.
    """
    return normalize_name(name)


class Finding(Strict):
    """One judged fact.

    ``fact`` is a dotted path into the lock (``firmware.version``) or a rule name; ``gpu``
    the GPU index when the fact is per GPU. ``status`` is ``match``, ``mismatch`` (differs
    from the lock), ``missing`` (locked but absent on the host), ``not-probed`` (could not
    be read), ``outside-validated`` (outside what the matrix validated), ``not-locked`` (the
    lock leaves it open), ``cannot-compare`` (no public mapping between the two numberings)
    or ``hazard`` (a known-bad install state). ``source`` names what makes it wrong.
    """

    code: str
    fact: str
    status: Status
    severity: Severity
    message: str
    expected: str | None = None
    actual: str | None = None
    gpu: int | None = None
    source: str | None = None


@dataclass
class GpuView:
    """A GPU as seen by a probe or a dump: name as printed, PCI device ID, target."""

    vendor: Literal["amd", "nvidia"] | None
    name: str | None = None
    device_id: str | None = None
    gfx: str | None = None
    compute_capability: str | None = None
    product: str | None = None


@dataclass
class PackageView:
    """One installed package; ``source`` is ``dist-info``, ``pip``, ``conda`` or ``lock``
    (named by the lock's ``[serving]`` / ``[[extensions]]``, not seen installed).
    """

    name: str
    version: str
    source: str = "dist-info"


@dataclass
class ExtensionView:
    """A compiled extension: distribution name, version (``None`` = not known) and the gfx
    targets or compute capabilities it was built for (``None`` = not known).
    """

    name: str
    version: str | None = None
    targets: list[str] | None = None


@dataclass
class EnvView:
    """What the rules look at. Unknown facts are ``None`` / empty."""

    gpus: list[GpuView] = field(default_factory=list)
    torch_version: str | None = None
    torch_kind: Literal["rocm", "cuda", "cpu", "unknown"] | None = None
    torch_cuda: str | None = None
    torch_hip: str | None = None
    torch_files_version: str | None = None
    nvidia_driver: str | None = None
    cuda_compat: bool = False
    rocm_version: str | None = None
    amdgpu_version: str | None = None
    amdgpu_kind: Literal["dkms", "inbox", "not-loaded"] | None = None
    packages: list[PackageView] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    extensions: list[ExtensionView] = field(default_factory=list)

    @property
    def amd(self) -> bool:
        """True when an AMD GPU is present."""
        return any(g.vendor == "amd" for g in self.gpus)

    @property
    def nvidia(self) -> bool:
        """True when an NVIDIA GPU is present."""
        return any(g.vendor == "nvidia" for g in self.gpus)


def view_from_facts(facts: HostFacts) -> EnvView:
    """Build the :class:`EnvView` of probed host facts."""
    gpus = [
        GpuView(
            vendor=g.vendor,
            name=g.name.value,
            device_id=g.pci_device_id,
            gfx=g.gfx_target.value if g.gfx_target else None,
            compute_capability=g.compute_capability.value if g.compute_capability else None,
            product=g.product,
        )
        for g in facts.gpus
    ]
    torch = facts.python.torch
    return EnvView(
        gpus=gpus,
        torch_version=torch.version if torch else None,
        torch_kind=torch.kind if torch else None,
        torch_cuda=torch.cuda if torch else None,
        torch_hip=torch.hip if torch else None,
        torch_files_version=torch.files_version if torch else None,
        nvidia_driver=facts.nvidia.driver.value if facts.nvidia else None,
        cuda_compat=bool(facts.nvidia and facts.nvidia.cuda_compat),
        rocm_version=facts.amd.rocm.value if facts.amd else None,
        amdgpu_version=facts.amd.driver.value if facts.amd else None,
        amdgpu_kind=facts.amd.driver_kind if facts.amd else None,
        packages=[PackageView(d.name, d.version, d.source) for d in facts.python.distributions],
        environment=dict(facts.environment),
    )
