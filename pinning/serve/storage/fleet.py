"""The fleet side of :class:`~pinning.serve.storage.store.Store`: hosts listed with their
latest report (read from the ``hosts`` table alone), fleet summaries and metrics, and lock
assignments to hosts and groups.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from pinning.errors import UsageError
from pinning.fleet.reason import word_fact
from pinning.serve.storage.models import GroupLockRow, HostRow, LockRow
from pinning.serve.storage.queries import (
    HOSTS,
    insert_ignore,
    rank,
    status_query,
    statuses,
    upsert,
    utc,
)
from pinning.serve.storage.records import RESULTS, FleetSummary, HostStatus, ReasonCount

if TYPE_CHECKING:
    from sqlalchemy import Table
    from sqlalchemy.engine import Connection, Engine

TOP_REASONS = 10


class FleetMixin:
    """Fleet reads and lock assignments of the store (mixed into ``Store``, which provides
    the engines, the clock and the error guard). Every write is one transaction.
    """

    _read: Engine
    _write: Engine
    _clock: Callable[[], dt.datetime]

    def _guard(self) -> AbstractContextManager[None]:
        """Map a database failure to ``UsageError`` (``Store`` defines it)."""
        raise NotImplementedError

    def latest_reports(self, *, lock: str | None = None, status: str | None = None,
                       gpu: str | None = None, group: str | None = None,
                       limit: int | None = None, offset: int = 0) -> list[HostStatus]:
        """Every host that reported, with its latest report, by host name; each filter (lock
        hash, result, GPU, host group) keeps the hosts whose latest report matches. Reads
        the ``hosts`` table alone (indexed per filter, ordered by name).
        """
        query = status_query(lock=lock, status=status, gpu=gpu, group=group)
        query = query.order_by(HOSTS.c.name).offset(offset).limit(limit)
        with self._guard(), self._read.connect() as conn:
            return statuses(conn.execute(query))

    def count_hosts(self, *, lock: str | None = None, status: str | None = None,
                    gpu: str | None = None, group: str | None = None) -> int:
        """How many hosts :meth:`latest_reports` lists with the same filters."""
        from sqlalchemy import func, select

        query = select(func.count()).select_from(
            status_query(lock=lock, status=status, gpu=gpu, group=group).subquery())
        with self._guard(), self._read.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def host_status(self, host: str) -> HostStatus | None:
        """``host`` and its latest report (``None``: unknown or never reported)."""
        query = status_query(lock=None, status=None, gpu=None, group=None)
        with self._guard(), self._read.connect() as conn:
            found = statuses(conn.execute(query.where(HOSTS.c.name == host)))
        return found[0] if found else None

    def fleet_summaries(self, lock: str | None = None,
                        top: int = TOP_REASONS) -> list[FleetSummary]:
        """One summary per lock that hosts' latest reports name (only ``lock`` when given),
        by lock hash: hosts counted by result, and the ``top`` fact words by the number of
        drifting hosts naming them.
        """
        from sqlalchemy import func, select

        counts = select(HOSTS.c.last_lock, HOSTS.c.last_result, func.count()).where(
            HOSTS.c.last_report_id.is_not(None)).group_by(HOSTS.c.last_lock,
                                                          HOSTS.c.last_result)
        words = select(HOSTS.c.last_lock, HOSTS.c.last_reasons).where(
            HOSTS.c.last_result == "drift")
        if lock is not None:
            counts = counts.where(HOSTS.c.last_lock == lock)
            words = words.where(HOSTS.c.last_lock == lock)
        tally: dict[str, dict[str, int]] = {}
        by_word: dict[str, Counter[str]] = {}
        with self._guard(), self._read.connect() as conn:
            for lock_hash, result, n in conn.execute(counts):
                tally.setdefault(lock_hash, dict.fromkeys(RESULTS, 0))[result] = int(n)
            for lock_hash, reasons in conn.execute(words):
                by_word.setdefault(lock_hash, Counter()).update(set(reasons or ()))
        return [FleetSummary(lock_hash=h, hosts=tally[h], top_reasons=[
            ReasonCount(reason=r, hosts=n) for r, n in rank(by_word.get(h, Counter()), top)])
            for h in sorted(tally)]

    def fleet_summary(self, lock_hash: str, top: int = TOP_REASONS) -> FleetSummary:
        """:meth:`fleet_summaries` of ``lock_hash`` alone (zero counts when no host's latest
        report names it).
        """
        found = self.fleet_summaries(lock_hash, top)
        return found[0] if found else FleetSummary(
            lock_hash=lock_hash, hosts=dict.fromkeys(RESULTS, 0), top_reasons=[])

    def drift_by_fact(self) -> dict[str, int]:
        """Drifting hosts per drifting fact's name in their latest report (a host counted
        once per name), for ``/metrics``: the name is a stored word's fact without GPU index
        or values (:func:`~pinning.fleet.reason.word_fact`), so the keys are bounded by what
        pin checks, never by values read from hosts.
        """
        from sqlalchemy import select

        words: Counter[str] = Counter()
        query = select(HOSTS.c.last_reasons).where(HOSTS.c.last_result == "drift")
        with self._guard(), self._read.connect() as conn:
            for (reasons,) in conn.execute(query):
                words.update({word_fact(w) for w in reasons or ()})
        return dict(sorted(words.items()))

    def last_seen_by_host(self) -> dict[str, dt.datetime]:
        """When each host's latest report arrived (UTC), by host name."""
        from sqlalchemy import select

        query = select(HOSTS.c.name, HOSTS.c.last_seen).where(
            HOSTS.c.last_seen.is_not(None)).order_by(HOSTS.c.name)
        with self._guard(), self._read.connect() as conn:
            return {name: utc(seen) for name, seen in conn.execute(query)}

    # Lock assignments

    def assign_host(self, host: str, lock_hash: str | None) -> None:
        """Assign the stored lock ``lock_hash`` to ``host`` (created when unknown); ``None``
        removes its own assignment (its group's applies again). Raises ``UsageError``
        (exit 2) when the lock is not stored.
        """
        from sqlalchemy import update

        with self._guard(), self._write.begin() as conn:
            if lock_hash is not None:
                self._require_lock(conn, lock_hash)
                conn.execute(insert_ignore(conn.dialect.name, HOSTS, "name").values(
                    name=host, group=None, created_at=self._clock()))
            conn.execute(update(HOSTS).where(HOSTS.c.name == host).values(
                assigned_lock=lock_hash))

    def assign_group(self, group: str, lock_hash: str | None) -> None:
        """Assign the stored lock ``lock_hash`` to the host group ``group``; ``None`` removes
        it. Raises ``UsageError`` (exit 2) when the lock is not stored.
        """
        from sqlalchemy import delete

        table: Table = GroupLockRow.__table__  # type: ignore[assignment]
        with self._guard(), self._write.begin() as conn:
            if lock_hash is None:
                conn.execute(delete(table).where(table.c.group == group))
                return
            self._require_lock(conn, lock_hash)
            conn.execute(upsert(conn.dialect.name, table, "group", {
                "group": group, "lock_hash": lock_hash, "assigned_at": self._clock()}))

    def assignments(self) -> tuple[dict[str, str], dict[str, str]]:
        """Every assignment: ``(hosts, groups)``, each a name -> lock hash ``dict`` by name."""
        from sqlalchemy import select

        hosts = select(HostRow.name, HostRow.assigned_lock).where(
            HostRow.assigned_lock.is_not(None)).order_by(HostRow.name)
        groups = select(GroupLockRow.group, GroupLockRow.lock_hash).order_by(GroupLockRow.group)
        with self._guard(), self._read.connect() as conn:
            return ({n: h for n, h in conn.execute(hosts)},
                    {g: h for g, h in conn.execute(groups)})

    def host_groups(self) -> dict[str, str]:
        """The stored group of every host that has one (name -> group); a host keeps the
        group of its first report.
        """
        from sqlalchemy import select

        query = select(HostRow.name, HostRow.group).where(HostRow.group.is_not(None))
        with self._guard(), self._read.connect() as conn:
            return {n: g for n, g in conn.execute(query)}

    def assigned_lock(self, host: str, group: str | None = None) -> str | None:
        """The lock ``host`` is verified against: its own assignment, else that of ``group``
        when given, else that of the host's stored group (``None``: no assignment).
        """
        from sqlalchemy import select

        with self._guard(), self._read.connect() as conn:
            row = conn.execute(select(HostRow.assigned_lock, HostRow.group).where(
                HostRow.name == host)).one_or_none()
            if row is not None and row[0] is not None:
                return str(row[0])
            which = group if group is not None else (row[1] if row is not None else None)
            if which is None:
                return None
            found = conn.execute(select(GroupLockRow.lock_hash).where(
                GroupLockRow.group == which)).scalar_one_or_none()
            return None if found is None else str(found)

    def _require_lock(self, conn: Connection, lock_hash: str) -> None:
        """``UsageError`` (exit 2) unless the lock ``lock_hash`` is stored."""
        from sqlalchemy import select

        if conn.execute(select(LockRow.content_hash).where(
                LockRow.content_hash == lock_hash)).first() is None:
            raise UsageError(f"Lock {lock_hash!r} is not stored, so it cannot be assigned.",
                             hint="Push it first with `pin lock push FILE`.")
