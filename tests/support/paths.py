"""Where the repository and its test data are."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
AMD_SOURCES = DATA / "amd-sources"
HOSTS = DATA / "hosts"
DUMPS = DATA / "dumps"
