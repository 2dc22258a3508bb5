"""What pin serve's store returns: plain frozen models, free of SQL and HTTP."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pinning.util.models import Strict


class LockInfo(Strict):
    """A stored lock without its bytes: ``content_hash``, its ``request`` table, ``size``
    in bytes and when it was first stored (UTC).
    """

    content_hash: str
    request: dict[str, Any]
    size: int
    created_at: dt.datetime


class ReportRecord(Strict):
    """One stored host report, with the host's name and group. ``result`` is ``match``,
    ``drift`` or ``unknown``; ``reasons`` one-line drift reasons; ``received_at`` UTC.
    """

    id: int
    host: str
    group: str | None
    lock_hash: str
    snapshot_hash: str | None
    result: str
    reasons: list[str]
    gpu: str | None
    received_at: dt.datetime


class ReasonCount(Strict):
    """A drift reason and the number of hosts whose latest report gives it."""

    reason: str
    hosts: int


class FleetSummary(Strict):
    """Hosts whose latest report is against ``lock_hash``: ``hosts`` counts them by result
    (``match``, ``drift``, ``unknown``, every key present), ``top_reasons`` the most
    frequent drift reasons (most hosts first, then by reason).
    """

    lock_hash: str
    hosts: dict[str, int]
    top_reasons: list[ReasonCount]


class TokenInfo(Strict):
    """A token's public facts (never its secret): ``scope``, bound ``host``, times (UTC)."""

    id: str
    scope: str
    host: str | None
    created_at: dt.datetime
    revoked_at: dt.datetime | None
