"""``pin audit`` on an sdist or a wheel given as a file (issue 31, section 3): read in memory,
bombs refused, members that climb out or link elsewhere never read, and an audit that scanned
nothing is exit 2, never a pass.

The positive case is a real sdist (:mod:`tests.support.sdists`, pinned by sha256, downloaded at
test time); the hostile archives are built here with ``tarfile`` / ``zipfile``.
"""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from pinning.audit import archive
from pinning.audit.archive import Limits, read_archive
from pinning.audit.model import Skip
from pinning.audit.run import AuditRequest, audit
from pinning.errors import UsageError
from tests.support.cli import pin
from tests.support.sdists import SDIST_CACHE, SDISTS, SdistUnavailable
from tests.unit.audit.test_elf import add_section, build_so, needs_gcc

TO_CUDA = b"m = m.to('hip')\n"  # a device string: port


def _tar_gz(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tar.addfile(m)
            else:
                info = tarfile.TarInfo(m[0])
                info.size = len(m[1])
                tar.addfile(info, io.BytesIO(m[1]))
    return path


def _link(name: str, target: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def _fetch_sdist(name: str) -> Path:
    try:
        return SDISTS[name].fetch()
    except SdistUnavailable as exc:
        if os.environ.get("CI", "").lower() in {"true", "1"} \
                or os.environ.get("PIN_REQUIRE_NETWORK") == "1":
            pytest.fail(f"the pinned sdist {name} cannot be downloaded: {exc}")
        pytest.skip(f"{name} not downloadable ({exc})")


def _key(display: str, prefix: str) -> str:
    return display.split("!", 1)[1] if "!" in display else display.removeprefix(prefix)


def test_real_sdist_read_in_memory_gives_the_unpacked_trees_findings(tmp_path: Path) -> None:
    top = _fetch_sdist("causal-conv1d")  # the unpacked tree's top folder
    tarball = SDIST_CACHE / SDISTS["causal-conv1d"].url.rsplit("/", 1)[1]
    before = sorted(os.listdir(SDIST_CACHE))
    packed = audit(AuditRequest(paths=[str(tarball)], hipify_perl=False))
    unpacked = audit(AuditRequest(paths=[str(top.parent)], hipify_perl=False))
    assert sorted(os.listdir(SDIST_CACHE)) == before  # nothing unpacked beside it
    assert packed.files_scanned == unpacked.files_scanned > 10
    seen = sorted((f.rule, _key(f.path or "", ""), f.line) for f in packed.findings)
    want = sorted((f.rule, (f.path or "").removeprefix(f"{top.parent}/"), f.line)
                  for f in unpacked.findings)
    assert seen == want and seen
    name = f"{tarball}!{top.name}/csrc/causal_conv1d_common.h"
    assert any(f.path == name and f.line == 12 for f in packed.findings)


def test_cli_audits_an_sdist_by_name(tmp_path: Path) -> None:
    sdist = _tar_gz(tmp_path / "pkg-1.0.tar.gz", [("pkg-1.0/pkg/model.py", TO_CUDA)])
    r = pin("audit", "--fail-on", "port", str(sdist))
    assert r.returncode == 11, r.stderr
    assert f"{sdist}!pkg-1.0/pkg/model.py:1" in r.stdout
    assert "1 files scanned" in r.stdout


def test_traversal_absolute_and_link_members_are_noted_never_read(tmp_path: Path) -> None:
    sdist = _tar_gz(tmp_path / "bad.tar.gz", [
        ("../evil.py", TO_CUDA), ("/abs/evil.py", TO_CUDA),
        _link("pkg/sym.py", "/etc/passwd", tarfile.SYMTYPE),
        _link("pkg/hard.py", "pkg/ok.py", tarfile.LNKTYPE),
        ("pkg/ok.py", TO_CUDA)])
    report = audit(AuditRequest(paths=[str(sdist)], hipify_perl=False))
    paths = {f.path for f in report.findings}
    assert paths == {f"{sdist}!pkg/ok.py"}
    notes = {s.path: s.reason for s in report.skipped}
    assert "climbs out" in notes[f"{sdist}!../evil.py"]
    assert "absolute" in notes[f"{sdist}!/abs/evil.py"]
    assert "link" in notes[f"{sdist}!pkg/sym.py"] and "link" in notes[f"{sdist}!pkg/hard.py"]
    assert not (tmp_path / "evil.py").exists()


def test_zip_link_member_is_noted(tmp_path: Path) -> None:
    whl = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        link = zipfile.ZipInfo("pkg/link.py")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
        zf.writestr("pkg/__init__.py", TO_CUDA)
        zf.writestr("../up.py", TO_CUDA)
    report = audit(AuditRequest(paths=[str(whl)], hipify_perl=False))
    assert {f.path for f in report.findings} == {f"{whl}!pkg/__init__.py"}
    notes = {s.path: s.reason for s in report.skipped}
    assert "link" in notes[f"{whl}!pkg/link.py"]
    assert "climbs out" in notes[f"{whl}!../up.py"]


def test_zip_bomb_is_refused_with_exit_2(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("big.py", b"\0" * (32 * 1024 * 1024))
    r = pin("audit", str(bomb))
    assert r.returncode == 2, r.stdout
    assert "decompression bomb" in r.stderr and "Traceback" not in r.stderr


def test_tar_gz_bomb_is_refused_by_ratio_and_by_size(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    sdist = _tar_gz(tmp_path / "bomb.tar.gz", [("x/big.py", b"\0" * (2 * 1024 * 1024))])
    monkeypatch.setattr(archive, "LIMITS", Limits(ratio_floor=64 * 1024))
    with pytest.raises(UsageError, match="times its compressed size") as ratio:
        audit(AuditRequest(paths=[str(sdist)], hipify_perl=False))
    assert ratio.value.exit_code == 2
    with pytest.raises(UsageError, match="more than 100000 bytes"):
        read_archive(sdist, "bomb.tar.gz", lambda _n: True,
                     Limits(unpacked=100_000, ratio=10**9))


def test_members_over_the_memory_bound_are_noted(tmp_path: Path) -> None:
    sdist = _tar_gz(tmp_path / "p.tar.gz", [("a.py", b"x = 1\n" * 100), ("b.py", b"y = 2\n")])
    got = read_archive(sdist, "p.tar.gz", lambda _n: True, Limits(held=700))
    assert list(got.members) == ["a.py", "b.py"]
    small = read_archive(sdist, "p.tar.gz", lambda _n: True, Limits(member=10))
    assert small.members == {"b.py": b"y = 2\n"}
    assert [s.path for s in small.skipped] == ["p.tar.gz!a.py"]


def test_includes_are_read_inside_the_archive_only(tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("flash-attn==2.7.4\n")
    sdist = _tar_gz(tmp_path / "r.tar.gz", [
        ("p/requirements.txt", b"-r extra.txt\n-r ../../outside.txt\n"),
        ("p/extra.txt", b"torch==2.7.0\n")])
    report = audit(AuditRequest(paths=[str(sdist)], hipify_perl=False))
    names = {f.subject.split("==")[0].split()[0] for f in report.findings}
    assert "torch" in " ".join(names) and "flash" not in " ".join(names)
    assert any("outside the audited folders" in s.reason for s in report.skipped)


@needs_gcc
def test_wheel_elf_member_is_read_in_memory(tmp_path: Path) -> None:
    so = add_section(build_so(tmp_path), ".nv_fatbin", b"\x50\xed\x55\xba" + b"\0" * 60)
    whl = tmp_path / "ext-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.write(so, "ext/_C.so")
    report = audit(AuditRequest(paths=[str(whl)], hipify_perl=False))
    assert [(f.rule, f.path) for f in report.findings] == [
        ("extension.cuda-device-code", f"{whl}!ext/_C.so")]


def test_audit_that_scanned_nothing_is_exit_2(tmp_path: Path) -> None:
    empty = _tar_gz(tmp_path / "empty.tar.gz", [("README.md", b"hello\n")])
    r = pin("audit", str(empty))
    assert r.returncode == 2 and "Nothing to audit" in r.stderr and str(empty) in r.stderr
    (tmp_path / "docs").mkdir()
    d = pin("audit", str(tmp_path / "docs"))
    assert d.returncode == 2 and "Nothing to audit" in d.stderr


def test_corrupt_archive_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(Skip, match="not a readable tar.gz archive"):
        read_archive(bad, "bad.tar.gz", lambda _n: True)
    r = pin("audit", str(bad))
    assert r.returncode == 2 and "not a readable tar.gz archive" in r.stderr


def test_byte_identical_members_are_counted_once_with_their_copies(tmp_path: Path) -> None:
    # DeepSpeed's sdist ships its kernel sources twice (csrc/ and deepspeed/ops/csrc/): one
    # count, the copy listed under the member nearest the archive's root.
    kernel = b"__global__ void k(float* x) {\n  asm volatile(\"bar.sync 0;\");\n}\n"
    other = b"__global__ void k(float* x) {\n  asm volatile(\"bar.sync 1;\");\n}\n"
    sdist = _tar_gz(tmp_path / "ds-1.0.tar.gz", [
        ("ds-1.0/csrc/k.cu", kernel), ("ds-1.0/ds/ops/csrc/k.cu", kernel),
        ("ds-1.0/ds/ops/csrc/other.cu", other)])
    report = audit(AuditRequest(paths=[str(sdist)], hipify_perl=False))
    kept = f"{sdist}!ds-1.0/csrc/k.cu"
    paths = sorted({f.path or "" for f in report.findings})
    assert paths == [kept, f"{sdist}!ds-1.0/ds/ops/csrc/other.cu"]
    assert all(f.copies == [f"{sdist}!ds-1.0/ds/ops/csrc/k.cu"] for f in report.findings
               if f.path == kept)
    assert report.kernel_lines == 6  # the copy's 3 lines leave the total
    single = audit(AuditRequest(paths=[str(_tar_gz(tmp_path / "one.tar.gz", [
        ("ds-1.0/csrc/k.cu", kernel), ("ds-1.0/ds/ops/csrc/other.cu", other)]))],
        hipify_perl=False))
    assert report.totals == single.totals
