"""Firmware blocks are judged by where they come from: a block only amd-smi prints is not
probed when amd-smi did not run (a --root probe without --replay or --chroot), never
"changed"; a block whose source was read and is gone is a change."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.host import probe_host
from pinning.probe.models import HostFacts
from pinning.util.proc import NoRunner
from pinning.verify.report import VerifyReport, verify
from tests.support.hosts import MI300X, HostCopy, recorded
from tests.support.locks import frozen_mi300x


@pytest.fixture(scope="module")
def frozen(matrix: Matrix) -> Lockfile:
    return frozen_mi300x(matrix)


def files_only(root: Path, matrix: Matrix) -> HostFacts:
    def identify(device: str) -> str | None:
        hit = matrix.gpu_by_pci(device)
        return hit.id if hit else None

    return probe_host(root, NoRunner(), identify=identify)


def blocks(report: VerifyReport) -> list[tuple[str, int | None, str | None]]:
    return [(f.status, f.gpu, f.expected) for f in report.findings
            if f.fact == "firmware.blocks"]


def test_amd_smi_blocks_are_not_probed_when_amd_smi_did_not_run(
        matrix: Matrix, frozen: Lockfile) -> None:
    assert frozen.firmware.blocks and any(k.isupper() for k in frozen.firmware.blocks)
    report = verify(frozen, files_only(MI300X / "root", matrix), matrix, lock_name="l",
                    host_name="h")
    found = blocks(report)
    assert {s for s, _, _ in found} <= {"not-probed", "match"}
    unread = [f for f in report.findings if f.fact == "firmware.blocks"
              and f.status == "not-probed"]
    assert {f.gpu for f in unread} == {0, 1}
    assert all("CP_MEC1=" in (f.expected or "") and "amd-smi firmware" in f.message
               for f in unread)
    assert not any(f.fact == "firmware.blocks" for f in report.drift)
    strict = verify(frozen, files_only(MI300X / "root", matrix), matrix, lock_name="l",
                    host_name="h", strict=True)
    assert any(f.fact == "firmware.blocks" for f in strict.drift)  # --strict: unread is drift


def test_a_block_gone_from_a_source_that_was_read_is_a_change(
        matrix: Matrix, frozen: Lockfile, host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    fw = host / "out" / "amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("FW_ID: CP_MEC2", "FW_ID: CP_MEC9"))
    report = verify(frozen, recorded("", host), matrix, lock_name="l", host_name="h")
    changed = [f for f in report.drift if f.fact == "firmware.blocks"]
    assert changed and all(f.status == "mismatch" for f in changed)
    assert all("CP_MEC2 absent (lock" in f.message for f in changed)
