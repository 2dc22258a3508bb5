"""The locally made base image: pushed by pin with a reproducible digest, readable by skopeo
and runnable by the engine with the network off."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.support.components import BaseImage, Engine, RegistryProc

pytestmark = pytest.mark.docker


def test_base_push_is_reproducible(registry: RegistryProc, base_image: BaseImage) -> None:
    from pinning.image.base import base_layer, load_recipe
    from pinning.image.layers import gzip_layer
    from pinning.oci.documents import image_docs
    from pinning.oci.registry import Registry

    recipe = load_recipe()
    docs = image_docs([gzip_layer(base_layer(recipe).read_bytes())], epoch=recipe.epoch,
                      env={"PATH": "/usr/bin:/bin"},
                      history=[f"debootstrap {recipe.suite} ({recipe.sha256[:12]})"])
    assert docs.digest == base_image.digest
    again = Registry(registry.url).push_image("pin/base-again", "x", docs)
    assert again == base_image.digest
    assert Registry(registry.url).manifest_digest("pin/base", recipe.suite) == base_image.digest


def test_skopeo_reads_the_digest(registry: RegistryProc, base_image: BaseImage) -> None:
    skopeo = shutil.which("skopeo")
    if skopeo is None:
        pytest.fail("skopeo is not installed")
    out = subprocess.run(
        [skopeo, "inspect", "--tls-verify=false", f"docker://{base_image.ref}"],
        capture_output=True, text=True, check=True, timeout=60)
    info = json.loads(out.stdout)
    assert info["Digest"] == base_image.digest
    assert info["Os"] == "linux" and info["Architecture"] == "amd64"


def test_engine_runs_the_base_with_network_off(dockerd: Engine, base_image: BaseImage) -> None:
    client = dockerd.client
    image = client.images.pull(base_image.ref)
    out = client.containers.run(image.id, ["python3", "-c", "import sys; print(sys.version[:4])"],
                                network_mode="none", remove=True)
    assert out.decode().startswith("3.11")
