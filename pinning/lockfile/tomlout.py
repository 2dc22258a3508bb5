"""TOML output shared by the lock writers: the ``#:schema`` hint and a lock's JSON data as
tomlkit items in one pass.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SCHEMA_NAME = "lockfile.schema.json"


def schema_hint(dest: Path | None, name: str = SCHEMA_NAME) -> str | None:
    """Relative path (``/``-separated) from ``dest``'s folder to ``schemas/NAME`` in it or a
    parent folder (``NAME`` is the lock's schema unless given); ``None`` when there is none.
    """
    if dest is None:
        return None
    try:
        folder = dest.resolve().parent
    except (OSError, RuntimeError):  # a loop of links: the write itself refuses it (exit 2)
        return None
    for parent in [folder, *folder.parents]:
        cand = parent / "schemas" / name
        if cand.is_file():
            return os.path.relpath(cand, folder).replace(os.sep, "/")
    return None


def is_aot(value: Any) -> bool:
    """True for a non-empty list of tables (rendered as ``[[name]]`` blocks)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def toml_item(value: Any) -> Any:
    """``value`` (lock JSON) as a tomlkit item: a table, an array of tables, an array or a
    scalar. Linear in the size of ``value``.

    tomlkit, when it adds a key to a table it builds, scans the whole table for where the
    first sub-table starts (so that plain keys stay above ``[sub]`` headers): n keys cost
    O(n**2), 72 s for the 20,000 packages of a frozen host. A table whose values are all
    plain (no sub-table, no array of tables) has no sub-table to keep keys above, so it is
    filled in tomlkit's parser mode, which appends without that scan and gives the same
    bytes (``tests/unit/lockfile/test_render_one_pass.py`` checks it against plain tomlkit).
    """
    import tomlkit

    if isinstance(value, dict):
        t = tomlkit.table()
        plain = not any(isinstance(v, dict) or is_aot(v) for v in value.values())
        if plain:
            t.value.parsing(True)
        for k, v in value.items():
            t.add(k, toml_item(v))
        if plain:
            t.value.parsing(False)
        return t
    if is_aot(value):
        aot = tomlkit.aot()
        for v in value:
            aot.append(toml_item(v))
        return aot
    if isinstance(value, list):
        arr = tomlkit.array()
        arr.extend(value)
        if sum(len(str(v)) + 4 for v in value) > 80:
            arr.multiline(True)
        return arr
    return value
