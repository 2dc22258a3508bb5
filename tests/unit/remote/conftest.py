"""Fixtures of the pin service client tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.remote.service import FakeService, fake_service


@pytest.fixture
def service() -> Iterator[FakeService]:
    with fake_service() as svc:
        yield svc
