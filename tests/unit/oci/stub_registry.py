"""A small OCI distribution server on 127.0.0.1 for the registry client's unit tests.

It keeps blobs and manifests per repository and logs every request (method, path, query,
``Content-Range``, body length). Uploads follow the distribution spec: ``POST`` (with
``mount``/``from``: 201 when the blob is in ``from``, else 202), ``PATCH`` chunks whose
``Content-Range`` must continue the upload (416 otherwise), ``PUT ?digest=`` that checks the
digest. Optional: HTTP Basic or bearer-token auth (token endpoint ``/token`` on the same
server), TLS with a given certificate, a blob that is served with wrong bytes.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import json
import ssl
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class Logged:
    """One request the stub answered."""

    method: str
    path: str
    query: dict[str, list[str]]
    content_range: str | None
    length: int
    authorization: str | None
    status: int = 0


@dataclass
class Stub:
    """What the stub holds and how it behaves.

    ``auth``: ``None``, ``"basic"`` or ``"bearer"``; ``user``/``password`` the accepted
    credentials; ``corrupt`` digests served with other bytes; ``min_chunk`` sent as
    ``OCI-Chunk-Min-Length``; ``upload_url``: when set, a ``POST`` answers an absolute
    ``Location`` on that base (another server, which may share ``blobs`` and ``uploads``);
    ``token_text``: the token the token server hands out instead of a random one;
    ``token_body``: the whole answer of the token server instead of its JSON; ``echo``:
    every 401 body (registry and token server) quotes the ``Authorization`` it got.
    """

    auth: str | None = None
    user: str = "alice"
    password: str = "s3cret"
    corrupt: set[str] = field(default_factory=set)
    min_chunk: int | None = None
    blobs: dict[tuple[str, str], bytes] = field(default_factory=dict)
    manifests: dict[tuple[str, str], tuple[bytes, str]] = field(default_factory=dict)
    uploads: dict[str, tuple[str, bytearray]] = field(default_factory=dict)
    log: list[Logged] = field(default_factory=list)
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
        digest = digest_of(data)
        self.blobs[(repo, digest)] = data
        return digest



class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    stub: Stub
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
        with self.stub.lock:
            self.stub.log.append(self._entry)
        return parts.path, query, body

    def _denied_body(self, base: bytes) -> bytes:
        if not self.stub.echo:
            return base
        sent = self.headers.get("Authorization") or "nothing"
        return json.dumps({"errors": [{"code": "UNAUTHORIZED",
                                       "message": f"denied for {sent}"}]}).encode()

    def _authorized(self, path: str, repo: str | None, push: bool,
                    mount_from: str | None = None) -> bool:
        sent = self.headers.get("Authorization")
        if self.stub.auth == "basic":
            if sent == self.stub.basic:
                return True
            self._send(401, self._denied_body(b'{"errors":[{"code":"UNAUTHORIZED"}]}'),
                       {"WWW-Authenticate": 'Basic realm="stub, with a comma"'})
            return False
        if self.stub.auth == "bearer":
            needed = []
            if repo is not None:
                needed.append(f"repository:{repo}:{'pull,push' if push else 'pull'}")
            if mount_from is not None:
                needed.append(f"repository:{mount_from}:pull")
            granted = self.stub.tokens.get((sent or "").removeprefix("Bearer "), None)
            if granted is not None and all(n in granted for n in needed):
                return True
            challenge = (f'Bearer realm="{self.stub.url}/token",service="stub"'
                         + (f',scope="{" ".join(needed)}"' if needed else ""))
            self._send(401, self._denied_body(b'{"errors":[{"code":"UNAUTHORIZED"}]}'),
                       {"WWW-Authenticate": challenge})
            return False
        return True

    def _token(self, query: dict[str, list[str]]) -> None:
        if self.headers.get("Authorization") != self.stub.basic:
            self._send(401, self._denied_body(b'{"details":"who are you"}'))
            return
        token = self.stub.token_text or uuid.uuid4().hex
        self.stub.tokens[token] = [s for v in query.get("scope", []) for s in v.split()]
        self._send(200, self.stub.token_body or json.dumps({"token": token}).encode())

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
        if path == "/v2/":
            if self._authorized(path, None, False):
                self._send(200, b"{}")
            return None
        if found := self._split(path, "blobs"):
            repo, digest = found
            if not self._authorized(path, repo, False):
                return None
            data = self.stub.blobs.get((repo, digest))
            if data is None:
                return self._send(404, b'{"errors":[{"code":"BLOB_UNKNOWN"}]}')
            if digest in self.stub.corrupt:
                data = b"x" + data[1:]
            return self._send(200, data, {"Docker-Content-Digest": digest},
                              with_body=with_body)
        if found := self._split(path, "manifests"):
            repo, ref = found
            if not self._authorized(path, repo, False):
                return None
            item = self.stub.manifests.get((repo, ref))
            if item is None:
                return self._send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}')
            return self._send(200, item[0], {"Docker-Content-Digest": digest_of(item[0]),
                                             "Content-Type": item[1]},
                              with_body=with_body)
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
        if not self._authorized(path, repo, True, source):
            return None
        if mount and source and (source, mount) in self.stub.blobs:
            self.stub.blobs[(repo, mount)] = self.stub.blobs[(source, mount)]
            return self._send(201, headers={"Docker-Content-Digest": mount,
                                            "Location": f"/v2/{repo}/blobs/{mount}"})
        upload = uuid.uuid4().hex
        self.stub.uploads[upload] = (repo, bytearray())
        headers = {"Location": f"{self.stub.upload_url}/v2/{repo}/blobs/uploads/{upload}"
                               f"?_state=s{upload}",
                   "Range": "0-0"}
        if self.stub.min_chunk:
            headers["OCI-Chunk-Min-Length"] = str(self.stub.min_chunk)
        return self._send(202, headers=headers)

    def _upload(self, path: str) -> tuple[str, str, bytearray] | None:
        found = self._split(path, "blobs/uploads")
        if found is None or found[1] not in self.stub.uploads:
            return None
        repo, held = self.stub.uploads[found[1]]
        return repo, found[1], held

    def do_PATCH(self) -> None:
        path, _, body = self._start()
        found = self._upload(path)
        if found is None:
            return self._send(404, b'{"errors":[{"code":"BLOB_UPLOAD_UNKNOWN"}]}')
        repo, upload, held = found
        if not self._authorized(path, repo, True):
            return None
        start, _, end = (self._entry.content_range or "").partition("-")
        if not start.isdigit() or int(start) != len(held) or (
                int(end) - int(start) + 1 != len(body)):
            return self._send(416, b'{"errors":[{"code":"BLOB_UPLOAD_INVALID"}]}')
        held += body
        return self._send(202, headers={
            "Location": f"/v2/{repo}/blobs/uploads/{upload}?_state=p{len(held)}",
            "Range": f"0-{len(held) - 1}"})

    def do_PUT(self) -> None:
        path, query, body = self._start()
        found = self._upload(path)
        if found is not None:
            repo, upload, held = found
            if not self._authorized(path, repo, True):
                return None
            data = bytes(held + body)
            digest = unquote(query.get("digest", [""])[0])
            if digest_of(data) != digest:
                return self._send(400, b'{"errors":[{"code":"DIGEST_INVALID"}]}')
            del self.stub.uploads[upload]
            self.stub.blobs[(repo, digest)] = data
            return self._send(201, headers={"Docker-Content-Digest": digest})
        if manifest := self._split(path, "manifests"):
            repo, ref = manifest
            if not self._authorized(path, repo, True):
                return None
            media = self.headers.get("Content-Type", MEDIA_MANIFEST)
            self.stub.manifests[(repo, ref)] = (body, media)
            self.stub.manifests[(repo, digest_of(body))] = (body, media)
            return self._send(201, headers={"Docker-Content-Digest": digest_of(body)})
        return self._send(404)


def _handler(stub: Stub) -> type[http.server.BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"stub": stub})


@contextlib.contextmanager
def serve(stub: Stub, *, cert: tuple[Path, Path] | None = None,
          bind: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``stub`` on ``bind`` (a loopback address; TLS with ``cert`` = ``(certificate,
    key)``); yields ``BIND:PORT``."""
    server = http.server.ThreadingHTTPServer((bind, 0), _handler(stub))
    server.daemon_threads = True
    host = f"{bind}:{server.server_address[1]}"
    if cert is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    stub.url = f"{'https' if cert else 'http'}://{host}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield host
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
