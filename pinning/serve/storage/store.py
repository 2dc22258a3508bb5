"""The repository of pin serve (pure of HTTP): locks, host reports, artefacts and tokens over
SQLAlchemy sessions. Every write is one transaction; a method returns only after it
committed, so whatever it acknowledged is stored.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import string
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pinning.errors import UsageError
from pinning.serve.storage.batch import insert_reports
from pinning.serve.storage.engine import create, database_error, default_url
from pinning.serve.storage.fleet import FleetMixin
from pinning.serve.storage.models import (
    SCOPES,
    AcceptanceRow,
    AuditRow,
    CostVerdictRow,
    HostReportRow,
    HostRow,
    LockRow,
    TokenRow,
)
from pinning.serve.storage.queries import insert_ignore, utc
from pinning.serve.storage.records import (
    ArtefactInfo,
    LockInfo,
    NewReport,
    ReportRecord,
    TokenInfo,
)

if TYPE_CHECKING:
    from sqlalchemy import Table
    from sqlalchemy.engine import Engine
    from sqlalchemy.orm import Session

__all__ = ["NewReport", "Store", "now", "secret_hash", "utc"]

SECRET_PREFIX = "pin_"
#: The shortest hex prefix that names a lock (the Slurm feature ``pin_<12 hex>``).
MIN_PREFIX = 12
#: Artefact kinds and their tables.
KINDS: dict[str, type[AcceptanceRow | AuditRow | CostVerdictRow]] = {
    "acceptance": AcceptanceRow, "audit": AuditRow, "cost": CostVerdictRow}


def now() -> dt.datetime:
    """The current time, aware, UTC."""
    return dt.datetime.now(dt.UTC)


def secret_hash(secret: str) -> str:
    """Hex sha256 of a token secret: what the ``tokens`` table keeps instead of it."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class Store(FleetMixin):
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

    @property
    def dialect(self) -> str:
        """The database kind: ``sqlite`` or ``postgresql``."""
        return str(self._write.dialect.name)

    def revision(self) -> str:
        """The schema revision the database is at (``""``: never migrated). Raises
        ``UsageError`` (exit 2) when the database cannot be reached (health checks).
        """
        from pinning.serve.storage.migrate import current

        with self._guard():
            return current(self._read) or ""

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
        table: Table = LockRow.__table__  # type: ignore[assignment]
        with self._guard(), self._write.begin() as conn:
            conn.execute(insert_ignore(conn.dialect.name, table, "content_hash").values(
                content_hash=lock.content_hash, body=data, request=request,
                created_at=self._clock()))
        return lock.content_hash

    def get_lock(self, content_hash: str) -> bytes | None:
        """The stored bytes of the lock ``content_hash`` (``None``: not stored)."""
        with self._session(write=False) as session:
            row = session.get(LockRow, content_hash)
            return None if row is None else bytes(row.body)

    def find_locks(self, ref: str) -> list[str]:
        """The stored locks' hashes ``ref`` names, sorted: ``sha256:<64 hex>`` exactly, or
        every hash starting with a hex prefix of at least 12 digits (with or without
        ``sha256:``; any case). ``[]``: none, or ``ref`` is neither; more than one: the
        prefix is ambiguous.
        """
        from sqlalchemy import select

        digits = ref.strip().lower().removeprefix("sha256:")
        if not MIN_PREFIX <= len(digits) <= 64 or not set(digits) <= set(string.hexdigits):
            return []
        column = LockRow.content_hash
        where = (column == "sha256:" + digits if len(digits) == 64
                 else column.startswith("sha256:" + digits))
        with self._guard(), self._read.connect() as conn:
            return sorted(str(h) for h in conn.execute(select(column).where(where)).scalars())

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

    def add_reports(self, batch: Sequence[NewReport]) -> list[int]:
        """Store ``batch`` in ONE transaction (group commit) and return the new ids in its
        order; returns only after the commit, so every id returned is stored.

        A host is created on its first report (with that report's group; a known host keeps
        its group). Each host's latest-report columns are updated in the same transaction:
        the last report of the batch for that host wins. Raises ``UsageError`` (exit 2)
        naming the report when one has a :meth:`~NewReport.problem` (a result other than
        ``match``, ``drift`` or ``unknown``, a value too long for its column; nothing of the
        batch is stored), and when the database fails.
        """
        for n, r in enumerate(batch):
            why = r.problem()
            if why:
                raise UsageError(f"Host report {n + 1} of the batch ({r.host[:40]!r}): {why}.")
        if not batch:
            return []
        when = self._clock()
        if self.dialect == "postgresql":  # one statement: its own transaction
            with self._guard(), self._write.connect() as conn:
                return insert_reports(conn.execution_options(isolation_level="AUTOCOMMIT"),
                                      batch, when)
        with self._guard(), self._write.begin() as conn:
            return insert_reports(conn, batch, when)

    def host_history(self, host: str, limit: int = 50) -> list[ReportRecord]:
        """The last ``limit`` reports of ``host``, newest first (``[]``: unknown host)."""
        from sqlalchemy import select

        query = (select(HostReportRow, HostRow.name, HostRow.group)
                 .join(HostRow, HostRow.id == HostReportRow.host_id)
                 .where(HostRow.name == host).order_by(HostReportRow.id.desc()).limit(limit))
        with self._session(write=False) as session:
            return [_record(row, name, grp) for row, name, grp in session.execute(query)]

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

    def list_artefacts(self, kind: str, lock_hash: str | None = None,
                       limit: int = 100) -> list[ArtefactInfo]:
        """The ``limit`` newest artefacts of ``kind`` (``acceptance``, ``audit``, ``cost``;
        another: ``UsageError``, exit 2), of ``lock_hash`` only when given; newest first.
        """
        from sqlalchemy import select

        row = _kind(kind)
        columns = [c for c in row.__table__.columns if c.name != "body"]
        query = select(*columns).order_by(row.id.desc()).limit(limit)
        if lock_hash is not None:
            query = query.where(row.lock_hash == lock_hash)
        with self._guard(), self._read.connect() as conn:
            found = [dict(r._mapping) for r in conn.execute(query)]
        return [ArtefactInfo(kind=kind, id=r["id"], lock_hash=r["lock_hash"],
                             received_at=utc(r["received_at"]), passed=r.get("passed"),
                             signature_verified=r.get("signature_verified"),
                             totals=r.get("totals"), image_digest=r.get("image_digest"))
                for r in found]

    def get_artefact(self, kind: str, artefact_id: int) -> bytes | None:
        """The exact bytes stored as artefact ``artefact_id`` of ``kind`` (``None``: no such
        artefact; an unknown kind: ``UsageError``, exit 2).
        """
        from sqlalchemy import select

        row = _kind(kind)
        with self._guard(), self._read.connect() as conn:
            body = conn.execute(select(row.body).where(row.id == artefact_id)).scalar()
        return None if body is None else bytes(body)

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

    def token_info(self, secret: str) -> TokenInfo | None:
        """The public facts of the token whose secret is ``secret``, live or revoked
        (``None``: no such token).
        """
        from sqlalchemy import select

        with self._session(write=False) as session:
            row = session.scalars(select(TokenRow).where(
                TokenRow.secret_sha256 == secret_hash(secret))).one_or_none()
            return None if row is None else _token(row)

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
            return [_token(t) for t in session.scalars(query)]


def _record(row: HostReportRow, host: str, group: str | None) -> ReportRecord:
    """The record of a report row and its host's name and group."""
    return ReportRecord(id=row.id, host=host, group=group, lock_hash=row.lock_hash,
                        snapshot_hash=row.snapshot_hash, result=row.result, reason=row.reason,
                        reasons=list(row.reasons), gpu=row.gpu, received_at=utc(row.received_at))


def _token(row: TokenRow) -> TokenInfo:
    """The public facts of a token row."""
    return TokenInfo(id=row.id, scope=row.scope, host=row.host, created_at=utc(row.created_at),
                     revoked_at=None if row.revoked_at is None else utc(row.revoked_at))


def _kind(kind: str) -> type[AcceptanceRow | AuditRow | CostVerdictRow]:
    """The table of artefact ``kind``; ``UsageError`` (exit 2) for another."""
    try:
        return KINDS[kind]
    except KeyError:
        raise UsageError(f"Artefact kind {kind!r} is not one of {', '.join(KINDS)}.") from None

