"""Installed environments: a site-packages folder built here, and a host snapshot written by the
probe from a recorded host."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pinning.audit.installed import scan_host_snapshot, scan_site_packages
from pinning.audit.model import Context, Skip, Verdict


def dist(site: Path, name: str, version: str, record: list[str] | None = None) -> Path:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                   "\nA long description.\n")
    if record is not None:
        (info / "RECORD").write_text("".join(f"{r},sha256=x,1\n" for r in record))
    return info


def test_distributions_become_declared_packages(tmp_path: Path) -> None:
    dist(tmp_path, "Torch", "2.5.1+cu121", [])
    dist(tmp_path, "numpy", "2.1.0")
    scan = scan_site_packages(tmp_path, Context())
    by = {p.name: p for p in scan.packages}
    assert set(by) == {"torch", "numpy"}
    t = by["torch"]
    assert (t.origin, t.version, t.local, t.raw) == (
        "site-packages", "2.5.1+cu121", "cu121", "Torch==2.5.1+cu121")
    assert t.path == str(tmp_path / "Torch-2.5.1+cu121.dist-info")
    assert by["numpy"].local is None and scan.findings == [] and scan.skipped == []


def test_bad_metadata_is_skipped(tmp_path: Path) -> None:
    info = tmp_path / "broken-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nSummary: no name\n")
    (tmp_path / "gone-1.0.dist-info").mkdir()
    scan = scan_site_packages(tmp_path, Context())
    assert scan.packages == []
    reasons = {s.path: s.reason for s in scan.skipped}
    assert reasons[str(info)] == "METADATA names no Name and Version"
    assert reasons[str(tmp_path / "gone-1.0.dist-info")].startswith("METADATA: cannot be read")


def test_egg_info_is_read(tmp_path: Path) -> None:
    info = tmp_path / "apex-0.1.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: apex\nVersion: 0.1\n")
    [p] = scan_site_packages(tmp_path, Context()).packages
    assert (p.name, p.version) == ("apex", "0.1")


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("objcopy") is None,
                    reason="gcc and objcopy are needed to build an ELF extension")
def test_record_extensions_are_scanned_with_their_package(tmp_path: Path) -> None:
    pkg = tmp_path / "flash_attn_2_cuda"
    pkg.mkdir()
    src = tmp_path / "k.c"
    src.write_text("int f(void) { return 1; }\n")
    so = pkg / "ops.cpython-312-x86_64-linux-gnu.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", so, src], check=True)
    blob = tmp_path / "fatbin.bin"
    blob.write_bytes(b"\0" * 32)
    subprocess.run(["objcopy", "--add-section", f".nv_fatbin={blob}", so], check=True)
    plain = pkg / "plain.so"
    shutil.copy(so, plain)
    subprocess.run(["objcopy", "--remove-section", ".nv_fatbin", plain], check=True)
    dist(tmp_path, "flash-attn", "2.7.4", [f"flash_attn_2_cuda/{so.name}",
                                            "flash_attn_2_cuda/plain.so",
                                            "../../../bin/outside.so", "flash_attn/__init__.py"])
    scan = scan_site_packages(tmp_path, Context())
    [f] = scan.findings
    assert (f.rule, f.verdict, f.package) == ("extension.cuda-device-code", Verdict.PORT,
                                              "flash-attn")
    assert f.path == str(tmp_path / "flash_attn_2_cuda" / so.name)


def test_unlistable_folder_is_skip(tmp_path: Path) -> None:
    with pytest.raises(Skip, match="cannot list"):
        scan_site_packages(tmp_path / "absent", Context())


def test_host_snapshot_distributions(tmp_path: Path) -> None:
    from pinning.probe.snapshot import write_snapshot
    from tests.support.hosts import recorded

    facts = recorded("h200-cuda13")
    snap = tmp_path / "h200.json"
    write_snapshot(facts, snap)
    scan = scan_host_snapshot(snap, Context())
    assert len(scan.packages) == len(facts.python.distributions) > 0
    first = facts.python.distributions[0]
    p = scan.packages[0]
    assert (p.name, p.version, p.origin, p.path) == (first.name, first.version, "host",
                                                     str(snap))


def test_bad_host_snapshot_is_skip(tmp_path: Path) -> None:
    snap = tmp_path / "bad.json"
    snap.write_text("{not json")
    with pytest.raises(Skip, match="not JSON"):
        scan_host_snapshot(snap, Context())
