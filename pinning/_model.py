"""Shared pydantic base classes: strict, frozen, kebab-case keys on the wire."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


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
