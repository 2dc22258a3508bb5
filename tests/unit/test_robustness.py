"""Bad hosts and bad input: no crash, one paragraph, the right exit code, honest statuses.
(Regressions found by trying to break probe / verify / freeze / doctor.)"""

from __future__ import annotations

import os
import shutil

import pytest
from conftest import HOSTS, recorded
from test_cli import pin
from test_verify import lock_for

from pinning._proc import NoRunner, ReplayRunner
from pinning.checks import EnvView, PackageView, check_distributions
from pinning.doctor import doctor
from pinning.errors import ProbeError
from pinning.lockfile.freeze import freeze
from pinning.probe.host import probe_host
from pinning.probe.root import HostRoot
from pinning.verify import verify

MI300X = HOSTS / "mi300x-rocm7.1"
SITE = "root/opt/venv/lib/python3.12/site-packages"


@pytest.fixture(scope="module")
def frozen(matrix):
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    return freeze(lock, recorded("mi300x-rocm7.1"), matrix, host_label="h")[0]


def check(lock, host, matrix, **kw):
    return verify(lock, recorded("", host), matrix, lock_name="l", host_name="h", **kw)


def test_binary_and_looping_files_do_not_crash(host_copy):
    host = host_copy("mi300x-rocm7.1")
    (host / "root/sys/bus/pci/devices/0000:05:00.0/vendor").write_bytes(os.urandom(300))
    (host / SITE / "numpy-2.1.2.dist-info/METADATA").write_bytes(b"\xff\xfe\x00binary")
    meta = host / SITE / "filelock-3.16.1.dist-info/METADATA"
    meta.unlink()
    meta.symlink_to(meta)
    (host / "out/ldd-version.txt").write_bytes(os.urandom(200))
    f = recorded("", host)
    assert [g.pci_bus for g in f.gpus] == ["0000:26:00.0"]  # the garbled device is skipped
    assert f.python.version_of("torch") == "2.7.0+rocm6.3"
    assert any("filelock" in n for n in f.notes)
    assert f.os.glibc.value is None


def test_fifo_is_not_read(host_copy):
    host = host_copy("mi300x-rocm7.1")
    (host / "root/etc/os-release").unlink()
    os.mkfifo(host / "root/etc/os-release")
    f = recorded("", host)  # returns instead of blocking
    assert f.os.id.value is None and "not a regular file" in f.os.id.reason


def test_absolute_symlinks_stay_inside_the_root(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data/osr").write_text('ID=recorded\nVERSION_ID="1"\n')
    (tmp_path / "etc/os-release").symlink_to("/data/osr")
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").symlink_to("/etc/hostname")  # absent in the root
    f = probe_host(tmp_path, NoRunner())
    assert f.os.id.value == "recorded"
    assert f.os.kernel.value is None and "absent" in f.os.kernel.reason
    loop = tmp_path / "loop"
    loop.symlink_to("/loop")
    assert HostRoot(tmp_path).read("/loop") is None
    assert "cannot be read" in HostRoot(tmp_path).why("/loop")


def test_bad_recordings_are_probe_errors(tmp_path):
    rec = tmp_path / "commands.toml"
    for body in ("command = 3\n", "command = [1, 2]\n", "[environment]\nX = 1\n"):
        rec.write_text(body)
        with pytest.raises(ProbeError) as exc:
            ReplayRunner(rec)
        assert str(rec) in exc.value.message and "[[command]]" in exc.value.hint


def test_empty_os_release_values_are_not_probed(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text('ID=\nVERSION_ID=""\n')
    f = probe_host(tmp_path, NoRunner())
    assert f.os.id.value is None and "empty" in f.os.id.reason


@pytest.mark.parametrize(("remove", "fact"), [
    ("root/sys/module/amdgpu", "kernel_driver.version"),
    ("root/opt/rocm", "runtime.version"),
    ("root/opt/venv", "frameworks.pytorch.version"),
])
def test_known_absences_are_missing_not_warnings(matrix, frozen, host_copy, remove, fact):
    host = host_copy("mi300x-rocm7.1")
    shutil.rmtree(host / remove)
    report = check(frozen, host, matrix)
    assert report.result == "drift"
    assert any(f.fact == fact and f.status == "missing" for f in report.drift)


def test_nvidia_driver_falls_back_to_nvidia_smi(matrix, host_copy):
    lock = lock_for(matrix, "h200", "pytorch==2.13.0")
    host = host_copy("h200-cuda13")
    (host / "root/proc/driver/nvidia/version").write_text("NVRM: garbled\n")
    out = next((host / "out").glob("nvidia-smi*"))
    out.write_text(out.read_text().replace("580.95.05", "575.57.08"))
    f = recorded("", host)
    assert (f.nvidia.driver.value, f.nvidia.driver.source) == ("575.57.08",
                                                               "nvidia-smi --query-gpu")
    report = verify(lock, f, matrix, lock_name="l", host_name="h")
    assert "kernel_driver.version" in {x.fact for x in report.drift}


def test_run_scoped_variables_are_not_drift(matrix, host_copy):
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    host = host_copy("mi300x-rocm7.1")
    rec = host / "commands.toml"
    rec.write_text(rec.read_text() + 'HIP_VISIBLE_DEVICES = "0"\n')
    frozen_here = freeze(lock, recorded("", host), matrix, host_label="h")[0]
    assert check(frozen_here, host, matrix, strict=True).result == "match"


def test_forced_freeze_names_the_matrix_release(matrix):
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    other = recorded("mi250x-rocm6.3")
    forced = freeze(lock, other, matrix, host_label="h", force=True)[0]
    report = verify(forced, other, matrix, lock_name="l", host_name="h")
    msgs = [f.message for f in report.drift if f.status == "outside-validated"]
    assert msgs and all("ROCm 6.3.3" not in m for m in msgs)
    assert any("ROCm 7.1.1" in m for m in msgs)


def test_triton_removed_is_missing(matrix, frozen, host_copy):
    host = host_copy("mi300x-rocm7.1")
    shutil.rmtree(host / SITE / "pytorch_triton_rocm-3.3.0.dist-info")
    report = check(frozen, host, matrix)
    f = next(f for f in report.drift if f.fact == "packages.triton")
    assert f.status == "missing" and "no Triton distribution is installed" in f.message


def test_jax_plugin_for_rocm_10_is_not_read_as_1x():
    view = EnvView(rocm_version="10.0.0", packages=[
        PackageView("jax", "0.9.0"), PackageView("jaxlib", "0.9.0"),
        PackageView("jax-rocm10-plugin", "0.9.0"), PackageView("jax-rocm10-pjrt", "0.9.0")])
    assert check_distributions(view) == []
    view.rocm_version = "7.2.0"
    assert [f.code for f in check_distributions(view)] == ["jax-plugin-rocm-major"]


def test_conda_pypi_rows_are_not_a_second_torch(matrix):
    env = ("PyTorch version: 2.7.0+cu126\nCUDA used to build PyTorch: 12.6\n"
           "Versions of relevant libraries:\n[pip3] torch==2.7.0+cu126\n"
           "[conda] torch                     2.7.0+cu126              pypi_0    pypi\n")
    report = doctor([("env.txt", env)], matrix)
    assert "multiple-torch-distributions" not in {f.code for f in report.findings}
    twice = doctor([("a", env), ("b", env)], matrix)
    assert twice.environment["packages"] == 1


def test_cli_bad_paths_and_flag_combinations(tmp_path):
    args = ["--root", str(MI300X / "root"), "--replay", str(MI300X / "commands.toml")]
    r = pin("probe", *args, "-o", str(tmp_path))
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr
    r = pin("probe", *args, "-o", str(tmp_path / "no/such/dir/x.json"))
    assert r.returncode == 2
    r = pin("probe", *args, "--site-packages", "/opt/venv/typo")
    assert r.returncode == 2 and "/opt/venv/typo" in r.stderr
    r = pin("probe", *args, "--site-packages", "/opt/venv/lib/python3.12/site-packages")
    assert r.returncode == 0 and "2.7.0+rocm6.3" in r.stdout  # read under the root
    r = pin("probe", "--replay", str(MI300X / "commands.toml"))
    assert r.returncode == 2 and "--root" in r.stderr
    empty = tmp_path / "empty.lock"
    empty.write_text("")
    r = pin("verify", str(empty), *args)
    assert r.returncode == 5 and "empty" in r.stderr
    r = pin("doctor", "/dev/zero")
    assert r.returncode == 2 and "not a regular file" in r.stderr
