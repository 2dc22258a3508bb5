from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
AMD_SOURCES = DATA / "amd-sources"


@pytest.fixture(scope="session")
def matrix():
    from pinning.matrix.load import load_matrix

    return load_matrix()


@pytest.fixture(autouse=True)
def _no_overlay_env(monkeypatch):
    monkeypatch.delenv("PIN_MATRIX", raising=False)
