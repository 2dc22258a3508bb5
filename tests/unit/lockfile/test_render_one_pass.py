"""Writing a lock is linear in its size: plain tables (``[packages]``, ``[environment]``,
``[firmware.blocks]``) are filled without tomlkit's per-key scan, and the bytes are those
plain tomlkit writes (the example locks are checked byte for byte in test_lockfile.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.lockfile.io import amend, lock_json, read_lock, render
from pinning.lockfile.tomlout import toml_item
from tests.support.paths import ROOT

LOCK = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"


def _plain_tomlkit(value: Any) -> Any:
    """The item as render built it before: every key through tomlkit's own ``add``."""
    import tomlkit

    if isinstance(value, dict):
        t = tomlkit.table()
        for k, v in value.items():
            t.add(k, _plain_tomlkit(v))
        return t
    return toml_item(value)


def _dumped(table: Any) -> str:
    import tomlkit

    doc = tomlkit.document()
    doc.add("head", 1)
    doc.add("t", table)
    doc.add("after", {"x": 1})
    return tomlkit.dumps(doc)


keys = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=12)
scalars = st.one_of(st.text(max_size=20), st.integers(-10**6, 10**6), st.booleans(),
                    st.lists(st.text(max_size=30), max_size=5))


@given(st.dictionaries(keys, scalars, max_size=30))
@settings(max_examples=200)
def test_plain_tables_give_the_bytes_plain_tomlkit_gives(table: dict[str, Any]) -> None:
    assert _dumped(toml_item(table)) == _dumped(_plain_tomlkit(table))


def test_frozen_lock_with_many_packages_renders_and_reads_back(tmp_path: Path) -> None:
    lock = amend(read_lock(LOCK), packages={f"pkg-{i}": f"{i}.0" for i in range(3000)},
                 environment={"HSA_OVERRIDE_GFX_VERSION": "9.4.2"})
    text = render(lock)
    assert tomllib.loads(text)["packages"] == lock_json(lock)["packages"]
    assert text.count("\npkg-") == 3000
    path = tmp_path / "frozen.lock"
    path.write_text(text)
    assert read_lock(path) == lock
