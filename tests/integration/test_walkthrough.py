"""The docs' image walkthrough (docs/workflows/image.md), run verbatim (issue 16, "Done when").

The fenced block between ``<!-- walkthrough:start`` and ``<!-- walkthrough:end -->`` in
docs/workflows/image.md is run with ``bash -euo pipefail`` in a fresh folder, with only ``pin`` on PATH
from this interpreter's venv, against:

- Debian's ``docker-registry`` asking for a password (htpasswd) over TLS, with a CA made by
  the test (``REG``, ``registry-ca.pem``, ``REGISTRY_USER`` / ``REGISTRY_PASSWORD``);
- a private ``dockerd`` (``DOCKER_HOST``), which pulls the base from that registry with the
  credentials ``pin login`` stored in a fresh ``DOCKER_CONFIG``;
- a PEP 503 index on 127.0.0.1 (``INDEX``) standing in for PyTorch's ROCm 7.2 index: a
  ``torch`` 2.13.0+rocm7.2 test wheel (pure Python, a stand-in: no real PyTorch is installed
  into the image) with its dependencies.

Then the results are checked from the outside: the lock records every wheel with URL and
sha256 and the image digest; the registry serves that digest; the signatures were written
in both layouts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.integration.conftest import _unavailable, running_registry
from tests.support.components import Engine, RegistryProc
from tests.support.paths import ROOT
from tests.support.pyindex import IndexSpec, serve_indexes

USER, PASSWORD = "trial-team", "s3cret-for-the-walkthrough"
_BLOCK = re.compile(r"<!-- walkthrough:start[^\n]*-->\n```sh\n(.*?)```\n<!-- walkthrough:end -->",
                    re.S)
PY311 = ["cp311-cp311-manylinux_2_28_x86_64", "cp312-cp312-manylinux_2_28_x86_64"]
INDEX = IndexSpec({
    "torch==2.13.0+rocm7.2": ["filelock", "pytorch-triton-rocm==3.5.0"],
    "pytorch-triton-rocm==3.5.0": [],
    "filelock==3.0": [],
}, tags={"torch==2.13.0+rocm7.2": PY311})


def walkthrough() -> str:
    """The walkthrough block of docs/workflows/image.md, as written."""
    found = _BLOCK.search((ROOT / "docs" / "workflows" / "image.md").read_text())
    assert found is not None, "docs/workflows/image.md has no walkthrough block"
    return found.group(1)


@pytest.fixture
def tls_registry() -> Iterator[RegistryProc]:
    yield from running_registry(auth=(USER, PASSWORD), tls=True)


def test_readme_walkthrough_runs_with_pin_commands_only(
        dockerd: Engine, tls_registry: RegistryProc, tmp_path: Path) -> None:
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        _unavailable("debootstrap is not installed or not running as root")
    work = tmp_path / "work"
    work.mkdir()
    assert tls_registry.ca is not None
    shutil.copyfile(tls_registry.ca, work / "registry-ca.pem")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "pin").write_text(f"#!/bin/sh\nexec {sys.executable} -m pinning \"$@\"\n")
    (bindir / "pin").chmod(0o755)
    with serve_indexes(tmp_path, {"rocm7.2": INDEX}) as (urls, _log):
        env = {k: v for k, v in os.environ.items()
               if "proxy" not in k.lower() and not k.startswith(("PIN_REGISTRY", "DOCKER_"))}
        env.update(
            PATH=f"{bindir}:/usr/sbin:/usr/bin:/sbin:/bin", REG=tls_registry.host,
            REGISTRY_USER=USER, REGISTRY_PASSWORD=PASSWORD, INDEX=urls["rocm7.2"],
            DOCKER_HOST=dockerd.url, DOCKER_CONFIG=str(tmp_path / "docker-config"),
            PIN_KEY_PASSWORD="walkthrough key", NO_PROXY="127.0.0.1",
            UV_CACHE_DIR=str(tmp_path / "uv-cache"))
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", walkthrough()], cwd=work,
                              env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"

    lock = tomllib.loads((work / "trial.lock").read_text())
    wheels = {w["name"]: w for w in lock["wheels"]}
    assert set(wheels) == {"torch", "filelock", "pytorch-triton-rocm"}
    assert wheels["torch"]["version"] == "2.13.0+rocm7.2"
    assert wheels["torch"]["filename"].endswith("cp311-cp311-manylinux_2_28_x86_64.whl")
    assert all(w["url"].startswith(urls["rocm7.2"].rsplit("/simple", 1)[0]) and
               re.fullmatch("[0-9a-f]{64}", w["sha256"]) for w in wheels.values())
    digest = lock["image"]["digest"]["value"]
    ref = lock["image"]["ref"]["value"]
    assert ref == f"{tls_registry.host}/pin/trial@{digest}"
    assert lock["image"]["base"]["value"] == f"{tls_registry.host}/pin/base"
    assert "3 rebuild(s) from scratch gave " + digest in done.stdout
    # The registry serves the digest the lock records, only to the user who logged in.
    url = f"{tls_registry.url}/v2/pin/trial/manifests/{digest}"
    accept = {"Accept": "application/vnd.oci.image.manifest.v1+json"}
    ca = str(tls_registry.ca)
    assert requests.head(url, headers=accept, verify=ca, timeout=10).status_code == 401
    served = requests.get(url, headers=accept, verify=ca, auth=(USER, PASSWORD), timeout=10)
    assert served.status_code == 200 and served.headers["Docker-Content-Digest"] == digest
    # Both signature layouts are there: cosign's .sig tag and the referrers tag index.
    tags = requests.get(f"{tls_registry.url}/v2/pin/trial/tags/list", verify=ca,
                        auth=(USER, PASSWORD), timeout=10).json()["tags"]
    hexd = digest.removeprefix("sha256:")
    assert {f"sha256-{hexd}.sig", f"sha256-{hexd}.att", f"sha256-{hexd}"} <= set(tags)
    # pin login wrote the credentials where Docker (and pin) read them, not in the clear.
    config = (tmp_path / "docker-config" / "config.json").read_text()
    assert tls_registry.host in config and PASSWORD not in config
