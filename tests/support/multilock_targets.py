"""Multi-target locks (lock-version 2) for the tests of the commands that take ``--target``
(build, sign, lock push, the service, accept, cost, report): two targets, ``current``
(an H200 lock) and ``candidate`` (an MI300X lock), each as shipped or as given.
"""

from __future__ import annotations

from pathlib import Path

from pinning.lockfile.io import lock_json, read_lock
from pinning.lockfile.models import Lockfile
from pinning.lockfile.multi import render_multi, split
from tests.support.paths import ROOT

CURRENT = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
CANDIDATE = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"


def write_multi(path: Path, views: dict[str, Lockfile] | None = None) -> Path:
    """Write a multi-target lock to ``path`` with ``views`` (target name -> its lock;
    default ``current`` and ``candidate`` from the shipped locks) and return ``path``.
    """
    views = views or {"current": read_lock(CURRENT), "candidate": read_lock(CANDIDATE)}
    multi = split({name: lock_json(lock) for name, lock in views.items()}, project="demo")
    path.write_text(render_multi(multi, dest=path), encoding="utf-8")
    return path
