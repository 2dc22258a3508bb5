"""Start and stop the real components (private dockerd, local registry) for tests and
benchmarks. Raises ``RuntimeError`` when a component is missing or does not come up."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.paths import ROOT

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60.0) -> None:
    """Poll ``check`` until it returns truthy; ``RuntimeError`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:
            last = exc
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not come up in {timeout:g} s ({last})")


@dataclass
class Engine:
    """A private dockerd: ``url`` for the SDK, ``client`` (docker.DockerClient)."""

    url: str
    client: Any
    root: Path
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        """Stop the daemon and remove its data root."""
        self.client.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def start_dockerd() -> Engine:
    """dockerd on a private socket and data root, ``--bridge=none --iptables=false``."""
    exe = shutil.which("dockerd")
    if exe is None or os.geteuid() != 0:
        raise RuntimeError("dockerd is not installed or not running as root")
    import docker

    root = Path(tempfile.mkdtemp(prefix="pind-", dir="/tmp"))  # short: socket path limit
    sock = root / "docker.sock"
    with (root / "dockerd.log").open("wb") as log:  # the daemon keeps its own descriptor
        proc = subprocess.Popen(
            [exe, "--host", f"unix://{sock}", "--data-root", str(root / "data"),
             "--exec-root", str(root / "exec"), "--pidfile", str(root / "docker.pid"),
             "--bridge=none", "--iptables=false", "--ip6tables=false"],
            stdout=log, stderr=subprocess.STDOUT)
    wait_for(lambda: proc.poll() is None and sock.exists(), "dockerd socket")
    client = docker.DockerClient(base_url=f"unix://{sock}", timeout=600)
    wait_for(client.ping, "dockerd")
    return Engine(url=f"unix://{sock}", client=client, root=root, proc=proc)


@dataclass
class RegistryProc:
    """A registry on 127.0.0.1: ``url`` (http://...) and ``host`` (127.0.0.1:PORT)."""

    url: str
    host: str
    root: Path
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        """Stop the registry and remove its storage."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class BaseImage:
    """The base image in the test registry: ``repo``, ``digest`` and ``ref`` (repo@digest)."""

    repo: str
    digest: str
    ref: str
    epoch: int


def start_registry() -> RegistryProc:
    """The distribution registry (Debian ``docker-registry``) on a free 127.0.0.1 port."""
    exe = shutil.which("docker-registry") or shutil.which("registry")
    if exe is None:
        raise RuntimeError("the distribution registry (Debian docker-registry) is not installed")
    import requests

    root = Path(tempfile.mkdtemp(prefix="pinreg-"))
    port = free_port()
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {root / 'data'}\n  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n")
    with (root / "registry.log").open("wb") as log:  # the registry keeps its own descriptor
        proc = subprocess.Popen([exe, "serve", str(config)], stdout=log,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: proc.poll() is None and requests.get(url + "/v2/", timeout=2).ok,
             "registry")
    return RegistryProc(url=url, host=f"127.0.0.1:{port}", root=root, proc=proc)


def push_base(registry_url: str) -> tuple[str, str, int]:
    """Build (or take from the cache) the base layer and push it; ``(repo, digest, epoch)``."""
    from pinning.image.base import base_layer, load_recipe
    from pinning.image.layers import gzip_layer
    from pinning.oci.documents import image_docs
    from pinning.oci.registry import Registry

    recipe = load_recipe()
    layer = gzip_layer(base_layer(recipe).read_bytes())
    docs = image_docs([layer], epoch=recipe.epoch, env={"PATH": "/usr/bin:/bin"},
                      history=[f"debootstrap {recipe.suite} ({recipe.sha256[:12]})"])
    repo = "pin/base"
    return repo, Registry(registry_url).push_image(repo, recipe.suite, docs), recipe.epoch


# Real PyPI wheels, downloaded by `make wheelhouse` (part of `make test`).
WHEELS = ROOT / ".wheelhouse"
SMALL_PACKAGES = {"idna": "3.10", "packaging": "24.2", "six": "1.16.0"}


def small_lock() -> Lockfile:
    """A resolved MI300X lock whose [packages] are three small pure-Python wheels."""
    from pinning.lockfile.io import lock_json, seal
    from pinning.matrix.load import load_matrix
    from pinning.resolve.constraints import Constraints, parse_framework, parse_runtime_spec
    from pinning.resolve.resolver import resolve
    from pinning.resolve.to_lock import lock_from_resolution

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
