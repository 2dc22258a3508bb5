"""The drift reason's ``(+N more)`` counts facts, not findings, and every reason is kept
once: on a host where two facts drifted through several findings each (the PLDM bundle on
two GPUs, each both unlike the lock and outside what the matrix validated, and the kernel
driver), the short line, the Slurm drain reason and what pin serve stores agree."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from pinning.fleet.batch import FleetVerifier
from pinning.fleet.reason import other_facts, short_reason
from pinning.fleet.slurm import drift_reason
from pinning.fleet.slurm_locks import node_drift
from pinning.guards.view import Finding
from pinning.lockfile.io import render
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.snapshot import parse_snapshot
from pinning.serve.ingest import Verifiers
from pinning.serve.storage import Store
from pinning.serve.storage.records import NewReport
from pinning.verify.report import verify
from tests.support.fleetgen import base_snapshot
from tests.support.locks import frozen_mi300x

FEATURE = "pin_0123456789ab"


def finding(fact: str, status: str = "mismatch", gpu: int | None = None) -> Finding:
    return Finding(code=status, fact=fact, status=status, severity="error", message="m",
                   expected="1", actual="2", gpu=gpu)


def test_findings_of_one_fact_count_once() -> None:
    fw = [finding("firmware.version", s, g) for g in (0, 1)
          for s in ("mismatch", "outside-validated")]
    driver = [finding("kernel_driver.version", s) for s in ("mismatch", "outside-validated")]
    assert other_facts(fw) == 0 and other_facts([]) == 0
    assert short_reason(fw) == "pin: firmware.version[0] 1!=2"
    assert other_facts(fw + driver) == 1
    assert short_reason(fw + driver) == "pin: firmware.version[0] 1!=2 (+1 more)"
    assert short_reason(driver + fw) == "pin: kernel_driver.version 1!=2 (+1 more)"
    assert drift_reason(FEATURE, fw + driver) == \
        f"pin: {FEATURE} firmware.version[0] 1!=2 (+1 more)"
    three = [*fw, finding("kernel"), *driver, finding("kernel", gpu=None)]
    assert short_reason(three).endswith(" (+2 more)")


@pytest.fixture(scope="module")
def frozen(matrix: Matrix) -> Lockfile:
    return frozen_mi300x(matrix)


@pytest.fixture(scope="module")
def two_facts() -> bytes:
    """The recorded MI300X host with a newer PLDM bundle on GPUs 0 and 1 and another
    kernel driver: two facts, five findings."""
    data: dict[str, Any] = copy.deepcopy(base_snapshot())
    for gpu in data["gpus"][:2]:
        gpu["pldm-bundle"]["value"] = "01.25.05.00"
    data["amd"]["driver"]["value"] = "6.10.5"
    return json.dumps(data).encode()


def test_the_real_findings_are_five_for_two_facts(frozen: Lockfile, matrix: Matrix,
                                                  two_facts: bytes) -> None:
    drift = verify(frozen, parse_snapshot(two_facts, "t"), matrix, lock_name="l",
                   host_name="h").drift
    assert len(drift) == 5  # the premise: several findings per fact
    assert sorted({f.fact for f in drift}) == ["firmware.version", "kernel_driver.version"]


def test_the_fleet_outcome_counts_facts_and_keeps_each_word_once(
        frozen: Lockfile, matrix: Matrix, two_facts: bytes) -> None:
    out = FleetVerifier(frozen, matrix, lock_name="l").check(two_facts, "t")
    assert out.reason is not None and out.reason.endswith(" (+1 more)")
    assert out.reason.startswith("pin: firmware.version[0] 01.25.03.12!=01.25.05.00")
    assert out.facts == ("firmware.version", "kernel_driver.version")
    assert len(out.reasons) == len(set(out.reasons)) == 3
    assert out.reasons[:2] == ("firmware.version[0] 01.25.03.12!=01.25.05.00",
                               "firmware.version[1] 01.25.03.12!=01.25.05.00")


def test_the_slurm_drain_reason_counts_the_same_facts(frozen: Lockfile, matrix: Matrix,
                                                      two_facts: bytes) -> None:
    report = verify(frozen, parse_snapshot(two_facts, "t"), matrix, lock_name="l",
                    host_name="gpu01")
    reason = drift_reason(FEATURE, node_drift(report))
    assert reason == (f"pin: {FEATURE} firmware.version[0] 01.25.03.12!=01.25.05.00 "
                      "(+1 more)")


def test_pin_serve_stores_each_reason_once(tmp_path: Any, frozen: Lockfile, matrix: Matrix,
                                           two_facts: bytes) -> None:
    store = Store(f"sqlite:///{tmp_path / 'pin.db'}")
    try:
        lock_hash = store.store_lock(render(frozen).encode())
        out = Verifiers(store, matrix).check(lock_hash, two_facts, "gpu01")
        store.add_reports([NewReport(host="gpu01", lock_hash=lock_hash, result=out.result,
                                     reason=out.reason, reasons=out.reasons)])
        stored = store.host_history("gpu01")[0]
        latest = store.host_status("gpu01")
    finally:
        store.close()
    assert stored.reason == out.reason and (stored.reason or "").endswith("(+1 more)")
    assert stored.reasons == list(out.reasons) and len(set(stored.reasons)) == 3
    assert latest is not None and latest.reasons == stored.reasons
