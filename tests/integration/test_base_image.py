"""The locally made base image: pushed by pin with a reproducible digest (the same on every
push, to any repository), readable by skopeo and runnable by the engine with the network
off."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess

import pytest

from tests.support.components import BaseImage, Engine, RegistryProc

pytestmark = pytest.mark.docker


def test_base_push_is_reproducible(registry: RegistryProc, base_image: BaseImage) -> None:
    from pinning.image.base import base_image_docs, load_recipe, push_base_image
    from pinning.image.layers import COMPRESSOR, COMPRESSOR_ANNOTATION
    from pinning.image.plan import DEFAULT_PATH
    from pinning.oci.registry import Registry

    recipe = load_recipe()
    docs = base_image_docs(recipe)
    assert docs.digest == base_image.digest
    with Registry(registry.url) as reg:
        again = push_base_image(reg, "pin/base-again")
        assert again == f"{registry.host}/pin/base-again@{base_image.digest}"
        assert push_base_image(reg, "pin/base") == base_image.ref  # a second run: same ref
        assert reg.manifest_digest("pin/base", recipe.suite) == base_image.digest
        blob = reg.get_blob("pin/base", docs.layers[0].digest)
    assert gzip.decompress(blob)[257:262] == b"ustar"  # one gzip stream holding a tar
    config = json.loads(docs.config)
    assert config["config"]["Env"] == [f"PATH={DEFAULT_PATH}"]
    assert json.loads(docs.manifest)["annotations"] == {COMPRESSOR_ANNOTATION: COMPRESSOR}


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
