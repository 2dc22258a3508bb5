"""The result of ``pin fleet verify`` (schema ``schemas/fleet-report.schema.json``): one
entry per host snapshot (its result, the short drift reasons) and a summary of the fleet.

The reasons are the words of :mod:`pinning.fleet.reason` (``<fact>[<gpu>] <want>!=<have>``),
so a host's entry reads as the reason a Slurm drain or a Node Problem Detector condition
would show for it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pinning.util.models import Strict

FLEET_VERSION: Literal[1] = 1

HostResult = Literal["match", "drift", "unreadable"]


class FleetHost(Strict):
    """One host snapshot and its result.

    ``name`` is the snapshot file's name without ``.json`` (a folder of snapshots) or
    ``FILE:LINE`` (JSON Lines; ``stdin:LINE`` for standard input): host snapshots carry no
    host name of their own. ``file`` is the file read and ``line`` its 1-based line (JSON
    Lines only). ``result`` is ``match``, ``drift`` (a finding is drift: an error, or with
    ``--strict`` a warning, as ``pin verify`` judges) or ``unreadable`` (the snapshot could
    not be read or is not a valid snapshot; ``reason`` says why, naming the file and line).
    For a drifting host ``reason`` is the short line ``pin: <fact> <want>!=<have> (+N more)``
    (``N``: the other facts that drifted, not findings) and ``reasons`` has the drifting
    findings' words, each once, in report order. ``counts`` maps each
    finding status to how many findings have it (empty when unreadable).
    """

    name: str
    file: str
    line: int | None = Field(default=None, ge=1)
    target: str | None = Field(default=None, description="The multi-target lock's target "
                               "the host was checked against: --target, else the one whose "
                               "GPU the host shows; absent for a single-target lock and for "
                               "a host no target matches (a drift, reason `pin: target ...`).")
    result: HostResult
    reason: str | None = None
    reasons: list[str] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)


class ReasonCount(Strict):
    """A drift reason (a fact's dotted path, or an exact ``<fact> <want>!=<have>`` word) and
    how many hosts show it.
    """

    reason: str
    hosts: int = Field(ge=1)


class FleetSummary(Strict):
    """How many hosts were verified, matched, drifted and could not be read, and the most
    frequent drift reasons (at most :data:`TOP` each, most hosts first, then by name):
    ``top-facts`` by the drifting fact's dotted path (``firmware.blocks``, whichever GPU),
    ``top-reasons`` by the exact word (``firmware.blocks[0] mec=0x80bf!=0x80c0``). A host
    counts once per fact and once per word.
    """

    total: int = Field(ge=0)
    match: int = Field(ge=0)
    drift: int = Field(ge=0)
    unreadable: int = Field(ge=0)
    top_facts: list[ReasonCount] = Field(default_factory=list)
    top_reasons: list[ReasonCount] = Field(default_factory=list)


#: The most reasons each summary list keeps.
TOP = 10


class FleetReport(Strict):
    """The result of ``pin fleet verify``: the ``lock`` as named and its ``lock-hash``,
    whether ``strict`` (warnings are drift too), every host in input order (``hosts``) and
    the ``summary``.
    """

    fleet_version: Literal[1] = FLEET_VERSION
    lock: str
    lock_hash: str
    strict: bool = False
    targets: list[str] | None = Field(default=None, description="A multi-target lock's "
                                      "targets checked (--target: that one); absent for a "
                                      "single-target lock.")
    hosts: list[FleetHost] = Field(default_factory=list)
    summary: FleetSummary
