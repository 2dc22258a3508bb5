"""Alembic environment of pin serve's store: runs on the connection that
:func:`pinning.serve.storage.migrate.config` passes (online mode only).
"""

from __future__ import annotations

from alembic import context

from pinning.serve.storage.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("pin's migrations run through pinning.serve.storage.migrate.upgrade()")
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite cannot ALTER most things
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
