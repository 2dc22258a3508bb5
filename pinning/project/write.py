"""The commented ``pin.toml`` that ``pin init`` writes (tomlkit keeps the comments).

The text is built from a :class:`~pinning.project.model.ProjectFile` so what is written is
what the model accepts; :func:`render_project` validates it on the way out.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from pinning.lockfile.tomlout import schema_hint
from pinning.project.model import SCHEMA_NAME, ProjectFile

__all__ = ["render_project"]

_HEADER = (
    "pin project file: the trial described once. Every pin command run in this folder (or "
    "below) takes its values from here; a flag still wins. `pin config show` prints the "
    "effective values and where each came from.",
    "Paths are relative to this file's folder. Keys: schemas/project.schema.json; docs: "
    "docs/workflows/project.md.",
)

_COMMENTS = {
    "project": "What is migrated: the model (ORG/NAME@REVISION or a folder) and the framework "
               "requests (as pin resolve --framework takes them). For pin lock to lock the "
               "Python packages too, add requirements = \"requirements.txt\", indexes = "
               "[\"https://pypi.org/simple\"], python = \"3.12\" and python-platform = "
               "\"x86_64-manylinux_2_28\".",
    "targets": "One table per platform; each key is a pin resolve flag (gpu, os, rocm or "
               "cuda, ...). `pin resolve --target NAME` resolves one.",
    "cost": "pin cost inputs (each key is the flag's name): prices, effort, waivers, "
            "utilisation, life-months (the horizon), ...",
}


def render_project(data: dict[str, Any], *, dest: Path) -> str:
    """``data`` (the file's tables, kebab-case keys) validated as a
    :class:`~pinning.project.model.ProjectFile` and rendered as commented TOML, with a
    ``#:schema`` hint when a schemas folder is found above ``dest``. Raises
    ``pydantic.ValidationError`` for data the model refuses (the caller's flags).
    """
    import tomlkit

    ProjectFile.model_validate(data)
    doc = tomlkit.document()
    hint = schema_hint(dest, SCHEMA_NAME)
    if hint:
        doc.add(tomlkit.comment(f"schema {hint}"))
    for para in _HEADER:
        for line in textwrap.wrap(para, 88):
            doc.add(tomlkit.comment(line))
    for key, value in data.items():
        doc.add(tomlkit.nl())
        for line in textwrap.wrap(_COMMENTS.get(key, ""), 88):
            doc.add(tomlkit.comment(line))
        if key == "targets":
            outer = tomlkit.table(is_super_table=True)
            for name, target in value.items():
                outer.add(name, tomlkit.item(target))
            doc.add(key, outer)
        else:
            doc.add(key, tomlkit.item(value))
    text = tomlkit.dumps(doc)
    if hint:
        text = text.replace("# schema ", "#:schema ", 1)
    return text
