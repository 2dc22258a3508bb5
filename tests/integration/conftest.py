"""Real components for integration tests, started by the tests themselves.

- ``dockerd``: Docker Engine on a private socket and data root, ``--bridge=none
  --iptables=false`` (no network for builds); stopped at the end of the session.
- ``registry``: the distribution registry (Debian ``docker-registry``) on 127.0.0.1, free port.
- ``base_image``: the debootstrap base layer (cached by its recipe, see
  ``pinning.build.base``) pushed to that registry by pin's own pusher.

Without the components these tests skip, unless ``PIN_REQUIRE_DOCKER=1`` (CI), which makes a
missing engine a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Real PyPI wheels, downloaded by `make wheelhouse` (part of `make test`).
WHEELS = ROOT / ".wheelhouse"
SMALL_PACKAGES = {"idna": "3.10", "packaging": "24.2", "six": "1.16.0"}


def small_lock():  # type: ignore[no-untyped-def]
    """A resolved MI300X lock whose [packages] are three small pure-Python wheels."""
    from pinning.lockfile.build import lock_from_resolution
    from pinning.lockfile.io import lock_json, seal
    from pinning.matrix.load import load_matrix
    from pinning.resolve import Constraints, parse_framework, parse_runtime_spec, resolve

    if not WHEELS.is_dir():
        pytest.fail(f"{WHEELS} is missing: run `make wheelhouse`")
    m = load_matrix()
    c = Constraints(gpu="mi300x", frameworks=(parse_framework("pytorch==2.7"),),
                    rocm=parse_runtime_spec("--rocm", "7.1.1"))
    data = lock_json(lock_from_resolution(resolve(m, c), m))
    data["packages"] = dict(SMALL_PACKAGES)
    data["environment"] = {"PIN_TRIAL": "1"}
    data.pop("content-hash")
    return seal(data)


def _unavailable(reason: str) -> None:
    if os.environ.get("PIN_REQUIRE_DOCKER") == "1":
        pytest.fail(f"PIN_REQUIRE_DOCKER=1 but {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(check, what: str, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:
            last = exc
        time.sleep(0.2)
    pytest.fail(f"{what} did not come up in {timeout:g} s ({last})")


@dataclass
class Engine:
    """A running private dockerd: ``url`` for the SDK, ``client`` (docker.DockerClient)."""

    url: str
    client: object
    root: Path


@pytest.fixture(scope="session")
def dockerd() -> Iterator[Engine]:
    exe = shutil.which("dockerd")
    if exe is None or os.geteuid() != 0:
        _unavailable("dockerd is not installed or not running as root")
    import docker

    root = Path(tempfile.mkdtemp(prefix="pind-", dir="/tmp"))  # short: socket path limit
    sock = root / "docker.sock"
    log = (root / "dockerd.log").open("wb")
    proc = subprocess.Popen(
        [exe, "--host", f"unix://{sock}", "--data-root", str(root / "data"),
         "--exec-root", str(root / "exec"), "--pidfile", str(root / "docker.pid"),
         "--bridge=none", "--iptables=false", "--ip6tables=false"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    _wait(lambda: proc.poll() is None and sock.exists(), "dockerd socket")
    client = docker.DockerClient(base_url=f"unix://{sock}", timeout=300)
    _wait(lambda: client.ping(), "dockerd")
    try:
        yield Engine(url=f"unix://{sock}", client=client, root=root)
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class RegistryProc:
    """A running registry: ``url`` (http://127.0.0.1:PORT) and ``host`` (127.0.0.1:PORT)."""

    url: str
    host: str
    proc: subprocess.Popen[bytes]


@pytest.fixture(scope="session")
def registry() -> Iterator[RegistryProc]:
    exe = shutil.which("docker-registry") or shutil.which("registry")
    if exe is None:
        _unavailable("the distribution registry (Debian docker-registry) is not installed")
    import requests

    root = Path(tempfile.mkdtemp(prefix="pinreg-"))
    port = _free_port()
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {root / 'data'}\n  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
    )
    log = (root / "registry.log").open("wb")
    proc = subprocess.Popen([exe, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    _wait(lambda: proc.poll() is None and requests.get(url + "/v2/", timeout=2).ok, "registry")
    try:
        yield RegistryProc(url=url, host=f"127.0.0.1:{port}", proc=proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class BaseImage:
    """The base image in the test registry: ``repo``, ``digest`` and ``ref`` (repo@digest)."""

    repo: str
    digest: str
    ref: str
    epoch: int


@pytest.fixture(scope="session")
def base_image(registry: RegistryProc) -> BaseImage:
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        _unavailable("debootstrap is not installed or not running as root")
    from pinning.build.base import base_layer, load_recipe
    from pinning.build.layers import gzip_layer
    from pinning.build.oci import image_docs
    from pinning.build.registry import Registry

    recipe = load_recipe()
    layer = gzip_layer(base_layer(recipe).read_bytes())
    docs = image_docs([layer], epoch=recipe.epoch, env={"PATH": "/usr/bin:/bin"},
                      history=[f"debootstrap {recipe.suite} ({recipe.sha256[:12]})"])
    repo = "pin/base"
    digest = Registry(registry.url).push_image(repo, recipe.suite, docs)
    return BaseImage(repo=repo, digest=digest, ref=f"{registry.host}/{repo}@{digest}",
                     epoch=recipe.epoch)
