"""Schema migrations of pin serve's store, shipped in this package (``migrations/``) and run
with Alembic's API (no ``alembic.ini``): :func:`upgrade` brings a database to the newest
revision (a test compares the migrated schema with the models through Alembic's
autogenerate).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy.engine import Connection, Engine

MIGRATIONS = Path(__file__).with_name("migrations")


def config(connection: Connection) -> Config:
    """An Alembic configuration over the shipped migrations that runs on ``connection``."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def upgrade_engine(engine: Engine, revision: str = "head") -> None:
    """Apply every shipped migration up to ``revision`` in one transaction per revision.

    Raises ``UsageError`` (exit 2) when the database is at a revision this pin does not
    ship (:func:`check_known`: a newer pin migrated it). Database errors propagate as
    SQLAlchemy exceptions (the store maps them to a ``PinError``).
    """
    from alembic import command

    with engine.begin() as conn:
        cfg = config(conn)
        check_known(conn, cfg, engine.url.render_as_string(hide_password=False))
        command.upgrade(cfg, revision)


def check_known(connection: Connection, cfg: Config, url: str) -> None:
    """Raise ``UsageError`` (exit 2, ``url`` without its password) when the database on
    ``connection`` records (table ``alembic_version``) a revision that is not among the
    shipped migrations: a newer pin migrated it, and Alembic itself would only fail with
    "Can't locate revision". A database never migrated passes.
    """
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from pinning.errors import UsageError
    from pinning.serve.storage.engine import redact

    script = ScriptDirectory.from_config(cfg)
    known = {s.revision for s in script.walk_revisions()}
    unknown = [r for r in MigrationContext.configure(connection).get_current_heads()
               if r not in known]
    if unknown:
        raise UsageError(
            f"Database {redact(url)!r} was migrated by a newer pin (revision "
            f"{', '.join(unknown)[:80]}, this pin knows up to {script.get_current_head()}).",
            hint="Use that pin version or newer with this database, or give this pin "
                 "another database with --db.")


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` to ``revision`` (default: the newest shipped one).

    Raises ``UsageError`` (exit 2, the URL without its password) when the URL is invalid,
    the database cannot be opened, or a newer pin migrated it (:func:`check_known`).
    """
    from pinning.errors import UsageError
    from pinning.serve.storage.engine import create, database_error

    engine = create(url, write=True)
    try:
        upgrade_engine(engine, revision)
    except UsageError:
        raise
    except Exception as exc:
        raise database_error(url, exc) from exc
    finally:
        engine.dispose()


def head() -> str:
    """The newest revision this pin ships (what :func:`upgrade` brings a database to)."""
    from alembic.script import ScriptDirectory

    return str(ScriptDirectory(str(MIGRATIONS)).get_current_head())


def current(engine: Engine) -> str | None:
    """The revision the database is at (``None``: never migrated)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
