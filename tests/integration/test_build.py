"""pin build / rebuild with the real engine and registry: the same lock gives the same
manifest digest from scratch, skopeo reads what pin recorded, faults are exit 8."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.components import WHEELS, BaseImage, Engine, RegistryProc, small_lock
from tests.support.progress import Recorder

pytestmark = pytest.mark.docker


def test_build_push_record_and_rebuild_identically(dockerd: Engine, registry: RegistryProc,
                                                   base_image: BaseImage, tmp_path: Path) -> None:
    from pinning.image.build import build_once
    from pinning.image.record import record
    from pinning.oci.registry import Registry

    lock = small_lock()
    first = build_once(dockerd.client, lock, base_image.ref, WHEELS, nocache=True)
    # The base's layer is the base image's own blob, not exported nor re-compressed.
    assert first.docs.layers[0].data is None
    assert first.docs.layers[0].source == f"{registry.host}/{base_image.repo}"
    reg = Registry(registry.url)
    digest = reg.push_image("pin/trial", "t1", first.docs)
    assert digest == first.docs.digest
    recorded = record(lock, first, f"{registry.host}/pin/trial@{digest}")
    assert recorded.wheels is not None
    assert recorded.image.digest.value == digest and len(recorded.wheels) == 3
    # From scratch twice more, from the recorded lock (wheels pinned by hash): same bytes.
    for _ in range(2):
        again = build_once(dockerd.client, recorded, base_image.ref, WHEELS, nocache=True)
        assert again.docs.digest == digest
    out = subprocess.run([shutil.which("skopeo") or "skopeo", "inspect", "--tls-verify=false",
                          f"docker://{registry.host}/pin/trial@{digest}"],
                         capture_output=True, text=True, check=True, timeout=60)
    info = json.loads(out.stdout)
    assert info["Digest"] == digest
    assert info["Labels"]["dev.pin.lock.content-hash"].startswith("sha256:")
    # The image runs, with the locked packages importable and the network off.
    run = dockerd.client.containers.run(
        f"{registry.host}/pin/trial@{digest}",
        ["python3", "-c", "import six, idna, packaging; print(six.__version__)"],
        network_mode="none", remove=True)
    assert run.decode().strip() == "1.16.0"


VENDOR_DOCKERFILE = """FROM {base}
RUN mkdir -p /workspace /opt/vendor/bin && useradd -u 1000 -m vendor \\
 && printf '#!/bin/sh\\nexec "$@"\\n' > /opt/vendor/bin/entry.sh \\
 && chmod 755 /opt/vendor/bin/entry.sh
ENV PATH=/opt/vendor/bin:/usr/local/bin:/usr/bin:/bin VENDOR_HOME=/opt/vendor PIN_TRIAL=0
WORKDIR /workspace
USER vendor
ENTRYPOINT ["/opt/vendor/bin/entry.sh"]
CMD ["python3", "-c", "print('vendor')"]
"""


def vendor_base(dockerd: Engine, registry: RegistryProc, base_image: BaseImage) -> str:
    """A vendor-like base (its own user, workdir, entrypoint, cmd and environment) built and
    pushed by the engine (Docker v2 media types), then removed from the engine; its
    ``HOST/REPO@DIGEST``."""
    import io

    client = dockerd.client
    text = VENDOR_DOCKERFILE.format(base=base_image.ref).encode()
    image, _ = client.images.build(fileobj=io.BytesIO(text), network_mode="none", rm=True,
                                   tag=f"{registry.host}/vendor/base:7.2")
    digest = None
    for line in client.images.push(f"{registry.host}/vendor/base", "7.2", stream=True,
                                   decode=True):
        assert "error" not in line, line
        digest = (line.get("aux") or {}).get("Digest") or digest
    assert digest is not None
    client.images.remove(image.id, force=True)  # so that pin pulls it, by digest
    return f"{registry.host}/vendor/base:7.2@{digest}"


def test_vendor_base_is_pulled_by_digest_and_its_config_carried(
        dockerd: Engine, registry: RegistryProc, base_image: BaseImage) -> None:
    from pinning.image.build import build_once
    from pinning.image.plan import DEFAULT_PATH
    from pinning.oci.registry import Registry, fetch_docs

    base_ref = vendor_base(dockerd, registry, base_image)
    base = fetch_docs(registry.url, base_ref, layers=False)
    seen = Recorder()
    logged: list[str] = []
    built = build_once(dockerd.client, small_lock(), base_ref, WHEELS, nocache=True,
                       log=logged.append, progress=seen)
    assert any(line.startswith("Step ") for line in logged)
    # Pulled (one task per layer fetched, finished; the engine sends byte updates only for
    # some of them, coalescing the rest: tests/unit/image/test_assemble.py checks the bytes);
    # the base's layers neither exported nor re-compressed.
    pulls = seen.labels("pull ")
    assert pulls and all(t["done"] for t in pulls)
    assert all(t["total"] is None or t["seen"] <= t["total"] for t in pulls)
    export = seen.labels("export ")
    assert len(export) == 1 and export[0]["seen"] > 0
    assert seen.labels("normalise")[0]["total"] < 100 * 1024 * 1024  # only the added layer
    assert len(seen.labels("compress ")) == 1
    count = len(base.layers)
    assert built.docs.layers[:count] == base.layers
    assert all(layer.data is None for layer in built.docs.layers[:count])
    manifest = json.loads(built.docs.manifest)
    assert [d["mediaType"] for d in manifest["layers"][:count]] == [
        b.media_type for b in base.layers]
    config = json.loads(built.docs.config)["config"]
    env = dict(e.split("=", 1) for e in config["Env"])
    assert env["PATH"] == "/opt/vendor/bin:/usr/local/bin:/usr/bin:/bin" != DEFAULT_PATH
    assert env["VENDOR_HOME"] == "/opt/vendor" and env["PIN_TRIAL"] == "1"  # the lock wins
    assert config["Entrypoint"] == ["/opt/vendor/bin/entry.sh"]
    assert config["Cmd"] == ["python3", "-c", "print('vendor')"]
    assert config["WorkingDir"] == "/workspace" and config["User"] == "vendor"
    # Pushed to another repository of the same registry: the base's blobs are mounted.
    with Registry(registry.url) as reg:
        seen_push = Recorder()
        digest = reg.push_image("pin/vendor-trial", "t", built.docs, progress=seen_push)
        assert reg.stats.mounted + reg.stats.skipped >= count
    assert digest == built.docs.digest
    ref = f"{registry.host}/pin/vendor-trial@{digest}"
    out = dockerd.client.containers.run(
        ref, ["sh", "-c", "id -un; pwd; python3 -c 'import six; print(six.__version__)'"],
        network_mode="none", remove=True)
    assert out.decode().split() == ["vendor", "/workspace", "1.16.0"]
    # Without arguments the base's entrypoint runs the base's command.
    assert dockerd.client.containers.run(ref, network_mode="none", remove=True) == b"vendor\n"


def test_a_base_the_registry_does_not_have_is_exit_8(dockerd: Engine, registry: RegistryProc
                                                     ) -> None:
    from pinning.errors import BuildError
    from pinning.image.build import build_once

    missing = f"{registry.host}/vendor/absent@sha256:{'0' * 64}"
    with pytest.raises(BuildError) as info:
        build_once(dockerd.client, small_lock(), missing, WHEELS, nocache=True)
    assert info.value.exit_code == 8 and "vendor/absent" in info.value.message


def test_a_base_whose_python_is_not_the_locked_one_is_refused_before_the_build(
        dockerd: Engine, base_image: BaseImage) -> None:
    from pinning.errors import BuildError
    from pinning.image.build import base_python, build_once
    from pinning.lockfile.io import amend
    from pinning.lockfile.wheels import PythonTarget

    image = dockerd.client.images.pull(base_image.ref.rsplit("@", 1)[0],
                                       tag=base_image.digest)
    found = base_python(dockerd.client, image)
    assert found is not None and found.startswith("3.")  # Debian 12's python3
    other = "3.10" if found != "3.10" else "3.12"
    lock = amend(small_lock(), python=PythonTarget(
        version=other, platform="x86_64-manylinux_2_28", indexes=["https://pypi.org/simple"]))
    with pytest.raises(BuildError) as info:
        build_once(dockerd.client, lock, base_image.ref, WHEELS, nocache=True)
    assert f"runs Python {found}" in info.value.message and other in info.value.message
    assert f"--python-version {found}" in (info.value.hint or "")
    # The same lock resolved for the base's Python passes the check (and builds).
    assert lock.python is not None
    same = amend(lock, python=lock.python.model_copy(update={"version": found}))
    assert build_once(dockerd.client, same, base_image.ref, WHEELS, nocache=True).docs.digest
