"""Small file helpers shared by every writer: atomic writes and content hashes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename.

    A reader never sees a half-written file and a failure leaves the old file intact.
    Raises ``OSError`` from the file system; callers wrap it in their own ``PinError``.
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def sha256_hex(data: bytes) -> str:
    """Return ``sha256:<64 hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()
