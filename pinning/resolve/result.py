"""What a resolve decided and why: the chosen stack (:class:`Resolution`), each framework as
resolved (:class:`ChosenFramework`), every candidate considered (:class:`Considered`) and
what no source confirms about the chosen stack (:class:`~pinning.lockfile.status.StatusReason`,
which makes the lock's status ``unconfirmed``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from pinning.lockfile.status import LockStatus, StatusReason
from pinning.matrix.load import ReleaseRef
from pinning.matrix.models import (
    CudaToolkit,
    DriverRule,
    FirmwareRow,
    GpuIdentity,
    WheelVariant,
)
from pinning.resolve.constraints import Constraints


@dataclass
class ChosenFramework:
    """A framework as resolved: locked version (or ``None`` + reason), the set the row allows."""

    name: str
    request: str
    version: str | None
    series: bool
    allowed: list[str] | None
    status: str
    notes: list[str] = field(default_factory=list)
    unknown: str | None = None
    variant: str | None = None
    published_variants: list[str] = field(default_factory=list)


@dataclass
class Considered:
    """One candidate the resolver looked at: its identity, whether it was valid, and why not."""

    ref: str
    runtime: str
    version: str
    source: str
    date: dt.date
    valid: bool
    reasons: list[str] = field(default_factory=list)
    frameworks: list[ChosenFramework] = field(default_factory=list)
    verdict: str = ""


@dataclass
class Resolution:
    """The chosen stack and everything that decided it.

    ``gpu`` is the identity (``None`` when the GPU was given by a gfx target several products
    share; ``target`` is then that target). ``release`` is the AMD matrix row for ROCm;
    ``wheel`` the chosen CUDA wheel variant for NVIDIA. ``unconfirmed`` lists what no source
    confirms about the stack, each with the source that would settle it (empty: validated).
    """

    constraints: Constraints
    vendor: str
    gpu: GpuIdentity | None
    gpu_candidates: list[GpuIdentity]
    target: str
    runtime: str
    runtime_version: str
    release: ReleaseRef | None
    wheels: list[WheelVariant]
    frameworks: list[ChosenFramework]
    considered: list[Considered]
    os_allowed: list[str] | None
    os_unknown: str | None
    os_chosen: str | None
    kmd_allowed: list[str] | None
    kmd_unknown: str | None
    kmd_ref: str | None
    firmware: list[FirmwareRow]
    firmware_unknown: str | None
    driver_constraint: str | None
    driver_ref: str | None
    toolkit_driver: str | None
    driver_rule: DriverRule | None = None
    toolkit: CudaToolkit | None = None
    toolkit_ref: str | None = None
    notes: list[str] = field(default_factory=list)
    unconfirmed: list[StatusReason] = field(default_factory=list)

    @property
    def status(self) -> LockStatus:
        """``validated``, or ``unconfirmed`` with :attr:`unconfirmed` as its reasons."""
        return LockStatus.of(self.unconfirmed)

    @property
    def warnings(self) -> list[str]:
        """The text of each :attr:`unconfirmed` reason (what ``pin resolve`` once printed as
        ``Warning:`` lines).
        """
        return [u.reason for u in self.unconfirmed]


class NoCandidate(Exception):
    """No candidate fits: carries every candidate considered, for the diagnosis."""

    def __init__(self, considered: list[Considered]) -> None:
        super().__init__("no candidate")
        self.considered = considered
