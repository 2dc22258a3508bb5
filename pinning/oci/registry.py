"""Push and fetch exact bytes with an OCI registry over the distribution HTTP API (requests).

Only what the registry API needs for pin: check a blob, upload a blob monolithically, put a
manifest by tag, read a manifest's digest, read an image back (:func:`fetch_docs`). The
bytes sent are the bytes hashed; the digest the registry answers is checked against ours,
and blobs read are checked against their digests. Every failure is a
:class:`~pinning.errors.BuildError` (exit 8) naming the URL and the status.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from pinning.errors import BuildError
from pinning.oci.documents import MEDIA_MANIFEST, ImageDocs, LayerBlob
from pinning.oci.reference import parse_pinned
from pinning.util.digests import sha256_digest

if TYPE_CHECKING:
    import requests

HINT = "Check the registry is running and reachable (pin talks to it over plain HTTP on localhost)."

ERROR_TEXT_CHARS = 300
"""The most characters of a registry's (or engine's) error text shown in a message."""
ERROR_READ_BYTES = 64 * 1024
"""The most bytes of an error answer's body kept; the rest is counted, not stored."""
ERROR_COUNT_BYTES = 64 * 1024 * 1024
"""The most bytes of an error answer read at all (to say how many were left out)."""
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
"""The largest manifest pin reads (the distribution spec's 4 MiB that registries accept)."""


def clip_text(text: str, limit: int = ERROR_TEXT_CHARS, *, more: int = 0,
              squeeze: bool = True) -> str:
    """``text`` cut to ``limit`` characters, followed by ``... (N bytes more)`` saying how
    many UTF-8 bytes were left out (plus ``more``, bytes the caller never read); ``text``
    itself when it is short enough. With ``squeeze`` (the default) runs of white space,
    line breaks included, become one space first, so the text fits in one line.
    """
    if squeeze:
        text = " ".join(text.split())
    if len(text) <= limit and not more:
        return text
    left = len(text[limit:].encode("utf-8", "replace")) + more
    return f"{text[:limit]}... ({left} bytes more)"


def _error_body(resp: requests.Response) -> str:
    """The start of an error answer's body, clipped (:func:`clip_text`): at most
    :data:`ERROR_READ_BYTES` are read and kept. The bytes left out are counted from
    ``Content-Length`` when the answer has one, else by reading on (discarding) to at most
    :data:`ERROR_COUNT_BYTES`.
    """
    kept = b""
    skipped = 0
    chunks = resp.iter_content(chunk_size=ERROR_READ_BYTES)
    for chunk in chunks:
        kept += chunk
        if len(kept) >= ERROR_READ_BYTES:
            break
    kept, skipped = kept[:ERROR_READ_BYTES], len(kept[ERROR_READ_BYTES:])
    length = resp.headers.get("Content-Length", "")
    if length.isascii() and length.isdigit() and len(length) < 19:
        skipped = max(int(length) - len(kept), 0)
    elif len(kept) == ERROR_READ_BYTES:
        for chunk in chunks:
            skipped += len(chunk)
            if skipped > ERROR_COUNT_BYTES:
                break
    return clip_text(kept.decode("utf-8", "replace"), more=skipped)


def _read_body(resp: requests.Response, limit: int | None, what: str) -> bytes:
    """The body of ``resp``; :class:`BuildError` naming ``what`` when ``limit`` is given
    and the body is larger (nothing past ``limit`` + 1 MiB is read).
    """
    chunks: list[bytes] = []
    size = 0
    for chunk in resp.iter_content(chunk_size=1024 * 1024):
        chunks.append(chunk)
        size += len(chunk)
        if limit is not None and size > limit:
            raise BuildError(f"{what}: the answer is larger than {limit} bytes.", hint=HINT)
    return b"".join(chunks)


@dataclass(frozen=True)
class Answer:
    """A registry's answer: the HTTP status, the headers and the body bytes (read whole)."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes


class Registry:
    """A registry at ``base`` (``http://127.0.0.1:5000``); ``timeout`` in seconds per request.

    Every method raises :class:`BuildError` (exit 8) naming the URL when the registry cannot
    be reached or answers an unexpected status; the registry's error text is cut to
    :data:`ERROR_TEXT_CHARS` characters (:func:`clip_text`).
    """

    def __init__(self, base: str, *, timeout: float = 60.0) -> None:
        import requests

        self.base = base.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()

    @property
    def host(self) -> str:
        """``host:port`` as used in image references."""
        return self.base.split("://", 1)[-1]

    def _request(self, method: str, url: str, ok: tuple[int, ...], *,
                 limit: int | None = None, **kw: Any) -> Answer:
        """Send one request and read its answer (the body at most ``limit`` bytes when
        given); the connection is released before it returns. Raises :class:`BuildError`
        for a failed request, a status not in ``ok`` (with the clipped error text) or a
        body over ``limit``.
        """
        import requests

        full = url if "://" in url else self.base + url
        where = f"Registry {self.base}: {method} {clip_text(full)}"
        try:
            with self.session.request(method, full, timeout=self.timeout, stream=True,
                                      **kw) as resp:
                if resp.status_code not in ok:
                    raise BuildError(f"{where} answered {resp.status_code}: "
                                     f"{_error_body(resp)}", hint=HINT)
                return Answer(status_code=resp.status_code, headers=resp.headers,
                              content=_read_body(resp, limit, where))
        except requests.RequestException as exc:
            raise BuildError(f"{where} failed: {clip_text(str(exc))}.", hint=HINT) from exc

    def ping(self) -> None:
        """Raise :class:`BuildError` unless ``GET /v2/`` answers 200."""
        self._request("GET", "/v2/", (200,))

    def has_blob(self, repo: str, digest: str) -> bool:
        """True when the registry already holds blob ``digest`` in ``repo``."""
        resp = self._request("HEAD", f"/v2/{repo}/blobs/{digest}", (200, 404))
        return resp.status_code == 200

    def put_blob(self, repo: str, data: bytes) -> str:
        """Upload ``data`` (skipped when present); return its digest."""
        digest = sha256_digest(data)
        if self.has_blob(repo, digest):
            return digest
        start = self._request("POST", f"/v2/{repo}/blobs/uploads/", (202,))
        if not start.headers.get("Location"):
            raise BuildError(f"Registry {self.base}: upload for {repo} started without a "
                             "Location header.", hint=HINT)
        location = urljoin(self.base + "/", start.headers["Location"])
        sep = "&" if "?" in location else "?"
        self._request("PUT", f"{location}{sep}digest={digest}", (201,), data=data,
                      headers={"Content-Type": "application/octet-stream"})
        return digest

    def put_manifest(self, repo: str, tag: str, manifest: bytes,
                     media_type: str = MEDIA_MANIFEST) -> str:
        """Put ``manifest`` bytes under ``tag``; return the digest, checked against ours."""
        resp = self._request("PUT", f"/v2/{repo}/manifests/{tag}", (201,), data=manifest,
                             headers={"Content-Type": media_type})
        ours = sha256_digest(manifest)
        theirs = resp.headers.get("Docker-Content-Digest", ours)
        if theirs != ours:
            raise BuildError(f"Registry {self.base}: manifest stored as {clip_text(theirs)}, "
                             f"pin sent {ours}; the registry rewrote the bytes.")
        return ours

    def manifest_digest(self, repo: str, reference: str) -> str | None:
        """Digest of ``repo:reference`` (tag or digest), or ``None`` when absent."""
        resp = self._request("HEAD", f"/v2/{repo}/manifests/{reference}", (200, 404),
                             headers={"Accept": MEDIA_MANIFEST})
        if resp.status_code == 404:
            return None
        return resp.headers.get("Docker-Content-Digest")

    def get_manifest(self, repo: str, reference: str) -> bytes:
        """The exact manifest bytes of ``repo:reference`` (at most 4 MiB; a larger answer is
        a :class:`BuildError`).
        """
        return self._request("GET", f"/v2/{repo}/manifests/{reference}", (200,),
                             headers={"Accept": MEDIA_MANIFEST},
                             limit=MAX_MANIFEST_BYTES).content

    def get_blob(self, repo: str, digest: str) -> bytes:
        """The bytes of blob ``digest``, checked against the digest."""
        data = self._request("GET", f"/v2/{repo}/blobs/{digest}", (200,)).content
        if sha256_digest(data) != digest:
            raise BuildError(f"Registry {self.base}: blob {digest} came back with other bytes.")
        return data

    def push_image(self, repo: str, tag: str, docs: ImageDocs) -> str:
        """Push layers, config and manifest of ``docs``; return the manifest digest."""
        for layer in docs.layers:
            self.put_blob(repo, layer.data)
        self.put_blob(repo, docs.config)
        return self.put_manifest(repo, tag, docs.manifest)


def fetch_docs(registry_url: str, ref: str) -> ImageDocs:
    """The image ``ref`` (``HOST/REPO[:TAG]@sha256:<digest>``) as stored in the registry at
    ``registry_url``: its exact manifest, config and layer bytes, each checked against its
    digest. Raises :class:`BuildError` (exit 8) for a reference without a digest, a
    registry failure or a document that is not a well-formed OCI image.
    """
    image = parse_pinned(ref)
    repo, digest = image.repository, image.required_digest
    reg = Registry(registry_url)
    manifest = reg.get_manifest(repo, digest)
    try:
        doc = json.loads(manifest)
        config = reg.get_blob(repo, doc["config"]["digest"])
        diff_ids = json.loads(config)["rootfs"]["diff_ids"]
        layers = tuple(
            LayerBlob(data=reg.get_blob(repo, layer["digest"]), digest=layer["digest"],
                      diff_id=diff_id)
            for layer, diff_id in zip(doc["layers"], diff_ids, strict=True))
    except (ValueError, KeyError, TypeError) as exc:
        raise BuildError(f"Registry {registry_url}: {ref} is not a well-formed OCI image "
                         f"({clip_text(str(exc))}).") from exc
    return ImageDocs(layers=layers, config=config, manifest=manifest)
