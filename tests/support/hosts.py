"""Recorded hosts (``tests/data/hosts``): probe one, and the paths the tests change in them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support.paths import HOSTS

if TYPE_CHECKING:
    from pinning.probe.models import HostFacts

MI300X = HOSTS / "mi300x-rocm7.1"
# The Python environment of the recorded MI300X host, relative to its tree.
SITE = "root/opt/venv/lib/python3.12/site-packages"

# The ``host_copy`` fixture (tests/conftest.py): copy a recorded host, return the copy's path.
HostCopy = Callable[[str], Path]


def recorded(name: str, root: Path | None = None) -> HostFacts:
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
