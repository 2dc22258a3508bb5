"""Fixtures of pin serve's tests: every ``store_url`` test runs against SQLite and against a
real PostgreSQL (``tests.support.postgres``). Without PostgreSQL's binaries the PostgreSQL
rows skip, unless ``PIN_REQUIRE_POSTGRES=1`` (CI), which makes them fail. ``store`` is a
:class:`~pinning.serve.storage.Store` on ``store_url`` (a test module may define its own, with
a clock); ``lock_bytes`` and ``snapshot`` are the lock matching the recorded MI300X host and
that host's snapshot (``tests.support.serve``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinning.serve.storage import Store
from tests.support.postgres import Postgres, postgres_for_test
from tests.support.serve import mi300x_lock_bytes, mi300x_snapshot


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    server = postgres_for_test()
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


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """A :class:`Store` on ``store_url``, closed after the test."""
    s = Store(store_url)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def lock_bytes() -> bytes:
    """The lock matching the recorded MI300X host, as bytes."""
    return mi300x_lock_bytes()


@pytest.fixture(scope="module")
def snapshot() -> dict[str, Any]:
    """The recorded MI300X host's snapshot."""
    return mi300x_snapshot()
