"""pin resolve prints every footnote and every reason of an unconfirmed status a lock carries,
not only the first three."""

from __future__ import annotations

from pathlib import Path

from pinning.lockfile.io import read_lock
from tests.support.cli import pin


def test_resolve_prints_every_note_and_unconfirmed_reason(tmp_path: Path) -> None:
    out = tmp_path / "a.lock"
    p = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0", "-o", str(out))
    assert p.returncode == 0, p.stderr
    lock = read_lock(out)
    assert lock.status is not None and lock.status.value == "unconfirmed"
    reasons = lock.status.reasons
    assert any("does not state the GPU targets" in r.reason for r in reasons)
    assert p.stdout.splitlines()[0].startswith("Status: unconfirmed")
    for r in reasons:
        assert f"  - {r.reason}" in p.stdout and f"settled by: {r.settled_by}" in p.stdout
    for n in lock.notes:
        assert f"Note: {n}" in p.stdout


def test_tensorflow_2_17_1_on_mi355x_is_refused(tmp_path: Path) -> None:
    p = pin("resolve", "--gpu", "mi355x", "--framework", "tensorflow==2.17.1",
            "-o", str(tmp_path / "b.lock"))
    assert p.returncode == 4
    assert not (tmp_path / "b.lock").exists()


def test_ray_lock_prints_its_footnote(tmp_path: Path) -> None:
    p = pin("resolve", "--gpu", "mi300x", "--framework", "ray", "-o", str(tmp_path / "c.lock"))
    assert p.returncode == 0, p.stderr
    assert "ROCm 6.4.1" in p.stdout and "footnote ray_compat" in p.stdout
