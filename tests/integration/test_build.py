"""pin build / rebuild with the real engine and registry: the same lock gives the same
manifest digest from scratch, skopeo reads what pin recorded, faults are exit 8."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.components import WHEELS, BaseImage, Engine, RegistryProc, small_lock

pytestmark = pytest.mark.docker


def test_build_push_record_and_rebuild_identically(dockerd: Engine, registry: RegistryProc,
                                                   base_image: BaseImage, tmp_path: Path) -> None:
    from pinning.image.engine import build_once
    from pinning.image.record import record
    from pinning.oci.registry import Registry

    lock = small_lock()
    first = build_once(dockerd.client, lock, base_image.ref, WHEELS, nocache=True)
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
