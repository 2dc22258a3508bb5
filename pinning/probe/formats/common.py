"""Small helpers shared by the tool-output parsers: PCI IDs and ``Key: value`` lines."""

from __future__ import annotations

import re

__all__ = ["KEY_LINE", "norm_key", "norm_pci_id"]

KEY_LINE = re.compile(r"^([^:：]+)[:：](.*)$")
"""A ``Key: value`` line (ASCII or full-width colon); groups: the key and the raw value, both
unstripped (linear on any line: no two repeats share a character)."""


def norm_key(raw: str) -> str:
    """A printed key folded for lookup: lowercase, runs of whitespace made one space."""
    return " ".join(raw.lower().split())


def norm_pci_id(value: str | int | None) -> str | None:
    """Normalise a PCI vendor/device ID to lowercase ``0x%04x``; ``None`` when not an ID.

    Accepts ``0x74A1``, ``74a1``, ``29877`` given as int, and ``0x233510DE`` (NVIDIA
    ``pci.device_id``: device in the high 16 bits).
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        n = value
    else:
        s = value.strip().lower()
        m = re.fullmatch(r"(?:0x)?([0-9a-f]{1,8})", s)
        if not m:
            return None
        n = int(m.group(1), 16)
    if n < 0:
        return None
    if n > 0xFFFF:
        n >>= 16
    if n > 0xFFFF:
        return None
    return f"0x{n:04x}"
