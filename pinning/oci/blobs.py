"""Blobs in a registry: read (checked against their digest), and pushed by the distribution
API: skipped when present (HEAD), mounted from another repository of the same registry
(``POST .../blobs/uploads/?mount=DIGEST&from=REPO``: 201 mounted, 202 upload instead),
uploaded in :data:`CHUNK_SIZE` chunks (``PATCH`` with ``Content-Range``, then
``PUT ?digest=``), or streamed chunk by chunk from the registry that serves a base layer pin
does not hold (opencontainers/distribution-spec ``spec.md``, "Pushing blobs", v1.1.0,
released 2024-02-15 per
https://opencontainers.org/posts/blog/2024-03-13-image-and-distribution-1-1/).

Failures are :class:`~pinning.errors.BuildError` (exit 8) naming the registry and the blob.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from pinning.errors import BuildError
from pinning.oci import auth
from pinning.oci.address import url_origin
from pinning.oci.reference import is_loopback, registry_url
from pinning.oci.text import HINT, clip_text, shown_url
from pinning.oci.transport import Answer, Transport
from pinning.util.digests import sha256_digest
from pinning.util.progress import NULL_PROGRESS, Task

if TYPE_CHECKING:
    import requests

CHUNK_SIZE = 16 * 1024 * 1024
"""Bytes per ``PATCH`` of a chunked upload, and the largest blob sent in one ``PUT`` (pin's
choice: large enough that a request's overhead is small, small enough to resend a chunk after
an expired token). A registry's ``OCI-Chunk-Min-Length`` raises it."""


@dataclass
class PushStats:
    """What :meth:`Registry.push_image` and :meth:`Registry.put_blob` did, counted over the
    registry object's life: blobs ``skipped`` (already there), ``mounted`` (from another
    repository), ``uploaded`` (sent, ``bytes_uploaded`` bytes in all, streamed copies
    included). Thread-safe.
    """

    skipped: int = 0
    mounted: int = 0
    uploaded: int = 0
    bytes_uploaded: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, *, skipped: int = 0, mounted: int = 0, uploaded: int = 0,
            nbytes: int = 0) -> None:
        """Count one outcome."""
        with self._lock:
            self.skipped += skipped
            self.mounted += mounted
            self.uploaded += uploaded
            self.bytes_uploaded += nbytes



def upload_location(request_url: str, answer: Answer, where: str) -> str:
    """The absolute upload URL of an upload answer's ``Location`` header (a relative one
    resolved against ``request_url``, the URL the request went to: RFC 9110 section 10.2.2,
    https://www.rfc-editor.org/rfc/rfc9110, June 2022).
    A :class:`BuildError` when it is missing, not an http(s) URL, or plain HTTP to a host that
    is not loopback (the blob would cross the network unprotected). A URL on another host is
    returned; :meth:`Registry._send` sends it no credentials.
    """
    location = answer.headers.get("Location")
    if not location:
        raise BuildError(f"{where} answered {answer.status_code} without a Location header.",
                         hint=HINT)
    try:
        url = urljoin(request_url, location)
    except ValueError:
        url = ""
    origin = url_origin(url)
    if origin is None:
        raise BuildError(f"{where} answered {answer.status_code} with a Location that is not "
                         f"an http(s) URL ({shown_url(url or location)}).", hint=HINT)
    if origin[0] == "http" and not is_loopback(urlsplit(url).netloc.rpartition("@")[2]):
        # The hint's http.host: "A fully-qualified URL for an externally-reachable address for
        # the registry. If present, it is used when creating generated URLs" (distribution/
        # distribution@11f50c034e908fea9b8176f4fef9755853bbd518:docs/content/about/
        # configuration.md, date not recorded).
        raise BuildError(f"{where} sent the upload to plain HTTP on {origin[1]}, which is not "
                         "a loopback host; pin sends no image data or credentials there.",
                         hint="Configure the registry to hand out https upload locations "
                              "(distribution: http.host in its config).")
    return url


def with_digest(location: str, digest: str) -> str:
    """``location`` with ``digest=DIGEST`` added to its query."""
    return f"{location}{'&' if '?' in location else '?'}digest={digest}"


class PushAborted(Exception):
    """Another blob of the same push failed: stop between chunks."""


class BlobStore(Transport):
    """A :class:`~pinning.oci.transport.Transport` that reads and pushes blobs; ``stats``
    counts what pushes did (:class:`PushStats`).
    """

    def __init__(self, base: str, *, timeout: float = 60.0, ca_cert: Path | None = None,
                 credentials: auth.Credentials | None = None) -> None:
        super().__init__(base, timeout=timeout, ca_cert=ca_cert, credentials=credentials)
        self.stats = PushStats()
        self._sources: dict[str, BlobStore] = {}
        self._min_chunk = 0

    def close(self) -> None:
        """Close every HTTP session this object opened, and those of source registries."""
        super().close()
        with self._lock:
            sources, self._sources = list(self._sources.values()), {}
        for source in sources:
            if source is not self:
                source.close()

    def has_blob(self, repo: str, digest: str, *, push: bool = False) -> bool:
        """True when the registry already holds blob ``digest`` in ``repo`` (``push``: ask
        with push rights, as a push does, so one token serves the whole push).
        """
        resp = self._request("HEAD", f"/v2/{self._repo(repo)}/blobs/{digest}", (200, 404),
                             repo=repo, push=push)
        return resp.status_code == 200

    def get_blob(self, repo: str, digest: str) -> bytes:
        """The bytes of blob ``digest``, checked against the digest."""
        data = self._request("GET", f"/v2/{self._repo(repo)}/blobs/{digest}", (200,),
                             repo=repo).content
        if sha256_digest(data) != digest:
            raise BuildError(f"Registry {self.base}: blob {digest} came back with other bytes.")
        return data

    @contextlib.contextmanager
    def open_blob(self, repo: str, digest: str) -> Iterator[requests.Response]:
        """The open answer to ``GET`` blob ``digest`` (stream it with ``iter_content``; the
        caller checks the digest of what it reads).
        """
        resp = self._send("GET", f"/v2/{self._repo(repo)}/blobs/{digest}", (200,), repo=repo)
        with resp:
            yield resp

    def put_blob(self, repo: str, data: bytes) -> str:
        """Upload ``data`` (skipped when present); return its digest."""
        digest = sha256_digest(data)
        self._push_blob(repo, data=data, digest=digest, size=len(data), source=None,
                        task=NULL_PROGRESS.task(digest), abort=threading.Event())
        return digest

    def _start_upload(self, repo: str) -> str:
        """Open an upload session in ``repo``; return its URL."""
        location = self._mount_or_start(repo, None)
        assert location is not None  # 201 is not accepted without a mount
        return location

    def _mount_or_start(self, repo: str, mount: tuple[str, str] | None) -> str | None:
        """Open an upload session in ``repo``, asking to mount ``mount`` = ``(digest,
        from_repo)`` when given: ``None`` when mounted (201), else the upload URL (202).
        """
        path = f"/v2/{self._repo(repo)}/blobs/uploads/"
        params = None
        if mount is not None:
            params = {"mount": mount[0], "from": self._repo(mount[1])}
        answer = self._request("POST", path, (201, 202) if mount else (202,), repo=repo,
                               push=True, mount_from=mount[1] if mount else None,
                               params=params, data=b"")
        if answer.status_code == 201:
            return None
        least = answer.headers.get("OCI-Chunk-Min-Length", "")
        if least.isascii() and least.isdigit() and len(least) < 12:
            self._min_chunk = max(self._min_chunk, int(least))
        return upload_location(self._base_url() + path, answer,
                         f"Registry {self.base}: POST {path}")

    def _chunk_size(self) -> int:
        """:data:`CHUNK_SIZE` (read at call time, so tests can lower it), or the registry's
        ``OCI-Chunk-Min-Length`` when that is larger.
        """
        return max(CHUNK_SIZE, self._min_chunk)

    def _patch(self, repo: str, location: str, piece: bytes, offset: int) -> str:
        """Send one chunk at ``offset``; return the next upload URL."""
        end = offset + len(piece) - 1
        answer = self._request("PATCH", location, (202,), repo=repo, push=True, data=piece,
                               headers={"Content-Type": "application/octet-stream",
                                        "Content-Range": f"{offset}-{end}"})
        where = f"Registry {self.base}: PATCH {shown_url(location)}"
        held = answer.headers.get("Range")
        if held:
            text = held.strip().removeprefix("bytes=")
            last = text.rpartition("-")[2]
            if not (last.isascii() and last.isdigit()) or int(last) != end:
                raise BuildError(f"{where}: the registry holds bytes "
                                 f"{clip_text(self._mask(text), 60)} of the upload, pin sent "
                                 f"up to {end}.", hint=HINT)
        return upload_location(location, answer, where)

    def _finish(self, repo: str, location: str, digest: str, body: bytes = b"") -> None:
        """Close the upload with ``PUT ?digest=``; check the digest the registry names."""
        answer = self._request("PUT", with_digest(location, digest), (201,), repo=repo,
                               push=True, data=body,
                               headers={"Content-Type": "application/octet-stream"})
        theirs = answer.headers.get("Docker-Content-Digest", digest)
        if theirs != digest:
            raise BuildError(f"Registry {self.base}: blob stored as "
                             f"{clip_text(self._mask(theirs), 100)}, pin sent {digest}.",
                             hint=HINT)

    def _upload_bytes(self, repo: str, location: str, data: bytes, digest: str,
                      task: Task, abort: threading.Event) -> None:
        """Upload ``data``: one ``PUT`` when it fits a chunk, else ``PATCH`` chunks."""
        chunk = self._chunk_size()
        if len(data) <= chunk:
            self._finish(repo, location, digest, data)
            task.advance(len(data))
            return
        for offset in range(0, len(data), chunk):
            if abort.is_set():
                raise PushAborted
            piece = data[offset:offset + chunk]
            location = self._patch(repo, location, piece, offset)
            task.advance(len(piece))
        self._finish(repo, location, digest)

    def _copy_from(self, source: BlobStore, source_repo: str, repo: str, location: str,
                   digest: str, size: int | None, task: Task, abort: threading.Event) -> None:
        """Stream blob ``digest`` from ``source`` into the upload at ``location``, chunk by
        chunk (never whole in memory), checking its digest (and size) before committing.
        """
        import requests

        chunk = self._chunk_size()
        hasher = hashlib.sha256()
        buffer = bytearray()
        offset = 0
        where = f"Registry {source.base}: blob {digest} of {source_repo}"
        try:
            with source.open_blob(source_repo, digest) as resp:
                for part in resp.iter_content(chunk_size=1024 * 1024):
                    if abort.is_set():
                        raise PushAborted
                    buffer += part
                    if size is not None and offset + len(buffer) > size:
                        raise BuildError(f"{where} is longer than the {size} bytes its "
                                         "descriptor says.", hint=HINT)
                    while len(buffer) >= chunk:
                        piece = bytes(buffer[:chunk])
                        del buffer[:chunk]
                        hasher.update(piece)
                        location = self._patch(repo, location, piece, offset)
                        offset += len(piece)
                        task.advance(len(piece))
        except requests.RequestException as exc:
            raise BuildError(f"{where}: reading failed: {clip_text(str(exc))}.",
                             hint=HINT) from None
        if buffer:
            piece = bytes(buffer)
            hasher.update(piece)
            location = self._patch(repo, location, piece, offset)
            offset += len(piece)
            task.advance(len(piece))
        if f"sha256:{hasher.hexdigest()}" != digest or (size is not None and offset != size):
            raise BuildError(f"{where} came with other bytes ({offset} bytes, sha256:"
                             f"{hasher.hexdigest()}); nothing was committed.", hint=HINT)
        self._finish(repo, location, digest)

    def _source(self, host: str) -> BlobStore:
        """Self when ``host`` names this registry, else a (cached) client for ``host``."""
        if self._same_registry(host):
            return self
        with self._lock:
            found = self._sources.get(host)
            if found is None:
                found = type(self)(registry_url(host), timeout=self.timeout,
                                   ca_cert=self._ca_cert)
                self._sources[host] = found
            return found

    def _same_registry(self, host: str) -> bool:
        """True when image-reference host ``host`` is served by this registry's endpoint."""
        other = "registry-1.docker.io" if auth.is_docker_hub(host) else host
        return other.lower() == self.endpoint.lower()

    def _push_blob(self, repo: str, *, data: bytes | None, digest: str, size: int,
                   source: str | None, task: Task, abort: threading.Event) -> None:
        """Put one blob in ``repo``: HEAD-skip, mount from ``source`` (``HOST/REPO``) on this
        registry, upload ``data``, or stream it from ``source``; ``task`` sees the bytes.
        """
        note = ""
        try:
            if abort.is_set():
                raise PushAborted
            if self.has_blob(repo, digest, push=True):
                self.stats.add(skipped=1)
                note = "already in the registry"
                return
            source_host, _, source_repo = (source or "").partition("/")
            if source and source_repo and self._same_registry(source_host) and (
                    self._repo(source_repo) != self._repo(repo)):
                mounted = self._mount_or_start(repo, (digest, source_repo))
                if mounted is None:
                    self.stats.add(mounted=1)
                    note = f"mounted from {source_repo}"
                    return
                location = mounted
            else:
                location = self._start_upload(repo)
            if data is not None:
                self._upload_bytes(repo, location, data, digest, task, abort)
            elif source and source_repo:
                self._copy_from(self._source(source_host), source_repo, repo, location,
                                digest, size, task, abort)
            else:
                raise BuildError(f"Registry {self.base}: blob {digest} is not in {repo}, and "
                                 "pin holds neither its bytes nor a registry that serves it.",
                                 hint="Push the base image to this registry first, or build "
                                      "from a base pin can read.")
            self.stats.add(uploaded=1, nbytes=size)
        finally:
            task.done(note)
