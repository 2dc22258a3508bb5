"""Multi-target locks (lock-version 2) for the verify, fleet and Slurm target tests."""

from __future__ import annotations

from pathlib import Path

from pinning.lockfile.io import lock_json, read_lock
from pinning.lockfile.models import Lockfile
from pinning.lockfile.multi import render_multi, split
from tests.support.paths import ROOT

H200 = ROOT / "lockfiles/h200-pytorch-2.13.0.lock"
MI300X = ROOT / "lockfiles/mi300x-pytorch-2.13.0.lock"
MI250X = ROOT / "lockfiles/mi250x-pytorch-2.6.lock"


def write_multi(dest: Path, targets: dict[str, Lockfile | Path]) -> Path:
    """Write a lock-version 2 file at ``dest`` with a target per entry of ``targets`` (a
    lock, or the path of a single-target lock); return ``dest``."""
    views = {name: lock_json(read_lock(v) if isinstance(v, Path) else v)
             for name, v in targets.items()}
    multi = split(views, project="demo")
    dest.write_text(render_multi(multi, dest=dest))
    return dest


def host_args(name: str) -> list[str]:
    """``--root`` and ``--replay`` of the recorded host ``name`` (tests/data/hosts)."""
    from tests.support.paths import HOSTS

    return ["--root", str(HOSTS / name / "root"), "--replay",
            str(HOSTS / name / "commands.toml")]
