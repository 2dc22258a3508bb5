"""SQLAlchemy Core statements behind :class:`~pinning.serve.storage.store.Store`'s writes
and fleet reads (a batch of reports is :mod:`pinning.serve.storage.batch`'s): the fleet
listing read from the ``hosts`` table alone (each host keeps a copy of its latest
report, see :class:`~pinning.serve.storage.models.HostRow`).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pinning.serve.storage.models import HostReportRow, HostRow
from pinning.serve.storage.records import HostStatus

if TYPE_CHECKING:
    from sqlalchemy import Select, Table
    from sqlalchemy.sql.dml import Insert

HOSTS: Table = HostRow.__table__  # type: ignore[assignment]
REPORTS: Table = HostReportRow.__table__  # type: ignore[assignment]


def utc(value: dt.datetime) -> dt.datetime:
    """``value`` as an aware UTC time (SQLite hands back the stored UTC time naive)."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def insert_ignore(dialect: str, table: Table, key: str) -> Insert:
    """``INSERT INTO table ... ON CONFLICT (key) DO NOTHING`` for ``dialect`` (``sqlite`` or
    ``postgresql``): safe against a concurrent insert of the same key.
    """
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing(index_elements=[key])
    from sqlalchemy.dialects.sqlite import insert as lite_insert

    return lite_insert(table).on_conflict_do_nothing(index_elements=[key])


def upsert(dialect: str, table: Table, key: str, values: dict[str, Any]) -> Insert:
    """``INSERT ... ON CONFLICT (key) DO UPDATE`` of ``values`` (every column but ``key``
    overwritten) for ``dialect``.
    """
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        pg = pg_insert(table).values(**values)
        return pg.on_conflict_do_update(
            index_elements=[key], set_={k: v for k, v in values.items() if k != key})
    from sqlalchemy.dialects.sqlite import insert as lite_insert

    lite = lite_insert(table).values(**values)
    return lite.on_conflict_do_update(
        index_elements=[key], set_={k: v for k, v in values.items() if k != key})


def status_query(*, lock: str | None, status: str | None, gpu: str | None,
                 group: str | None) -> Select[Any]:
    """The hosts that reported, with their latest report's columns, filtered by lock hash,
    result, GPU and group (``None``: any); unordered.
    """
    from sqlalchemy import select

    query = select(HOSTS.c.name, HOSTS.c.group, HOSTS.c.last_lock, HOSTS.c.last_result,
                   HOSTS.c.last_reason, HOSTS.c.last_reasons, HOSTS.c.last_gpu,
                   HOSTS.c.last_seen, HOSTS.c.last_report_id)
    query = query.where(HOSTS.c.last_report_id.is_not(None))
    for column, value in ((HOSTS.c.last_lock, lock), (HOSTS.c.last_result, status),
                          (HOSTS.c.last_gpu, gpu), (HOSTS.c.group, group)):
        if value is not None:
            query = query.where(column == value)
    return query


def statuses(rows: Iterable[Any]) -> list[HostStatus]:
    """:class:`HostStatus` records of :func:`status_query` rows (built without validating
    again: every value comes from the store's own columns).
    """
    return [HostStatus.model_construct(
        host=name, group=group, lock_hash=lock, result=result, reason=reason,
        reasons=list(reasons or ()), gpu=gpu, received_at=utc(seen), report_id=int(rid))
        for name, group, lock, result, reason, reasons, gpu, seen, rid in rows]


def rank(counter: Counter[str], top: int) -> list[tuple[str, int]]:
    """The ``top`` most frequent keys of ``counter``: most first, then by key."""
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))[:top]
