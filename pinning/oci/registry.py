"""Push and fetch exact bytes with an OCI registry over the distribution HTTP API (requests).

Only what the registry API needs for pin: check a blob, upload a blob monolithically, put a
manifest by tag, read a manifest's digest, read an image back (:func:`fetch_docs`). The
bytes sent are the bytes hashed; the digest the registry answers is checked against ours,
and blobs read are checked against their digests. Every failure is a
:class:`~pinning.errors.BuildError` (exit 8) naming the URL and the status.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from pinning.errors import BuildError
from pinning.oci.documents import MEDIA_MANIFEST, ImageDocs, LayerBlob
from pinning.oci.reference import parse_pinned
from pinning.util.digests import sha256_digest

if TYPE_CHECKING:
    import requests

HINT = "Check the registry is running and reachable (pin talks to it over plain HTTP on localhost)."


class Registry:
    """A registry at ``base`` (``http://127.0.0.1:5000``); ``timeout`` in seconds per request.

    Every method raises :class:`BuildError` (exit 8) naming the URL when the registry cannot
    be reached or answers an unexpected status.
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

    def _request(self, method: str, url: str, ok: tuple[int, ...], **kw: Any) -> requests.Response:
        import requests

        full = url if "://" in url else self.base + url
        try:
            resp = self.session.request(method, full, timeout=self.timeout, **kw)
        except requests.RequestException as exc:
            raise BuildError(f"Registry {self.base}: {method} {full} failed: {exc}.",
                             hint=HINT) from exc
        if resp.status_code not in ok:
            body = resp.text[:300].strip()
            raise BuildError(f"Registry {self.base}: {method} {full} answered "
                             f"{resp.status_code}: {body}", hint=HINT)
        return resp

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
            raise BuildError(f"Registry {self.base}: manifest stored as {theirs}, pin sent "
                             f"{ours}; the registry rewrote the bytes.")
        return ours

    def manifest_digest(self, repo: str, reference: str) -> str | None:
        """Digest of ``repo:reference`` (tag or digest), or ``None`` when absent."""
        resp = self._request("HEAD", f"/v2/{repo}/manifests/{reference}", (200, 404),
                             headers={"Accept": MEDIA_MANIFEST})
        if resp.status_code == 404:
            return None
        return resp.headers.get("Docker-Content-Digest")

    def get_manifest(self, repo: str, reference: str) -> bytes:
        """The exact manifest bytes of ``repo:reference``."""
        return self._request("GET", f"/v2/{repo}/manifests/{reference}", (200,),
                             headers={"Accept": MEDIA_MANIFEST}).content

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
                         f"({exc}).") from exc
    return ImageDocs(layers=layers, config=config, manifest=manifest)
