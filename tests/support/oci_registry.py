"""One fake OCI registry for the unit tests of ``pinning.oci`` and ``pinning.sign``: a
:class:`Store` (blobs and manifests per repository), served over HTTP on a loopback address
by :func:`serve`, or read and written without HTTP by :class:`MemoryRegistry`.

The server follows the distribution spec: ``POST`` uploads (with ``mount``/``from``: 201 when
the blob is in ``from``, else 202), ``PATCH`` chunks whose ``Content-Range`` must continue
the upload (416 otherwise), ``PUT ?digest=`` that checks the digest, manifests by tag and
digest, and, with ``referrers_api``, the OCI 1.1 referrers API (an OCI index of the manifests
whose ``subject`` is the digest; without it the endpoint is a 404, as Debian's
docker-registry 2.8 answers). Optional: HTTP Basic or bearer-token auth (token endpoint
``/token`` on the same server), TLS with a given certificate, blobs served with wrong bytes.
Every request is logged (method, path, query, ``Content-Range``, body length).
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import ssl
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pinning.errors import BuildError
from pinning.oci.documents import MEDIA_MANIFEST
from pinning.util.digests import canonical_json, sha256_digest

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"


@dataclass
class Logged:
    """One request the server answered."""

    method: str
    path: str
    query: dict[str, list[str]]
    content_range: str | None
    length: int
    authorization: str | None
    status: int = 0


@dataclass
class Store:
    """What the registry holds and how it behaves.

    ``auth``: ``None``, ``"basic"`` or ``"bearer"``; ``user``/``password`` the accepted
    credentials; ``corrupt`` digests served with other bytes; ``min_chunk`` sent as
    ``OCI-Chunk-Min-Length``; ``upload_url``: when set, a ``POST`` answers an absolute
    ``Location`` on that base (another server, which may share ``blobs`` and ``uploads``);
    ``token_text``: the token the token server hands out instead of a random one;
    ``token_body``: the whole answer of the token server instead of its JSON; ``echo``:
    every 401 body (registry and token server) quotes the ``Authorization`` it got;
    ``referrers_api``: answer the OCI 1.1 referrers API. ``writes`` logs blob and manifest
    writes, ``reads`` the reads through :class:`MemoryRegistry`, ``streamed`` the blob bytes
    it streamed.
    """

    auth: str | None = None
    user: str = "alice"
    password: str = "s3cret"
    corrupt: set[str] = field(default_factory=set)
    min_chunk: int | None = None
    referrers_api: bool = False
    blobs: dict[tuple[str, str], bytes] = field(default_factory=dict)
    manifests: dict[tuple[str, str], tuple[bytes, str]] = field(default_factory=dict)
    uploads: dict[str, tuple[str, bytearray]] = field(default_factory=dict)
    log: list[Logged] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    streamed: int = 0
    tokens: dict[str, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""
    upload_url: str = ""
    token_text: str | None = None
    token_body: bytes | None = None
    echo: bool = False

    def requests(self, method: str | None = None) -> list[Logged]:
        """The logged requests, those of ``method`` only when given."""
        return [x for x in self.log if method is None or x.method == method]

    @property
    def basic(self) -> str:
        """The ``Authorization`` value of the accepted user."""
        return "Basic " + base64.b64encode(f"{self.user}:{self.password}".encode()).decode()

    def put_blob(self, repo: str, data: bytes) -> str:
        """Seed blob ``data`` into ``repo`` (not logged as a write); return its digest."""
        digest = sha256_digest(data)
        self.blobs[(repo, digest)] = data
        return digest

    def put_manifest(self, repo: str, reference: str, data: bytes, media_type: str) -> str:
        """Store a manifest under ``reference`` and its digest; ValueError when
        ``reference`` is another digest.
        """
        digest = sha256_digest(data)
        if reference.startswith("sha256:") and reference != digest:
            raise ValueError(f"manifest put as {reference} has digest {digest}")
        self.manifests[(repo, reference)] = (data, media_type)
        self.manifests[(repo, digest)] = (data, media_type)
        self.writes.append(f"manifest {repo}:{reference}")
        return digest

    def referrers_index(self, repo: str, digest: str) -> bytes:
        """The referrers API's OCI index of the manifests in ``repo`` whose subject is
        ``digest``.
        """
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
    """The registry calls of :mod:`pinning.sign.referrers` on a :class:`Store` (no HTTP): a
    missing blob or manifest is a :class:`BuildError`, as a registry's 404 is.
    """

    host = "127.0.0.1:5000"

    def __init__(self, store: Store | None = None) -> None:
        self.store = store or Store()

    def put_blob(self, repo: str, data: bytes) -> str:
        digest = self.store.put_blob(repo, data)
        self.store.writes.append(f"blob {repo}@{digest}")
        return digest

    def get_blob(self, repo: str, digest: str) -> bytes:
        self.store.reads.append(f"blob {repo}@{digest}")
        if (repo, digest) not in self.store.blobs:
            raise BuildError(f"GET /v2/{repo}/blobs/{digest} answered 404")
        return self.store.blobs[(repo, digest)]

    @contextlib.contextmanager
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


def _error(code: str) -> bytes:
    return json.dumps({"errors": [{"code": code}]}).encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    store: Store
    _entry: Logged

    def log_message(self, *args: object) -> None:
        return

    def _send(self, status: int, body: bytes = b"",
              headers: dict[str, str] | None = None, *, with_body: bool = True) -> None:
        self._entry.status = status
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if with_body and body and self.command != "HEAD":
            self.wfile.write(body)

    def _start(self) -> tuple[str, dict[str, list[str]], bytes]:
        parts = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        query = parse_qs(parts.query)
        self._entry = Logged(self.command, parts.path, query,
                             self.headers.get("Content-Range"), len(body),
                             self.headers.get("Authorization"))
        with self.store.lock:
            self.store.log.append(self._entry)
        return parts.path, query, body

    def _challenge(self, header: dict[str, str]) -> bool:
        body = _error("UNAUTHORIZED")
        if self.store.echo:
            sent = self.headers.get("Authorization") or "nothing"
            body = json.dumps({"errors": [{"code": "UNAUTHORIZED",
                                           "message": f"denied for {sent}"}]}).encode()
        self._send(401, body, header)
        return False

    def _authorized(self, repo: str | None, push: bool, mount_from: str | None = None) -> bool:
        sent = self.headers.get("Authorization")
        if self.store.auth == "basic" and sent != self.store.basic:
            return self._challenge({"WWW-Authenticate": 'Basic realm="stub, with a comma"'})
        if self.store.auth == "bearer":
            needed = []
            if repo is not None:
                needed.append(f"repository:{repo}:{'pull,push' if push else 'pull'}")
            if mount_from is not None:
                needed.append(f"repository:{mount_from}:pull")
            granted = self.store.tokens.get((sent or "").removeprefix("Bearer "), None)
            if granted is None or not all(n in granted for n in needed):
                scope = f',scope="{" ".join(needed)}"' if needed else ""
                return self._challenge({"WWW-Authenticate": f'Bearer realm="{self.store.url}'
                                                            f'/token",service="stub"{scope}'})
        return True

    def _token(self, query: dict[str, list[str]]) -> None:
        if self.headers.get("Authorization") != self.store.basic:
            if self.store.echo:
                self._challenge({})
            else:
                self._send(401, b'{"details":"who are you"}')
            return
        token = self.store.token_text or uuid.uuid4().hex
        self.store.tokens[token] = [s for v in query.get("scope", []) for s in v.split()]
        self._send(200, self.store.token_body or json.dumps({"token": token}).encode())

    @staticmethod
    def _split(path: str, marker: str) -> tuple[str, str] | None:
        """``(repo, rest)`` of ``/v2/<repo>/<marker>/<rest>``."""
        if not path.startswith("/v2/") or f"/{marker}/" not in path:
            return None
        repo, _, rest = path[4:].rpartition(f"/{marker}/")
        return repo, rest

    def _get(self, with_body: bool) -> None:
        path, query, _ = self._start()
        if path == "/token":
            return self._token(query)
        found = self._split(path, "blobs") or self._split(path, "manifests") or \
            self._split(path, "referrers")
        if path != "/v2/" and found is None:
            return self._send(404, b"404 page not found")
        if not self._authorized(found[0] if found else None, False):
            return None
        if path == "/v2/":
            return self._send(200, b"{}")
        if found := self._split(path, "blobs"):
            data = self.store.blobs.get(found)
            if data is None:
                return self._send(404, _error("BLOB_UNKNOWN"))
            if found[1] in self.store.corrupt:
                data = b"x" + data[1:]
            return self._send(200, data, {"Docker-Content-Digest": found[1]},
                              with_body=with_body)
        if found := self._split(path, "manifests"):
            item = self.store.manifests.get(found)
            if item is None:
                return self._send(404, _error("MANIFEST_UNKNOWN"))
            return self._send(200, item[0], {"Docker-Content-Digest": sha256_digest(item[0]),
                                             "Content-Type": item[1]}, with_body=with_body)
        if (found := self._split(path, "referrers")) and self.store.referrers_api:
            return self._send(200, self.store.referrers_index(*found),
                              {"Content-Type": MEDIA_INDEX}, with_body=with_body)
        return self._send(404, b"404 page not found")

    def do_GET(self) -> None:
        self._get(True)

    def do_HEAD(self) -> None:
        self._get(False)

    def do_POST(self) -> None:
        path, query, _ = self._start()
        found = self._split(path + "/", "blobs/uploads") if path.endswith("/") else None
        if found is None:
            return self._send(404)
        repo = found[0]
        mount, source = query.get("mount", [None])[0], query.get("from", [None])[0]
        if not self._authorized(repo, True, source):
            return None
        if mount and source and (source, mount) in self.store.blobs:
            self.store.blobs[(repo, mount)] = self.store.blobs[(source, mount)]
            return self._send(201, headers={"Docker-Content-Digest": mount,
                                            "Location": f"/v2/{repo}/blobs/{mount}"})
        upload = uuid.uuid4().hex
        self.store.uploads[upload] = (repo, bytearray())
        headers = {"Location": f"{self.store.upload_url}/v2/{repo}/blobs/uploads/{upload}"
                               f"?_state=s{upload}", "Range": "0-0"}
        if self.store.min_chunk:
            headers["OCI-Chunk-Min-Length"] = str(self.store.min_chunk)
        return self._send(202, headers=headers)

    def _upload(self, path: str) -> tuple[str, str, bytearray] | None:
        found = self._split(path, "blobs/uploads")
        if found is None or found[1] not in self.store.uploads:
            return None
        repo, held = self.store.uploads[found[1]]
        return repo, found[1], held

    def do_PATCH(self) -> None:
        path, _, body = self._start()
        found = self._upload(path)
        if found is None:
            return self._send(404, _error("BLOB_UPLOAD_UNKNOWN"))
        repo, upload, held = found
        if not self._authorized(repo, True):
            return None
        start, _, end = (self._entry.content_range or "").partition("-")
        if not start.isdigit() or int(start) != len(held) or (
                int(end) - int(start) + 1 != len(body)):
            return self._send(416, _error("BLOB_UPLOAD_INVALID"))
        held += body
        return self._send(202, headers={
            "Location": f"/v2/{repo}/blobs/uploads/{upload}?_state=p{len(held)}",
            "Range": f"0-{len(held) - 1}"})

    def do_PUT(self) -> None:
        path, query, body = self._start()
        if found := self._upload(path):
            repo, upload, held = found
            if not self._authorized(repo, True):
                return None
            data = bytes(held + body)
            digest = unquote(query.get("digest", [""])[0])
            if sha256_digest(data) != digest:
                return self._send(400, _error("DIGEST_INVALID"))
            del self.store.uploads[upload]
            self.store.blobs[(repo, digest)] = data
            self.store.writes.append(f"blob {repo}@{digest}")
            return self._send(201, headers={"Docker-Content-Digest": digest,
                                            "Location": f"/v2/{repo}/blobs/{digest}"})
        if manifest := self._split(path, "manifests"):
            if not self._authorized(manifest[0], True):
                return None
            media = self.headers.get("Content-Type", MEDIA_MANIFEST)
            try:
                digest = self.store.put_manifest(*manifest, body, media)
            except ValueError:
                return self._send(400, _error("DIGEST_INVALID"))
            headers = {"Docker-Content-Digest": digest,
                       "Location": f"/v2/{manifest[0]}/manifests/{digest}"}
            if self.store.referrers_api and b'"subject"' in body:
                headers["OCI-Subject"] = json.loads(body)["subject"]["digest"]
            return self._send(201, headers=headers)
        return self._send(404)


@contextlib.contextmanager
def serve(store: Store, *, cert: tuple[Path, Path] | None = None,
          bind: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``store`` on ``bind`` (a loopback address; TLS with ``cert`` = ``(certificate,
    key)``); yields ``BIND:PORT``."""
    handler = type("Handler", (_Handler,), {"store": store})
    server = http.server.ThreadingHTTPServer((bind, 0), handler)
    server.daemon_threads = True
    host = f"{bind}:{server.server_address[1]}"
    if cert is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    store.url = f"{'https' if cert else 'http'}://{host}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield host
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
