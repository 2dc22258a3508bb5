"""ELF extensions: real shared objects built with gcc, device-code sections added with objcopy,
offload bundles written here in clang-offload-bundler's layout."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from pinning.audit import offload
from pinning.audit.elf import scan_elf
from pinning.audit.model import Context, Skip, Verdict

GCC = shutil.which("gcc") or "gcc"
OBJCOPY = shutil.which("objcopy") or "objcopy"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("objcopy") is None,
                               reason="gcc and objcopy are needed to build ELF fixtures")
MI300X = Context(gfx_targets=("gfx942",), gpu_name="MI300X")


def bundle(*entry_ids: str) -> bytes:
    """An uncompressed clang offload bundle with an empty code object per entry."""
    header = len(b"__CLANG_OFFLOAD_BUNDLE__") + 8 + sum(24 + len(e) for e in entry_ids)
    out = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(entry_ids))
    for e in entry_ids:
        out += struct.pack("<QQQ", header, 0, len(e)) + e.encode()
    return out


TWO = bundle("host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
             "hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-")
OLD = bundle("host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx90a",
             "hipv4-amdgcn-amd-amdhsa--gfx1100")


def build_so(tmp: Path, name: str = "ext", libs: tuple[str, ...] = ()) -> Path:
    src = tmp / f"{name}.c"
    src.write_text("int answer(void) { return 42; }\n")
    out = tmp / f"{name}.so"
    subprocess.run([GCC, "-shared", "-fPIC", "-o", out, src,
                    *(f"-l{lib}" for lib in libs)], check=True)
    return out


def add_section(so: Path, name: str, blob: bytes) -> Path:
    data = so.parent / f"{so.stem}{name.replace('.', '_')}.bin"
    data.write_bytes(blob)
    subprocess.run([OBJCOPY, "--add-section", f"{name}={data}",
                    "--set-section-flags", f"{name}=alloc,readonly,data", so], check=True)
    return so


@needs_gcc
def test_cuda_fatbin_section_is_port(tmp_path: Path) -> None:
    so = add_section(build_so(tmp_path), ".nv_fatbin", b"\x50\xed\x55\xba" + b"\0" * 60)
    scan = scan_elf(so, "pkg/ext.so", Context(), package="flash-attn")
    [f] = scan.findings
    assert (f.rule, f.verdict, f.path, f.package) == (
        "extension.cuda-device-code", Verdict.PORT, "pkg/ext.so", "flash-attn")
    assert ".nv_fatbin" in f.subject and "ROCm" in f.todo
    assert f.citation.source.endswith("clang/lib/CodeGen/CGCUDANV.cpp")


@needs_gcc
def test_plain_shared_object_has_no_finding(tmp_path: Path) -> None:
    scan = scan_elf(build_so(tmp_path), "ext.so", MI300X)
    assert scan.findings == [] and scan.skipped == []


@needs_gcc
def test_needed_cuda_library_is_reported(tmp_path: Path) -> None:
    # a stand-in libcudart.so built here: the finding reads DT_NEEDED, not the library
    stub = build_so(tmp_path, "libcudart")
    src = tmp_path / "user.c"
    src.write_text("int answer(void);\nint twice(void) { return 2 * answer(); }\n")
    so = tmp_path / "user.so"
    subprocess.run([GCC, "-shared", "-fPIC", "-o", so, src, "-L", tmp_path, "-lcudart",
                    "-Wl,--no-as-needed"], check=True)
    assert stub.exists()
    [f] = scan_elf(so, "user.so", Context()).findings
    assert (f.rule, f.verdict) == ("extension.cuda-library", Verdict.PORT)
    assert f.subject == "DT_NEEDED libcudart.so"


@needs_gcc
def test_hip_bundle_targets_are_listed_and_ready(tmp_path: Path) -> None:
    so = add_section(build_so(tmp_path), ".hip_fatbin", TWO)
    [f] = scan_elf(so, "ext.so", MI300X).findings
    assert (f.rule, f.verdict) == ("extension.hip-code-object", Verdict.READY)
    assert f.subject == "HIP device code for gfx90a:xnack-, gfx942:sramecc+:xnack-"
    assert f.citation.source.endswith("clang/docs/ClangOffloadBundler.rst")


@needs_gcc
def test_hip_bundle_without_the_target_is_port(tmp_path: Path) -> None:
    so = add_section(build_so(tmp_path), ".hip_fatbin", OLD)
    [f] = scan_elf(so, "ext.so", MI300X).findings
    assert (f.rule, f.verdict) == ("extension.no-code-object", Verdict.PORT)
    assert "has no gfx942 code object" in f.why and "MI300X" in f.why
    assert "PYTORCH_ROCM_ARCH=gfx942" in f.todo
    # without --gpu the same file is ready
    [g] = scan_elf(so, "ext.so", Context()).findings
    assert (g.rule, g.verdict) == ("extension.hip-code-object", Verdict.READY)


@needs_gcc
def test_compressed_bundle_with_zlib_is_read(tmp_path: Path) -> None:
    inner = zlib.compress(TWO)
    ccob = b"CCOB" + struct.pack("<HHIIQ", 2, 0, 24 + len(inner), len(TWO), 0) + inner
    so = add_section(build_so(tmp_path), ".hip_fatbin", ccob)
    [f] = scan_elf(so, "ext.so", MI300X).findings
    assert f.rule == "extension.hip-code-object" and "gfx942:sramecc+:xnack-" in f.subject


@needs_gcc
def test_compressed_bundle_zlib_cannot_read_is_unknown(tmp_path: Path) -> None:
    ccob = b"CCOB" + struct.pack("<HHIIQ", 2, 1, 64, 100, 0) + b"\x28\xb5\x2f\xfd" + b"\x01" * 36
    so = add_section(build_so(tmp_path), ".hip_fatbin", ccob)
    [f] = scan_elf(so, "ext.so", MI300X).findings
    assert (f.rule, f.verdict) == ("extension.hip-targets-unknown", Verdict.NO_DATA)
    assert "method 1" in f.why and "targets unknown" in f.why


def test_bundle_parser_skips_the_host_entry_and_truncation() -> None:
    assert list(offload.iter_targets(TWO)) == ["gfx90a:xnack-", "gfx942:sramecc+:xnack-"]
    assert list(offload.iter_targets(TWO[:40])) == []
    assert list(offload.iter_targets(b"\0" * 100)) == []


def test_not_an_elf_file_is_skipped(tmp_path: Path) -> None:
    p = tmp_path / "fake.so"
    p.write_text("not really a library\n")
    with pytest.raises(Skip, match="not an ELF file"):
        scan_elf(p, "fake.so", Context())


def test_a_fifo_is_skipped_without_blocking(tmp_path: Path) -> None:
    p = tmp_path / "pipe.so"
    import os
    os.mkfifo(p)
    with pytest.raises(Skip, match="not a regular file"):
        scan_elf(p, "pipe.so", Context())


@needs_gcc
def test_truncated_elf_is_skipped_with_reason(tmp_path: Path) -> None:
    so = add_section(build_so(tmp_path), ".hip_fatbin", TWO)
    cut = tmp_path / "cut.so"
    cut.write_bytes(so.read_bytes()[:200])
    with pytest.raises(Skip, match="corrupt or truncated ELF"):
        scan_elf(cut, "cut.so", Context())
    header_only = tmp_path / "short.so"
    header_only.write_bytes(so.read_bytes()[:10])
    with pytest.raises(Skip, match="corrupt or truncated ELF"):
        scan_elf(header_only, "short.so", Context())


@needs_gcc
def test_32_bit_elf_is_read(tmp_path: Path) -> None:
    src = tmp_path / "x.c"
    src.write_text("int v = 1;\n")
    obj = tmp_path / "x32.o"
    done = subprocess.run([GCC, "-m32", "-c", "-o", obj, src], capture_output=True)
    if done.returncode != 0:
        pytest.skip("gcc cannot build 32-bit objects here")
    add_section(obj, ".nv_fatbin", b"\0" * 16)
    [f] = scan_elf(obj, "x32.o", Context()).findings
    assert f.rule == "extension.cuda-device-code"


NVCC = shutil.which("nvcc") or ""


@pytest.mark.skipif(not NVCC, reason="nvcc is not on PATH")
def test_real_nvcc_extension_carries_nv_fatbin(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text("__global__ void inc(int *x) { x[threadIdx.x] += 1; }\n"
                   "extern \"C\" void launch(int *x) { inc<<<1, 32>>>(x); }\n")
    so = tmp_path / "k.so"
    done = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-o", so, src],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"nvcc could not build here: {done.stderr.strip()[:200]}")
    rules = {f.rule for f in scan_elf(so, "k.so", Context()).findings}
    assert "extension.cuda-device-code" in rules


MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"


def _bundle_of(data: bytes) -> tuple[list[str], str | None, str | None]:
    b = offload.Bundle()
    offload.read_bundles(data, b)
    return b.targets, b.unknown, b.incomplete


def test_quadratic_reproducer_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # the review's shape: a bundle claiming 4096 entries, then 20,000 entries whose IDs are
    # the magic and a count of 4096. Parsed once, it examines about 20,000 entries; re-parsed
    # from every magic it would examine 20,000 x 4096 and run out of this budget.
    monkeypatch.setattr(offload, "MAX_TOTAL_ENTRIES", 21_000)
    fake_id = MAGIC + struct.pack("<Q", 4096)
    data = MAGIC + struct.pack("<Q", 4096) + (struct.pack("<QQQ", 0, 0, 32) + fake_id) * 20_000
    targets, unknown, incomplete = _bundle_of(data)
    assert targets == [] and incomplete is None
    assert unknown == "an offload bundle header runs past the section (truncated)"


def test_entry_cap_gives_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offload, "MAX_TOTAL_ENTRIES", 3)
    targets, unknown, incomplete = _bundle_of(TWO + OLD)
    assert targets == ["gfx90a:xnack-", "gfx942:sramecc+:xnack-"] and unknown is None
    assert incomplete == ("more than 3 offload bundle entries in .hip_fatbin; the rest were "
                          "not read")
    # without the cap both bundles are read
    monkeypatch.setattr(offload, "MAX_TOTAL_ENTRIES", 65_536)
    assert _bundle_of(TWO + OLD)[0] == ["gfx1100", "gfx90a", "gfx90a:xnack-",
                                         "gfx942:sramecc+:xnack-"]


def test_magic_inside_a_code_object_is_not_a_bundle() -> None:
    # an entry whose code object (offset, size) holds another bundle's bytes: skipped over
    inner = bundle("hipv4-amdgcn-amd-amdhsa--gfx1100")
    entry = b"hipv4-amdgcn-amd-amdhsa--gfx942"
    header = len(MAGIC) + 8 + 24 + len(entry)
    outer = MAGIC + struct.pack("<Q", 1) + struct.pack("<QQQ", header, len(inner),
                                                       len(entry)) + entry + inner
    assert list(offload.iter_targets(outer)) == ["gfx942"]
    # a bundle after what the first covers is read
    assert list(offload.iter_targets(outer + inner)) == ["gfx1100", "gfx942"]


@needs_gcc
def test_incomplete_list_without_the_target_is_no_data(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offload, "MAX_TOTAL_ENTRIES", 3)
    so = add_section(build_so(tmp_path), ".hip_fatbin", OLD + TWO)
    [f] = scan_elf(so, "ext.so", MI300X).findings
    assert (f.rule, f.verdict) == ("extension.hip-targets-unknown", Verdict.NO_DATA)
    assert f.subject == "HIP device code for gfx1100, gfx90a and more"
    assert "more than 3 offload bundle entries" in f.why and f.why.endswith("gfx1100, gfx90a")
    # when the target is among those read, the verdict stands, noting the rest
    so2 = add_section(build_so(tmp_path, "ext2"), ".hip_fatbin", TWO + OLD)
    [g] = scan_elf(so2, "ext2.so", MI300X).findings
    assert (g.rule, g.verdict) == ("extension.hip-code-object", Verdict.READY)
    assert "and perhaps more: more than 3 offload bundle entries" in g.why


def test_compressed_bundle_is_skipped_by_its_recorded_size() -> None:
    inner = zlib.compress(TWO)
    ccob = b"CCOB" + struct.pack("<HHIIQ", 2, 0, 24 + len(inner), len(TWO), 0) + inner
    padded = ccob + b"\0" * (4096 - len(ccob))
    assert list(offload.iter_targets(padded + OLD)) == ["gfx1100", "gfx90a", "gfx90a:xnack-",
                                                "gfx942:sramecc+:xnack-"]
