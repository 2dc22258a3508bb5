"""Value shapes every section of a lock shares: where a value came from, a digest."""

from __future__ import annotations

from typing import Literal

Origin = Literal["matrix", "user", "host", "derived", "unknown"]
"""Where a lock value came from: the matrix, a flag, the probed host, derived from other
values, or not known."""

DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
"""A digest as the lock writes it: ``sha256:<64 hex>``."""
