"""The JSON shapes pin serve's API answers with (snake_case keys), for the OpenAPI document.

Handlers build these bodies as plain data and serialise them once (:func:`json_response`);
the models document them and tests check the bodies against them.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

__all__ = ["AcceptanceAck", "ArtefactInfoOut", "AssignBody", "Assignments", "AuditAck",
           "CostAck", "FleetCounts", "FleetLock", "FleetSummaryOut", "GroupAssignment",
           "Health", "HostAssignment", "HostDetail", "HostList", "HostStatusOut", "LockDiff",
           "LockInfoOut", "LockList", "LockStored", "LockSummary", "ReasonCountOut",
           "ReportAck", "ReportOut", "json_response"]

Result = Literal["match", "drift", "unknown"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None
                  ) -> Response:
    """``body`` (plain JSON data) serialised once, as ``application/json``."""
    return Response(json.dumps(body, separators=(",", ":")).encode(), status_code=status,
                    headers=headers, media_type="application/json")


class Health(_Out):
    """``status`` ``ok`` or ``unavailable``; the database dialect, pin's version and the
    schema's Alembic revision (``null`` when the database cannot be reached).
    """

    status: Literal["ok", "unavailable"]
    database: Literal["sqlite", "postgresql"]
    version: str
    schema_: str | None = Field(alias="schema")


class LockInfoOut(_Out):
    """A stored lock: ``content_hash``, its ``[request]`` table, ``size`` (bytes),
    ``created_at`` (UTC, when first stored).
    """

    content_hash: str
    request: dict[str, Any]
    size: int
    created_at: dt.datetime


class LockList(_Out):
    """Every stored lock, newest first."""

    locks: list[LockInfoOut]


class LockStored(_Out):
    """An uploaded lock: its hash, whether it was new, and where to fetch it."""

    content_hash: str
    created: bool
    url: str


class LockDiff(_Out):
    """What ``pin lock diff --format json`` gives: ``equal`` and every change (``layer``,
    ``path``, ``old``, ``new``, ``source``).
    """

    equal: bool
    changes: list[dict[str, Any]]


class ReasonCountOut(_Out):
    """A drift reason (fact word) and the number of hosts giving it."""

    reason: str
    hosts: int


class FleetCounts(_Out):
    """Hosts whose latest report names one lock, by result, and the top drift reasons."""

    match: int
    drift: int
    unknown: int
    top_reasons: list[ReasonCountOut]


class FleetLock(FleetCounts):
    """:class:`FleetCounts` of one lock (``lock_hash``)."""

    lock_hash: str


class FleetSummaryOut(_Out):
    """One entry per lock that hosts' latest reports name, and the number of hosts."""

    locks: list[FleetLock]
    hosts: int


class ArtefactInfoOut(_Out):
    """A stored acceptance result, audit or cost verdict, without its bytes."""

    kind: Literal["acceptance", "audit", "cost"]
    id: int
    lock_hash: str | None
    received_at: dt.datetime
    passed: bool | None = None
    signature_verified: bool | None = None
    totals: dict[str, int] | None = None
    image_digest: str | None = None


class LockSummary(_Out):
    """A lock with what the fleet, acceptance, audits and cost verdicts say about it."""

    lock: LockInfoOut
    fleet: FleetCounts
    acceptance: list[ArtefactInfoOut]
    audits: list[ArtefactInfoOut]
    cost_verdicts: list[ArtefactInfoOut]


class AssignBody(_Out):
    """The lock to assign: a full ``sha256:<hex>`` hash or a unique prefix (>= 12 hex)."""

    lock: str = Field(min_length=1, max_length=200)


class HostAssignment(_Out):
    """A host and the full hash of the lock assigned to it."""

    host: str
    lock: str


class GroupAssignment(_Out):
    """A host group and the full hash of the lock assigned to it."""

    group: str
    lock: str


class Assignments(_Out):
    """Every assignment: host name -> lock hash, group name -> lock hash."""

    hosts: dict[str, str]
    groups: dict[str, str]


class ReportAck(_Out):
    """A stored (committed) host report and its verdict: ``scope`` what was judged
    (``full``, or ``node`` as ``pin verify --node-only``), ``reason`` the short line
    (``pin: ...``, drift only), ``reasons`` the drift words, each once.
    """

    id: int
    host: str
    group: str | None
    lock_hash: str
    scope: Literal["full", "node"]
    result: Result
    reason: str | None
    reasons: list[str]
    received_at: dt.datetime


class HostStatusOut(_Out):
    """A host and its latest report (``received_at``: last seen, UTC)."""

    host: str
    group: str | None
    lock_hash: str | None
    result: Result | None
    reason: str | None
    reasons: list[str]
    gpu: str | None
    received_at: dt.datetime | None
    report_id: int | None


class HostList(_Out):
    """One page of hosts (by name) and the number matching the filters."""

    hosts: list[HostStatusOut]
    total: int


class ReportOut(_Out):
    """One stored report of a host's history."""

    id: int
    host: str
    group: str | None
    lock_hash: str
    snapshot_hash: str | None
    result: Result
    reason: str | None = None
    reasons: list[str]
    gpu: str | None
    received_at: dt.datetime


class HostDetail(_Out):
    """A host's status and its history, newest first."""

    host: HostStatusOut
    history: list[ReportOut]


class AcceptanceAck(_Out):
    """A stored acceptance result: whether it passed and whether its signature verified."""

    id: int
    lock_hash: str
    passed: bool
    signature_verified: bool


class AuditAck(_Out):
    """A stored porting audit and its totals per verdict."""

    id: int
    totals: dict[str, int]


class CostAck(_Out):
    """A stored cost verdict."""

    id: int
