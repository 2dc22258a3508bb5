"""Multi-target locks (``lock-version = 2``) for the tests of the ``pin lock`` subcommands
and ``pin freeze`` with ``--target``: built from real locks with
:func:`pinning.lockfile.multi.split`, as ``pin lock`` writes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinning.lockfile.io import lock_json, read_lock, read_locks
from pinning.lockfile.models import Lockfile
from pinning.lockfile.multi import render_multi, split
from tests.support.paths import ROOT

H200 = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
MI300X = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"


def write_multi(path: Path, views: dict[str, Lockfile], *, project: str | None = "demo") -> Path:
    """Write ``views`` (target name -> its lock) as one multi-target lock at ``path``."""
    multi = split({name: lock_json(lk) for name, lk in views.items()}, project=project)
    path.write_text(render_multi(multi, dest=path))
    return path


def shipped_multi(path: Path) -> Path:
    """``current`` = the shipped H200 lock, ``candidate`` = the shipped MI300X lock."""
    return write_multi(path, {"current": read_lock(H200), "candidate": read_lock(MI300X)})


def views(path: Path) -> dict[str, dict[str, Any]]:
    """Each target's view of the multi-target lock at ``path`` as JSON data."""
    _, multi, locks = read_locks(path)
    assert multi is not None, f"{path} is not a multi-target lock"
    return {name: lock_json(lk) for name, lk in locks.items()}
