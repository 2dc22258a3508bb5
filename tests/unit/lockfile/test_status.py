"""Issue 32 §3: every lock says its status. The ``[status]`` model refuses a contradiction
(validated with reasons, unconfirmed without), a lock written before pin recorded it loads
with no status and is shown as "not recorded", never as validated, and ``pin lock show``
says the status on its first line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pinning.lockfile.io import lock_json, read_lock, render, seal
from pinning.lockfile.models import Lockfile
from pinning.lockfile.status import (
    NOT_RECORDED,
    LockStatus,
    StatusReason,
    status_line,
    status_lines,
    status_value,
)
from tests.support.cli import pin
from tests.support.paths import ROOT

SHIPPED = ROOT / "lockfiles"


def older_lock(lock: Lockfile) -> Lockfile:
    """``lock`` as pin wrote it before ``[status]``: the same lock, sealed without it."""
    data = lock_json(lock)
    data.pop("status", None)
    data.pop("content-hash")
    return seal(data)


def test_status_model_refuses_a_contradiction() -> None:
    reason = StatusReason(reason="ROCm 10.0.0: targets not stated.", settled_by="AMD's matrix")
    with pytest.raises(ValidationError, match="validated lock lists no"):
        LockStatus(value="validated", reasons=[reason])
    with pytest.raises(ValidationError, match="each reason"):
        LockStatus(value="unconfirmed")
    assert LockStatus.of([]).value == "validated"
    assert LockStatus.of([reason]).value == "unconfirmed"


def test_status_lines_name_each_reason_and_what_settles_it() -> None:
    st = LockStatus.of([StatusReason(reason="r1", settled_by="s1"),
                        StatusReason(reason="r2", settled_by="s2")])
    lines = status_lines(st)
    assert lines[0].startswith("Status: unconfirmed: 2 things no source confirms")
    assert lines[1:] == ["  - r1", "    settled by: s1", "  - r2", "    settled by: s2"]
    assert status_line(None) == f"Status: {NOT_RECORDED}"
    assert status_value(None) == "not-recorded"


def test_shipped_locks_record_their_status() -> None:
    got = {p.name: status_value(read_lock(p).status) for p in sorted(SHIPPED.glob("*.lock"))}
    # MI300X + PyTorch 2.13.0 rests on ROCm 10.0.0, whose source names gfx942 only through
    # vLLM's row; the H200 lock rests on PyTorch's wheel rows and NVIDIA's driver rule.
    assert got["mi300x-pytorch-2.13.0.lock"] == "unconfirmed"
    assert got["h200-pytorch-2.13.0.lock"] == "validated"
    assert set(got.values()) <= {"validated", "unconfirmed"}


def test_older_lock_loads_as_not_recorded_never_validated(tmp_path: Path) -> None:
    old = older_lock(read_lock(SHIPPED / "h200-pytorch-2.13.0.lock"))
    path = tmp_path / "old.lock"
    path.write_text(render(old))
    back = read_lock(path)
    assert back.status is None and status_value(back.status) == "not-recorded"
    p = pin("lock", "show", str(path))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == f"Status: {NOT_RECORDED}"
    assert "validated" not in p.stdout.splitlines()[0]
    v = pin("lock", "validate", str(path))
    assert v.returncode == 0, v.stdout + v.stderr


def test_lock_show_says_the_status_first() -> None:
    lock = SHIPPED / "mi300x-pytorch-2.13.0.lock"
    status = read_lock(lock).status
    assert status is not None
    p = pin("lock", "show", str(lock))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("Status: unconfirmed")
    for r in status.reasons:
        assert f"  - {r.reason}" in lines and f"    settled by: {r.settled_by}" in lines
