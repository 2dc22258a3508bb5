"""Changed hosts against a lock, through freeze and verify: the right fact drifts, with an
honest status. (Regressions found by trying to break probe / verify / freeze / doctor.)"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.verify.freeze import freeze
from pinning.verify.report import VerifyReport, verify
from tests.support.hosts import MI300X, SITE, HostCopy, recorded
from tests.support.locks import frozen_mi300x, lock_for


@pytest.fixture(scope="module")
def frozen(matrix: Matrix) -> Lockfile:
    return frozen_mi300x(matrix)


def check(lock: Lockfile, host: Path, matrix: Matrix, **kw: Any) -> VerifyReport:
    return verify(lock, recorded("", host), matrix, lock_name="l", host_name="h", **kw)


@pytest.mark.parametrize(("remove", "fact"), [
    ("root/sys/module/amdgpu", "kernel_driver.version"),
    ("root/opt/rocm", "runtime.version"),
    ("root/opt/venv", "frameworks.pytorch.version"),
])
def test_known_absences_are_missing_not_warnings(matrix: Matrix, frozen: Lockfile,
                                                 host_copy: HostCopy, remove: str,
                                                 fact: str) -> None:
    host = host_copy("mi300x-rocm7.1")
    shutil.rmtree(host / remove)
    report = check(frozen, host, matrix)
    assert report.result == "drift"
    assert any(f.fact == fact and f.status == "missing" for f in report.drift)


def test_nvidia_driver_falls_back_to_nvidia_smi(matrix: Matrix, host_copy: HostCopy) -> None:
    lock = lock_for(matrix, "h200", "pytorch==2.13.0")
    host = host_copy("h200-cuda13")
    (host / "root/proc/driver/nvidia/version").write_text("NVRM: garbled\n")
    out = next((host / "out").glob("nvidia-smi*"))
    out.write_text(out.read_text().replace("580.95.05", "575.57.08"))
    f = recorded("", host)
    assert f.nvidia is not None
    assert (f.nvidia.driver.value, f.nvidia.driver.source) == ("575.57.08",
                                                               "nvidia-smi --query-gpu")
    report = verify(lock, f, matrix, lock_name="l", host_name="h")
    assert "kernel_driver.version" in {x.fact for x in report.drift}


def test_run_scoped_variables_are_not_drift(matrix: Matrix, host_copy: HostCopy) -> None:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    host = host_copy("mi300x-rocm7.1")
    rec = host / "commands.toml"
    rec.write_text(rec.read_text() + 'HIP_VISIBLE_DEVICES = "0"\n')
    frozen_here = freeze(lock, recorded("", host), matrix, host_label="h")[0]
    assert check(frozen_here, host, matrix, strict=True).result == "match"


def test_forced_freeze_names_the_matrix_release(matrix: Matrix) -> None:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    other = recorded("mi250x-rocm6.3")
    forced = freeze(lock, other, matrix, host_label="h", force=True)[0]
    report = verify(forced, other, matrix, lock_name="l", host_name="h")
    msgs = [f.message for f in report.drift if f.status == "outside-validated"]
    assert msgs and all("ROCm 6.3.3" not in m for m in msgs)
    assert any("ROCm 7.1.1" in m for m in msgs)


def test_triton_removed_is_missing(matrix: Matrix, frozen: Lockfile, host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    shutil.rmtree(host / SITE / "pytorch_triton_rocm-3.3.0.dist-info")
    report = check(frozen, host, matrix)
    f = next(f for f in report.drift if f.fact == "packages.triton")
    assert f.status == "missing" and "no Triton distribution is installed" in f.message


# --- second review round ---------------------------------------------------------------------


def test_refreeze_checks_the_new_host(matrix: Matrix, frozen: Lockfile,
                                      host_copy: HostCopy) -> None:
    from pinning.errors import DriftError

    other = host_copy("mi300x-rocm7.1")
    (other / "root/opt/rocm/.info/version").write_text("6.4.0-47\n")
    with pytest.raises(DriftError) as exc:
        freeze(frozen, recorded("", other), matrix, host_label="other")
    assert "runtime.version" in exc.value.message
    forced = freeze(frozen, recorded("", other), matrix, host_label="other", force=True)[0]
    assert forced.runtime.version.value == "7.1.1"  # the validated release stays
    report = verify(forced, recorded("", other), matrix, lock_name="l", host_name="h")
    assert "runtime.version" in {f.fact for f in report.drift}
    shutil.rmtree(other / "root/opt/rocm")
    with pytest.raises(DriftError):
        freeze(frozen, recorded("", other), matrix, host_label="gone")


def test_refreeze_refuses_to_credit_unread_values(matrix: Matrix, frozen: Lockfile,
                                                  tmp_path: Path) -> None:
    from pinning.errors import DriftError

    host = tmp_path / "h"
    shutil.copytree(MI300X, host)
    rec = host / "commands.toml"
    rec.write_text(rec.read_text().replace('argv = ["amd-smi", "firmware"]',
                                           'argv = ["amd-smi", "firmware", "--gone"]'))
    with pytest.raises(DriftError) as exc:
        freeze(frozen, recorded("", host), matrix, host_label="h")
    assert "firmware.version" in exc.value.message and "cannot be read" in exc.value.message


def _amd_smi_reports(host: Path, tool: str, rocm: str) -> None:
    """Make the copied host's ``amd-smi version`` agree with the ROCm release it was moved to."""
    out = host / "out/amd-smi-version.txt"
    if out.exists():
        text = re.sub(r"AMDSMI Tool: [^ |]+", f"AMDSMI Tool: {tool}", out.read_text())
        out.write_text(re.sub(r"ROCm version: [^ |]+", f"ROCm version: {rocm}", text))


def test_amd_wheel_builds_freeze_and_verify(matrix: Matrix, host_copy: HostCopy) -> None:
    lock = lock_for(matrix, "mi300x", "pytorch==2.9.1", rocm="7.2.0")
    host = host_copy("mi300x-rocm7.1")
    (host / "root/opt/rocm/.info/version").write_text("7.2.0\n")
    _amd_smi_reports(host, "26.2.1", "7.2.0")  # AMD's matrix row of 7.2.0 (AMD SMI)
    site = host / SITE
    build = "2.9.1+rocm7.2.0.lw.git7e1940d4"
    shutil.move(site / "torch-2.7.0+rocm6.3.dist-info", site / f"torch-{build}.dist-info")
    (site / f"torch-{build}.dist-info/METADATA").write_text(
        f"Metadata-Version: 2.1\nName: torch\nVersion: {build}\n")
    vpy = site / "torch/version.py"
    vpy.write_text(vpy.read_text().replace("2.7.0+rocm6.3", build))
    fz, found, _ = freeze(lock, recorded("", host), matrix, host_label="h")
    assert found == []
    assert fz.frameworks[0].build is not None and fz.frameworks[0].build.reason is not None
    assert fz.frameworks[0].build.value == "rocm7.2.0.lw.git7e1940d4"
    assert "upstream publishes" in fz.frameworks[0].build.reason
    assert verify(fz, recorded("", host), matrix, lock_name="l", host_name="h").result == "match"


@pytest.mark.parametrize(("change", "fact"), [
    ("gpu", "target.count"),
    ("vbios", "firmware.vbios"),
    ("sos", "firmware.blocks"),
])
def test_hardware_changes_are_drift(matrix: Matrix, frozen: Lockfile, host_copy: HostCopy,
                                    change: str, fact: str) -> None:
    host = host_copy("mi300x-rocm7.1")
    dev = host / "root/sys/bus/pci/devices/0000:26:00.0"
    if change == "gpu":
        shutil.rmtree(dev)
    elif change == "vbios":
        (dev / "vbios_version").write_text("022.040.003.041.000001\n")
    else:
        (dev / "fw_version/sos_fw_version").write_text("0x00360259\n")
    report = check(frozen, host, matrix)
    assert fact in {f.fact for f in report.drift}


def test_nvidia_module_flavor_and_toolkit_are_frozen(matrix: Matrix, host_copy: HostCopy) -> None:
    lock = lock_for(matrix, "h200", "pytorch==2.13.0")
    fz = freeze(lock, recorded("h200-cuda13"), matrix, host_label="h")[0]
    assert fz.kernel_driver.flavor is not None and fz.runtime.toolkit is not None
    assert (fz.kernel_driver.flavor.value, fz.runtime.toolkit.value) == ("open", "13.0.2")
    host = host_copy("h200-cuda13")
    proc = host / "root/proc/driver/nvidia/version"
    proc.write_text(proc.read_text().replace("Open Kernel Module for x86_64", "x86_64 Kernel Module"))
    (host / "root/usr/local/cuda/version.json").write_text('{"cuda": {"version": "12.8.1"}}')
    report = check(fz, host, matrix)
    assert {f.fact for f in report.drift} == {"kernel_driver.flavor", "runtime.toolkit"}


def test_environment_is_judged_both_ways(matrix: Matrix, frozen: Lockfile,
                                         host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    rec = host / "commands.toml"
    rec.write_text(rec.read_text() + 'HIPBLASLT_ALLOW_TF32 = "1"\nROCM_PATH = "/opt/rocm"\n')
    report = check(frozen, host, matrix)
    assert {f.fact for f in report.drift} == {"environment.HIPBLASLT_ALLOW_TF32"}
    fz = freeze(frozen, recorded("", host), matrix, host_label="h")[0]
    assert fz.environment == {"HIPBLASLT_ALLOW_TF32": "1"}  # ROCM_PATH is a location
    plain = check(fz, MI300X, matrix)
    msg = next(f.message for f in plain.drift if f.fact == "environment.HIPBLASLT_ALLOW_TF32")
    assert "is not set on the host" in msg


def test_cpu_torch_build_is_a_mismatch(matrix: Matrix, frozen: Lockfile,
                                       host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    site = host / SITE
    shutil.move(site / "torch-2.7.0+rocm6.3.dist-info", site / "torch-2.7.0.dist-info")
    (site / "torch-2.7.0.dist-info/METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.7.0\n")
    (site / "torch/version.py").write_text("__version__ = '2.7.0'\ncuda = None\nhip = None\n")
    report = check(frozen, host, matrix)
    build = next(f for f in report.drift if f.fact == "frameworks.pytorch.build")
    assert (build.status, build.expected, build.actual) == ("mismatch", "rocm6.3", "cpu")


def test_torch_files_overwritten_is_a_hazard(matrix: Matrix, frozen: Lockfile,
                                             host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    vpy = host / SITE / "torch/version.py"
    vpy.write_text(vpy.read_text().replace("__version__ = '2.7.0+rocm6.3'",
                                           "__version__ = '2.8.0+rocm6.4'"))
    codes = {f.code for f in check(frozen, host, matrix).drift}
    assert "torch-files-differ-from-metadata" in codes


def test_freeze_does_not_need_the_model_cached(matrix: Matrix) -> None:
    rev = "0123456789abcdef0123456789abcdef01234567"
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1", model=f"org/m@{rev}")
    _, found, _ = freeze(lock, recorded("mi300x-rocm7.1"), matrix, host_label="h")
    assert found == []


# --- code review round ------------------------------------------------------------------------


def test_ifwi_labelled_firmware_freezes_and_verifies(matrix: Matrix, host_copy: HostCopy) -> None:
    lock = lock_for(matrix, "mi250x", "pytorch==2.7", rocm="7.1.1")
    assert lock.firmware.version.allowed == ["IFWI 47 (or later)"]
    host = host_copy("mi250x-rocm6.3")
    (host / "root/opt/rocm/.info/version").write_text("7.1.1\n")
    _amd_smi_reports(host, "26.2.0", "7.1.1")  # AMD's matrix row of 7.1.1 (AMD SMI)
    # (the recorded torch is 2.4.1, outside this lock: forced; the firmware is the point)
    fz, found, _ = freeze(lock, recorded("", host), matrix, host_label="h", force=True)
    assert [f.fact for f in found] == ["frameworks.pytorch.version"]
    assert fz.firmware.version.value == "113-D65201-042"
    report = verify(fz, recorded("", host), matrix, lock_name="l", host_name="h")
    assert "firmware.version" not in {f.fact for f in report.drift}
    fw = [f for f in report.findings if f.fact == "firmware.version"]
    assert {f.status for f in fw} == {"match", "cannot-compare"}


def test_os_series_entries_hold_after_freeze(matrix: Matrix, frozen: Lockfile,
                                             host_copy: HostCopy) -> None:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    host = host_copy("mi300x-rocm7.1")
    (host / "root/etc/os-release").write_text(
        'ID="rocky"\nVERSION_ID="9.4"\nVERSION="9.4 (Blue Onyx)"\nPRETTY_NAME="Rocky Linux 9.4"\n')
    fz, found, _ = freeze(lock, recorded("", host), matrix, host_label="h")
    assert found == [] and fz.os.value == "rocky-9.4"
    report = verify(fz, recorded("", host), matrix, lock_name="l", host_name="h")
    assert report.result == "match", [f.message for f in report.drift]
    (host / "root/etc/os-release").write_text('ID=fedora\nVERSION_ID="40"\n')
    report = verify(fz, recorded("", host), matrix, lock_name="l", host_name="h")
    assert {f.status for f in report.drift if f.fact == "os"} == {"mismatch", "outside-validated"}


def test_compound_driver_constraint(matrix: Matrix, host_copy: HostCopy) -> None:
    lock = lock_for(matrix, "h200", "pytorch==2.13.0", cuda="<13")
    assert lock.kernel_driver.version.constraint == ">=525,<580"
    host = host_copy("h200-cuda13")
    proc = host / "root/proc/driver/nvidia/version"
    text = proc.read_text()
    proc.write_text(text.replace("580.95.05", "470.256.02"))
    drv = [f for f in check(lock, host, matrix).findings if f.fact == "kernel_driver.version"]
    assert any(f.status == "outside-validated" and f.severity == "error"
               and "below 525" in f.message for f in drv)
    proc.write_text(text)  # 580.95.05: above the 12.x range, still runs (warning)
    drv = [f for f in check(lock, host, matrix).findings if f.fact == "kernel_driver.version"]
    assert [(f.code, f.severity) for f in drv] == [("above-range", "warning")]


def test_untagged_torch_wheel_build(matrix: Matrix, host_copy: HostCopy) -> None:
    lock = lock_for(matrix, "h200", "pytorch==2.13.0")
    host = host_copy("h200-cuda13")
    site = host / "root/usr/local/lib/python3.12/dist-packages"
    shutil.move(site / "torch-2.13.0+cu130.dist-info", site / "torch-2.13.0.dist-info")
    (site / "torch-2.13.0.dist-info/METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0\n")
    vpy = site / "torch/version.py"
    vpy.write_text(vpy.read_text().replace("2.13.0+cu130", "2.13.0"))
    build = [f for f in check(lock, host, matrix).findings
             if f.fact == "frameworks.pytorch.build"]
    assert [(f.status, f.actual) for f in build] == [("match", "cu130")]


# --- realistic-scenario round -------------------------------------------------------------------


def _set_module(host: Path, version: str) -> None:
    (host / "root/sys/module/amdgpu/version").write_text(version + "\n")


def test_old_kmd_is_reported_against_an_unfrozen_lock(matrix: Matrix, host_copy: HostCopy) -> None:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    host = host_copy("mi300x-rocm7.1")
    _set_module(host, "6.8.5")
    report = check(lock, host, matrix)
    kmd = [f for f in report.findings if f.code == "kmd-older-than-user-space"]
    assert len(kmd) == 1 and kmd[0].severity == "warning"
    assert check(lock, host, matrix, strict=True).result == "drift"


def _cuda_torch(host: Path) -> None:
    site = host / SITE
    shutil.move(site / "torch-2.7.0+rocm6.3.dist-info", site / "torch-2.7.0+cu126.dist-info")
    (site / "torch-2.7.0+cu126.dist-info/METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.7.0+cu126\n")
    (site / "torch/version.py").write_text(
        "__version__ = '2.7.0+cu126'\ncuda = '12.6'\nhip = None\n")


def test_cuda_torch_on_amd_is_drift_and_refused_by_freeze(matrix: Matrix,
                                                          host_copy: HostCopy) -> None:
    from pinning.errors import DriftError

    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    host = host_copy("mi300x-rocm7.1")
    _cuda_torch(host)
    report = check(lock, host, matrix)
    assert "cuda-torch-on-amd" in {f.code for f in report.drift}
    with pytest.raises(DriftError) as exc:
        freeze(lock, recorded("", host), matrix, host_label="h")
    assert "frameworks.pytorch.build" in exc.value.message


def test_two_tritons_are_refused_by_freeze(matrix: Matrix, host_copy: HostCopy) -> None:
    from pinning.errors import DriftError

    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    host = host_copy("mi300x-rocm7.1")
    info = host / SITE / "triton-3.4.0+git1234.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: triton\nVersion: 3.4.0+git1234\n")
    with pytest.raises(DriftError) as exc:
        freeze(lock, recorded("", host), matrix, host_label="h")
    assert "packages.triton" in exc.value.message


def test_blocks_that_differ_between_gpus_are_noted(matrix: Matrix, host_copy: HostCopy) -> None:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    host = host_copy("mi300x-rocm7.1")
    (host / "root/sys/bus/pci/devices/0000:26:00.0/fw_version/mec_fw_version").write_text(
        "0x000080c5\n")
    fz, _, unfrozen = freeze(lock, recorded("", host), matrix, host_label="h")
    assert fz.firmware.blocks is not None
    assert "mec" not in fz.firmware.blocks and "mec2" in fz.firmware.blocks
    assert any("mec 0x000080bf/0x000080c5" in u for u in unfrozen)
    assert any("left out of the lock" in n for n in fz.notes)


def test_cuda_compat_on_a_datacenter_gpu_is_a_warning(matrix: Matrix, host_copy: HostCopy) -> None:
    lock = lock_for(matrix, "h200", "pytorch==2.13.0")
    host = host_copy("h200-cuda13")
    proc = host / "root/proc/driver/nvidia/version"
    proc.write_text(proc.read_text().replace("580.95.05", "575.57.08"))
    findings = check(lock, host, matrix).findings
    assert "driver-too-old-for-cuda" in {f.code for f in findings}
    compat = host / "root/usr/local/cuda/compat"
    compat.mkdir()
    (compat / "libcuda.so.1").write_text("")
    findings = check(lock, host, matrix).findings
    rule = [f for f in findings if f.code.startswith("driver-")]
    assert [(f.code, f.severity) for f in rule] == [("driver-below-cuda-with-compat", "warning")]
    assert check(lock, host, matrix).result == "match"  # warnings; --strict would drift


def test_nvidia_wheels_beside_rocm_torch(matrix: Matrix, host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    info = host / SITE / "nvidia_cuda_runtime_cu13-13.0.96.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nvidia-cuda-runtime-cu13\nVersion: 13.0.96\n")
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    codes = {f.code for f in check(lock, host, matrix).findings}
    assert "cuda-libraries-on-amd" in codes
