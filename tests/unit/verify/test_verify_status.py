"""Issue 32 §3: ``pin verify`` carries the lock's status. A host can match an unconfirmed
lock exactly; the report says the status first (``lock-status``, and a ``lock-unconfirmed``
warning naming each reason and the source that would settle it), plain verify still says
MATCH and ``--strict`` (warnings are drift) fails on it. A lock written before pin recorded
its status is a note, never drift; a validated lock adds no finding.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pinning.lockfile.io import amend, lock_json, render, seal
from pinning.lockfile.models import Lockfile
from pinning.lockfile.status import LockStatus, StatusReason
from pinning.matrix.load import Matrix
from pinning.verify.report import VerifyReport, node_scope, verify
from tests.support.cli import pin
from tests.support.hosts import MI300X, recorded
from tests.support.locks import frozen_mi300x

REASON = StatusReason(reason="ROCm 7.1.1: a restriction no source covers (test).",
                      settled_by="AMD's system requirements for ROCm 7.1.1")


@pytest.fixture(scope="module")
def validated(matrix: Matrix) -> Lockfile:
    lock = frozen_mi300x(matrix)
    assert lock.status is not None and lock.status.value == "validated"
    return lock


def check(lock: Lockfile, matrix: Matrix, *, strict: bool) -> VerifyReport:
    return verify(lock, recorded("mi300x-rocm7.1"), matrix, lock_name="lock",
                  host_name="host", strict=strict)


def test_validated_lock_adds_no_finding(validated: Lockfile, matrix: Matrix) -> None:
    report = check(validated, matrix, strict=True)
    assert report.lock_status == "validated"
    assert not any(f.fact == "status" for f in report.findings)
    assert report.result == "match", [f.message for f in report.drift]


def test_unconfirmed_lock_is_a_warning_and_strict_drift(validated: Lockfile,
                                                        matrix: Matrix) -> None:
    lock = amend(validated, status=LockStatus.of([REASON]))
    plain = check(lock, matrix, strict=False)
    assert plain.result == "match" and plain.lock_status == "unconfirmed"
    first = plain.findings[0]
    assert (first.code, first.fact, first.severity) == ("lock-unconfirmed", "status", "warning")
    assert REASON.reason.rstrip(".") in first.message and first.source == REASON.settled_by
    strict = check(lock, matrix, strict=True)
    assert strict.result == "drift" and [f.fact for f in strict.drift] == ["status"]
    assert node_scope(strict).result == "drift"  # the node's OS and GPU are what it is about


def test_older_lock_is_a_note_never_drift(validated: Lockfile, matrix: Matrix) -> None:
    data = lock_json(validated)
    data.pop("status")
    data.pop("content-hash")
    older = seal(data)
    report = check(older, matrix, strict=True)
    assert report.lock_status == "not-recorded" and report.result == "match"
    first = report.findings[0]
    assert (first.code, first.severity, first.status) == (
        "lock-status-not-recorded", "info", "not-locked")


def test_cli_says_the_status_first_and_strict_exits_6(validated: Lockfile,
                                                      tmp_path: Path) -> None:
    path = tmp_path / "u.lock"
    path.write_text(render(amend(validated, status=LockStatus.of([REASON]))))
    host = ("--root", str(MI300X / "root"), "--replay", str(MI300X / "commands.toml"))
    plain = pin("verify", str(path), *host)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert plain.stdout.splitlines()[1].startswith("Lock status: unconfirmed")
    strict = pin("verify", str(path), *host, "--strict")
    assert strict.returncode == 6, strict.stdout + strict.stderr
    assert "status" in strict.stderr
