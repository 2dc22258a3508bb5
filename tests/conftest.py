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


HOSTS = DATA / "hosts"


def recorded(name: str, root: Path | None = None):
    """Probe the recorded host ``name`` (optionally a modified copy of its tree at ``root``)."""
    from pinning.matrix.load import load_matrix
    from pinning.probe.host import probe_host
    from pinning.util.proc import ReplayRunner

    base = root or HOSTS / name
    runner = ReplayRunner(base / "commands.toml")
    m = load_matrix()

    def identify(device: str) -> str | None:
        hit = m.gpu_by_pci(device)
        return hit.id if hit else None

    return probe_host(base / "root", runner, environ=runner.environment, identify=identify)


@pytest.fixture
def host_copy(tmp_path):
    """Copy a recorded host into tmp_path so a test can change one fact."""
    import shutil

    def make(name: str) -> Path:
        dest = tmp_path / name
        shutil.copytree(HOSTS / name, dest, symlinks=True)
        return dest

    return make
