"""pin audit --report-lock with a multi-target lock: the target is named with --target."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from pinning.cli import main
from tests.support.multilock_targets import write_multi
from tests.support.paths import ROOT


def test_audit_report_lock_of_several_targets_needs_target(tmp_path: Path) -> None:
    """Before any work or traffic: several targets and none named is exit 2 naming them;
    --target with a single-target lock is exit 2 too.
    """
    lock = write_multi(tmp_path / "pin.lock")
    project = str(ROOT / "examples" / "migration")
    args = ["audit", project, "--report-to", "http://127.0.0.1:9", "--report-lock", str(lock)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2
    assert "locks 2 targets" in r.output and "--target NAME" in r.output
    single = str(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    r = CliRunner().invoke(main, [*args[:-1], single, "--target", "candidate"])
    assert r.exit_code == 2
    assert "single-target lock" in r.output
