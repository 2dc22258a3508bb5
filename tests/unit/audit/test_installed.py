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
    # A distribution pin's data has no row for: its binaries' findings stand on their own.
    dist(tmp_path, "my-cuda-ext", "2.7.4", [f"flash_attn_2_cuda/{so.name}",
                                            "flash_attn_2_cuda/plain.so",
                                            "../../../bin/outside.so", "flash_attn/__init__.py"])
    scan = scan_site_packages(tmp_path, Context())
    [f] = scan.findings
    assert (f.rule, f.verdict, f.package) == ("extension.cuda-device-code", Verdict.PORT,
                                              "my-cuda-ext")
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


def test_top_level_names_outside_the_folder_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the review's reproducer shape: a relative site folder whose evil-1.0.dist-info has no
    # RECORD and a top_level.txt naming /usr/lib (and `..`, `/`, a link out)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.so").write_bytes(b"\x7fELF")
    site = tmp_path / "site"
    info = dist(site, "evil", "1.0")
    (site / "escape").symlink_to(outside)
    (site / "good").mkdir()
    (info / "top_level.txt").write_text("/usr/lib\n..\n/\n../outside\nescape\ngood\n")
    monkeypatch.chdir(tmp_path)
    scan = scan_site_packages(Path("site"), Context())
    assert [p.name for p in scan.packages] == ["evil"]
    assert scan.findings == []
    where = str(Path("site") / "evil-1.0.dist-info" / "top_level.txt")
    reasons = sorted(s.reason for s in scan.skipped if s.path == where)
    assert reasons == [
        "names '..', outside the site-packages folder; not walked",
        "names '../outside', outside the site-packages folder; not walked",
        "names '/', outside the site-packages folder; not walked",
        "names '/usr/lib', outside the site-packages folder; not walked",
        "names 'escape', a link or a path leaving the site-packages folder; not walked",
    ]
    assert len(scan.skipped) == 5


def test_top_level_inside_is_walked_with_relative_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    info = dist(site, "ok", "1.0")
    (site / "ok" / "sub").mkdir(parents=True)
    (site / "ok" / "sub" / "_c.so").write_bytes(b"not an ELF file")
    (info / "top_level.txt").write_text("ok\n")
    monkeypatch.chdir(tmp_path)
    scan = scan_site_packages(Path("site"), Context())
    assert [(s.path, s.reason) for s in scan.skipped] == [
        (str(Path("site") / "ok" / "sub" / "_c.so"), "not an ELF file")]


def test_record_rows_outside_the_folder_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.so").write_bytes(b"\x7fELF")
    site = tmp_path / "site"
    site.mkdir()
    (site / "in.so").write_bytes(b"plain text")
    (site / "link.so").symlink_to(outside / "x.so")
    # an absolute row naming a file inside the folder is refused too (it used to raise
    # ValueError from relative_to with a relative folder)
    info = dist(site, "rec", "1.0", [str(outside / "x.so"), "../outside/x.so", "link.so",
                                     str((site / "in.so").resolve()), "in.so"])
    monkeypatch.chdir(tmp_path)
    scan = scan_site_packages(Path("site"), Context())
    got = sorted((s.path, s.reason) for s in scan.skipped)
    assert got == [
        (str(Path("site") / "in.so"), "not an ELF file"),
        (str(Path("site") / info.name / "RECORD"),
         "4 shared object(s) listed outside the site-packages folder (absolute, `..` or "
         "through a link); not scanned"),
    ]


def test_dist_info_link_leaving_the_folder_is_skipped(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    dist(elsewhere, "far", "1.0")
    site = tmp_path / "site"
    site.mkdir()
    (site / "far-1.0.dist-info").symlink_to(elsewhere / "far-1.0.dist-info")
    scan = scan_site_packages(site, Context())
    assert scan.packages == []
    assert [(s.path, s.reason) for s in scan.skipped] == [
        (str(site / "far-1.0.dist-info"), "a link leaving the site-packages folder; not read")]


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("objcopy") is None,
                    reason="gcc and objcopy are needed to build an ELF extension")
def test_package_advice_is_one_finding_with_its_binaries_listed(tmp_path: Path) -> None:
    # bitsandbytes 0.42.0 installs 20 CUDA .so files: one finding, the package's advice
    # (move to the release its source names as supporting AMD GPUs), binaries listed.
    src = tmp_path / "k.c"
    src.write_text("int f(void) { return 1; }\n")
    pkg = tmp_path / "bitsandbytes"
    pkg.mkdir()
    blob = tmp_path / "fatbin.bin"
    blob.write_bytes(b"\0" * 32)
    names = [f"libbitsandbytes_cuda1{n}.so" for n in range(3)]
    for name in names:
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", pkg / name, src], check=True)
        subprocess.run(["objcopy", "--add-section", f".nv_fatbin={blob}", pkg / name],
                       check=True)
    dist(tmp_path, "bitsandbytes", "0.42.0", [f"bitsandbytes/{n}" for n in names])
    scan = scan_site_packages(tmp_path, Context())
    [f] = scan.findings
    assert (f.rule, f.verdict, f.package) == ("package.bitsandbytes-pre-rocm", Verdict.PORT,
                                              "bitsandbytes")
    assert f.replacement == "bitsandbytes>=0.50.0"
    assert f.binaries == [f"{pkg / n}: CUDA device code (.nv_fatbin)" for n in names]
    assert scan.packages == []  # judged here, not again by the orchestrator
    assert '"binaries"' in f.model_dump_json(by_alias=True)
