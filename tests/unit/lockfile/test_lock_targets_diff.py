"""The pure parts of ``pin lock diff`` and ``pin lock export`` for a multi-target lock:
:func:`diff_targets` (targets added, removed, each target's changes), its text and JSON,
and an export's messages naming ``[targets.NAME]`` and ``--target NAME``.
"""

from __future__ import annotations

import pytest

from pinning.errors import UsageError
from pinning.lockfile.diff import diff_locks, diff_targets, targets_diff_text
from pinning.lockfile.export import export_text
from pinning.lockfile.io import amend, read_lock
from tests.support.multilock_locktargets import H200, MI300X


def test_diff_targets() -> None:
    h, m = read_lock(H200), read_lock(MI300X)
    noted = amend(m, notes=[*m.notes, "a note"])
    d = diff_targets({"current": h, "candidate": m}, {"candidate": noted, "edge": h})
    assert (d.added, d.removed) == (["edge"], ["current"])
    assert list(d.changes) == ["candidate"]
    assert d.changes["candidate"] == diff_locks(m, noted)
    assert not d.equal
    assert d.as_json()["targets"]["candidate"]["equal"] is False
    assert targets_diff_text(d).splitlines()[:3] == [
        "target edge: added (only in NEW)", "target current: removed (only in OLD)",
        "== target candidate =="]
    same = diff_targets({"current": h}, {"current": h})
    assert same.equal
    assert same.as_json() == {"equal": True, "added-targets": [], "removed-targets": [],
                              "targets": {"current": {"equal": True, "changes": []}}}
    assert targets_diff_text(same) == "== target current ==\nno differences\n"


def test_export_names_the_target() -> None:
    with pytest.raises(UsageError) as err:
        export_text(read_lock(MI300X), "requirements", label="pin.lock", target="candidate")
    assert err.value.message.startswith("pin.lock [targets.candidate] records no wheels")
    assert "pin lock packages pin.lock --target candidate" in err.value.hint
    with pytest.raises(UsageError) as err:
        export_text(read_lock(MI300X), "pylock", label="one.lock")
    assert err.value.message.startswith("one.lock records no wheels")
    assert "`pin lock packages one.lock`" in err.value.hint
