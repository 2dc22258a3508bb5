from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.hosts import HostCopy
from tests.support.paths import HOSTS

if TYPE_CHECKING:
    from pinning.matrix.load import Matrix

# `pin matrix update` writes vendor data into the user's data folder, which every later load
# reads: tests (and the pin processes they start) get an empty one of their own, so a
# developer's own update never changes a test's result.
_DATA_DIR = tempfile.mkdtemp(prefix="pin-test-data-")
os.environ["PIN_DATA_DIR"] = _DATA_DIR
atexit.register(shutil.rmtree, _DATA_DIR, True)


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
