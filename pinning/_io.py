"""Small file helpers shared by every writer: atomic writes and content hashes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from pinning.errors import PinError


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


def read_toml(
    path: Path,
    error: type[PinError],
    *,
    label: str,
    unreadable_hint: str | None = None,
    syntax_hint: str | None = None,
) -> tuple[bytes, dict[str, Any]]:
    """Read ``path`` and parse it as TOML; return the raw bytes and the parsed table.

    ``label`` starts every message (``"Matrix file x.toml"``). Raises ``error`` (a
    ``PinError`` subclass) when the file cannot be read or is not UTF-8 TOML, naming the
    line and column tomllib reports.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise error(f"{label}: cannot be read ({exc.strerror or exc}).",
                    hint=unreadable_hint) from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{label}: not valid TOML: {exc}.", hint=syntax_hint) from exc
    return raw, data
