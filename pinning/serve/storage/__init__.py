"""pin serve's storage: SQLAlchemy 2.0 models, shipped Alembic migrations and the
:class:`Store` repository (SQLite by default, PostgreSQL for teams).
"""

from pinning.serve.storage.engine import default_url, redact
from pinning.serve.storage.migrate import upgrade
from pinning.serve.storage.records import NewReport
from pinning.serve.storage.store import Store

__all__ = ["NewReport", "Store", "default_url", "redact", "upgrade"]
