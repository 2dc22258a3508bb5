from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.hosts import HostCopy
from tests.support.paths import HOSTS

if TYPE_CHECKING:
    from pinning.matrix.load import Matrix


@pytest.fixture(scope="session")
def matrix() -> Matrix:
    from pinning.matrix.load import load_matrix

    return load_matrix()


@pytest.fixture(autouse=True)
def _no_overlay_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PIN_MATRIX", raising=False)


@pytest.fixture
def host_copy(tmp_path: Path) -> HostCopy:
    """Copy a recorded host into tmp_path so a test can change one fact."""
    import shutil

    def make(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(HOSTS / name, dest, symlinks=True)
        return dest

    return make
