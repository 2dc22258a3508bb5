"""One batch of host reports written in a fixed, small number of statements: the group
commit of :class:`~pinning.serve.ingest.BatchWriter` (:meth:`Store.add_reports`).

Plain SQL through the driver, not SQLAlchemy Core, because Core's per-row work was most of
the writer's time: measured on 2026-12-05 on this project's 2-core machine (PostgreSQL 15,
psycopg 3, SQLAlchemy 2.0, batches of 50 reports of 3.7 KB), Core's ``insertmanyvalues``
INSERT (its text differs with the batch size, so psycopg parsed it anew each time) plus an
``executemany`` UPDATE of the hosts (one statement per host) cost 180 us of CPU per report
on PostgreSQL and 100 us on SQLite.

- PostgreSQL: two statements whose text never changes (psycopg prepares them once), the
  batch passed as arrays and expanded with ``unnest``: one creates the hosts not yet known
  and returns every host's id; one inserts the reports and moves each host's ``last_*``
  columns to its newest report, in a data-modifying ``WITH``
  (https://www.postgresql.org/docs/15/queries-with.html#QUERIES-WITH-MODIFYING, read
  2026-12-05). The reports are inserted ``ORDER BY`` their place in the batch, so their
  serial ids rise in that order, which is how the ids are matched to the batch (what
  SQLAlchemy's own ``insertmanyvalues`` relies on for PostgreSQL: "Correlating RETURNING
  records with input data sets",
  https://docs.sqlalchemy.org/en/20/core/connections.html#insertmanyvalues, read
  2026-12-05).
- SQLite: the sqlite3 cursor directly (one INSERT per report, its ``lastrowid``, and one
  ``executemany`` UPDATE); no round trips to save, only Python work.

Values are written exactly as the SQLAlchemy models write them (their bind processors:
SQLite's timestamp text, JSON text), so the ORM reads them back unchanged.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pinning.serve.storage.records import NewReport

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

__all__ = ["insert_reports"]

_PG_HOSTS = """
WITH w AS (SELECT * FROM unnest(%(names)b::text[], %(groups)b::text[]) AS w(name, grp)),
ins AS (INSERT INTO hosts (name, "group", created_at)
        SELECT name, grp, %(when)s FROM w
        WHERE NOT EXISTS (SELECT 1 FROM hosts h WHERE h.name = w.name) ORDER BY name
        ON CONFLICT (name) DO NOTHING RETURNING name, id),
old AS (SELECT w.name, (SELECT h.id FROM hosts h WHERE h.name = w.name) AS id FROM w)
SELECT name, id FROM ins UNION ALL SELECT name, id FROM old WHERE id IS NOT NULL
"""
_PG_HOSTS_AGAIN = "SELECT name, id FROM hosts WHERE name = ANY(%(names)b::text[])"
_PG_REPORTS = """
WITH input AS (
  SELECT * FROM unnest(%(host)b::integer[], %(lock)b::text[], %(snap)b::text[],
                       %(result)b::text[], %(reason)b::text[], %(reasons)b::text[],
                       %(gpu)b::text[], %(body)b::bytea[]) WITH ORDINALITY
    AS t(host_id, lock_hash, snapshot_hash, result, reason, reasons, gpu, body, n)),
ins AS (
  INSERT INTO host_reports (host_id, lock_hash, snapshot_hash, result, reason, reasons, gpu,
                            body, received_at)
  SELECT host_id, lock_hash, snapshot_hash, result, reason, reasons::json, gpu, body,
         %(when)s FROM input ORDER BY n
  RETURNING id, host_id, lock_hash, result, reason, reasons, gpu),
latest AS (SELECT DISTINCT ON (host_id) * FROM ins ORDER BY host_id, id DESC),
upd AS (
  UPDATE hosts SET (last_report_id, last_result, last_lock, last_reason, last_reasons,
                    last_gpu, last_seen) =
      (SELECT l.id, l.result, l.lock_hash, l.reason, l.reasons, l.gpu, %(when)s
       FROM latest l WHERE l.host_id = hosts.id)
  WHERE hosts.id = ANY(ARRAY(SELECT host_id FROM latest))
    AND (hosts.last_report_id IS NULL
         OR hosts.last_report_id < (SELECT l.id FROM latest l WHERE l.host_id = hosts.id)))
SELECT id FROM ins ORDER BY id
"""
_LITE_INSERT = ("INSERT INTO host_reports (host_id, lock_hash, snapshot_hash, result, reason, "
                "reasons, gpu, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
_LITE_UPDATE = ("UPDATE hosts SET last_report_id = ?, last_result = ?, last_lock = ?, "
                "last_reason = ?, last_reasons = ?, last_gpu = ?, last_seen = ? "
                "WHERE id = ? AND (last_report_id IS NULL OR last_report_id < ?)")
_LITE_NEW_HOST = ('INSERT INTO hosts (name, "group", created_at) VALUES (?, ?, ?) '
                  "ON CONFLICT (name) DO NOTHING")


def insert_reports(conn: Connection, batch: Sequence[NewReport], when: dt.datetime) -> list[int]:
    """Insert ``batch`` (received at ``when``, aware UTC) on ``conn``, inside the caller's
    transaction: hosts not yet known are created with the group of their first report in
    the batch (a known host keeps its group), and each host's ``last_*`` columns point at
    its newest report (the last one of the batch for that host, unless a report with a
    higher id is already its latest: a concurrent batch that committed first). Returns the
    new ids in the order of ``batch``. Raises what the driver raises.
    """
    if conn.dialect.name == "postgresql":
        return _postgresql(conn, batch, when)
    return _sqlite(conn, batch, when)


def _first_groups(batch: Sequence[NewReport]) -> dict[str, str | None]:
    """Each host of ``batch`` and the group of its first report there, sorted by name (so
    concurrent batches take row locks in one order).
    """
    group: dict[str, str | None] = {}
    for r in batch:
        group.setdefault(r.host, r.group)
    return dict(sorted(group.items()))


def _postgresql(conn: Connection, batch: Sequence[NewReport], when: dt.datetime) -> list[int]:
    """:func:`insert_reports` on PostgreSQL: two statements (see the module docstring)."""
    groups = _first_groups(batch)
    names = list(groups)
    ids = {str(n): int(i) for n, i in conn.exec_driver_sql(
        _PG_HOSTS, {"names": names, "groups": list(groups.values()), "when": when})}
    if len(ids) < len(names):  # created by a transaction that committed meanwhile
        missing = [n for n in names if n not in ids]
        ids.update((str(n), int(i)) for n, i in conn.exec_driver_sql(
            _PG_HOSTS_AGAIN, {"names": missing}))
    params = {
        "host": [ids[r.host] for r in batch], "lock": [r.lock_hash for r in batch],
        "snap": [r.snapshot_hash for r in batch], "result": [r.result for r in batch],
        "reason": [r.reason for r in batch],
        "reasons": [json.dumps(list(r.reasons)) for r in batch],
        "gpu": [r.gpu for r in batch], "body": [r.body for r in batch], "when": when}
    new_ids = [int(i) for (i,) in conn.exec_driver_sql(_PG_REPORTS, params)]
    if len(new_ids) != len(batch):  # never expected: the statement inserts every row
        raise RuntimeError(f"{len(batch)} reports inserted, {len(new_ids)} ids returned")
    return new_ids


def _sqlite(conn: Connection, batch: Sequence[NewReport], when: dt.datetime) -> list[int]:
    """:func:`insert_reports` on SQLite, with the sqlite3 cursor (see the module docstring)."""
    from pinning.serve.storage.queries import HOSTS, REPORTS

    stamp = _processor(conn, REPORTS.c.received_at)(when)
    as_json = _processor(conn, REPORTS.c.reasons)
    groups = _first_groups(batch)
    cursor: Any = conn.connection.cursor()
    try:
        created = _processor(conn, HOSTS.c.created_at)(when)
        cursor.executemany(_LITE_NEW_HOST, [(n, g, created) for n, g in groups.items()])
        marks = ", ".join("?" * len(groups))
        cursor.execute(f"SELECT name, id FROM hosts WHERE name IN ({marks})", list(groups))
        ids = {str(n): int(i) for n, i in cursor.fetchall()}
        new_ids: list[int] = []
        latest: dict[int, tuple[Any, ...]] = {}
        for r in batch:
            reasons = as_json(list(r.reasons))
            cursor.execute(_LITE_INSERT, (ids[r.host], r.lock_hash, r.snapshot_hash, r.result,
                                          r.reason, reasons, r.gpu, r.body, stamp))
            rid = int(cursor.lastrowid)
            new_ids.append(rid)
            latest[ids[r.host]] = (rid, r.result, r.lock_hash, r.reason, reasons, r.gpu, stamp,
                                   ids[r.host], rid)
        cursor.executemany(_LITE_UPDATE, [latest[k] for k in sorted(latest)])
    finally:
        cursor.close()
    return new_ids


def _processor(conn: Connection, column: Any) -> Any:
    """The function turning a Python value into what ``column``'s type stores on ``conn``'s
    dialect (the identity when the type needs none).
    """
    bind = column.type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
    return bind if bind is not None else (lambda value: value)
