"""pin audit --requirement judged by what the closure shows (issue 31, section 3): the
nvidia-* wheels only torch's CUDA build pulls in are "swap", and packages pin's data says
nothing about whose wheels are pure Python are read (bounded, in memory) and "ready".

The closure is resolved by uv from a local PEP 503 index (:mod:`tests.support.pyindex`); the
wheels judged on their own are built here with ``zipfile``.
"""

from __future__ import annotations

import hashlib
import io
import sys
import zipfile
from pathlib import Path

import pytest

from pinning.audit.closure import parse_via
from pinning.audit.closure_judge import FRAMEWORK_RULE, closure_scan, pulled_by_framework
from pinning.audit.model import Context, Verdict
from pinning.audit.wheels import PURE_RULE, Wheel, judge_wheel, pylock_wheels, read_pure_wheels
from tests.support.pyindex import serve_index
from tests.support.uvenv import isolate_uv

CP = f"cp{sys.version_info.major}{sys.version_info.minor}"
GRAPH: dict[str, list[str]] = {
    "app==1.0": ["torch==2.0", "nvidia-direct-cu12==1.0", "native==1.0"],
    "torch==2.0": ["nvidia-cublas-cu12==12.1", "nvidia-cudnn-cu12==9.0"],
    "nvidia-cudnn-cu12==9.0": ["nvidia-cublas-cu12"],
    "nvidia-cublas-cu12==12.1": [],
    "nvidia-direct-cu12==1.0": [],
    "native==1.0": [],
}


@pytest.fixture(autouse=True)
def _isolated_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private uv cache and no proxy for 127.0.0.1 (as in test_closure.py)."""
    isolate_uv(tmp_path, monkeypatch)


def test_nvidia_wheels_torch_pulls_in_are_swap_and_pure_wheels_ready(tmp_path: Path) -> None:
    tags = {"native==1.0": [f"{CP}-{CP}-manylinux_2_28_x86_64"]}
    lines: list[str] = []
    with serve_index(tmp_path, GRAPH, tags=tags) as (url, log):
        scan = closure_scan(["app==1.0"], index_urls=[url], ctx=Context(), say=lines.append)
    by = {f.package: f for f in scan.findings if f.kind == "package"}
    for name in ("nvidia-cublas-cu12", "nvidia-cudnn-cu12"):
        assert by[name].rule == FRAMEWORK_RULE and by[name].verdict is Verdict.SWAP
        assert "torch" in by[name].why and by[name].citation.source.startswith("pytorch/")
    # Asked for by the project itself: its own row's verdict stands.
    assert by["nvidia-direct-cu12"].rule == "package.nvidia-wheel"
    assert by["nvidia-direct-cu12"].verdict is Verdict.BLOCKED
    assert by["app"].rule == PURE_RULE and by["app"].verdict is Verdict.READY
    assert by["app"].subject == "app==1.0"
    # A platform wheel has a native part: never fetched, still no data.
    assert by["native"].verdict is Verdict.NO_DATA
    assert not [p for p in log if p.endswith(f"{CP}-manylinux_2_28_x86_64.whl")]
    assert "/files/app-1.0-py3-none-any.whl" in log
    assert any("pure-Python wheels" in line for line in lines)


def test_without_wheel_reading_no_wheel_is_fetched(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH) as (url, log):
        scan = closure_scan(["app==1.0"], index_urls=[url], ctx=Context(), say=print,
                            read_wheels=False)
    assert not [p for p in log if p.endswith(".whl")]
    assert {f.package: f.verdict for f in scan.findings}["app"] is Verdict.NO_DATA


def test_framework_rule_follows_nvidia_parents_only() -> None:
    via = {"nvidia-a": ("torch",), "nvidia-b": ("nvidia-a", "torch"),
           "nvidia-c": ("torch", "vllm"), "nvidia-d": (), "nvidia-e": ("nvidia-c",),
           "numpy": ("torch",)}
    assert pulled_by_framework("nvidia-a", via) == "torch"
    assert pulled_by_framework("nvidia-b", via) == "torch"
    assert pulled_by_framework("nvidia-c", via) is None  # vllm asks for it too
    assert pulled_by_framework("nvidia-d", via) is None  # asked for on its own
    assert pulled_by_framework("nvidia-e", via) is None
    assert pulled_by_framework("numpy", via) is None


def test_via_annotations_are_read() -> None:
    text = ("nvidia-cublas-cu12==12.8.4.1\n    # via\n    #   nvidia-cudnn-cu12\n"
            "    #   torch\n    # from https://pypi.org/simple\n"
            "nvidia-nvtx-cu12==12.8.90\n    # via torch\n    # from https://pypi.org/simple\n"
            "vllm==0.11.0\n    # from https://pypi.org/simple\n"
            "six==1.0\n    # via -r requirements.in\n")
    assert parse_via(text) == {"nvidia-cublas-cu12": ("nvidia-cudnn-cu12", "torch"),
                               "nvidia-nvtx-cu12": ("torch",), "vllm": (), "six": ()}


def test_pylock_wheels_are_read() -> None:
    text = ('lock-version = "1.0"\n[[packages]]\nname = "Agent_Detector"\nversion = "2.0"\n'
            'wheels = [{ url = "https://x/agent_detector-2.0-py3-none-any.whl", size = 9, '
            'hashes = { sha256 = "ab" } }]\n[[packages]]\nname = "sdist-only"\n')
    wheels = pylock_wheels(text)
    assert wheels == {"agent-detector": [Wheel("https://x/agent_detector-2.0-py3-none-any.whl",
                                               9, "ab")], "sdist-only": []}
    assert wheels["agent-detector"][0].pure
    assert pylock_wheels("not = [toml") == {}


def _wheel(files: dict[str, bytes], purelib: bool = True) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr("pkg-1.0.dist-info/WHEEL",
                    f"Wheel-Version: 1.0\nRoot-Is-Purelib: {str(purelib).lower()}\n")
    return buf.getvalue()


def test_wheel_importing_a_cuda_only_module_is_not_ready() -> None:
    data = _wheel({"pkg/k.py": b"from pycuda.compiler import SourceModule\n"
                                b"mod = SourceModule('__global__ void k() {}')\n"})
    got = judge_wheel("pkg", "1.0", "pkg-1.0-py3-none-any.whl", data, Context())
    assert got.finding is None
    assert {f.rule for f in got.findings} >= {"python.pycuda"}
    assert all(f.path == "pkg-1.0-py3-none-any.whl!pkg/k.py" and f.package == "pkg"
               for f in got.findings)
    assert "not judged pure Python" in got.skipped[-1].reason


def test_wheel_with_a_native_member_or_platlib_is_not_pure() -> None:
    native = judge_wheel("pkg", "1.0", "w.whl", _wheel({"pkg/_c.so": b"\x7fELF",
                                                        "pkg/a.py": b"x = 1\n"}), Context())
    assert native.finding is None and "native members (_c.so)" in native.skipped[-1].reason
    plat = judge_wheel("pkg", "1.0", "w.whl", _wheel({"pkg/a.py": b"x = 1\n"}, False),
                       Context())
    assert plat.finding is None and "Root-Is-Purelib" in plat.skipped[-1].reason
    pure = judge_wheel("pkg", "1.0", "w.whl", _wheel({"pkg/a.py": b"x = 1\n"}), Context())
    assert pure.finding is not None and pure.finding.verdict is Verdict.READY


def test_wheel_whose_sha256_differs_is_not_read(tmp_path: Path) -> None:
    with serve_index(tmp_path, {"purelib==1.0": []}) as (url, _log):
        base = url.removesuffix("/simple")
        name = "purelib-1.0-py3-none-any.whl"
        real = hashlib.sha256((tmp_path / "index" / name).read_bytes()).hexdigest()
        good = Wheel(f"{base}/files/{name}", None, real)
        bad = Wheel(f"{base}/files/{name}", None, "0" * 64)
        big = Wheel(f"{base}/files/{name}", 10**9, real)
        got = read_pure_wheels([("a", "1.0", [good]), ("b", "1.0", [bad]),
                                ("c", "1.0", [big])], Context(), print)
    assert got["a"].finding is not None
    assert "sha256 differs" in got["b"].skipped[0].reason
    assert "not fetched" in got["c"].skipped[0].reason
