"""Registries for the bundle tests: :class:`MemoryRegistry`, the registry calls of
:mod:`pinning.sign.bundle` on dictionaries, and :func:`serve`, a small OCI distribution
server on 127.0.0.1 (blobs, manifests by tag and digest, and, when asked, the
OCI 1.1 referrers API) for running ``pin sign`` / ``pin verify-image`` against.

Both answer the referrers API the way the distribution spec says a registry does: an OCI
index of the manifests whose ``subject`` is the digest, each with its ``artifactType`` (or
config media type) and annotations; without it (``referrers_api=False``, as Debian's
docker-registry 2.8) the endpoint is a 404.
"""

from __future__ import annotations

import http.server
import json
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pinning.errors import BuildError
from pinning.image.plan import expected_label
from pinning.lockfile.io import amend, lock_json, read_lock
from pinning.lockfile.models import Lockfile
from pinning.oci.documents import MEDIA_CONFIG, MEDIA_MANIFEST
from pinning.util.digests import canonical_json, sha256_digest
from tests.support.httpserve import serving

ROOT = Path(__file__).resolve().parents[3]

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"


@dataclass
class Store:
    """What a registry holds: blobs and manifests per repository, manifests by tag and
    digest (with their media types), a log of the writes, a log of the reads (blob and
    manifest ``GET``s through :class:`MemoryRegistry`) and the blob bytes it streamed.
    """

    referrers_api: bool = False
    blobs: dict[tuple[str, str], bytes] = field(default_factory=dict)
    manifests: dict[tuple[str, str], tuple[bytes, str]] = field(default_factory=dict)
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    streamed: int = 0

    def put_manifest(self, repo: str, reference: str, data: bytes, media_type: str) -> str:
        digest = sha256_digest(data)
        if reference.startswith("sha256:") and reference != digest:
            raise ValueError(f"manifest put as {reference} has digest {digest}")
        self.manifests[(repo, reference)] = (data, media_type)
        self.manifests[(repo, digest)] = (data, media_type)
        self.writes.append(f"manifest {repo}:{reference}")
        return digest

    def referrers_index(self, repo: str, digest: str) -> bytes:
        entries = []
        seen = set()
        for (r, ref), (data, media_type) in sorted(self.manifests.items()):
            if r != repo or not ref.startswith("sha256:") or ref in seen:
                continue
            try:
                doc = json.loads(data)
            except ValueError:
                continue
            if not isinstance(doc, dict) or (doc.get("subject") or {}).get("digest") != digest:
                continue
            seen.add(ref)
            entry: dict[str, Any] = {
                "mediaType": media_type, "digest": ref, "size": len(data),
                "artifactType": doc.get("artifactType") or doc["config"]["mediaType"]}
            if doc.get("annotations"):
                entry["annotations"] = doc["annotations"]
            entries.append(entry)
        return canonical_json({"schemaVersion": 2, "mediaType": MEDIA_INDEX,
                               "manifests": entries})


def image_docs(created: str | None = "2023-11-14T22:13:20Z",
               labels: dict[str, str] | None = None) -> tuple[bytes, bytes]:
    """A small OCI image without layers: its config (with ``created`` and ``labels``) and
    manifest bytes.
    """
    config_doc: dict[str, Any] = {"architecture": "amd64", "os": "linux",
                                  "config": {"Labels": labels or {"x": "x"}},
                                  "rootfs": {"type": "layers", "diff_ids": []}}
    if created is not None:
        config_doc["created"] = created
    config = canonical_json(config_doc)
    manifest = canonical_json({"schemaVersion": 2, "mediaType": MEDIA_MANIFEST,
                               "config": {"mediaType": MEDIA_CONFIG,
                                          "digest": sha256_digest(config), "size": len(config)},
                               "layers": []})
    return config, manifest


def image(store: Store, repo: str, created: str | None = "2023-11-14T22:13:20Z",
          label: str = "x", labels: dict[str, str] | None = None) -> str:
    """Put a small OCI image (:func:`image_docs`; ``label`` tells images apart) into
    ``repo`` under ``latest``; return its manifest digest.
    """
    config, manifest = image_docs(created, labels or {"x": label})
    store.blobs[(repo, sha256_digest(config))] = config
    return store.put_manifest(repo, "latest", manifest, MEDIA_MANIFEST)


EPOCH = 1700000000


def built_lock() -> tuple[Lockfile, str]:
    """A lock that records a build (a wheel, a base digest, an epoch) but no image yet, and
    the lock label its image must carry.
    """
    lock = read_lock(ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock")
    img = lock_json(lock)["image"]
    img["base"] = {"value": "127.0.0.1:5000/pin/base", "origin": "user"}
    img["base-digest"] = {"value": "sha256:" + "1" * 64, "origin": "user"}
    img["epoch"] = EPOCH
    lock = amend(lock, image=img, wheels=[{"name": "demo", "version": "1.0", "sha256": "0" * 64,
                                           "filename": "demo-1.0-py3-none-any.whl"}])
    label = expected_label(lock)
    assert label is not None
    return lock, label


def recorded(lock: Lockfile, ref: str, digest: str) -> Lockfile:
    """``lock`` recording the pushed image ``ref`` (``HOST/REPO@DIGEST``)."""
    img = lock_json(lock)["image"]
    img["digest"] = {"value": digest, "origin": "derived"}
    img["ref"] = {"value": ref, "origin": "derived"}
    return amend(lock, image=img)


@dataclass
class Stream:
    """An open blob answer of :class:`MemoryRegistry`: ``data`` in chunks."""

    store: Store
    data: bytes

    def iter_content(self, chunk_size: int) -> Iterator[bytes]:
        for start in range(0, len(self.data), chunk_size):
            chunk = self.data[start:start + chunk_size]
            self.store.streamed += len(chunk)
            yield chunk


class MemoryRegistry:
    """The registry calls of :mod:`pinning.sign.bundle` on a :class:`Store` (no HTTP): a
    missing blob or manifest is a :class:`BuildError`, as a registry's 404 is.
    """

    host = "127.0.0.1:5000"

    def __init__(self, store: Store | None = None) -> None:
        self.store = store or Store()

    def put_blob(self, repo: str, data: bytes) -> str:
        digest = sha256_digest(data)
        self.store.blobs[(repo, digest)] = data
        self.store.writes.append(f"blob {repo}@{digest}")
        return digest

    def get_blob(self, repo: str, digest: str) -> bytes:
        self.store.reads.append(f"blob {repo}@{digest}")
        if (repo, digest) not in self.store.blobs:
            raise BuildError(f"GET /v2/{repo}/blobs/{digest} answered 404")
        return self.store.blobs[(repo, digest)]

    @contextmanager
    def open_blob(self, repo: str, digest: str) -> Iterator[Stream]:
        """The blob as a stream (as ``requests.Response.iter_content`` gives it), the bytes
        handed out counted in ``store.streamed``; not checked against the digest.
        """
        yield Stream(self.store, self.get_blob(repo, digest))

    def get_manifest(self, repo: str, reference: str, *,
                     accept: tuple[str, ...] = (MEDIA_MANIFEST,)) -> bytes:
        self.store.reads.append(f"manifest {repo}:{reference}")
        if (repo, reference) not in self.store.manifests:
            raise BuildError(f"GET /v2/{repo}/manifests/{reference} answered 404")
        return self.store.manifests[(repo, reference)][0]

    def put_manifest(self, repo: str, reference: str, manifest: bytes,
                     media_type: str = MEDIA_MANIFEST) -> str:
        return self.store.put_manifest(repo, reference, manifest, media_type)

    def manifest_digest(self, repo: str, reference: str) -> str | None:
        found = self.store.manifests.get((repo, reference))
        return None if found is None else sha256_digest(found[0])

    def referrers(self, repo: str, digest: str) -> bytes | None:
        return self.store.referrers_index(repo, digest) if self.store.referrers_api else None


_BLOB = re.compile(r"^/v2/(?P<repo>.+)/blobs/(?P<digest>sha256:[0-9a-f]{64})$")
_UPLOADS = re.compile(r"^/v2/(?P<repo>.+)/blobs/uploads/(?P<id>[0-9a-f-]*)$")
_MANIFEST = re.compile(r"^/v2/(?P<repo>.+)/manifests/(?P<ref>[^/]+)$")
_REFERRERS = re.compile(r"^/v2/(?P<repo>.+)/referrers/(?P<digest>sha256:[0-9a-f]{64})$")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    store: Store
    uploads: dict[str, bytearray]

    def log_message(self, *args: object) -> None:
        return

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
              *, with_body: bool = True) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if with_body and body and self.command != "HEAD":
            self.wfile.write(body)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _path(self) -> tuple[str, dict[str, str]]:
        path, _, query = self.path.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        return path, params

    def _get(self, with_body: bool) -> None:
        path, _ = self._path()
        if path == "/v2/":
            return self._send(200, b"{}")
        if m := _BLOB.match(path):
            data = self.store.blobs.get((m["repo"], m["digest"]))
            if data is None:
                return self._send(404)
            return self._send(200, data, {"Docker-Content-Digest": m["digest"]},
                              with_body=with_body)
        if m := _MANIFEST.match(path):
            found = self.store.manifests.get((m["repo"], m["ref"]))
            if found is None:
                return self._send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}')
            data, media_type = found
            return self._send(200, data, {"Docker-Content-Digest": sha256_digest(data),
                                          "Content-Type": media_type},
                              with_body=with_body)
        if (m := _REFERRERS.match(path)) and self.store.referrers_api:
            return self._send(200, self.store.referrers_index(m["repo"], m["digest"]),
                              {"Content-Type": MEDIA_INDEX}, with_body=with_body)
        return self._send(404, b'{"errors":[{"code":"NOT_FOUND"}]}')

    def do_GET(self) -> None:
        self._get(True)

    def do_HEAD(self) -> None:
        self._get(False)

    def do_POST(self) -> None:
        path, _ = self._path()
        self._body()
        m = re.match(r"^/v2/(?P<repo>.+)/blobs/uploads/$", path)
        if not m:
            return self._send(404)
        upload = str(uuid.uuid4())
        self.uploads[upload] = bytearray()
        self._send(202, headers={"Location": f"/v2/{m['repo']}/blobs/uploads/{upload}",
                                 "Range": "0-0", "Docker-Upload-UUID": upload})

    def do_PATCH(self) -> None:
        path, _ = self._path()
        m = _UPLOADS.match(path)
        if not m or m["id"] not in self.uploads:
            return self._send(404)
        self.uploads[m["id"]] += self._body()
        self._send(202, headers={"Location": path,
                                 "Range": f"0-{max(len(self.uploads[m['id']]) - 1, 0)}"})

    def do_PUT(self) -> None:
        path, params = self._path()
        body = self._body()
        if (m := _UPLOADS.match(path)) and m["id"] in self.uploads:
            data = bytes(self.uploads.pop(m["id"]) + body)
            digest = params.get("digest", "").replace("%3A", ":")
            if sha256_digest(data) != digest:
                return self._send(400, b'{"errors":[{"code":"DIGEST_INVALID"}]}')
            self.store.blobs[(m["repo"], digest)] = data
            self.store.writes.append(f"blob {m['repo']}@{digest}")
            return self._send(201, headers={"Docker-Content-Digest": digest,
                                            "Location": f"/v2/{m['repo']}/blobs/{digest}"})
        if m := _MANIFEST.match(path):
            media_type = self.headers.get("Content-Type", MEDIA_MANIFEST)
            try:
                digest = self.store.put_manifest(m["repo"], m["ref"], body, media_type)
            except ValueError:
                return self._send(400, b'{"errors":[{"code":"DIGEST_INVALID"}]}')
            headers = {"Docker-Content-Digest": digest,
                       "Location": f"/v2/{m['repo']}/manifests/{digest}"}
            if self.store.referrers_api and b'"subject"' in body:
                headers["OCI-Subject"] = json.loads(body)["subject"]["digest"]
            return self._send(201, headers=headers)
        return self._send(404)


def _handler(store: Store) -> type[http.server.BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"store": store, "uploads": {}})


@contextmanager
def serve(store: Store) -> Iterator[str]:
    """Serve ``store`` over plain HTTP on 127.0.0.1; yields ``127.0.0.1:PORT``."""
    with serving(_handler(store)) as port:
        yield f"127.0.0.1:{port}"
