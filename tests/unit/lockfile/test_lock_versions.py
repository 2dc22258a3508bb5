"""The lock version rules (docs/concepts/lock-versions.md): this pin reads 1 and 2; a
larger version is refused (exit 5) telling to upgrade pin; a command updating a lock in
place keeps its version (a v2 target's siblings unchanged).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pinning.cli import main
from pinning.errors import LockfileError
from pinning.lockfile.io import (
    amend,
    lock_json,
    read_lock,
    read_lock_at,
    read_locks,
    write_lock,
)
from pinning.lockfile.multi import READABLE_VERSIONS, render_multi, split
from tests.support.paths import ROOT

H200 = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
MI300X = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"


def _multi(path: Path) -> None:
    m = split({"current": lock_json(read_lock(H200)), "candidate": lock_json(read_lock(MI300X))},
              project="demo")
    path.write_text(render_multi(m, dest=path))


def test_this_pin_reads_versions_1_and_2() -> None:
    assert READABLE_VERSIONS == (1, 2)


def test_a_larger_version_is_refused_exit_5(tmp_path: Path) -> None:
    lock = tmp_path / "pin.lock"
    lock.write_text(H200.read_text().replace("lock-version = 1", "lock-version = 3", 1))
    with pytest.raises(LockfileError, match="lock-version 3 is not supported"):
        read_lock(lock)
    r = CliRunner().invoke(main, ["lock", "show", str(lock)])
    assert r.exit_code == 5 and "upgrade pin" in r.stderr


def test_a_version_1_lock_upgraded_in_place_stays_version_1(tmp_path: Path) -> None:
    lock = tmp_path / "pin.lock"
    shutil.copyfile(H200, lock)
    r = CliRunner().invoke(main, ["lock", "upgrade", str(lock), "--framework",
                                  "pytorch==2.12.0"])
    assert r.exit_code == 0, r.output
    raw, multi, locks = read_locks(lock)
    assert multi is None and b"lock-version = 1\n" in raw
    assert locks[""].frameworks[0].version.value == "2.12.0"


def test_a_version_2_target_updated_in_place_keeps_its_siblings(tmp_path: Path) -> None:
    lock = tmp_path / "pin.lock"
    _multi(lock)
    _, _, before = read_locks(lock)
    read = read_lock_at(lock, "candidate")
    write_lock(amend(read.lock, notes=[*read.lock.notes, "frozen on node-7"]), lock,
               if_unchanged=read.raw, into=read)
    raw, multi, after = read_locks(lock)
    assert multi is not None and b"lock-version = 2\n" in raw
    assert after["current"].content_hash == before["current"].content_hash
    assert after["candidate"].content_hash != before["candidate"].content_hash
    assert after["candidate"].notes[-1] == "frozen on node-7"
