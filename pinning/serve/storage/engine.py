"""Database URLs and engines for pin serve's store: SQLite by default, PostgreSQL for teams.

The default database is ``pin.db`` in pin's data directory: ``$XDG_DATA_HOME/pin/`` when
``XDG_DATA_HOME`` is an absolute path, else ``~/.local/share/pin/`` (XDG Base Directory
Specification, https://specifications.freedesktop.org/basedir-spec/latest/, read
2026-12-01: a relative ``$XDG_DATA_HOME`` is invalid and ignored). SQLite runs in WAL mode
with foreign keys on; its write transactions start with ``BEGIN IMMEDIATE`` so concurrent
writers wait for each other (busy timeout) instead of failing on a read-to-write upgrade
(https://www.sqlite.org/lang_transaction.html, read 2026-12-01). It syncs with
``synchronous=NORMAL``: in WAL mode a commit then survives a crash or ``kill -9`` of the
process, and only a power loss or operating-system crash can roll back the last commits
("Transactions are durable across application crashes regardless of the synchronous
setting or journal mode", https://www.sqlite.org/pragma.html#pragma_synchronous, read
2026-12-01), while a commit no longer waits for an fsync. ``postgresql://`` URLs use
psycopg 3.

Two ``pin serve`` processes may share one SQLite file only on one host with the file on a
local file system: WAL mode keeps its index in shared memory, so "WAL does not work over a
network filesystem" (https://www.sqlite.org/wal.html, read 2026-12-01). For processes on
several hosts, or a database on NFS or another network file system, use PostgreSQL.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinning.errors import UsageError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL, Engine

SQLITE_BUSY_TIMEOUT_S = 30.0
DB_NAME = "pin.db"
_PASSWORD_QUERY = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)
URL_HINT = ("Pass --db sqlite:///PATH (a file in a writable folder) or "
            "--db postgresql://USER@HOST:PORT/DATABASE, or omit --db for the default file.")


def data_dir() -> Path:
    """The data directory of pin (see the module docstring); the temp folder's ``pin-<uid>``
    when there is no home folder.
    """
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "pin"
    try:
        return Path.home() / ".local" / "share" / "pin"
    except RuntimeError:
        return Path(tempfile.gettempdir()) / f"pin-{os.getuid()}"


def default_url() -> str:
    """``sqlite:///<data dir>/pin.db`` (the folder is created when the store opens)."""
    return f"sqlite:///{data_dir() / DB_NAME}"


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for messages and logs): the one in
    the user information (up to the last ``@`` before the path) and a ``password`` query
    parameter (libpq's connection URIs take one:
    https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNSTRING, read 2026-12-01).
    """
    scheme, sep, rest = url.partition("://")
    if sep:
        authority, slash, tail = rest.partition("/")
        user, at, hostport = authority.rpartition("@")
        if at and ":" in user:
            authority = user.split(":", 1)[0] + ":***@" + hostport
        rest = authority + slash + tail
        url = scheme + sep + rest
    return _PASSWORD_QUERY.sub(r"\1***", url)


def parse_url(url: str) -> URL:
    """The SQLAlchemy URL of ``url``, with ``postgresql://`` mapped to psycopg 3.

    Raises ``UsageError`` (exit 2) naming the redacted URL when it cannot be parsed, names
    a database other than SQLite or PostgreSQL, or is an in-memory SQLite database (which
    would lose every report when the service stops).
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise UsageError(f"Database URL {redact(url)!r} cannot be parsed ({exc}).",
                         hint=URL_HINT) from exc
    driver = parsed.drivername
    if driver == "postgresql":
        return parsed.set(drivername="postgresql+psycopg")
    if driver in ("sqlite", "sqlite+pysqlite"):
        if not parsed.database or parsed.database == ":memory:":
            raise UsageError(f"Database URL {redact(url)!r} is an in-memory SQLite database, "
                             "which would lose every stored report when pin serve stops.",
                             hint=URL_HINT)
        return parsed
    if driver == "postgresql+psycopg":
        return parsed
    raise UsageError(f"Database URL {redact(url)!r}: {driver!r} is not a database pin serve "
                     "stores in (it uses sqlite:// or postgresql://).", hint=URL_HINT)


def create(url: str, *, write: bool) -> Engine:
    """An engine for ``url`` (see :func:`parse_url`, which raises ``UsageError``).

    SQLite: the default file's folder is created; connections get WAL, ``synchronous=NORMAL``
    (see the module docstring), foreign keys and a busy timeout of
    :data:`SQLITE_BUSY_TIMEOUT_S` seconds; with ``write`` every transaction
    begins ``IMMEDIATE`` (takes the write lock first). PostgreSQL: ``write`` changes nothing;
    values it TOASTs are compressed with lz4 where the server has it (:func:`_toast_lz4`).
    """
    from sqlalchemy import create_engine, event

    parsed = parse_url(url)
    if not parsed.drivername.startswith("sqlite"):
        pg = create_engine(parsed, pool_pre_ping=True)
        event.listen(pg, "connect", _toast_lz4)
        return pg
    path = Path(parsed.database or "")
    if url == default_url():
        path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})
    begin = "BEGIN IMMEDIATE" if write else "BEGIN"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # pysqlite's own BEGIN off; "begin" below emits it
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql(begin)

    return engine


def _toast_lz4(dbapi_conn: Any, _record: Any) -> None:
    """Compress the stored values PostgreSQL TOASTs (a report's 2 KB+ snapshot) with lz4,
    not its default pglz, on servers that have it (PostgreSQL 14 or later, built with
    lz4; elsewhere the default stays): measured on 2026-12-05 on this project's 2-core
    machine, pglz took 15 to 20 us of the server's CPU per 3.7 KB report, a fifth of what
    storing it costs (``default_toast_compression``,
    https://www.postgresql.org/docs/15/runtime-config-client.html, read 2026-12-05).
    Values stored either way read back the same.
    """
    import psycopg

    if dbapi_conn.info.server_version < 140000:
        return
    try:
        with dbapi_conn.cursor() as cursor:
            cursor.execute("SET default_toast_compression = lz4")
        dbapi_conn.commit()
    except psycopg.Error:  # a server built without lz4: pglz stays
        dbapi_conn.rollback()


def database_error(url: str, exc: BaseException) -> UsageError:
    """The ``UsageError`` (exit 2) for a database at ``url`` that cannot be opened or used:
    names the URL without its password and the driver's first line of explanation.
    """
    detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    why = detail[0] if detail else type(exc).__name__
    return UsageError(f"Database {redact(url)!r} cannot be opened: {why}.",
                      hint="Check the path or server, its permissions and credentials. "
                      + URL_HINT)
