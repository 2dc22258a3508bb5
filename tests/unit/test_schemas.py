"""The committed JSON schemas are what pin generates."""

from __future__ import annotations

from pinning.schemas import generate
from tests.support.paths import ROOT


def test_committed_schemas_are_current() -> None:
    for name, text in generate().items():
        committed = (ROOT / "schemas" / name).read_text()
        assert committed == text, f"schemas/{name} is stale: run `make schemas`"
