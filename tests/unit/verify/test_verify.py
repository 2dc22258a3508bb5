"""pin verify / pin freeze: a matching host passes; a changed firmware value, an older driver
and a swapped Triton each drift naming exactly that fact, with the source that makes it wrong."""

from __future__ import annotations

import json
import shutil
from typing import Any

import jsonschema
import pytest

from pinning.errors import DriftError
from pinning.lockfile.io import render
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.models import HostFacts, snapshot_hash
from pinning.util.versions import allowed_contains
from pinning.verify.freeze import freeze
from pinning.verify.report import VerifyReport, verify
from tests.support.hosts import HostCopy, recorded
from tests.support.locks import lock_for
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def mi300x_lock(matrix: Matrix) -> Lockfile:
    return lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")


@pytest.fixture(scope="module")
def mi300x_frozen(matrix: Matrix, mi300x_lock: Lockfile) -> Lockfile:
    frozen, found, unfrozen = freeze(mi300x_lock, recorded("mi300x-rocm7.1"), matrix,
                                     host_label="mi300x-rocm7.1")
    assert found == [] and unfrozen == []
    return frozen


@pytest.fixture(scope="module")
def h200_frozen(matrix: Matrix) -> Lockfile:
    lock = lock_for(matrix, "h200", "pytorch==2.13.0")
    frozen, found, _ = freeze(lock, recorded("h200-cuda13"), matrix, host_label="h200")
    assert found == []
    return frozen


def run(lock: Lockfile, facts: HostFacts, matrix: Matrix, **kw: Any) -> VerifyReport:
    return verify(lock, facts, matrix, lock_name="lock", host_name="host", **kw)


def drift_facts(report: VerifyReport) -> set[str]:
    return {f.fact for f in report.drift}


def test_freeze_records_host_values_and_snapshot(mi300x_frozen: Lockfile) -> None:
    lk = mi300x_frozen
    facts = recorded("mi300x-rocm7.1")
    assert lk.frozen is not None and lk.frozen.snapshot == snapshot_hash(facts)
    assert lk.frozen.forced is False and lk.frozen.deviations == []
    assert (lk.firmware.version.value, lk.firmware.version.origin) == ("01.25.03.12", "host")
    assert lk.firmware.version.allowed == ["01.25.03.12"]  # the matrix set stays beside it
    assert lk.kernel_driver.version.value == "6.16.6"
    assert (lk.os.value, lk.kernel.value) == ("ubuntu-24.04.3", "6.8.0-85-generic")
    assert lk.runtime.version.value == "7.1.1"
    fw = lk.frameworks[0]
    assert (fw.version.value, fw.build.value) == ("2.7.0", "rocm6.3")
    assert lk.packages == {"filelock": "3.16.1", "numpy": "2.1.2",
                           "pytorch-triton-rocm": "3.3.0", "torch": "2.7.0+rocm6.3"}
    assert lk.environment == {}


def test_freeze_is_deterministic(matrix: Matrix, mi300x_lock: Lockfile,
                                 mi300x_frozen: Lockfile) -> None:
    again, _, _ = freeze(mi300x_lock, recorded("mi300x-rocm7.1"), matrix,
                         host_label="mi300x-rocm7.1")
    assert render(again) == render(mi300x_frozen)
    # Re-freezing a frozen lock from the same host changes nothing.
    twice, _, _ = freeze(mi300x_frozen, recorded("mi300x-rocm7.1"), matrix,
                         host_label="mi300x-rocm7.1")
    assert render(twice) == render(mi300x_frozen)


def test_matching_host_verifies(matrix: Matrix, mi300x_frozen: Lockfile) -> None:
    report = run(mi300x_frozen, recorded("mi300x-rocm7.1"), matrix)
    assert report.result == "match", [f.message for f in report.drift]
    assert report.counts["match"] >= 12
    assert run(mi300x_frozen, recorded("mi300x-rocm7.1"), matrix, strict=True).result == "match"


def test_changed_firmware_is_drift_naming_it(matrix: Matrix, mi300x_frozen: Lockfile,
                                             host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    fw = host / "out" / "amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("01.25.03.12", "01.25.02.04"))
    report = run(mi300x_frozen, recorded("", host), matrix)
    assert report.result == "drift"
    assert drift_facts(report) == {"firmware.version"}
    statuses = {(f.status, f.gpu) for f in report.drift}
    assert statuses == {("mismatch", 0), ("mismatch", 1), ("outside-validated", 0),
                        ("outside-validated", 1)}
    outside = next(f for f in report.drift if f.status == "outside-validated")
    assert "PLDM bundle" in outside.message and "below 01.25.03.12" in outside.message
    assert "ROCm 7.1.1" in outside.message
    assert outside.source is not None
    assert "release notes" in outside.source.lower() or "RELEASE.md" in outside.source


def test_older_driver_is_drift_naming_it(matrix: Matrix, mi300x_frozen: Lockfile,
                                         host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    (host / "root/sys/module/amdgpu/version").write_text("6.12.12\n")
    report = run(mi300x_frozen, recorded("", host), matrix)
    assert report.result == "drift"
    assert drift_facts(report) == {"kernel_driver.version"}
    f = report.drift[0]
    assert (f.status, f.expected, f.actual) == ("mismatch", "6.16.6", "6.12.12")
    assert f.source is not None
    assert "frozen from the trial host" in f.source


def test_swapped_triton_is_drift_naming_it(matrix: Matrix, mi300x_frozen: Lockfile,
                                           host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    site = host / "root/opt/venv/lib/python3.12/site-packages"
    shutil.rmtree(site / "pytorch_triton_rocm-3.3.0.dist-info")
    info = site / "triton-3.7.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: triton\nVersion: 3.7.1\n")
    (info / "RECORD").write_text("triton/__init__.py,,\n")
    report = run(mi300x_frozen, recorded("", host), matrix)
    assert report.result == "drift"
    assert drift_facts(report) == {"packages.triton"}
    swapped = next(f for f in report.drift if f.code == "triton-swapped")
    assert (swapped.expected, swapped.actual) == ("pytorch-triton-rocm==3.3.0", "triton==3.7.1")
    assert "AITER" in swapped.message


def test_nvidia_older_driver_is_drift(matrix: Matrix, h200_frozen: Lockfile,
                                      host_copy: HostCopy) -> None:
    assert run(h200_frozen, recorded("h200-cuda13"), matrix).result == "match"
    host = host_copy("h200-cuda13")
    proc = host / "root/proc/driver/nvidia/version"
    proc.write_text(proc.read_text().replace("580.95.05", "570.124.06"))
    report = run(h200_frozen, recorded("", host), matrix)
    assert drift_facts(report) == {"kernel_driver.version"}
    codes = {f.code for f in report.drift}
    assert {"mismatch", "outside-validated", "driver-too-old-for-cuda"} <= codes
    rule = next(f for f in report.drift if f.code == "driver-too-old-for-cuda")
    assert rule.source is not None
    assert rule.expected == ">=580" and "NVIDIA" in rule.source


def test_unfrozen_lock_checks_the_matrix_sets(matrix: Matrix, mi300x_lock: Lockfile) -> None:
    facts = recorded("mi300x-rocm7.1")
    report = run(mi300x_lock, facts, matrix)
    assert report.result == "match"
    # The module number cannot be checked against AMD GPU Driver releases: a warning.
    cc = [f for f in report.findings if f.status == "cannot-compare"]
    assert [f.fact for f in cc] == ["kernel_driver.version"]
    assert run(mi300x_lock, facts, matrix, strict=True).result == "drift"


def test_inbox_driver_is_outside_what_amd_validates(matrix: Matrix) -> None:
    lock = lock_for(matrix, "rx7900xtx", "pytorch==2.9.1", rocm="7.2.0")
    report = run(lock, recorded("radeon-inbox"), matrix)
    assert "kernel_driver.version" in drift_facts(report)
    inbox = next(f for f in report.drift if f.fact == "kernel_driver.version")
    assert inbox.status == "outside-validated" and "inbox" in inbox.message


def test_wrong_host_is_refused_by_freeze_unless_forced(matrix: Matrix,
                                                       mi300x_lock: Lockfile) -> None:
    nvidia = recorded("h200-cuda13")
    with pytest.raises(DriftError) as exc:
        freeze(mi300x_lock, nvidia, matrix, host_label="h200")
    assert exc.value.exit_code == 6 and "target.gpu" in exc.value.message
    forced, found, _ = freeze(mi300x_lock, nvidia, matrix, host_label="h200", force=True)
    assert forced.frozen is not None
    assert forced.frozen.forced is True
    assert any(d.startswith("target.gpu") for d in forced.frozen.deviations)
    assert found


def test_no_gpu_host_is_missing_the_gpu(matrix: Matrix, mi300x_frozen: Lockfile) -> None:
    report = run(mi300x_frozen, recorded("no-gpu"), matrix)
    assert "target.gpu" in drift_facts(report)
    assert any(f.status == "missing" for f in report.drift)


def test_environment_variable_drift(matrix: Matrix, mi300x_frozen: Lockfile,
                                    host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    rec = host / "commands.toml"
    rec.write_text(rec.read_text() + 'HSA_OVERRIDE_GFX_VERSION = "9.4.2"\n')
    report = run(mi300x_frozen, recorded("", host), matrix)
    env = [f for f in report.findings if f.fact == "environment.HSA_OVERRIDE_GFX_VERSION"]
    # One finding per fact: the lock comparison; the lock-free rule would only repeat it.
    assert [f.code for f in env] == ["env-extra"]
    assert report.result == "drift"
    assert {f.fact for f in report.drift} == {"environment.HSA_OVERRIDE_GFX_VERSION"}


def test_model_revision(matrix: Matrix, host_copy: HostCopy) -> None:
    rev = "0123456789abcdef0123456789abcdef01234567"
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1", model=f"org/model@{rev}")
    host = host_copy("mi300x-rocm7.1")
    from pinning.probe.host import probe_host
    from pinning.util.proc import ReplayRunner

    runner = ReplayRunner(host / "commands.toml")
    facts = probe_host(host / "root", runner, environ=runner.environment, model_id="org/model")
    found = [f for f in run(lock, facts, matrix).findings if f.fact == "model.revision"]
    assert [f.status for f in found] == ["missing"]
    base = host / "root/root/.cache/huggingface/hub/models--org--model/snapshots" / rev
    base.mkdir(parents=True)
    (base.parent.parent / "refs").mkdir()
    (base.parent.parent / "refs/main").write_text(rev)
    facts = probe_host(host / "root", runner, environ=runner.environment, model_id="org/model")
    found = [f for f in run(lock, facts, matrix).findings if f.fact == "model.revision"]
    assert [f.status for f in found] == ["match"]


def test_report_json_matches_schema(matrix: Matrix, mi300x_frozen: Lockfile) -> None:
    report = run(mi300x_frozen, recorded("no-gpu"), matrix)
    schema = json.loads((ROOT / "schemas" / "verify-report.schema.json").read_text())
    jsonschema.validate(json.loads(report.model_dump_json(by_alias=True, exclude_none=True)),
                        schema)


@pytest.mark.parametrize(("value", "allowed", "ok"), [
    ("01.25.05.00", ["01.25.05.00 (or later)", "01.25.03.12"], True),
    ("01.25.06.01", ["01.25.05.00 (or later)"], True),
    ("01.25.02.04", ["01.25.05.00 (or later)", "01.25.03.12"], False),
    ("01.25.03.12", ["01.25.05.00 (or later)", "01.25.03.12"], True),
    ("6.4.2", ["6.4.x"], True),
    ("2.7.1", ["2.9", "2.8", "2.7"], True),
    ("2.10.0", ["2.1"], False),
])
def test_allowed_sets(value: str, allowed: list[str], ok: bool) -> None:
    assert allowed_contains(allowed, value) is ok
