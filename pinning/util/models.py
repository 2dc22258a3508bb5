"""Shared pydantic base classes: strict, frozen, kebab-case keys on the wire."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


def kebab(name: str) -> str:
    """Map a Python field name to its TOML/JSON key (``min_driver`` -> ``min-driver``)."""
    return name.replace("_", "-")


class Strict(BaseModel):
    """Base of every wire model: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        alias_generator=kebab,
        validate_default=True,
    )


def error_location(loc: Sequence[int | str], data: Any) -> str:
    """Render a pydantic error location as ``releases[3] (rocm 7.2.0).frameworks[0]``: list
    indexes in brackets, with the row's ``runtime version`` or ``id`` when ``data`` has one.
    """
    out = ""
    node: Any = data
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            try:
                node = node[part]
            except (IndexError, KeyError, TypeError):
                node = None
            if isinstance(node, dict) and "version" in node and "runtime" in node:
                out += f" ({node['runtime']} {node['version']})"
            elif isinstance(node, dict) and "id" in node:
                out += f" ({node['id']})"
        else:
            out += ("." if out else "") + str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out


def validation_summary(exc: ValidationError, data: Any, *, limit: int = 5) -> str:
    """``field: problem; field: problem (and N more)`` for a file's validation errors,
    unknown fields first (they are the typos an author needs to see).
    """
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    parts = [f"{error_location(e['loc'], data) or '(top level)'}: {e['msg']}"
             for e in errors[:limit]]
    more = f" (and {len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more
