"""``pin lock packages`` end to end (issue 16, section 3), then the fetch step ``pin build``
runs before building with the network off.

- Variant wheels from PEP 503 indexes on 127.0.0.1 (``tests.support.pyindex``): PyTorch's
  ROCm build from one index URL and its CUDA build from another, the wheel of the target's
  platform chosen among several, fetched hash-checked into a cache that the build plan
  (``pinning.image.plan.find_wheels``) accepts as it is.
- A small real closure from PyPI (``requests==2.32.3``: charset-normalizer, idna, urllib3,
  certifi), with per-platform wheels for charset-normalizer. Without network it skips,
  unless ``CI=true`` or ``PIN_REQUIRE_NETWORK=1``, which make it a failure (as the sdist tests
  of ``test_audit_real_sdists.py`` do).
"""

from __future__ import annotations

import hashlib
import os
import socket
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinning.image.fetch import fetch_wheels
from pinning.image.plan import find_wheels
from pinning.lockfile.io import amend, read_lock, write_lock
from tests.support.cli import json_result, pin
from tests.support.paths import ROOT
from tests.support.pyindex import IndexSpec, serve_indexes

PLATFORMS = ["cp312-cp312-manylinux_2_28_x86_64", "cp312-cp312-manylinux_2_28_aarch64",
             "cp311-cp311-manylinux_2_28_x86_64", "py3-none-any"]
INDEXES = {
    # PyPI's stand-in: the plain (CUDA-default) torch and the shared dependencies.
    "pypi": IndexSpec({"torch==2.13.0": ["filelock"], "filelock==3.0": [],
                       "numpy==2.3.5": []}, tags={"numpy==2.3.5": PLATFORMS}),
    "rocm7.2": IndexSpec({"torch==2.13.0+rocm7.2": ["filelock", "pytorch-triton-rocm==3.5.0"],
                          "pytorch-triton-rocm==3.5.0": []},
                         tags={"torch==2.13.0+rocm7.2": PLATFORMS}),
    "cu130": IndexSpec({"torch==2.13.0+cu130": ["filelock", "nvidia-fake-cu13==13.0"],
                        "nvidia-fake-cu13==13.0": []},
                       tags={"torch==2.13.0+cu130": PLATFORMS}),
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(UV_CACHE_DIR=str(tmp_path / "uv-cache"), NO_PROXY="127.0.0.1",
               PIN_CACHE_DIR=str(tmp_path / "pin-cache"))
    return env


@pytest.fixture
def indexes(tmp_path: Path) -> Iterator[tuple[dict[str, str], list[str]]]:
    with serve_indexes(tmp_path, INDEXES) as served:
        yield served


def _lock_packages(tmp_path: Path, lock_name: str, env: dict[str, str], *args: str
                   ) -> tuple[Path, dict[str, Any]]:
    lock = tmp_path / lock_name
    lock.write_bytes((ROOT / "lockfiles" / lock_name).read_bytes())
    r = pin("lock", "packages", str(lock), *args, "--format", "json", env=env)
    result = json_result(r)
    assert r.returncode == 0, r.stderr
    return lock, result


@pytest.mark.parametrize(("lock_name", "variant", "extra"), [
    ("mi300x-pytorch-2.13.0.lock", "rocm7.2", "pytorch-triton-rocm"),
    ("h200-pytorch-2.13.0.lock", "cu130", "nvidia-fake-cu13"),
])
def test_each_variant_from_its_index_then_fetched(
        tmp_path: Path, env: dict[str, str], indexes: tuple[dict[str, str], list[str]],
        lock_name: str, variant: str, extra: str) -> None:
    urls, log = indexes
    lock, result = _lock_packages(
        tmp_path, lock_name, env, "--index", urls["pypi"], "--index", urls[variant],
        "--requirement", "numpy==2.3.5",
        "--python-version", "3.12", "--python-platform", "x86_64-manylinux_2_28")
    lk = read_lock(lock)
    assert lk.packages == {"filelock": "3.0", "numpy": "2.3.5", "torch": f"2.13.0+{variant}",
                           extra: "3.5.0" if "triton" in extra else "13.0"}
    by_name = {w.name: w for w in lk.wheels or []}
    torch = by_name["torch"]
    assert torch.filename == f"torch-2.13.0+{variant}-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert torch.url == (f"{urls[variant].removesuffix('/simple')}/files/"
                         f"torch-2.13.0%2B{variant}-cp312-cp312-manylinux_2_28_x86_64.whl")
    assert by_name["numpy"].filename == "numpy-2.3.5-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert by_name["numpy"].url is not None and "/pypi/files/" in by_name["numpy"].url
    # uv's first-index strategy: the variant index (searched first) serves torch, PyPI the rest.
    assert by_name["filelock"].url is not None and "/pypi/files/" in by_name["filelock"].url
    assert result["notes"][0].startswith(
        f"pytorch 2.13.0: torch==2.13.0+{variant} from the --index given")
    # The fetch step: exactly the locked files, hash-checked, which the build plan accepts.
    log.clear()
    cache = fetch_wheels(lk, tmp_path / "pin-cache" / "wheels")
    assert sorted(p.rsplit("/", 1)[1] for p in log) == sorted(
        w.filename for w in by_name.values())
    assert find_wheels(lk, cache) == tuple(lk.wheels or [])
    for w in by_name.values():
        assert hashlib.sha256((cache / w.filename).read_bytes()).hexdigest() == w.sha256


def test_an_arm_target_gets_arm_wheels(tmp_path: Path, env: dict[str, str],
                                       indexes: tuple[dict[str, str], list[str]]) -> None:
    urls, _log = indexes
    lock, _ = _lock_packages(tmp_path, "mi300x-pytorch-2.13.0.lock", env,
                             "--index", urls["pypi"], "--index", urls["rocm7.2"],
                             "--python-version", "3.12",
                             "--python-platform", "aarch64-manylinux_2_28")
    wheels = {w.name: w.filename for w in read_lock(lock).wheels or []}
    assert wheels["torch"] == "torch-2.13.0+rocm7.2-cp312-cp312-manylinux_2_28_aarch64.whl"
    # Python 3.11 on x86-64: its own CPython wheel, not the 3.12 one.
    lock, _ = _lock_packages(tmp_path, "mi300x-pytorch-2.13.0.lock", env,
                             "--index", urls["pypi"], "--index", urls["rocm7.2"],
                             "--python-version", "3.11",
                             "--python-platform", "x86_64-manylinux_2_28")
    wheels = {w.name: w.filename for w in read_lock(lock).wheels or []}
    assert wheels["torch"] == "torch-2.13.0+rocm7.2-cp311-cp311-manylinux_2_28_x86_64.whl"


# --- real PyPI ---------------------------------------------------------------------------

def _network_required() -> bool:
    return (os.environ.get("CI", "").lower() in {"true", "1"}
            or os.environ.get("PIN_REQUIRE_NETWORK") == "1")


def _reach(url: str) -> None:
    """Skip the test when ``url`` cannot be read, or fail it when network is required."""
    import requests

    try:
        requests.get(url, timeout=(10, 30)).raise_for_status()
    except requests.RequestException as exc:
        if _network_required():
            pytest.fail(f"CI=true or PIN_REQUIRE_NETWORK=1, but {url} is unreachable: {exc}")
        pytest.skip(f"{url} is unreachable ({exc}); set PIN_REQUIRE_NETWORK=1 to make this "
                    "a failure")


@pytest.fixture(scope="module")
def pypi() -> None:
    _reach("https://pypi.org/simple/requests/")


@pytest.mark.parametrize(("env", "outcome"), [
    ({}, pytest.skip.Exception),
    ({"PIN_REQUIRE_NETWORK": "1"}, pytest.fail.Exception),
    ({"CI": "true"}, pytest.fail.Exception),
])
def test_no_network_skips_unless_required(monkeypatch: pytest.MonkeyPatch,
                                          env: dict[str, str],
                                          outcome: type[BaseException]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("PIN_REQUIRE_NETWORK", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(outcome, match="unreachable"):
        _reach(f"http://127.0.0.1:{port}/simple/requests/")


@pytest.mark.usefixtures("pypi")
@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_a_real_closure_from_pypi(tmp_path: Path, env: dict[str, str], arch: str) -> None:
    lock = tmp_path / "pin.lock"
    # No framework: the closure of requests alone, from PyPI (the default index).
    base = read_lock(ROOT / "lockfiles" / "mi355x-vllm-0.27.0.lock")
    write_lock(amend(base, frameworks=[]), lock)
    r = pin("lock", "packages", str(lock), "--requirement", "requests==2.32.3",
            "--python-version", "3.12", "--python-platform", f"{arch}-manylinux_2_28",
            env=env)
    assert r.returncode == 0, r.stderr
    data = tomllib.loads(lock.read_text())
    assert set(data["packages"]) == {"certifi", "charset-normalizer", "idna", "requests",
                                     "urllib3"}
    assert data["packages"]["requests"] == "2.32.3"
    assert data["python"]["indexes"] == ["https://pypi.org/simple"]
    wheels = {w["name"]: w for w in data["wheels"]}
    assert wheels["requests"]["filename"] == "requests-2.32.3-py3-none-any.whl"
    # charset-normalizer publishes per-platform wheels: the target's, not the pure one.
    cn = wheels["charset-normalizer"]["filename"]
    assert f"{arch}.whl" in cn and "manylinux" in cn, cn
    for w in wheels.values():
        assert w["url"].startswith("https://files.pythonhosted.org/"), w
        assert w["size"] > 0 and len(w["sha256"]) == 64
    # The fetch step downloads them (a few hundred kB) and checks every sha256.
    lk = read_lock(lock)
    cache = fetch_wheels(lk, tmp_path / "wheels", jobs=3)
    for w in lk.wheels or []:
        assert (cache / w.filename).stat().st_size == w.size
    assert find_wheels(lk, cache) == tuple(lk.wheels or [])
