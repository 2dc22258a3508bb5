"""Bad hosts and bad input to the probe: no crash, no hang, honest not-probed statuses.
(Regressions found by trying to break probe / verify / freeze / doctor.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pinning.errors import ProbeError
from pinning.probe.host import probe_host
from pinning.probe.root import HostRoot
from pinning.util.proc import NoRunner, ReplayRunner
from tests.support.hosts import SITE, HostCopy, recorded


def test_binary_and_looping_files_do_not_crash(host_copy: HostCopy) -> None:
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


def test_fifo_is_not_read(host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    (host / "root/etc/os-release").unlink()
    os.mkfifo(host / "root/etc/os-release")
    f = recorded("", host)  # returns instead of blocking
    assert f.os.id.reason is not None
    assert f.os.id.value is None and "not a regular file" in f.os.id.reason


def test_absolute_symlinks_stay_inside_the_root(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data/osr").write_text('ID=recorded\nVERSION_ID="1"\n')
    (tmp_path / "etc/os-release").symlink_to("/data/osr")
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").symlink_to("/etc/hostname")  # absent in the root
    f = probe_host(tmp_path, NoRunner())
    assert f.os.id.value == "recorded"
    assert f.os.kernel.reason is not None
    assert f.os.kernel.value is None and "absent" in f.os.kernel.reason
    loop = tmp_path / "loop"
    loop.symlink_to("/loop")
    assert HostRoot(tmp_path).read("/loop") is None
    assert "cannot be read" in HostRoot(tmp_path).why("/loop")


def test_bad_recordings_are_probe_errors(tmp_path: Path) -> None:
    rec = tmp_path / "commands.toml"
    for body in ("command = 3\n", "command = [1, 2]\n", "[environment]\nX = 1\n"):
        rec.write_text(body)
        with pytest.raises(ProbeError) as exc:
            ReplayRunner(rec)
        assert str(rec) in exc.value.message and "[[command]]" in exc.value.hint


def test_empty_os_release_values_are_not_probed(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/os-release").write_text('ID=\nVERSION_ID=""\n')
    f = probe_host(tmp_path, NoRunner())
    assert f.os.id.reason is not None
    assert f.os.id.value is None and "empty" in f.os.id.reason


def test_python_reads_stay_inside_the_root(tmp_path: Path, host_copy: HostCopy) -> None:
    outside = tmp_path / "outside/torch"
    outside.mkdir(parents=True)
    (outside / "version.py").write_text("__version__ = 'x'\nhip = 'OUTSIDE-HIP'\n")
    host = host_copy("mi300x-rocm7.1")
    site = host / SITE
    shutil.rmtree(site / "torch")
    (site / "torch").symlink_to(outside)  # absolute: means <root>/tmp/..., which is absent
    meta = site / "numpy-2.1.2.dist-info/METADATA"
    meta.unlink()
    os.mkfifo(meta)
    f = recorded("", host)
    assert f.python.torch is not None and f.python.torch.source is not None
    assert f.python.torch.hip is None and "torch/version.py unreadable" in f.python.torch.source
    assert f.python.version_of("numpy") is None


def test_duplicate_metadata_is_noted(host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    info = host / SITE / "numpy-2.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: numpy\nVersion: 2.2.0\n")
    f = recorded("", host)
    assert any("several metadata copies of numpy" in n for n in f.notes)


@pytest.mark.parametrize("case", ["engine", "literal", "nul", "deep-json"])
def test_odd_host_content_never_escapes_as_a_bug(host_copy: HostCopy, case: str) -> None:
    host = host_copy("mi300x-rocm7.1")
    if case == "engine":
        (host / "root/run").mkdir()
        (host / "root/run/.containerenv").write_text('engine=""\n')
    elif case == "literal":
        (host / SITE / "torch/version.py").write_text("x = {[1]: 2}\nhip = '6.3'\n")
    elif case == "nul":
        rec = host / "commands.toml"
        rec.write_text(rec.read_text().replace('VIRTUAL_ENV = "/opt/venv"',
                                               'VIRTUAL_ENV = "/opt/\\u0000venv"'))
    else:
        (host / "root/usr/local/cuda").mkdir(parents=True)
        (host / "root/usr/local/cuda/version.json").write_text("[" * 100000 + "]" * 100000)
    f = recorded("", host)
    assert f.os.id.value == "ubuntu"


def test_odd_inputs_are_pin_errors(tmp_path: Path) -> None:
    from pinning.errors import LockfileError
    from pinning.lockfile.io import read_lock
    from pinning.probe.snapshot import read_snapshot, snapshot_text

    deep = tmp_path / "deep.lock"
    deep.write_text("a = " + "[" * 100000 + "]" * 100000 + "\n")
    with pytest.raises(LockfileError):
        read_lock(deep)
    snap = tmp_path / "host.json"
    snap.write_text(snapshot_text(recorded("no-gpu")).replace('"debian"', '"\\ud800"'))
    with pytest.raises(ProbeError) as exc:
        read_snapshot(snap)
    assert "Unicode" in exc.value.message
