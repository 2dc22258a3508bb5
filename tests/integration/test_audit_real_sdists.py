"""``pin audit`` on real CUDA-extension sdists nobody here wrote (issue 13, section 4).

The sdists are pinned by URL and sha256 in :mod:`tests.support.sdists`, downloaded from PyPI at
test time into ``.wheelhouse/sdists/`` and unpacked there (never built, never committed). Every
expected finding below names the file and line it was read at in that exact sdist. ``pin
audit .`` runs inside the unpacked tree, so paths are relative to the sdist's top folder.

Without network the sdist tests skip, unless ``CI=true`` or ``PIN_REQUIRE_NETWORK=1``, which
make a missing download a failure (as ``PIN_REQUIRE_DOCKER=1`` does for the engine). The tests
of the download helper itself use a local HTTP server and need no network.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import socket
import tarfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import sdists
from tests.support.cli import json_result, pin
from tests.support.sdists import SDISTS, SdistInvalid, SdistUnavailable, fetch_sdist, unpack

Audit = Callable[[str], dict[str, Any]]

MARLIN = "autogptq_extension/marlin/marlin_cuda_kernel.cu"
EXLLAMA_MATMUL = "autogptq_extension/exllama/cuda_func/q4_matmul.cu"
RMS_NORM = "exllamav2/exllamav2_ext/cuda/rms_norm.cu"
CONV_COMMON = "csrc/causal_conv1d_common.h"
CONV_FWD = "csrc/causal_conv1d_fwd.cu"
CONV_BWD = "csrc/causal_conv1d_bwd.cu"
RW_CUDA = "csrc/cuda/rw_cuda.cu"


def _network_required() -> bool:
    return (os.environ.get("CI", "").lower() in {"true", "1"}
            or os.environ.get("PIN_REQUIRE_NETWORK") == "1")


def _fetch(name: str) -> Path:
    s = SDISTS[name]
    try:
        return s.fetch()
    except SdistUnavailable as exc:
        if _network_required():
            pytest.fail(f"CI=true or PIN_REQUIRE_NETWORK=1, but the pinned sdist "
                        f"{s.name}=={s.version} cannot be downloaded: {exc}")
        pytest.skip(f"{s.name}=={s.version} not downloadable ({exc}); set "
                    "PIN_REQUIRE_NETWORK=1 to make this a failure")


@pytest.fixture(scope="module")
def audit() -> Audit:
    """``pin audit . --format json`` inside the unpacked sdist ``name`` (run once per sdist):
    the JSON result, after checking pin printed no traceback and skipped nothing.
    """
    cache: dict[str, dict[str, Any]] = {}

    def run(name: str) -> dict[str, Any]:
        if name not in cache:
            tree = _fetch(name)
            done = pin("audit", ".", "--format", "json", cwd=tree)
            assert "Traceback" not in done.stderr, done.stderr
            result = json_result(done)
            assert isinstance(result, dict), result
            cache[name] = result
        return cache[name]

    return run


def _lines(result: dict[str, Any], kind: str, path: str) -> set[int]:
    """Every line a finding of ``kind`` in ``path`` covers (its ``line`` and ``lines``)."""
    out: set[int] = set()
    for f in result["findings"]:
        if f["kind"] == kind and f["path"] == path:
            out.update(x for x in [f["line"], *f.get("lines", [])] if x is not None)
    return out


def _at(result: dict[str, Any], kind: str, path: str, line: int) -> list[dict[str, Any]]:
    """The findings of ``kind`` in ``path`` that cover ``line``."""
    return [f for f in result["findings"]
            if f["kind"] == kind and f["path"] == path
            and line in [f["line"], *f.get("lines", [])]]


def _kinds(result: dict[str, Any]) -> set[str]:
    return {f["kind"] for f in result["findings"]}


# --- auto-gptq 0.7.1: Marlin's inline PTX, tensor cores, __CUDA_ARCH__, cuBLAS ---------------

def test_auto_gptq_marlin_inline_ptx_is_blocked(audit: Audit) -> None:
    """Read in auto_gptq-0.7.1/autogptq_extension/marlin/marlin_cuda_kernel.cu: ``asm
    volatile(`` opens at lines 59, 78, 93, 103, 115, 132, 146, 193, 213 and 214 (cp.async,
    mma.sync, ldmatrix, lop3, ld.global.acquire, fence, red). HIPIFY converts none of it and
    says nothing; HIP-Clang takes no PTX, so each is a manual rewrite (blocked).
    """
    r = audit("auto-gptq")
    assert _lines(r, "inline-ptx", MARLIN) >= {59, 78, 93, 103, 115, 132, 146, 193, 213, 214}
    for line in (59, 115, 214):
        found = _at(r, "inline-ptx", MARLIN, line)
        assert found and all(f["verdict"] == "blocked" for f in found), found
    assert r["failed"] is True and r["totals"]["blocked"] >= 1


def test_auto_gptq_marlin_tensor_core_and_arch_macro(audit: Audit) -> None:
    """marlin_cuda_kernel.cu line 116 holds ``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``
    (in the ``asm volatile(`` of line 115), lines 63 ``@p cp.async.cg.shared.global`` and 82
    ``cp.async.cg.shared.global.L2::cache_hint`` (in the multi-statement PTX strings of the
    ``asm volatile(`` at lines 59 and 78, after PTX's own ``;`` at lines 61-62 and 80-81), lines
    93 and 103 ``cp.async.commit_group`` / ``cp.async.wait_group``; line 56 is ``#if
    defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800``. Line 155 is a comment holding a
    FasterTransformer URL with ``cutlass_extensions`` in it: not a CUTLASS use.
    """
    r = audit("auto-gptq")
    assert {63, 82, 93, 103, 116} <= _lines(r, "tensor-core", MARLIN)
    assert 56 in _lines(r, "arch-macro", MARLIN)
    assert not _at(r, "library", MARLIN, 155)


def test_auto_gptq_exllama_cublas_calls(audit: Audit) -> None:
    """exllama/cuda_func/q4_matmul.cu line 258 calls ``cublasHgemm`` (HIPIFY's cuBLAS table:
    ``hipblasHgemm``) and line 253 ``cublasSgemmEx`` (the table's HIP cell is empty: no HIP
    equivalent).
    """
    r = audit("auto-gptq")
    hgemm = [f for f in _at(r, "cuda-api", EXLLAMA_MATMUL, 258) if f["subject"] == "cublasHgemm"]
    assert hgemm and hgemm[0]["replacement"] == "hipblasHgemm", hgemm
    sgemm = [f for f in _at(r, "cuda-api", EXLLAMA_MATMUL, 253)
             if f["subject"] == "cublasSgemmEx"]
    assert sgemm and sgemm[0]["replacement"] is None, sgemm
    assert sgemm[0]["verdict"] in {"port", "blocked"}


def test_auto_gptq_setup_py_cuda_extensions(audit: Audit) -> None:
    """auto_gptq-0.7.1/setup.py builds with ``cpp_extension.CUDAExtension(`` at lines 125, 132,
    156, 176 and 189 (read statically, never run: it would run qigen and probe
    /proc/cpuinfo).
    """
    r = audit("auto-gptq")
    assert {125, 132, 156, 176, 189} <= _lines(r, "build-hook", "setup.py")
    assert r["kernel-lines"] > 0 and r["skipped"] == []


# --- exllamav2 0.0.4: 32-bit lane masks --------------------------------------------------------

def test_exllamav2_full_warp_masks_are_wave64_findings(audit: Audit) -> None:
    """exllamav2-0.0.4/exllamav2/exllamav2_ext/cuda/rms_norm.cu lines 67 and 74:
    ``sum += __shfl_xor_sync(0xffffffff, sum, offset);`` - a 32-bit lane mask, wrong on wave64
    GPUs (HIP's lane masks are 64-bit). HIPIFY is silent on it. Line 5
    (``#define __shfl_xor_sync(mask, var, laneMask) __shfl_xor(var, laneMask)``, under
    ``USE_ROCM``) holds no mask literal.
    """
    r = audit("exllamav2")
    assert {67, 74} <= _lines(r, "warp-size", RMS_NORM)
    assert not _at(r, "warp-size", RMS_NORM, 5)
    assert _at(r, "build-hook", "setup.py", 25)  # cpp_extension.CUDAExtension(
    assert "inline-ptx" not in _kinds(r)  # no asm anywhere in this sdist


# --- causal-conv1d 1.7.0: CUB, a 32-bit mask written uint32_t(-1), warps of 32 ----------------

def test_causal_conv1d_cub_and_build(audit: Audit) -> None:
    """causal_conv1d-1.7.0: csrc/causal_conv1d_fwd.cu line 10 and csrc/causal_conv1d_bwd.cu
    line 10 ``#include <cub/block/block_load.cuh>`` (CUB -> hipCUB, under ``#ifndef
    USE_ROCM``); setup.py line 243 ``CUDAExtension(``.
    """
    r = audit("causal-conv1d")
    for path in (CONV_FWD, CONV_BWD):
        found = _at(r, "library", path, 10)
        assert found and all(f["verdict"] != "blocked" for f in found), found
    assert _at(r, "build-hook", "setup.py", 243)
    assert "inline-ptx" not in _kinds(r)


def test_causal_conv1d_mask_spelled_uint32_minus_one(audit: Audit) -> None:
    """csrc/causal_conv1d_common.h line 12: ``__shfl_xor_sync(uint32_t(-1), val, offset)``, a
    32-bit all-lanes mask spelled without ``0xffffffff``; its ROCm twin at line 30 is
    ``__shfl_xor(val, offset)`` (no mask: not a finding).
    """
    r = audit("causal-conv1d")
    assert 12 in _lines(r, "warp-size", CONV_COMMON)
    assert 30 not in _lines(r, "warp-size", CONV_COMMON)


def test_causal_conv1d_warps_per_block_assume_32_lanes(audit: Audit) -> None:
    """csrc/causal_conv1d_fwd.cu line 182 and csrc/causal_conv1d_bwd.cu line 306:
    ``static constexpr int kNWarps = kNThreads / 32;`` - the warp count of a block with warp
    size 32 hard-coded (``kNColsPerLoad = kNColsPerWarp * kNWarps`` at fwd line 193 sizes the
    loads with it); on a wave64 GPU a block has half as many warps.
    """
    r = audit("causal-conv1d")
    assert 182 in _lines(r, "warp-size", CONV_FWD)
    assert 306 in _lines(r, "warp-size", CONV_BWD)


def test_causal_conv1d_host_launch_is_not_dynamic_parallelism(audit: Audit) -> None:
    """csrc/causal_conv1d_bwd.cu line 625 ``kernel<<<grid, Ktraits::kNThreads, 0,
    stream>>>(params);`` sits in the host function ``causal_conv1d_channellast_bwd_launch``
    (line 603), after the ``__global__`` kernel that opens at line 331 has closed (line 600):
    a host launch, not a kernel launching a kernel. The kernel's body holds two commented-out
    ``// if (dfinal_states != nullptr) {`` (lines 537 and 565): braces in comments count for
    nothing.
    """
    r = audit("causal-conv1d")
    blocked = [f for f in r["findings"] if f["path"] == CONV_BWD and f["line"] == 625
               and f["verdict"] == "blocked"]
    assert blocked == []


# --- torch-cluster 1.6.3: cuRAND and CMake's CUDA language ---------------------------------------

def test_torch_cluster_curand_and_cmake(audit: Audit) -> None:
    """torch_cluster-1.6.3: csrc/cuda/rw_cuda.cu line 4 ``#include <curand.h>`` (cuRAND ->
    hipRAND/rocRAND), line 49 ``curand_init(seed, 0, 0, &state);`` (HIPIFY's cuRAND table:
    ``hiprand_init``); CMakeLists.txt line 10 ``enable_language(CUDA)``.
    """
    r = audit("torch-cluster")
    assert _at(r, "library", RW_CUDA, 4)
    init = [f for f in _at(r, "cuda-api", RW_CUDA, 49) if f["subject"] == "curand_init"]
    assert init and init[0]["replacement"] == "hiprand_init", init
    assert _at(r, "build-hook", "CMakeLists.txt", 10)
    assert not {"inline-ptx", "tensor-core"} & _kinds(r)


def test_what_hipify_misses_is_found(audit: Audit) -> None:
    """The two kinds HIPIFY says nothing about, on real code: inline PTX
    (auto_gptq-0.7.1 marlin_cuda_kernel.cu line 59, ``asm volatile(`` around ``@p
    cp.async.cg.shared.global``) and a 32-bit lane mask (exllamav2-0.0.4 rms_norm.cu line 67,
    ``__shfl_xor_sync(0xffffffff, sum, offset)``). Each finding cites a public source.
    """
    ptx = _at(audit("auto-gptq"), "inline-ptx", MARLIN, 59)
    mask = _at(audit("exllamav2"), "warp-size", RMS_NORM, 67)
    for f in (*ptx, *mask):
        assert f["citation"]["source"], f
        assert f["why"] and f["todo"], f
    assert ptx and mask


# --- the download helper (no network) ------------------------------------------------------------

def _tar_gz(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return buf.getvalue()


@pytest.fixture
def serve() -> Iterator[Callable[[bytes], str]]:
    """A local HTTP server answering every GET with the bytes given; yields a function that
    sets those bytes and returns a URL ending in ``pkg-1.0.tar.gz``."""
    body: list[bytes] = [b""]

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body[0])))
            self.end_headers()
            self.wfile.write(body[0])

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()

    def set_body(data: bytes) -> str:
        body[0] = data
        return f"http://127.0.0.1:{server.server_address[1]}/p/pkg-1.0.tar.gz"

    try:
        yield set_body
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_fetch_downloads_verifies_unpacks_then_reuses(tmp_path: Path,
                                                       serve: Callable[[bytes], str]) -> None:
    data = _tar_gz({"pkg-1.0/k.cu": b"__global__ void k() {}\n"})
    sha = hashlib.sha256(data).hexdigest()
    url = serve(data)
    tree = fetch_sdist("pkg", "1.0", sha, url, tmp_path)
    assert tree == tmp_path / "pkg-1.0" / "pkg-1.0"
    assert (tree / "k.cu").read_text() == "__global__ void k() {}\n"
    # Cached and verified: no network (an unroutable URL would fail).
    again = fetch_sdist("pkg", "1.0", sha, "http://192.0.2.1:9/p/pkg-1.0.tar.gz", tmp_path)
    assert again == tree


def test_fetch_refuses_a_different_file(tmp_path: Path, serve: Callable[[bytes], str]) -> None:
    url = serve(_tar_gz({"pkg-1.0/k.cu": b"changed\n"}))
    with pytest.raises(SdistInvalid, match="is not the pinned"):
        fetch_sdist("pkg", "1.0", "0" * 64, url, tmp_path)
    assert not (tmp_path / "pkg-1.0.tar.gz").exists()
    assert not (tmp_path / "pkg-1.0").exists()


def test_fetch_caps_the_download(tmp_path: Path, serve: Callable[[bytes], str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    data = _tar_gz({"pkg-1.0/k.cu": b"x" * 4096})
    monkeypatch.setattr(sdists, "MAX_DOWNLOAD", 64)
    with pytest.raises(SdistInvalid, match="larger than 64 bytes"):
        fetch_sdist("pkg", "1.0", hashlib.sha256(data).hexdigest(), serve(data), tmp_path)


def test_fetch_without_network_is_unavailable(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SdistUnavailable, match="cannot download"):
        fetch_sdist("pkg", "1.0", "0" * 64, f"http://127.0.0.1:{port}/pkg-1.0.tar.gz", tmp_path)


@pytest.mark.parametrize(("members", "links", "match"), [
    ({"../evil.cu": b"x"}, None, "outside the folder"),
    ({"/abs/evil.cu": b"x"}, None, "outside the folder"),
    ({"pkg/ok.cu": b"x"}, {"pkg/link": "/etc/passwd"}, "not a plain file"),
])
def test_unpack_refuses_unsafe_tar_members(tmp_path: Path, members: dict[str, bytes],
                                           links: dict[str, str] | None, match: str) -> None:
    archive = tmp_path / "bad.tar.gz"
    archive.write_bytes(_tar_gz(members, links))
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(SdistInvalid, match=match):
        unpack(archive, dest)
    assert list(dest.iterdir()) == []
    assert not (tmp_path / "evil.cu").exists()


def test_unpack_zip(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.zip", tmp_path / "bad.zip"
    with zipfile.ZipFile(good, "w") as zf:
        zf.writestr("pkg-1.0/setup.py", "from setuptools import setup\n")
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("../evil.py", "x\n")
    unpack(good, tmp_path / "g")
    assert (tmp_path / "g" / "pkg-1.0" / "setup.py").is_file()
    with pytest.raises(SdistInvalid, match="outside the folder"):
        unpack(bad, tmp_path / "b")
    assert not (tmp_path / "evil.py").exists()


def test_the_pinned_table() -> None:
    """Each pin is an https files.pythonhosted.org sdist named after its version, with a
    sha256 and a size under the download cap."""
    for s in SDISTS.values():
        assert s.url.startswith("https://files.pythonhosted.org/packages/"), s
        assert s.url.endswith(f"-{s.version}.tar.gz"), s
        assert len(s.sha256) == 64 and int(s.sha256, 16) >= 0, s
        assert 0 < s.size <= sdists.MAX_DOWNLOAD, s


@pytest.mark.parametrize(("env", "outcome"), [
    ({}, pytest.skip.Exception),
    ({"PIN_REQUIRE_NETWORK": "1"}, pytest.fail.Exception),
    ({"CI": "true"}, pytest.fail.Exception),
])
def test_no_network_skips_unless_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          env: dict[str, str], outcome: type[BaseException]
                                          ) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("PIN_REQUIRE_NETWORK", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    gone = sdists.Sdist("gone", "1.0", f"http://127.0.0.1:{port}/gone-1.0.tar.gz", "0" * 64,
                        1, "2026-01-01")
    monkeypatch.setitem(SDISTS, "gone", gone)
    monkeypatch.setattr(sdists.Sdist, "fetch", lambda self: fetch_sdist(
        self.name, self.version, self.sha256, self.url, tmp_path))
    with pytest.raises(outcome, match="gone==1.0"):
        _fetch("gone")
