"""What pin serve's store takes and returns: plain frozen records, free of SQL and HTTP."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from pinning.util.models import Strict

#: Column bounds (``pinning.serve.storage.models``; repeated here, which imports no SQL).
RESULTS = ("match", "drift", "unknown")
NAME_LEN = 253  # host and group names: a DNS name's bound
HASH_LEN = 71  # "sha256:" + 64 hex digits
GPU_LEN = 128


class LockInfo(Strict):
    """A stored lock without its bytes: ``content_hash``, its ``request`` table, ``size``
    in bytes and when it was first stored (UTC).
    """

    content_hash: str
    request: dict[str, Any]
    size: int
    created_at: dt.datetime


@dataclass(frozen=True, slots=True)
class NewReport:
    """A host report to store (:meth:`~pinning.serve.storage.store.Store.add_reports`):
    ``host`` and its ``group`` (kept from the host's first report), the ``lock_hash`` it was
    verified against, ``result`` (``match``, ``drift`` or ``unknown``), the short ``reason``
    line (``pin: ...``, drift only), ``reasons`` (the drift words, each once), the
    snapshot's ``sha256:`` hash, the first GPU's name and the exact ``body`` bytes posted.
    A plain dataclass, not a model: the ingest path builds a thousand a second.
    """

    host: str
    lock_hash: str
    result: str
    group: str | None = None
    reason: str | None = None
    reasons: tuple[str, ...] = ()
    snapshot_hash: str | None = None
    gpu: str | None = None
    body: bytes | None = None

    def problem(self) -> str | None:
        """Why the store would refuse this report (``None``: it would not): a result other
        than ``match``/``drift``/``unknown``, or a value longer than its column.
        """
        if self.result not in RESULTS:
            return f"result {self.result!r} is not one of {', '.join(RESULTS)}"
        for label, value, most in (("host name", self.host, NAME_LEN),
                                   ("group", self.group, NAME_LEN),
                                   ("lock hash", self.lock_hash, HASH_LEN),
                                   ("snapshot hash", self.snapshot_hash, HASH_LEN),
                                   ("gpu", self.gpu, GPU_LEN)):
            if value is not None and not 0 < len(value) <= most:
                return f"{label} {value[:40]!r} must be 1 to {most} characters"
        texts = (self.host, self.group, self.gpu, self.reason, *self.reasons)
        # PostgreSQL's text types: "the character with code zero (sometimes called NUL)
        # cannot be stored" (https://www.postgresql.org/docs/15/datatype-character.html,
        # read 2026-12-02).
        if any(t is not None and "\x00" in t for t in texts):
            return "a NUL character in a name, GPU or reason (PostgreSQL stores none)"
        return None


class ReportRecord(Strict):
    """One stored host report, with the host's name and group. ``result`` is ``match``,
    ``drift`` or ``unknown``; ``reason`` the short line (drift only); ``reasons`` the
    drifting facts' words; ``received_at`` UTC.
    """

    id: int
    host: str
    group: str | None
    lock_hash: str
    snapshot_hash: str | None
    result: str
    reason: str | None = None
    reasons: list[str]
    gpu: str | None
    received_at: dt.datetime


class HostStatus(Strict):
    """A host and its latest report (what the fleet listing shows): ``lock_hash``,
    ``result``, ``reason``, ``reasons`` and ``gpu`` of that report, ``received_at`` when it
    arrived (last seen, UTC), ``report_id`` its id.
    """

    host: str
    group: str | None
    lock_hash: str
    result: str
    reason: str | None
    reasons: list[str]
    gpu: str | None
    received_at: dt.datetime
    report_id: int


class ArtefactInfo(Strict):
    """A stored artefact without its bytes: ``kind`` (``acceptance``, ``audit`` or
    ``cost``), ``id``, the ``lock_hash`` it is about (if any), ``received_at`` (UTC), and
    per kind ``passed``/``signature_verified``/``image_digest`` (acceptance) or ``totals``
    (audit); the others are ``None``.
    """

    kind: str
    id: int
    lock_hash: str | None
    received_at: dt.datetime
    passed: bool | None = None
    signature_verified: bool | None = None
    totals: dict[str, Any] | None = None
    image_digest: str | None = None


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
