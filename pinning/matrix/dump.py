"""Write a matrix file as TOML: deterministic bytes (fields in model order, defaults left out)
through tomlkit, which writes inline tables, arrays of tables and multi-line arrays as a person
would (:mod:`tomllib` reads only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pinning.matrix.models import MatrixFile


def dump_matrix_file(model: MatrixFile, *, header: Sequence[str] = ()) -> str:
    """Serialise a matrix file as TOML (tomlkit), deterministic: fields in model order,
    defaults left out, a ``#:schema`` hint and ``header`` comment lines first.
    """
    import tomlkit

    doc = tomlkit.document()
    doc.add(tomlkit.comment("schema: ../../../schemas/matrix.schema.json"))
    for line in header:
        doc.add(tomlkit.comment(line))
    data = model.model_dump(by_alias=True, exclude_defaults=True, exclude_none=True)
    data = {"schema-version": 1, **{k: v for k, v in data.items() if k != "schema-version"}}
    for k, v in data.items():
        doc.add(k, _toml_value(v))
    text = tomlkit.dumps(doc)
    return text.replace("# schema: ", "#:schema ", 1)


def _toml_value(value: Any) -> Any:
    import tomlkit

    if (
        isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
        and all(not isinstance(x, (list, dict)) for v in value for x in v.values())
    ):
        arr = tomlkit.array()
        for item in value:
            it = tomlkit.inline_table()
            it.update(item)
            arr.append(it)
        arr.multiline(True)
        return arr
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        aot = tomlkit.aot()
        for item in value:
            t = tomlkit.table()
            for k, v in item.items():
                t.add(k, _toml_value(v))
            aot.append(t)
        return aot
    if isinstance(value, list):
        arr = tomlkit.array()
        arr.extend(_toml_value(v) for v in value)
        if sum(len(str(v)) + 4 for v in value) > 80:
            arr.multiline(True)
        return arr
    if isinstance(value, dict):
        t = tomlkit.table()
        for k, v in value.items():
            t.add(k, _toml_value(v))
        return t
    return value
