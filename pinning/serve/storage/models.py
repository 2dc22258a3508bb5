"""The tables of pin serve's store, as SQLAlchemy 2.0 typed ORM classes.

The shipped Alembic revisions (``migrations/versions``) create exactly these tables; a test
compares the two on SQLite and PostgreSQL. Hashes are ``sha256:<64 hex>`` (71 characters);
times are UTC (``DateTime(timezone=True)``; SQLite returns them naive, the store adds UTC).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from pinning.serve.storage.records import GPU_LEN, HASH_LEN, NAME_LEN, RESULTS

SCOPES = ("report", "publish", "admin")

# Deterministic constraint names, so migrations name the same objects on every database
# (https://docs.sqlalchemy.org/en/20/core/constraints.html#configuring-constraint-naming-conventions,
# read 2026-12-02).
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base of the store's tables (one ``MetaData`` with :data:`NAMING`)."""

    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[str]: JSON}


def _in(column: str, values: tuple[str, ...]) -> str:
    """SQL text of ``column IN (values)`` for a check constraint."""
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class LockRow(Base):
    """A stored lockfile, addressed by its ``content-hash``; ``body`` is the exact bytes
    first uploaded, ``request`` the lock's request table (gpu, frameworks, rocm/cuda, os).
    """

    __tablename__ = "locks"

    content_hash: Mapped[str] = mapped_column(String(HASH_LEN), primary_key=True)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    request: Mapped[dict[str, Any]]
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class HostRow(Base):
    """A host known to the service: unique ``name``, optional ``group``, the lock assigned
    to it (``None``: its group's lock, or none) and a copy of its latest report (``last_*``,
    all ``None`` until it reports), so the fleet is listed from this one table.

    The ``last_*`` columns are written in the transaction that stores the report; the
    composite indexes serve the dashboard's filters (result, lock, GPU, group), each
    ordered by name (the unique index on ``name`` serves the unfiltered listing).
    """

    __tablename__ = "hosts"
    __table_args__ = (
        Index("ix_hosts_group_name", "group", "name"),
        Index("ix_hosts_last_result_name", "last_result", "name"),
        Index("ix_hosts_last_lock_name", "last_lock", "name"),
        Index("ix_hosts_last_gpu_name", "last_gpu", "name"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(NAME_LEN), unique=True)
    group: Mapped[str | None] = mapped_column(String(NAME_LEN))
    assigned_lock: Mapped[str | None] = mapped_column(
        String(HASH_LEN), ForeignKey("locks.content_hash"))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    last_report_id: Mapped[int | None] = mapped_column(Integer)
    last_result: Mapped[str | None] = mapped_column(String(8))
    last_lock: Mapped[str | None] = mapped_column(String(HASH_LEN))
    last_reason: Mapped[str | None] = mapped_column(Text)
    last_reasons: Mapped[list[str] | None] = mapped_column(JSON)
    last_gpu: Mapped[str | None] = mapped_column(String(GPU_LEN))
    last_seen: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class GroupLockRow(Base):
    """The lock assigned to a host group (hosts without their own assignment use it)."""

    __tablename__ = "group_locks"

    group: Mapped[str] = mapped_column(String(NAME_LEN), primary_key=True)
    lock_hash: Mapped[str] = mapped_column(String(HASH_LEN), ForeignKey("locks.content_hash"))
    assigned_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class HostReportRow(Base):
    """One verification report a host posted (history is kept; the latest per host is the
    row with the highest ``id`` for that host, served by the ``(host_id, id)`` index).

    ``result`` is ``match``, ``drift`` or ``unknown``; ``reason`` the short line (``pin:
    ...``, drift only); ``reasons`` the drifting facts' words; ``gpu`` the host's GPU as
    reported (``None``: not said); ``body`` the exact
    report bytes when the host sent a document.
    """

    __tablename__ = "host_reports"
    __table_args__ = (
        CheckConstraint(_in("result", RESULTS), name="result"),
        Index("ix_host_reports_host_latest", "host_id", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id"))
    lock_hash: Mapped[str] = mapped_column(String(HASH_LEN), index=True)
    snapshot_hash: Mapped[str | None] = mapped_column(String(HASH_LEN))
    result: Mapped[str] = mapped_column(String(8))
    reason: Mapped[str | None] = mapped_column(Text)
    reasons: Mapped[list[str]]
    gpu: Mapped[str | None] = mapped_column(String(GPU_LEN))
    body: Mapped[bytes | None] = mapped_column(LargeBinary)
    received_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class AcceptanceRow(Base):
    """An acceptance result for a lock (and image, when one was tested): ``body`` is the
    exact result JSON bytes, ``signature_verified`` whether its signature was checked.
    """

    __tablename__ = "acceptance_results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    lock_hash: Mapped[str] = mapped_column(String(HASH_LEN), index=True)
    image_digest: Mapped[str | None] = mapped_column(String(HASH_LEN))
    passed: Mapped[bool] = mapped_column(Boolean)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    signature_verified: Mapped[bool] = mapped_column(Boolean)
    received_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class AuditRow(Base):
    """A porting audit report: ``body`` the exact JSON bytes, ``totals`` its counts by
    verdict (``{"ready": 3, "port": 1}``), ``lock_hash`` the lock it is about, if any.
    """

    __tablename__ = "audits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    lock_hash: Mapped[str | None] = mapped_column(String(HASH_LEN), index=True)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    totals: Mapped[dict[str, Any]]
    received_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class CostVerdictRow(Base):
    """A cost verdict (``pin cost``): ``body`` the exact JSON bytes, ``lock_hash`` the lock
    it is about, if any.
    """

    __tablename__ = "cost_verdicts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    lock_hash: Mapped[str | None] = mapped_column(String(HASH_LEN), index=True)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    received_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class TokenRow(Base):
    """An API token: ``secret_sha256`` is the hex sha256 of the secret (the secret itself is
    never stored); ``scope`` report, publish or admin; ``host`` the one host name a report
    token may write as (``None``: any); ``revoked_at`` set once revoked.
    """

    __tablename__ = "tokens"
    __table_args__ = (CheckConstraint(_in("scope", SCOPES), name="scope"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    secret_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    scope: Mapped[str] = mapped_column(String(8))
    host: Mapped[str | None] = mapped_column(String(NAME_LEN))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
