"""Values a ``pin freeze`` set in a lock, and the guard that keeps a fresh resolve from
writing over them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinning.errors import LockfileError
from pinning.lockfile.io import lock_json, read_lock_bytes
from pinning.lockfile.models import Lockfile

__all__ = ["frozen_fields", "guard_frozen", "is_pinned"]


def frozen_fields(lock: Lockfile) -> list[str]:
    """Dotted names of the values a ``pin freeze`` set (``origin = "host"``, the firmware
    blocks, ``packages``, the frozen ``environment``): what writing a fresh resolve over
    ``lock`` would drop. Empty for a lock no host was frozen into.
    """
    out: list[str] = []

    def walk(path: str, value: Any) -> None:
        if is_pinned(value):
            if value.get("origin") == "host":
                out.append(path)
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{path}.{k}" if path else k, v)
        elif isinstance(value, list) and path == "frameworks":
            for fw in value:
                walk(f"frameworks.{fw.get('name')}", fw)

    data = lock_json(lock)
    for key in ("target", "firmware", "kernel-driver", "os", "kernel", "runtime", "frameworks"):
        walk(key, data.get(key))
    if lock.firmware.blocks is not None:
        out.append("firmware.blocks")
    if lock.packages is not None:
        out.append("packages")
    if lock.frozen is not None and lock.environment:
        out.append("environment")
    return out


def is_pinned(value: Any) -> bool:
    """True for the JSON form of a :class:`~pinning.lockfile.models.Pinned` value."""
    return isinstance(value, dict) and "origin" in value


def guard_frozen(path: Path, *, force: bool, command: str = "pin resolve") -> bytes | None:
    """Refuse to replace a lock that holds frozen host values at ``path``, unless ``force``.

    Returns the bytes now at ``path`` when it is a regular file (pass them to
    :func:`write_lock` as ``if_unchanged`` so a write made meanwhile is not lost), else
    ``None``. A file that is not a valid lock is not judged here. Raises ``LockfileError``
    (exit 5), nothing written, naming the frozen values, when ``path`` holds any
    (:func:`frozen_fields`) and ``force`` is false.
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        raw, old = read_lock_bytes(path)
    except LockfileError:
        try:
            return path.read_bytes()
        except OSError:
            return None
    frozen = frozen_fields(old)
    if frozen and not force:
        shown = ", ".join(frozen[:6]) + (f" and {len(frozen) - 6} more" if len(frozen) > 6 else "")
        raise LockfileError(
            f"{path} holds {len(frozen)} value(s) frozen from a host ({shown}); {command} "
            "would replace them with a fresh resolve and lose them. Nothing was written.",
            hint=f"Run `pin lock upgrade {path}` to re-resolve and keep the frozen values, "
                 "write elsewhere with -o FILE, or pass --force to replace the lock.",
        )
    return raw
