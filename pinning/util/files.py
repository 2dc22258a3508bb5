"""Small file helpers shared by every writer: atomic writes and content hashes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
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


MAX_INPUT_BYTES = 64 * 1024 * 1024  # lockfiles, matrix files, snapshots, recordings


def read_regular_bytes(path: Path, error: type[PinError], *, label: str,
                       hint: str | None = None) -> bytes:
    """The bytes of the regular file ``path`` (at most 64 MiB).

    Raises ``error`` naming ``label`` when it is absent, unreadable, not a regular file (a
    FIFO or device would block or never end) or larger than the limit.
    """
    try:
        st = Path(path).stat()
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{label}: not a regular file.", hint=hint)
        if st.st_size > MAX_INPUT_BYTES:
            raise error(f"{label}: larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB.",
                        hint=hint)
        return Path(path).read_bytes()
    except OSError as exc:
        raise error(f"{label}: cannot be read ({exc.strerror or exc}).", hint=hint) from exc


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
    raw = read_regular_bytes(path, error, label=label, hint=unreadable_hint)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{label}: not valid TOML: {exc}.", hint=syntax_hint) from exc
    except RecursionError as exc:
        raise error(f"{label}: not valid TOML: nested too deeply.", hint=syntax_hint) from exc
    return raw, data
