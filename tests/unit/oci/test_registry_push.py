"""The push path against a stub registry on 127.0.0.1 (:mod:`tests.unit.oci.stub_registry`):
HEAD skip, cross-repository mount (201, and 202 falling back to an upload), chunked upload with
``Content-Range``, a base layer streamed from another registry and checked before it is
committed, parallel blobs with progress in bytes, Basic and bearer sign-in; and the read side:
manifests by media type, index resolution, ``fetch_docs(layers=False)``, referrers."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pinning.errors import BuildError
from pinning.oci import blobs as blobs_module
from pinning.oci.auth import Credentials
from pinning.oci.documents import ImageDocs, LayerBlob, image_docs
from pinning.oci.registry import (
    MEDIA_DOCKER_LIST,
    MEDIA_DOCKER_MANIFEST,
    MEDIA_INDEX,
    Registry,
    fetch_docs,
)
from pinning.util.digests import sha256_digest
from tests.support.oci_registry import Store, serve

CHUNK = 1000


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(blobs_module, "CHUNK_SIZE", CHUNK)
    monkeypatch.delenv("PIN_REGISTRY_CA", raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-docker-config"))


@pytest.fixture
def stub() -> Iterator[tuple[str, Store]]:
    state = Store()
    with serve(state) as host:
        yield host, state


@pytest.fixture
def other() -> Iterator[tuple[str, Store]]:
    state = Store()
    with serve(state) as host:
        yield host, state


@dataclass
class Recorder:
    """A thread-safe Progress that keeps, per label, the total and the bytes advanced."""

    tasks: dict[str, list[int | None]] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def task(self, label: str, total: int | None = None) -> _Task:
        with self.lock:
            self.tasks[label] = [total, 0]
        return _Task(self, label)


@dataclass
class _Task:
    owner: Recorder
    label: str

    def advance(self, n: int) -> None:
        with self.owner.lock:
            entry = self.owner.tasks[self.label]
            entry[1] = (entry[1] or 0) + n

    def done(self, note: str = "") -> None:
        with self.owner.lock:
            self.owner.done.append(self.label)
            if note:
                self.owner.notes[self.label] = note


def _layer(size: int, seed: int) -> LayerBlob:
    data = (bytes([seed % 251]) + os.urandom(7)) * (size // 8) + b"z" * (size % 8)
    digest = sha256_digest(data)
    return LayerBlob(data=data, digest=digest, diff_id="sha256:" + digest[7:][::-1])


def _docs(*layers: LayerBlob) -> ImageDocs:
    return image_docs(list(layers), epoch=1_700_000_000)


def test_chunked_parallel_push_with_progress(stub: tuple[str, Store]) -> None:
    host, state = stub
    layers = [_layer(3500, 1), _layer(CHUNK, 2), _layer(10, 3)]
    docs = _docs(*layers)
    progress = Recorder()
    reg = Registry(host)
    digest = reg.push_image("pin/trial", "t1", docs, progress=progress, jobs=3)
    assert digest == docs.digest
    for layer in layers:
        assert state.blobs[("pin/trial", layer.digest)] == layer.data
    assert state.blobs[("pin/trial", docs.config_digest)] == docs.config
    assert state.manifests[("pin/trial", "t1")][0] == docs.manifest
    # The big layer went in four PATCHes with continuous ranges, then an empty PUT.
    patches = [r for r in state.requests("PATCH")]
    assert sorted(r.content_range or "" for r in patches) == [
        "0-999", "1000-1999", "2000-2999", "3000-3499"]
    assert all(r.length == CHUNK for r in patches if r.content_range != "3000-3499")
    puts = [r for r in state.requests("PUT") if "/blobs/uploads/" in r.path]
    assert sorted(r.length for r in puts) == sorted([0, CHUNK, 10, len(docs.config)])
    # One task per blob, each advanced by exactly its size, each done once.
    assert {label: tuple(v) for label, v in progress.tasks.items()} == {
        f"push layer 1/3 {layers[0].digest[:19]}": (3500, 3500),
        f"push layer 2/3 {layers[1].digest[:19]}": (CHUNK, CHUNK),
        f"push layer 3/3 {layers[2].digest[:19]}": (10, 10),
        f"push config {docs.config_digest[:19]}": (len(docs.config), len(docs.config))}
    assert sorted(progress.done) == sorted(progress.tasks)
    assert (reg.stats.uploaded, reg.stats.skipped, reg.stats.mounted) == (4, 0, 0)
    assert list(reg._sessions) == [threading.current_thread()]  # the workers' are closed
    # Again: every blob is there (HEAD), nothing is uploaded.
    before = len(state.log)
    again = Registry(host)
    seen = Recorder()
    assert again.push_image("pin/trial", "t2", docs, progress=seen) == digest
    # Each task ends saying the blob was there, with no bytes counted as pushed.
    assert set(seen.notes.values()) == {"already in the registry"}
    assert sorted(seen.notes) == sorted(seen.tasks) == sorted(seen.done)
    assert all(v[1] == 0 for v in seen.tasks.values())
    methods = {r.method for r in state.log[before:]}
    assert methods == {"GET", "HEAD", "PUT"}  # the probe, the HEADs, the manifest
    assert (again.stats.skipped, again.stats.uploaded) == (4, 0)


def test_mount_from_another_repository_and_202_fallback(stub: tuple[str, Store]) -> None:
    host, state = stub
    held, missing = _layer(2500, 4), _layer(20, 5)
    state.put_blob("pin/base", held.data or b"")
    base = [LayerBlob(data=None, digest=held.digest, diff_id=held.diff_id,
                      source=f"{host}/pin/base", length=held.size),
            LayerBlob(data=missing.data, digest=missing.digest, diff_id=missing.diff_id,
                      source=f"{host}/pin/base")]
    reg = Registry(f"http://{host}")
    seen = Recorder()
    reg.push_image("pin/app", "t", _docs(*base), progress=seen)
    assert list(seen.notes.values()) == ["mounted from pin/base"]
    mounts = [r for r in state.requests("POST") if "mount" in r.query]
    assert sorted(r.status for r in mounts) == [201, 202]
    assert {r.query["from"][0] for r in mounts} == {"pin/base"}
    assert state.blobs[("pin/app", held.digest)] == held.data
    assert state.blobs[("pin/app", missing.digest)] == missing.data
    assert (reg.stats.mounted, reg.stats.uploaded) == (1, 2)  # the 202 upload + config
    assert not [r for r in state.requests("PATCH")]  # the mounted blob was never sent


def test_a_base_layer_is_streamed_from_another_registry(
        stub: tuple[str, Store], other: tuple[str, Store]) -> None:
    host, state = stub
    source_host, source = other
    layer = _layer(4321, 6)
    source.put_blob("vendor/base", layer.data or b"")
    blob = LayerBlob(data=None, digest=layer.digest, diff_id=layer.diff_id,
                     source=f"{source_host}/vendor/base", length=layer.size)
    progress = Recorder()
    reg = Registry(host)
    reg.push_image("pin/app", "t", _docs(blob), progress=progress)
    assert state.blobs[("pin/app", layer.digest)] == layer.data
    assert [r.content_range for r in state.requests("PATCH")] == [
        "0-999", "1000-1999", "2000-2999", "3000-3999", "4000-4320"]
    assert progress.tasks[f"push layer 1/1 {layer.digest[:19]}"] == [4321, 4321]
    assert [r.path for r in source.requests("GET")][-1] == f"/v2/vendor/base/blobs/{layer.digest}"
    assert not [r for r in state.requests("POST") if "mount" in r.query]  # another registry


def test_a_streamed_layer_with_other_bytes_is_never_committed(
        stub: tuple[str, Store], other: tuple[str, Store]) -> None:
    host, state = stub
    source_host, source = other
    layer = _layer(2100, 7)
    source.put_blob("vendor/base", layer.data or b"")
    source.corrupt.add(layer.digest)
    blob = LayerBlob(data=None, digest=layer.digest, diff_id=layer.diff_id,
                     source=f"{source_host}/vendor/base", length=layer.size)
    with pytest.raises(BuildError) as info:
        Registry(host).push_image("pin/app", "t", _docs(blob))
    assert f"blob {layer.digest} of vendor/base came with other bytes" in info.value.message
    assert ("pin/app", layer.digest) not in state.blobs
    assert not [r for r in state.requests("PUT") if r.query.get("digest") == [layer.digest]]
    assert ("pin/app", "t") not in state.manifests


def test_a_blob_pin_cannot_get_is_a_clear_error(stub: tuple[str, Store]) -> None:
    host, state = stub
    layer = _layer(100, 8)
    blob = LayerBlob(data=None, digest=layer.digest, diff_id=layer.diff_id, length=100)
    with pytest.raises(BuildError, match="holds neither its bytes nor a registry"):
        Registry(host).push_image("pin/app", "t", _docs(blob))
    assert not state.manifests


def test_one_failing_blob_stops_the_push(stub: tuple[str, Store],
                                         other: tuple[str, Store]) -> None:
    host, state = stub
    source_host, _ = other
    good = _layer(5000, 9)
    gone = _layer(50, 10)  # the source registry does not have it: 404
    blobs = [good, LayerBlob(data=None, digest=gone.digest, diff_id=gone.diff_id,
                             source=f"{source_host}/vendor/base", length=50)]
    progress = Recorder()
    with pytest.raises(BuildError) as info:
        Registry(host).push_image("pin/app", "t", _docs(*blobs), progress=progress, jobs=2)
    assert "answered 404" in info.value.message and "vendor/base" in info.value.message
    assert not state.manifests
    assert sorted(progress.done) == sorted(progress.tasks)  # every task ends, also on failure


def test_registry_min_chunk_length_is_honoured(stub: tuple[str, Store]) -> None:
    host, state = stub
    state.min_chunk = 1500
    layer = _layer(3200, 11)
    Registry(host).put_blob("pin/x", layer.data or b"")
    assert [r.content_range for r in state.requests("PATCH")] == [
        "0-1499", "1500-2999", "3000-3199"]


# -- sign-in -----------------------------------------------------------------------------------


def _docker_config(tmp_path: Path, host: str, password: str,
                   monkeypatch: pytest.MonkeyPatch) -> Path:
    import base64

    folder = tmp_path / "docker"
    folder.mkdir(exist_ok=True)
    auth = base64.b64encode(f"alice:{password}".encode()).decode()
    (folder / "config.json").write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    monkeypatch.setenv("DOCKER_CONFIG", str(folder))
    return folder / "config.json"


@pytest.mark.parametrize("mode", ["basic", "bearer"])
def test_sign_in_with_the_docker_config(stub: tuple[str, Store], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    host, state = stub
    state.auth = mode
    _docker_config(tmp_path, host, "s3cret", monkeypatch)
    base = _layer(1500, 12)
    state.put_blob("pin/base", base.data or b"")
    mounted = LayerBlob(data=None, digest=base.digest, diff_id=base.diff_id,
                        source=f"{host}/pin/base", length=base.size)
    docs = _docs(mounted, _layer(2500, 13))
    reg = Registry(host)
    assert reg.push_image("pin/app", "t", docs, jobs=3) == docs.digest
    assert reg.stats.mounted == 1
    assert Registry(host).get_manifest("pin/app", docs.digest) == docs.manifest
    if mode == "bearer":
        scopes = [" ".join(v) for v in state.tokens.values()]
        assert "repository:pin/app:pull,push repository:pin/base:pull" in scopes
        assert all(r.authorization == state.basic for r in state.log if r.path == "/token")
    else:
        assert all(r.authorization in (None, state.basic) for r in state.log)
    # Once signed in, uploads are signed up front: no chunk or manifest is sent twice.
    assert not [r for r in state.log if r.method in ("PATCH", "PUT") and r.status == 401]
    if mode == "bearer":  # tokens are kept per scope, not fetched per request
        assert len(state.tokens) <= 4


@pytest.mark.parametrize("mode", ["basic", "bearer"])
def test_wrong_password_and_no_credentials(stub: tuple[str, Store], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    host, state = stub
    state.auth = mode
    config = _docker_config(tmp_path, host, "wrong-secret", monkeypatch)
    with pytest.raises(BuildError) as info:
        Registry(host).has_blob("pin/app", "sha256:" + "0" * 64)
    text = info.value.render()
    assert "refused the credentials" in text and str(config) in text
    assert f"docker login {host}" in text and "wrong-secret" not in text
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "empty"))
    with pytest.raises(BuildError) as info:
        Registry(host).ping()
    assert "needs credentials" in info.value.message
    assert f"docker login {host}" in info.value.hint


@pytest.mark.parametrize("mode", ["basic", "bearer"])
def test_credentials_given_instead_of_the_docker_config(stub: tuple[str, Store], mode: str,
                                                        tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    host, state = stub
    state.auth = mode
    config = _docker_config(tmp_path, host, "wrong-secret", monkeypatch)  # not read
    Registry(host, credentials=Credentials("alice", "s3cret", source="pin login")).ping()
    with pytest.raises(BuildError) as info:
        Registry(host, credentials=Credentials("alice", "nope", source="pin login")).ping()
    assert "refused the credentials from pin login" in info.value.message
    assert str(config) in info.value.hint


def test_a_plain_http_token_realm_off_loopback_is_refused(
        stub: tuple[str, Store], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host, state = stub
    state.auth = "bearer"
    state.url = "http://auth.example.com"  # the realm the challenge names
    _docker_config(tmp_path, host, "s3cret", monkeypatch)
    with pytest.raises(BuildError, match="plain HTTP on a host that is not loopback"):
        Registry(host).ping()


# -- reading -----------------------------------------------------------------------------------


def _stored_image(state: Store, repo: str, media: str) -> tuple[ImageDocs, bytes]:
    layers = [_layer(300, 20), _layer(200, 21)]
    docs = _docs(*layers)
    doc = json.loads(docs.manifest)
    doc["mediaType"] = media
    manifest = json.dumps(doc).encode()
    for layer in layers:
        state.put_blob(repo, layer.data or b"")
    state.put_blob(repo, docs.config)
    state.manifests[(repo, sha256_digest(manifest))] = (manifest, media)
    return docs, manifest


@pytest.mark.parametrize("index_media,manifest_media", [
    (MEDIA_INDEX, "application/vnd.oci.image.manifest.v1+json"),
    (MEDIA_DOCKER_LIST, MEDIA_DOCKER_MANIFEST)])
def test_fetch_docs_resolves_an_index_and_can_skip_layers(
        stub: tuple[str, Store], index_media: str, manifest_media: str) -> None:
    host, state = stub
    docs, manifest = _stored_image(state, "vendor/base", manifest_media)
    index = json.dumps({"schemaVersion": 2, "mediaType": index_media, "manifests": [
        {"mediaType": manifest_media, "digest": "sha256:" + "1" * 64, "size": 10,
         "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
        {"mediaType": manifest_media, "digest": sha256_digest(manifest), "size": len(manifest),
         "platform": {"os": "linux", "architecture": "amd64"}}]}).encode()
    state.manifests[("vendor/base", sha256_digest(index))] = (index, index_media)
    ref = f"{host}/vendor/base@{sha256_digest(index)}"
    before = len(state.requests("GET"))
    light = fetch_docs(host, ref, layers=False)
    blob_gets = [r.path for r in state.requests("GET")[before:] if "/blobs/" in r.path]
    assert blob_gets == [f"/v2/vendor/base/blobs/{docs.config_digest}"]  # config only
    assert light.manifest == manifest and light.config == docs.config
    assert [(b.data, b.digest, b.length, b.media_type, b.source) for b in light.layers] == [
        (None, layer.digest, layer.size, "application/vnd.oci.image.layer.v1.tar+gzip",
         f"{host}/vendor/base") for layer in docs.layers]
    full = fetch_docs(host, ref)
    assert [b.data for b in full.layers] == [layer.data for layer in docs.layers]
    assert [b.diff_id for b in full.layers] == [layer.diff_id for layer in docs.layers]
    with pytest.raises(BuildError) as info:
        fetch_docs(host, ref, platform="linux/s390x")
    assert "without a linux/s390x manifest" in info.value.message
    assert "linux/arm64/v8" in info.value.message and "linux/amd64" in info.value.message
    arm = fetch_docs(host, f"{host}/vendor/base@{sha256_digest(manifest)}", layers=False,
                     platform="linux/arm64/v8")  # a plain manifest needs no platform choice
    assert arm.manifest == manifest


def test_manifests_by_type_digest_checks_and_referrers(stub: tuple[str, Store]) -> None:
    host, state = stub
    reg = Registry(host)
    body = b'{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json",' \
           b'"manifests":[]}'
    digest = reg.put_manifest("pin/x", sha256_digest(body), body, MEDIA_INDEX)
    assert state.manifests[("pin/x", digest)] == (body, MEDIA_INDEX)
    assert reg.fetch_manifest("pin/x", digest) == (body, MEDIA_INDEX)
    assert reg.manifest_digest("pin/x", digest) == digest
    assert reg.manifest_digest("pin/x", "sha256:" + "9" * 64) is None
    with pytest.raises(BuildError, match="but its bytes hash to"):
        reg.put_manifest("pin/x", "sha256:" + "9" * 64, body, MEDIA_INDEX)
    state.manifests[("pin/x", digest)] = (body + b" ", MEDIA_INDEX)
    with pytest.raises(BuildError, match="came back with other bytes"):
        reg.get_manifest("pin/x", digest, accept=(MEDIA_INDEX,))
    assert reg.referrers("pin/x", digest) is None  # no referrers API: 404
    referrers = [r for r in state.requests("GET") if "/referrers/" in r.path]
    assert referrers[-1].path == f"/v2/pin/x/referrers/{digest}"


@pytest.mark.parametrize("doc,needle", [
    ({"schemaVersion": 2, "config": {"digest": "sha256:zz", "size": 1}, "layers": []},
     "is not sha256:<64 hex>"),
    ({"schemaVersion": 2, "mediaType": MEDIA_INDEX, "manifests": "x"}, "no manifests list"),
    ({"schemaVersion": 2}, "'config'"),
])
def test_malformed_documents(stub: tuple[str, Store], doc: object, needle: str) -> None:
    host, state = stub
    raw = json.dumps(doc).encode()
    state.manifests[("pin/x", sha256_digest(raw))] = (raw, MEDIA_INDEX if "manifests" in str(doc)
                                                  else "application/vnd.oci.image.manifest.v1+json")
    with pytest.raises(BuildError) as info:
        fetch_docs(host, f"{host}/pin/x@{sha256_digest(raw)}", layers=False)
    assert "is not a well-formed OCI or Docker image" in info.value.message
    assert needle in info.value.message
