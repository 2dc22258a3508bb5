"""Schema migrations of pin serve's store, shipped in this package (``migrations/``) and run
with Alembic's API (no ``alembic.ini``): :func:`upgrade` brings a database to the newest
revision, :func:`schema_diff` lists what differs between the database and the models.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

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

    Database errors propagate as SQLAlchemy exceptions (the store maps them to a
    ``PinError``).
    """
    from alembic import command

    with engine.begin() as conn:
        command.upgrade(config(conn), revision)


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` to ``revision`` (default: the newest shipped one).

    Raises ``UsageError`` (exit 2, the URL without its password) when the URL is invalid
    or the database cannot be opened.
    """
    from pinning.serve.storage.engine import create, database_error

    engine = create(url, write=True)
    try:
        upgrade_engine(engine, revision)
    except Exception as exc:
        raise database_error(url, exc) from exc
    finally:
        engine.dispose()


def current(engine: Engine) -> str | None:
    """The revision the database is at (``None``: never migrated)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def schema_diff(engine: Engine) -> list[Any]:
    """Alembic's autogenerate comparison of the database with the models: ``[]`` when the
    migrated schema is exactly what the models declare (tables, columns, types, indexes,
    unique constraints, foreign keys).
    """
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from pinning.serve.storage.models import Base

    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))
