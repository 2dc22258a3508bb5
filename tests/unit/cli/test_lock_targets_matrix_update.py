"""``pin matrix update --lock pin.lock`` with a multi-target lock (lock-version 2): one row
per target, each naming it, against the loopback vendor of tests/unit/matrix/test_update.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pinning.lockfile.io import read_lock
from tests.support.multilock_locktargets import H200, write_multi
from tests.unit.matrix.test_update import NEW, _update, pin, vendor

__all__ = ["pin", "vendor"]  # the fixtures this module uses


def test_a_row_per_target(pin: Any, vendor: str, tmp_path: Path) -> None:
    one = tmp_path / "mi300x.lock"
    made = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch", "--rocm", "<10",
               "-o", str(one))
    assert made.exit_code == 0, made.output
    lock = write_multi(tmp_path / "pin.lock", {"current": read_lock(H200),
                                               "candidate": read_lock(one)})
    done = _update(pin, vendor, NEW, "2026-01-21", "--check", "--lock", str(lock),
                   "--format", "json")
    assert done.exit_code == 6, done.output
    rows = json.loads(done.stdout)["result"]["locks"]
    assert [(r["lock"], r["target"]) for r in rows] == [(str(lock), "current"),
                                                        (str(lock), "candidate")]
    assert not rows[0]["differs"]
    assert rows[1]["differs"] and any("runtime.version" in x for x in rows[1]["after"])
    text = _update(pin, vendor, NEW, "2026-01-21", "--check", "--lock", str(lock))
    assert f"{lock} [targets.current]: resolves the same with the new data" in text.output
    assert f"{lock} [targets.candidate]: resolves differently with the new data" in text.output
