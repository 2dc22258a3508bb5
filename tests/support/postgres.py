"""A private PostgreSQL server for tests, from Debian's ``postgresql`` binaries.

``start_postgres()`` runs ``initdb`` (trust auth for user ``pin``) in a fresh folder under
``/tmp`` and ``pg_ctl start`` listening only on 127.0.0.1 at a free port, its unix socket in
that folder; :meth:`Postgres.stop` stops it and removes the folder. PostgreSQL refuses to
run as root ("root execution of the PostgreSQL server is not permitted",
postgres/postgres:src/backend/main/main.c), so as root the folder is handed to the
``postgres`` user and the binaries run through ``runuser -u postgres --``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

from tests.support.components import free_port

BIN = Path(os.environ.get("PIN_POSTGRES_BIN", "/usr/lib/postgresql/15/bin"))
USER = "pin"


@dataclass
class Postgres:
    """A running server: ``port`` on 127.0.0.1, superuser ``USER`` with trust auth."""

    root: Path
    port: int
    prefix: list[str]
    _ids: count[int] = field(default_factory=count)

    def url(self, database: str = "postgres") -> str:
        """A ``postgresql://`` URL (psycopg 3) for ``database``."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database and return its URL."""
        name = f"t{os.getpid()}_{next(self._ids)}"
        self._psql(f"CREATE DATABASE {name}")
        return self.url(name)

    def _psql(self, sql: str) -> None:
        subprocess.run([*self.prefix, str(BIN / "psql"), "-h", "127.0.0.1", "-p", str(self.port),
                        "-U", USER, "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qc", sql],
                       check=True, capture_output=True, timeout=60)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its folder."""
        subprocess.run([*self.prefix, str(BIN / "pg_ctl"), "-D", str(self.root / "data"), "-m",
                        "fast", "-w", "stop"], capture_output=True, timeout=60, check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def available() -> str | None:
    """Why no server can be started here (``None``: it can)."""
    for tool in ("initdb", "pg_ctl", "psql"):
        if not (BIN / tool).is_file():
            return f"PostgreSQL's {tool} is not installed in {BIN} (Debian package postgresql)"
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return "running as root and runuser is missing (PostgreSQL refuses root)"
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` user (PostgreSQL refuses root)"
    return None


def start_postgres(*, durable: bool = False) -> Postgres:
    """Initialise and start a private server; ``RuntimeError`` saying why it could not.

    Tests run it without flushing to disk (``fsync``, ``synchronous_commit`` and
    ``full_page_writes`` off: faster, and a test never survives a power loss);
    ``durable`` keeps PostgreSQL's defaults, as ``bench/bench_serve.py`` measures.
    """
    why = available()
    if why:
        raise RuntimeError(why)
    root = Path(tempfile.mkdtemp(prefix="pinpg-", dir="/tmp"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(root, entry.pw_uid, entry.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    data = root / "data"
    try:
        _run([*prefix, str(BIN / "initdb"), "-D", str(data), "-U", USER, "--auth=trust",
              "-E", "UTF8", "--no-sync", "--no-instructions"])
        options = f"-h 127.0.0.1 -p {port} -k {root}"
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        _run([*prefix, str(BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l",
              str(root / "log"), "-w", "-t", "60", "start"])
    except RuntimeError:
        log = root / "log"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {tail}") from None
    return Postgres(root=root, port=port, prefix=prefix)


def _run(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {proc.stderr.strip() or proc.stdout.strip()}")


def postgres_for_test(*, durable: bool = False) -> Postgres:
    """:func:`start_postgres` for a test: when PostgreSQL cannot start, the test is skipped,
    or fails under ``PIN_REQUIRE_POSTGRES=1`` (CI, where it must run)."""
    import pytest

    try:
        return start_postgres(durable=durable)
    except RuntimeError as exc:
        if os.environ.get("PIN_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PIN_REQUIRE_POSTGRES=1 but {exc}")
        pytest.skip(str(exc))
