"""Fixtures of pin serve's tests: every ``store_url`` test runs against SQLite and against a
real PostgreSQL (``tests.support.postgres``). Without PostgreSQL's binaries the PostgreSQL
rows skip, unless ``PIN_REQUIRE_POSTGRES=1`` (CI), which makes them fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.postgres import Postgres, start_postgres


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    try:
        server = start_postgres()
    except RuntimeError as exc:
        if os.environ.get("PIN_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PIN_REQUIRE_POSTGRES=1 but {exc}")
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database's URL: a SQLite file, or a fresh database on the test server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'pin.db'}"
    server: Postgres = request.getfixturevalue("postgres")
    return server.new_database()
