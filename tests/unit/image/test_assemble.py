"""From the engine's export to the image documents, without an engine: the base's layers
passed over in ``docker save`` (OCI layout and legacy archives) and reused as the base's own
blobs, the base's config (Entrypoint, Cmd, WorkingDir, User, Env) carried with the lock's
environment winning, the pull of the base by digest with its progress and in-stream errors.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Iterator
from typing import Any

import pytest

from pinning.errors import BuildError
from pinning.image.assemble import assemble, base_config, image_env
from pinning.image.layers import COMPRESSOR, COMPRESSOR_ANNOTATION
from pinning.image.plan import DEFAULT_PATH, BuildPlan
from pinning.oci.documents import LOCK_LABEL, ImageDocs, LayerBlob, image_docs
from pinning.util.digests import canonical_json, sha256_digest
from tests.support.progress import Recorder

DOCKER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"
EPOCH = 1_700_000_000


def tar_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.uid = len(data), 12345, 1000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


BASE_TAR = tar_of({"usr/bin/vendor-tool": b"#!/bin/sh\n"})
TOP_TAR = tar_of({"usr/local/lib/python3/six.py": b"six = 1\n", "var/log/pip.log": b"x"})


def vendor_base(config: dict[str, Any]) -> tuple[ImageDocs, str]:
    """A base as ``fetch_docs(..., layers=False)`` gives it: descriptors, no layer bytes."""
    blob = LayerBlob(data=None, digest="sha256:" + "d" * 64, diff_id=sha256_digest(BASE_TAR),
                     media_type=DOCKER_GZIP, source="registry.example/vendor/base",
                     length=4321)
    raw = canonical_json({"architecture": "arm64", "os": "linux", "config": config,
                          "rootfs": {"type": "layers", "diff_ids": [blob.diff_id]}})
    manifest = canonical_json({"schemaVersion": 2, "layers": [{"digest": blob.digest}]})
    docs = ImageDocs(layers=(blob,), config=raw, manifest=manifest)
    return docs, f"registry.example/vendor/base@{docs.digest}"


VENDOR = {"Env": ["PATH=/opt/conda/bin:/usr/bin", "LANG=C.UTF-8", "PIN_TRIAL=0", "NOEQ"],
          "Entrypoint": ["/opt/entry.sh"], "Cmd": ["bash"], "WorkingDir": "/workspace",
          "User": "1000:1000", "Labels": {"vendor": "x"}}


def plan_for(base_ref: str, env: dict[str, str] | None = None) -> BuildPlan:
    return BuildPlan(base_ref=base_ref, wheels=(), env=env or {"PIN_TRIAL": "1"}, epoch=EPOCH,
                     input_hash="sha256:" + "e" * 64)


def test_base_config_is_carried_and_the_lock_env_wins() -> None:
    base, ref = vendor_base(VENDOR)
    docs = assemble(plan_for(ref), [None, TOP_TAR], base)
    config = json.loads(docs.config)
    assert config["config"] == {
        "Entrypoint": ["/opt/entry.sh"], "Cmd": ["bash"], "WorkingDir": "/workspace",
        "User": "1000:1000", "Labels": {LOCK_LABEL: "sha256:" + "e" * 64},
        "Env": ["LANG=C.UTF-8", "PATH=/opt/conda/bin:/usr/bin", "PIN_TRIAL=1"]}
    assert config["architecture"] == "arm64"
    manifest = json.loads(docs.manifest)
    assert manifest["annotations"] == {
        "org.opencontainers.image.base.digest": base.digest, COMPRESSOR_ANNOTATION: COMPRESSOR}


def test_base_layers_are_the_bases_blobs_never_recompressed() -> None:
    base, ref = vendor_base(VENDOR)
    skipped = assemble(plan_for(ref), [None, TOP_TAR], base)
    exported = assemble(plan_for(ref), [BASE_TAR, TOP_TAR], base)  # same tar: same blob
    assert skipped.digest == exported.digest
    first = json.loads(skipped.manifest)["layers"][0]
    assert first == {"mediaType": DOCKER_GZIP, "digest": "sha256:" + "d" * 64, "size": 4321}
    assert skipped.layers[0] is base.layers[0] and skipped.layers[0].data is None
    top = skipped.layers[1]
    assert top.data is not None
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(top.data))) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["usr/local/lib/python3/six.py"]  # logs dropped
    assert {(m.mtime, m.uid) for m in members} == {(EPOCH, 0)}


def test_a_base_layer_the_engine_changed_is_normalised_and_compressed() -> None:
    base, ref = vendor_base(VENDOR)
    other = tar_of({"usr/bin/vendor-tool": b"changed\n"})
    docs = assemble(plan_for(ref), [other, TOP_TAR], base)
    assert docs.layers[0].digest != base.layers[0].digest
    assert docs.layers[0].data is not None and docs.layers[0].source is None


def test_without_base_path_the_default_path_and_no_entrypoint() -> None:
    base, ref = vendor_base({"Env": ["LANG=C"]})
    config = json.loads(assemble(plan_for(ref), [None, TOP_TAR], base).config)["config"]
    assert config["Env"] == ["LANG=C", f"PATH={DEFAULT_PATH}", "PIN_TRIAL=1"]
    assert not {"Entrypoint", "Cmd", "WorkingDir", "User"} & set(config)
    # The lock may set PATH itself; it wins over the base's and the default.
    assert image_env(base_config(base.config), {"PATH": "/x"})["PATH"] == "/x"


def test_pins_own_base_keeps_the_trial_config_it_had() -> None:
    """pin's base sets only PATH (the default): the trial config is what it was before the
    base's config was carried (env = default PATH + the lock's, nothing else)."""
    base, ref = vendor_base({"Env": [f"PATH={DEFAULT_PATH}"]})
    docs = assemble(plan_for(ref), [None, TOP_TAR], base)
    before = image_docs(docs.layers, epoch=EPOCH, env={"PATH": DEFAULT_PATH, "PIN_TRIAL": "1"},
                        labels={LOCK_LABEL: "sha256:" + "e" * 64},
                        history=[f"base {base.digest}", "pip install --require-hashes 0 wheels"],
                        architecture="arm64")
    assert docs.config == before.config


def test_nothing_above_the_base_or_a_malformed_base_config_is_exit_8() -> None:
    base, ref = vendor_base(VENDOR)
    with pytest.raises(BuildError, match="no layer above the base"):
        assemble(plan_for(ref), [None], base)
    bad = ImageDocs(layers=base.layers, config=b'{"config": {"Env": "PATH=/bin"}}',
                    manifest=base.manifest)
    with pytest.raises(BuildError, match="config.Env") as info:
        assemble(plan_for(ref), [None, TOP_TAR], bad)
    assert info.value.exit_code == 8
    with pytest.raises(BuildError, match="not JSON"):
        base_config(b"{")


def test_normalise_reports_the_bytes_of_the_layers_above_the_base() -> None:
    base, ref = vendor_base(VENDOR)
    seen = Recorder()
    assemble(plan_for(ref), [None, TOP_TAR], base, progress=seen)
    norm = [t for t in seen.tasks if t["label"] == "normalise"]
    assert [(t["total"], t["seen"], t["finished"]) for t in norm] == [
        (len(TOP_TAR), len(TOP_TAR), 1)]
    assert [t["label"] for t in seen.tasks if t["label"].startswith("compress")] == [
        "compress layer 1/1"]


# --- docker save, streamed -------------------------------------------------------------------

def save_archive(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class SaveClient:
    """A docker SDK client whose ``api.get_image`` streams ``archive`` in chunks."""

    def __init__(self, archive: bytes) -> None:
        self.archive = archive
        self.api = self

    def get_image(self, image_id: str) -> Iterator[bytes]:
        for i in range(0, len(self.archive), 1000):
            yield self.archive[i:i + 1000]


def hexof(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_oci_layout_save_passes_over_base_layers_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    from pinning.image.engine import export_layers

    base_path, top_path = f"blobs/sha256/{hexof(BASE_TAR)}", f"blobs/sha256/{hexof(TOP_TAR)}"
    manifest = json.dumps([{"Layers": [base_path, top_path]}]).encode()
    archive = save_archive([(base_path, BASE_TAR), (top_path, TOP_TAR),
                            ("index.json", b"{}"), ("manifest.json", manifest)])
    extracted: list[str] = []
    original = tarfile.TarFile.extractfile

    def spy(self: tarfile.TarFile, member: Any) -> Any:
        extracted.append(member.name if isinstance(member, tarfile.TarInfo) else member)
        return original(self, member)

    monkeypatch.setattr(tarfile.TarFile, "extractfile", spy)
    seen = Recorder()
    layers = export_layers(SaveClient(archive), "sha256:" + "f" * 64,
                           skip={sha256_digest(BASE_TAR)}, progress=seen)
    assert layers == [None, TOP_TAR]
    assert base_path not in extracted and top_path in extracted
    assert [(t["label"], t["total"], t["seen"], t["done"]) for t in seen.tasks] == [
        ("export ffffffffffff", None, len(archive), True)]


def test_legacy_save_drops_base_layers_by_their_hash() -> None:
    from pinning.image.engine import export_layers

    manifest = json.dumps([{"Layers": ["aaa/layer.tar", "bbb/layer.tar"]}]).encode()
    archive = save_archive([("aaa/json", b"{}"), ("aaa/layer.tar", BASE_TAR),
                            ("bbb/layer.tar", TOP_TAR), ("manifest.json", manifest)])
    assert export_layers(SaveClient(archive), "i", skip={sha256_digest(BASE_TAR)}) == [
        None, TOP_TAR]
    assert export_layers(SaveClient(archive), "i") == [BASE_TAR, TOP_TAR]


def test_compressed_saved_layers_are_read_and_zstd_refused() -> None:
    from pinning.image.engine import export_layers

    manifest = json.dumps([{"Layers": ["blobs/sha256/1"]}]).encode()
    gz = save_archive([("blobs/sha256/1", gzip.compress(TOP_TAR)), ("manifest.json", manifest)])
    assert export_layers(SaveClient(gz), "i") == [TOP_TAR]
    zstd = save_archive([("blobs/sha256/1", b"\x28\xb5\x2f\xfd" + b"0" * 10),
                         ("manifest.json", manifest)])
    with pytest.raises(BuildError, match="zstd"):
        export_layers(SaveClient(zstd), "i")


def test_a_broken_save_is_exit_8() -> None:
    from pinning.image.engine import export_layers

    no_manifest = save_archive([("aaa/layer.tar", TOP_TAR)])
    with pytest.raises(BuildError, match="manifest.json"):
        export_layers(SaveClient(no_manifest), "i")
    manifest = json.dumps([{"Layers": ["zzz/layer.tar"]}]).encode()
    missing = save_archive([("manifest.json", manifest)])
    with pytest.raises(BuildError, match="zzz/layer.tar missing"):
        export_layers(SaveClient(missing), "i")
    truncated = save_archive([("aaa/layer.tar", TOP_TAR)])[:700]
    with pytest.raises(BuildError) as info:
        export_layers(SaveClient(truncated), "i")
    assert info.value.exit_code == 8


# --- pulling the base by digest ------------------------------------------------------------

DIGEST = "sha256:" + "a" * 64


class PullClient:
    """A docker SDK client: the base is absent until pulled; ``lines`` is the pull stream."""

    def __init__(self, lines: list[dict[str, Any]], present: bool = False) -> None:
        self.lines, self.present = lines, present
        self.pulls: list[tuple[str, dict[str, Any]]] = []
        self.api, self.images = self, self

    def get(self, name: str) -> str:
        import docker

        if not self.present:
            raise docker.errors.ImageNotFound(name)
        return f"image {name}"

    def pull(self, repository: str, **kw: Any) -> Iterator[dict[str, Any]]:
        self.pulls.append((repository, kw))
        yield from self.lines
        self.present = not any("error" in line for line in self.lines)


def test_the_base_is_pulled_by_digest_with_login_and_progress(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pinning.image import build as engine

    monkeypatch.setattr(engine, "engine_auth", lambda host: {"username": "u", "password": host})
    client = PullClient([
        {"status": "Pulling from vendor/base", "id": DIGEST},
        {"status": "Downloading", "id": "l1", "progressDetail": {"current": 100, "total": 300}},
        {"status": "Downloading", "id": "l1", "progressDetail": {"current": 300, "total": 300}},
        {"status": "Download complete", "id": "l1"},
        {"status": "Pull complete", "id": "l1"},
        {"status": "Pulling fs layer", "id": "l2"},
        {"status": "Download complete", "id": "l2"},  # no byte update: coalesced
        {"status": "Pull complete", "id": "l2"},
        {"status": "Already exists", "id": "l0"},
        {"status": f"Digest: {DIGEST}"}])
    seen = Recorder()
    image = engine.pull_base(client, f"reg.example:5000/vendor/base:7.2@{DIGEST}",
                             progress=seen)
    assert image == f"image reg.example:5000/vendor/base@{DIGEST}"
    repo, kw = client.pulls[0]
    assert repo == "reg.example:5000/vendor/base" and kw["tag"] == DIGEST  # never the tag 7.2
    assert kw["auth_config"] == {"username": "u", "password": "reg.example:5000"}
    assert [(t["label"], t["total"], t["seen"], t["done"]) for t in seen.tasks] == [
        ("pull l1", 300, 300, True), ("pull l2", None, 0, True)]
    # Already in the engine: nothing is pulled.
    again = PullClient([], present=True)
    engine.pull_base(again, f"reg.example:5000/vendor/base@{DIGEST}")
    assert again.pulls == []


def test_a_pull_error_in_the_stream_is_exit_8(monkeypatch: pytest.MonkeyPatch) -> None:
    from pinning.image import build as engine

    monkeypatch.setattr(engine, "engine_auth", lambda host: None)
    client = PullClient([
        {"status": "Downloading", "id": "l1", "progressDetail": {"current": 5, "total": 9}},
        {"errorDetail": {"message": "unauthorized: authentication required"},
         "error": "unauthorized: authentication required"}])
    seen = Recorder()
    with pytest.raises(BuildError, match="unauthorized") as info:
        engine.pull_base(client, f"reg.example/vendor/base@{DIGEST}", progress=seen)
    assert info.value.exit_code == 8 and "docker login" in (info.value.hint or "")
    assert all(t["done"] for t in seen.tasks)


def test_a_tag_only_base_is_refused_before_anything_runs(tmp_path: Any) -> None:
    from pinning.image.build import pull_base

    with pytest.raises(BuildError, match="not HOST/REPO@sha256"):
        pull_base(PullClient([]), "reg.example/vendor/base:latest")


def test_base_skip_only_when_the_engine_kept_the_bases_diff_ids() -> None:
    from pinning.image.build import base_skip

    base, _ = vendor_base(VENDOR)

    class Client:
        def __init__(self, layers: list[str]) -> None:
            self.images, self.layers = self, layers

        def get(self, image_id: str) -> Any:
            return type("Image", (), {"attrs": {"RootFS": {"Layers": self.layers}}})()

    top = sha256_digest(TOP_TAR)
    assert base_skip(Client([base.layers[0].diff_id, top]), "i", base) == {
        base.layers[0].diff_id, base.layers[0].digest}
    assert base_skip(Client(["sha256:" + "9" * 64, top]), "i", base) == set()


def test_rebuild_diff_of_a_base_layer_pin_does_not_hold() -> None:
    from pinning.image.record import diff_images

    base, ref = vendor_base(VENDOR)
    a = assemble(plan_for(ref), [None, TOP_TAR], base)
    other = LayerBlob(data=None, digest="sha256:" + "7" * 64, diff_id="sha256:" + "8" * 64,
                      source="registry.example/vendor/base", length=1)
    b = image_docs([other, a.layers[1]], epoch=EPOCH)
    assert diff_images(a, b) == [f"layer 0 differs: {a.layers[0].digest} vs {other.digest} "
                                 "(a base layer pin does not hold: the bases differ)"]
