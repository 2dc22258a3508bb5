"""Reading the files of a scanned tree: bounded, non-blocking, binary refused.

Every scanner reads through :func:`read_text` (or :func:`read_bytes`), so a FIFO, a device, a
file that grows without end or a binary blob is a :class:`~pinning.audit.model.Skip` with its
reason, never a hang or a crash.
"""

from __future__ import annotations

from pathlib import Path

from pinning.audit.model import Skip
from pinning.errors import PinError, UsageError
from pinning.util.files import read_regular_bytes

MAX_SOURCE_BYTES = 10 * 1024 * 1024
"""The largest text file scanned (10 MiB): larger sources are generated, not written."""

BINARY_PROBE = 8192
"""A text file with a NUL byte in its first 8 KiB is binary (git's and grep's heuristic)."""


def read_bytes(path: Path, *, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``); raises :class:`Skip`
    naming why it cannot be read (absent, FIFO, device, directory, too large, unreadable).
    """
    try:
        return read_regular_bytes(path, UsageError, label=str(path), limit=limit)
    except PinError as exc:
        reason = exc.message.removeprefix(f"{path}: ").rstrip(".")
        raise Skip(reason) from None


def read_text(path: Path, *, limit: int = MAX_SOURCE_BYTES) -> str:
    """The text of ``path`` decoded as UTF-8 (invalid bytes replaced, a BOM dropped); raises
    :class:`Skip` for what :func:`read_bytes` refuses and for a binary file (a NUL byte in
    the first 8 KiB).
    """
    data = read_bytes(path, limit=limit)
    if b"\0" in data[:BINARY_PROBE]:
        raise Skip("binary file (NUL byte in the first 8 KiB)")
    return data.decode("utf-8", "replace").removeprefix("\ufeff")
