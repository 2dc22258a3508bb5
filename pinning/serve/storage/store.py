"""The repository of pin serve (pure of HTTP): locks, host reports, artefacts and tokens over
SQLAlchemy sessions. Every write is one transaction; a method returns only after it
committed, so whatever it acknowledged is stored.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pinning.errors import UsageError
from pinning.serve.storage.engine import create, database_error, default_url
from pinning.serve.storage.models import (
    RESULTS,
    SCOPES,
    AcceptanceRow,
    AuditRow,
    CostVerdictRow,
    HostReportRow,
    HostRow,
    LockRow,
    TokenRow,
)
from pinning.serve.storage.records import (
    FleetSummary,
    LockInfo,
    ReasonCount,
    ReportRecord,
    TokenInfo,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine
    from sqlalchemy.orm import Session

TOP_REASONS = 10
SECRET_PREFIX = "pin_"


def utc(value: dt.datetime) -> dt.datetime:
    """``value`` as an aware UTC time (SQLite hands back the stored UTC time naive)."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def now() -> dt.datetime:
    """The current time, aware, UTC."""
    return dt.datetime.now(dt.UTC)


def secret_hash(secret: str) -> str:
    """Hex sha256 of a token secret: what the ``tokens`` table keeps instead of it."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class Store:
    """pin serve's store at ``url`` (default :func:`~pinning.serve.storage.engine.default_url`).

    Opening migrates the database to the newest shipped revision (``migrate=False``: it
    must already be). Raises ``UsageError`` (exit 2, the URL without its password) for a
    URL that is invalid or a database that cannot be opened or used. ``clock`` returns the
    times stored (aware UTC). Safe to share between threads.
    """

    def __init__(self, url: str | None = None, *, migrate: bool = True,
                 clock: Callable[[], dt.datetime] = now) -> None:
        self.url = url or default_url()
        self._clock = clock
        self._write: Engine = create(self.url, write=True)
        self._read: Engine = (create(self.url, write=False)
                              if self._write.dialect.name == "sqlite" else self._write)
        if migrate:
            from pinning.serve.storage.migrate import upgrade_engine

            with self._guard():
                upgrade_engine(self._write)

    def close(self) -> None:
        """Close every pooled connection."""
        self._write.dispose()
        self._read.dispose()

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Map a database failure (cannot connect, disk, permissions) to ``UsageError``."""
        from sqlalchemy.exc import OperationalError

        try:
            yield
        except OperationalError as exc:
            raise database_error(self.url, exc) from exc

    @contextmanager
    def _session(self, *, write: bool) -> Iterator[Session]:
        """A session in one transaction, committed at the end of the block."""
        from sqlalchemy.orm import Session

        with self._guard(), Session(self._write if write else self._read,
                                    expire_on_commit=False) as session, session.begin():
            yield session

    def _insert_ignore(self, session: Session, row: type[Any], values: dict[str, Any],
                       key: str) -> None:
        """INSERT ``values`` into ``row``'s table unless ``key`` already holds that value
        (``ON CONFLICT DO NOTHING``: safe against a concurrent insert of the same key).
        """
        if session.get_bind().dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            session.execute(pg_insert(row).values(**values).on_conflict_do_nothing(
                index_elements=[key]))
        else:
            from sqlalchemy.dialects.sqlite import insert as lite_insert

            session.execute(lite_insert(row).values(**values).on_conflict_do_nothing(
                index_elements=[key]))

    # Locks

    def store_lock(self, data: bytes) -> str:
        """Store the exact bytes of a lockfile and return its ``content-hash``.

        Idempotent: storing a lock whose hash is already stored keeps the first bytes (a
        lock's hash covers its content, not its header comments). Raises ``LockfileError``
        (exit 5) when ``data`` is not a valid lock.
        """
        from pinning.lockfile.io import parse_lock_bytes

        lock = parse_lock_bytes(data, label="uploaded lock")
        request = lock.request.model_dump(mode="json", by_alias=True, exclude_none=True)
        with self._session(write=True) as session:
            self._insert_ignore(session, LockRow, {
                "content_hash": lock.content_hash, "body": data, "request": request,
                "created_at": self._clock()}, "content_hash")
        return lock.content_hash

    def get_lock(self, content_hash: str) -> bytes | None:
        """The stored bytes of the lock ``content_hash`` (``None``: not stored)."""
        with self._session(write=False) as session:
            row = session.get(LockRow, content_hash)
            return None if row is None else bytes(row.body)

    def list_locks(self) -> list[LockInfo]:
        """Every stored lock, newest first (then by hash)."""
        from sqlalchemy import func, select

        query = select(LockRow.content_hash, LockRow.request, func.length(LockRow.body),
                       LockRow.created_at).order_by(LockRow.created_at.desc(),
                                                    LockRow.content_hash)
        with self._session(write=False) as session:
            return [LockInfo(content_hash=h, request=r, size=int(n), created_at=utc(t))
                    for h, r, n, t in session.execute(query)]

    # Host reports

    def add_report(self, host: str, lock_hash: str, *, result: str,
                   reasons: Iterable[str] = (), snapshot_hash: str | None = None,
                   gpu: str | None = None, body: bytes | None = None,
                   group: str | None = None) -> int:
        """Store one report of ``host`` against ``lock_hash`` and return its id.

        One transaction: the host is created on its first report (with ``group``; a known
        host keeps its group). ``result`` is ``match``, ``drift`` or ``unknown`` (anything
        else: ``UsageError``, exit 2); ``reasons`` one-line drift reasons; ``body`` the exact
        report bytes, when sent.
        """
        from sqlalchemy import select

        if result not in RESULTS:
            raise UsageError(f"Host report of {host!r}: result {result!r} is not one of "
                             f"{', '.join(RESULTS)}.")
        when = self._clock()
        with self._session(write=True) as session:
            self._insert_ignore(session, HostRow, {"name": host, "group": group,
                                                   "created_at": when}, "name")
            host_id = session.scalars(select(HostRow.id).where(HostRow.name == host)).one()
            row = HostReportRow(host_id=host_id, lock_hash=lock_hash, result=result,
                                snapshot_hash=snapshot_hash, reasons=list(reasons), gpu=gpu,
                                body=body, received_at=when)
            session.add(row)
            session.flush()
            return row.id

    def latest_reports(self, *, lock: str | None = None, status: str | None = None,
                       gpu: str | None = None, group: str | None = None,
                       limit: int | None = None, offset: int = 0) -> list[ReportRecord]:
        """The latest report of every host (highest id per host), by host name; each filter
        (lock hash, result, GPU, host group) keeps the hosts whose latest report matches.
        """
        from sqlalchemy import func, select

        latest = (select(func.max(HostReportRow.id).label("id"))
                  .group_by(HostReportRow.host_id).subquery())
        query = (select(HostReportRow, HostRow.name, HostRow.group)
                 .join(latest, HostReportRow.id == latest.c.id)
                 .join(HostRow, HostRow.id == HostReportRow.host_id))
        for column, value in ((HostReportRow.lock_hash, lock), (HostReportRow.result, status),
                              (HostReportRow.gpu, gpu), (HostRow.group, group)):
            if value is not None:
                query = query.where(column == value)
        query = query.order_by(HostRow.name).offset(offset).limit(limit)
        with self._session(write=False) as session:
            return [_record(row, name, grp) for row, name, grp in session.execute(query)]

    def host_history(self, host: str, limit: int = 50) -> list[ReportRecord]:
        """The last ``limit`` reports of ``host``, newest first (``[]``: unknown host)."""
        from sqlalchemy import select

        query = (select(HostReportRow, HostRow.name, HostRow.group)
                 .join(HostRow, HostRow.id == HostReportRow.host_id)
                 .where(HostRow.name == host).order_by(HostReportRow.id.desc()).limit(limit))
        with self._session(write=False) as session:
            return [_record(row, name, grp) for row, name, grp in session.execute(query)]

    def fleet_summary(self, lock_hash: str, top: int = TOP_REASONS) -> FleetSummary:
        """Hosts whose latest report is against ``lock_hash``, counted by result, and the
        ``top`` drift reasons by the number of drifting hosts giving them.
        """
        latest = self.latest_reports(lock=lock_hash)
        counts = Counter(r.result for r in latest)
        reasons = Counter(reason for r in latest if r.result == "drift"
                          for reason in dict.fromkeys(r.reasons))
        ranked = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))[:top]
        return FleetSummary(lock_hash=lock_hash,
                            hosts={result: counts.get(result, 0) for result in RESULTS},
                            top_reasons=[ReasonCount(reason=r, hosts=n) for r, n in ranked])

    # Acceptance results, audits, cost verdicts

    def add_acceptance(self, lock_hash: str, body: bytes, *, passed: bool,
                       signature_verified: bool, image_digest: str | None = None) -> int:
        """Store an acceptance result's exact JSON bytes; return its id."""
        return self._add(AcceptanceRow(lock_hash=lock_hash, body=body, passed=passed,
                                       signature_verified=signature_verified,
                                       image_digest=image_digest,
                                       received_at=self._clock()))

    def add_audit(self, body: bytes, totals: dict[str, int],
                  lock_hash: str | None = None) -> int:
        """Store a porting audit's exact JSON bytes and its totals by verdict; return its id."""
        return self._add(AuditRow(body=body, totals=totals, lock_hash=lock_hash,
                                  received_at=self._clock()))

    def add_cost_verdict(self, body: bytes, lock_hash: str | None = None) -> int:
        """Store a cost verdict's exact JSON bytes; return its id."""
        return self._add(CostVerdictRow(body=body, lock_hash=lock_hash,
                                        received_at=self._clock()))

    def _add(self, row: AcceptanceRow | AuditRow | CostVerdictRow) -> int:
        """Insert ``row`` in its own transaction; its id."""
        with self._session(write=True) as session:
            session.add(row)
            session.flush()
            return row.id

    # Tokens

    def create_token(self, scope: str, host: str | None = None) -> tuple[str, str]:
        """Create a token and return ``(id, secret)``; only the secret's sha256 is stored,
        so the secret is shown this once. ``scope`` is report, publish or admin (anything
        else: ``UsageError``, exit 2); ``host`` binds the token to one host name.
        """
        if scope not in SCOPES:
            raise UsageError(f"Token scope {scope!r} is not one of {', '.join(SCOPES)}.")
        token_id = secrets.token_hex(8)
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)  # 32 random bytes
        with self._session(write=True) as session:
            session.add(TokenRow(id=token_id, secret_sha256=secret_hash(secret), scope=scope,
                                 host=host, created_at=self._clock()))
        return token_id, secret

    def check_token(self, secret: str, scope: str, host: str | None = None) -> bool:
        """Whether ``secret`` is a live token allowing ``scope`` for ``host``.

        An admin token allows every scope; any other allows only its own. A token bound to
        a host allows only requests naming that host (``host=None`` is refused).
        """
        from sqlalchemy import select

        with self._session(write=False) as session:
            row = session.scalars(select(TokenRow).where(
                TokenRow.secret_sha256 == secret_hash(secret))).one_or_none()
        if row is None or row.revoked_at is not None:
            return False
        if row.scope not in (scope, "admin"):
            return False
        return row.host is None or row.host == host

    def revoke_token(self, token_id: str) -> bool:
        """Revoke token ``token_id``; ``False`` when no live token has that id."""
        with self._session(write=True) as session:
            row = session.get(TokenRow, token_id)
            if row is None or row.revoked_at is not None:
                return False
            row.revoked_at = self._clock()
            return True

    def list_tokens(self) -> list[TokenInfo]:
        """Every token's public facts, oldest first (then by id)."""
        from sqlalchemy import select

        query = select(TokenRow).order_by(TokenRow.created_at, TokenRow.id)
        with self._session(write=False) as session:
            return [TokenInfo(id=t.id, scope=t.scope, host=t.host, created_at=utc(t.created_at),
                              revoked_at=None if t.revoked_at is None else utc(t.revoked_at))
                    for t in session.scalars(query)]


def _record(row: HostReportRow, host: str, group: str | None) -> ReportRecord:
    """The record of a report row and its host's name and group."""
    return ReportRecord(id=row.id, host=host, group=group, lock_hash=row.lock_hash,
                        snapshot_hash=row.snapshot_hash, result=row.result,
                        reasons=list(row.reasons), gpu=row.gpu, received_at=utc(row.received_at))

