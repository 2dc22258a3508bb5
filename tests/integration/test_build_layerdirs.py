"""Issue 33 §1: pin reads only the layers a build added, from the engine's overlay2 store,
and gets the very layer ``docker save`` gives (deletions of base files, opaque directories,
hard and symbolic links, special files, modes), without exporting the base."""

from __future__ import annotations

import io
import tarfile

import pytest

from tests.support.components import WHEELS, BaseImage, Engine, RegistryProc, small_lock
from tests.support.progress import Recorder

pytestmark = pytest.mark.docker

TRICKY = """FROM {base}
RUN rm -rf /usr/share/doc /etc/issue && mkdir -p /usr/share/doc/pin /opt/t/sub \\
 && echo one > /opt/t/a && ln /opt/t/a /opt/t/sub/hard && ln -s ../a /opt/t/sub/soft \\
 && mkfifo /opt/t/fifo && chmod 4755 /opt/t/a && touch '/opt/t/sp ace' \\
 && mknod /opt/t/null c 1 3 && mkdir -p /var/cache/x && echo y > /var/cache/x/z
RUN rm -rf /opt/t/sub && mkdir /opt/t/sub && echo two > /opt/t/sub/new \\
 && rm /usr/share/doc/pin -r && rm -f /etc/hostname.d
"""


def _members(tar: bytes | None) -> dict[str, bytes]:
    """Member name -> tar type of an uncompressed layer tar."""
    assert tar is not None
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name.rstrip("/"): m.type for m in t.getmembers()}


def _skip_unless_readable(client: object) -> None:
    from pinning.image.layerdirs import store_readable

    if not store_readable(client):
        pytest.skip("the engine's layer store is not overlay2 readable by this process")


def test_layer_store_read_gives_the_save_layers(dockerd: Engine, base_image: BaseImage) -> None:
    from pinning.image.engine import export_layers
    from pinning.image.layerdirs import local_layers
    from pinning.image.layers import squash_layers

    client = dockerd.client
    _skip_unless_readable(client)
    image, _ = client.images.build(fileobj=io.BytesIO(TRICKY.format(base=base_image.ref)
                                                      .encode()),
                                   network_mode="none", rm=True, nocache=True)
    try:
        count = len(client.images.get(base_image.ref).attrs["RootFS"]["Layers"])
        saved = export_layers(client, image.id)
        seen = Recorder()
        local = local_layers(client, image.id, count, progress=seen)
        assert local is not None and local[:count] == [None] * count
        assert len(local) == len(saved) == count + 2
        for ours, theirs in zip(local[count:], saved[count:], strict=True):
            assert ours is not None and theirs is not None
            assert (squash_layers([io.BytesIO(ours)], epoch=1)
                    == squash_layers([io.BytesIO(theirs)], epoch=1))
        names = [_members(d) for d in local[count:]]
        assert {"etc/.wh.issue", "usr/share/doc/.wh..wh..opq"} <= set(names[0])
        assert names[0]["opt/t/sub/hard"] == tarfile.LNKTYPE
        assert names[0]["opt/t/null"] == tarfile.CHRTYPE
        assert names[0]["opt/t/fifo"] == tarfile.FIFOTYPE
        assert {"opt/t/sub/.wh..wh..opq", "usr/share/doc/.wh.pin"} <= set(names[1])
        both = [io.BytesIO(d) for d in local[count:] if d is not None]
        squashed = squash_layers(both, epoch=1)
        assert squashed == squash_layers([io.BytesIO(d) for d in saved[count:] if d], epoch=1)
        export = seen.labels("export ")
        assert len(export) == 1 and export[0]["done"] and export[0]["seen"] > 0
    finally:
        client.images.remove(image.id, force=True)


def test_build_reads_only_the_added_layers_and_matches_save(
        dockerd: Engine, registry: RegistryProc, base_image: BaseImage,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pinning.image import build as build_mod
    from pinning.image.build import build_once

    _skip_unless_readable(dockerd.client)
    seen = Recorder()
    fast = build_once(dockerd.client, small_lock(), base_image.ref, WHEELS, nocache=True,
                      progress=seen)
    # Only the added layer's bytes were read (the base is 180 MB as a tar).
    assert seen.labels("export ")[0]["seen"] < 50 * 1024 * 1024
    monkeypatch.setattr(build_mod, "local_layers", lambda *a, **k: None)
    slow = build_once(dockerd.client, small_lock(), base_image.ref, WHEELS, nocache=True)
    assert fast.docs.digest == slow.docs.digest
