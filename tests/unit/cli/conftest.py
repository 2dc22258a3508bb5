"""Fixtures the CLI tests of the service client share: a fake pin service on loopback
(``tests.unit.remote.service``) and a lock frozen from the recorded mi300x host.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pinning.lockfile.io import write_lock
from pinning.matrix.load import Matrix
from tests.support.locks import lock_for
from tests.unit.remote.service import FakeService, fake_service


@pytest.fixture
def service() -> Iterator[FakeService]:
    """A fake pin service on a free loopback port, stopped after the test."""
    with fake_service() as svc:
        yield svc


@pytest.fixture(scope="module")
def frozen_lock(tmp_path_factory: pytest.TempPathFactory, matrix: Matrix) -> Path:
    """A lock frozen from the recorded mi300x host: that host matches it."""
    from pinning.verify.freeze import freeze
    from tests.support.hosts import recorded

    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    frozen = freeze(lock, recorded("mi300x-rocm7.1"), matrix, host_label="mi300x")[0]
    path = tmp_path_factory.mktemp("locks") / "site.lock"
    write_lock(frozen, path)
    return path
