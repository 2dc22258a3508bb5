"""Sigstore bundles in a registry: attached to an image through the OCI 1.1 referrers API or
its tag fallback, listed, and read back with bounds (the layouts are in
:mod:`pinning.sign.bundle`; :mod:`pinning.sign.bundlecheck` verifies what is read).

Bounds: an image's referrers listing is read from another party's registry, so what pin
fetches from it is bounded. Only entries whose ``artifactType`` is the bundle media type are
looked at (other tools' referrers are ignored without a request); at most
:data:`MAX_BUNDLES` of them, a listing with more being refused as a whole (exit 9) rather
than examined in part, so no bundle is ever skipped; a bundle blob is read to at most
:data:`MAX_BUNDLE_BYTES`; and a failure message names at most
:data:`~pinning.sign.bundlecheck.MAX_REASONS` reasons.

Errors are :class:`~pinning.errors.SignatureError` (exit 9) for a listing, manifest or bundle
that is not what it must be, :class:`~pinning.errors.BuildError` (exit 8) when the registry
fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric import ec

from pinning.errors import BuildError, SignatureError
from pinning.oci.documents import MEDIA_MANIFEST
from pinning.oci.registry import MEDIA_DOCKER_MANIFEST, MEDIA_INDEX
from pinning.sign.bundle import (
    BUNDLE_MEDIA,
    EMPTY_JSON,
    PREDICATE_ANNOTATION,
    index_entries,
    index_entry,
    make_bundle,
    merged_index,
    open_bundle,
    referrer_manifest,
    referrers_tag,
)
from pinning.sign.cosign import statement
from pinning.util.digests import sha256_digest
from pinning.util.jsonread import load_json

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# RFC 3339 date-time (only matched with fullmatch: linear).
_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
                      r"(?:Z|[+-][0-9]{2}:[0-9]{2})")

MAX_BUNDLES = 100
"""The most Sigstore bundle entries pin examines in one image's referrers listing (pin's
bound). ``pin sign --lock`` writes 3 bundles per key (signature, lock attestation, SLSA
provenance) and writing the same statement again adds none, so 100 is room for some 33
signing keys; a listing with more is refused as a whole (:class:`SignatureError`, exit 9,
naming the count and this bound) rather than examined in part, since a bundle left
unexamined could be the one that fails. Each examined entry costs two requests (manifest and
blob), so one check is at most about 200 requests."""
MAX_BUNDLE_BYTES = 4 * 1024 * 1024
"""The largest bundle blob pin reads or writes, in bytes (pin's bound). Measured with
:func:`make_bundle` (2026-12-01): a signature bundle is about 700 bytes, but a lock
attestation carries the whole lock text and comes to about 1.6 times the lock's size
(7.8-10.7 KB for the 4.9-6.9 KB locks in ``lockfiles/``), so 4 MiB leaves room for a lock
of some 2.5 MiB. A larger ``size`` in a referrer manifest is refused before the blob is
fetched, a blob that turns out larger is refused as soon as the bytes read pass the bound,
and :func:`attach_bundle` refuses to write a larger bundle (pin never writes what it will
not read back)."""
REASON_CHARS = 300
"""The most characters of one failure reason kept in a message (the rest are counted)."""
_CHUNK = 64 * 1024


class BlobStream(Protocol):
    """An open blob answer (``requests.Response`` is one): its body in chunks."""

    def iter_content(self, chunk_size: int) -> Iterator[bytes]:
        """The body, ``chunk_size`` bytes at a time (the last chunk may be shorter)."""


class BundleRegistry(Protocol):
    """The registry calls this module makes (:class:`pinning.oci.registry.Registry` has them)."""

    def put_blob(self, repo: str, data: bytes) -> str:
        """Upload ``data``; return its digest."""

    def get_blob(self, repo: str, digest: str) -> bytes:
        """The bytes of blob ``digest``, checked against it."""

    def open_blob(self, repo: str, digest: str) -> AbstractContextManager[BlobStream]:
        """The open answer to ``GET`` blob ``digest`` (the caller bounds and checks what it
        reads); :class:`BuildError` when the registry does not serve it.
        """

    def get_manifest(self, repo: str, reference: str, *,
                     accept: tuple[str, ...] = ...) -> bytes:
        """The manifest bytes of ``repo:reference``."""

    def put_manifest(self, repo: str, reference: str, manifest: bytes,
                     media_type: str = ...) -> str:
        """Put ``manifest`` under ``reference`` (a tag or its digest); return its digest."""

    def manifest_digest(self, repo: str, reference: str) -> str | None:
        """The digest of ``repo:reference``, ``None`` when absent."""

    def referrers(self, repo: str, digest: str) -> bytes | None:
        """The referrers index of ``digest``, ``None`` without a referrers API."""


@dataclass
class Listing:
    """Where the bundles of an image are listed: ``api`` True for the registry's referrers
    API (``raw`` is then its answer), else the tag ``sha256-<hex>`` (``raw`` its bytes, or
    ``None`` when the tag is absent); ``entries`` every descriptor listed.
    """

    api: bool
    raw: bytes | None
    entries: list[dict[str, Any]] = field(default_factory=list)

    def source(self, digest: str) -> str:
        """Where, in words (``referrers API`` or ``tag sha256-<hex>``)."""
        return "referrers API" if self.api else f"tag {referrers_tag(digest)}"


def _tag_index(registry: BundleRegistry, repo: str, tag: str) -> bytes | None:
    """The index under ``tag`` (``None`` when the tag is absent)."""
    if registry.manifest_digest(repo, tag) is None:
        return None
    return registry.get_manifest(repo, tag, accept=(MEDIA_INDEX,))


def list_referrers(registry: BundleRegistry, repo: str, digest: str) -> Listing:
    """The referrers of ``repo@digest``: from the referrers API, else from the tag index.
    Raises :class:`SignatureError` for an answer that is not an index,
    :class:`BuildError` when the registry fails.
    """
    raw = registry.referrers(repo, digest)
    if raw is not None:
        return Listing(api=True, raw=raw,
                       entries=index_entries(raw, f"the referrers of {digest}"))
    tag = referrers_tag(digest)
    raw = _tag_index(registry, repo, tag)
    entries = [] if raw is None else index_entries(raw, f"{repo}:{tag}")
    return Listing(api=False, raw=raw, entries=entries)


def is_bundle_entry(entry: dict[str, Any]) -> bool:
    """True when a referrers index entry names a Sigstore bundle (by its ``artifactType``)."""
    return entry.get("artifactType") == BUNDLE_MEDIA


def bundle_entries(listing: Listing, digest: str) -> list[dict[str, Any]]:
    """The entries of ``listing`` (the referrers of ``digest``) that name Sigstore bundles
    (:func:`is_bundle_entry`; the others are not looked at). Raises :class:`SignatureError`
    (exit 9) naming the count and :data:`MAX_BUNDLES` when there are more than that.
    """
    entries = [e for e in listing.entries if is_bundle_entry(e)]
    if len(entries) > MAX_BUNDLES:
        raise SignatureError(
            f"{len(entries)} Sigstore bundles are listed for {digest} "
            f"({listing.source(digest)}), more than the {MAX_BUNDLES} pin examines "
            "(MAX_BUNDLES); pin does not check only some of them.",
            hint="Delete the bundle referrers no longer needed (or the tag index) in the "
                 "registry, then sign or verify again.")
    return entries


def _subject(registry: BundleRegistry, repo: str, digest: str) -> tuple[dict[str, Any], str | None]:
    """The descriptor of the image manifest ``repo@digest`` and its config's ``created``
    (``None`` when absent or not RFC 3339).
    """
    manifest = registry.get_manifest(repo, digest,
                                     accept=(MEDIA_MANIFEST, MEDIA_DOCKER_MANIFEST, MEDIA_INDEX))
    if sha256_digest(manifest) != digest:
        raise SignatureError(f"The registry answered other bytes for manifest {digest}.")
    try:
        doc = load_json(manifest, BuildError, label=f"manifest {digest}")
        media_type = str(doc.get("mediaType") or MEDIA_MANIFEST)
        config = load_json(registry.get_blob(repo, str(doc["config"]["digest"])), BuildError,
                           label=f"the config of {digest}")
        created = config.get("created")
    except (ValueError, KeyError, TypeError, AttributeError, BuildError):
        media_type, created = MEDIA_MANIFEST, None
    if not (isinstance(created, str) and _RFC3339.fullmatch(created)):
        created = None
    return {"mediaType": media_type, "digest": digest, "size": len(manifest)}, created


def attach_bundle(registry: BundleRegistry, repo: str, digest: str,
                  key: ec.EllipticCurvePrivateKey, predicate_type: str, predicate: Any,
                  *, name: str) -> str:
    """Attach a bundle signing an in-toto statement (``predicate_type``, ``predicate``) about
    ``repo@digest`` named ``name`` (``HOST/REPO``); return the referrer manifest's digest.

    Not again when a bundle of the same statement, verifying with ``key``, is already
    listed (its digest is returned). Pushes the bundle, the empty config and the referrer
    manifest by digest; when the registry has no referrers API, adds the manifest to the
    index under ``sha256-<hex>`` (read-modify-write; existing entries kept). Raises
    :class:`SignatureError` when that tag holds no index, more than :data:`MAX_BUNDLES`
    bundles are listed (:func:`bundle_entries`) or the bundle would be larger than
    :data:`MAX_BUNDLE_BYTES` (checked before any write), :class:`BuildError` when the
    registry fails.
    """
    body = statement(digest, name, predicate_type, predicate)
    listing = list_referrers(registry, repo, digest)
    for entry in bundle_entries(listing, digest):
        found = _same_statement(registry, repo, entry, key.public_key(), digest, body)
        if found is not None:
            return found
    bundle = make_bundle(key, body)
    if len(bundle) > MAX_BUNDLE_BYTES:
        raise SignatureError(
            f"The Sigstore bundle for {predicate_type} about {digest} would be {len(bundle)} "
            f"bytes, more than the {MAX_BUNDLE_BYTES} pin reads back (MAX_BUNDLE_BYTES); "
            "nothing was written for it.",
            hint="Make the attested document (the lock) smaller.")
    subject, created = _subject(registry, repo, digest)
    registry.put_blob(repo, bundle)
    registry.put_blob(repo, EMPTY_JSON)
    manifest = referrer_manifest(bundle, subject, predicate_type, created)
    manifest_digest = registry.put_manifest(repo, sha256_digest(manifest), manifest,
                                            MEDIA_MANIFEST)
    if not listing.api:
        tag = referrers_tag(digest)
        index = merged_index(listing.raw, index_entry(manifest), f"{repo}:{tag}")
        registry.put_manifest(repo, tag, index, MEDIA_INDEX)
    return manifest_digest


def _same_statement(registry: BundleRegistry, repo: str, entry: dict[str, Any],
                    key: ec.EllipticCurvePublicKey, digest: str, body: bytes) -> str | None:
    """The digest of the listed referrer ``entry`` when it is a bundle of ``body`` that
    verifies with ``key``, else ``None`` (an unreadable one is no match).
    """
    if not is_bundle_entry(entry):
        return None
    try:
        found = read_bundle(registry, repo, entry, digest)
        if open_bundle(key, found[1], digest).body != body:
            return None
    except (SignatureError, BuildError):
        return None
    return found[0]


def read_bundle(registry: BundleRegistry, repo: str, entry: dict[str, Any],
                digest: str) -> tuple[str, bytes, str | None]:
    """Fetch the referrer that the index ``entry`` names and its bundle blob: returns the
    manifest digest, the bundle bytes and the manifest's predicate-type annotation (or
    ``None``). Checks the manifest is the digest listed, a bundle manifest whose ``subject``
    is ``digest``, with one bundle layer of at most :data:`MAX_BUNDLE_BYTES` (read
    through :func:`read_bundle_blob`). Raises :class:`SignatureError` with the reason.
    """
    ref = entry.get("digest")
    if not isinstance(ref, str) or not _DIGEST.fullmatch(ref):
        raise SignatureError(f"an index entry has no digest of the form sha256:<64 hex> "
                             f"({str(ref)[:80]!r})")
    try:
        raw = registry.get_manifest(repo, ref, accept=(MEDIA_MANIFEST,))
    except BuildError as exc:
        raise SignatureError(f"the index lists manifest {ref}, which cannot be read "
                             f"({exc.message})") from exc
    if sha256_digest(raw) != ref:
        raise SignatureError(f"manifest {ref} came back with other bytes")
    try:
        doc = load_json(raw, SignatureError, label=f"bundle manifest {ref}")
        if doc.get("artifactType") != BUNDLE_MEDIA and \
                doc.get("config", {}).get("mediaType") != BUNDLE_MEDIA:
            raise SignatureError(f"manifest {ref} is not a Sigstore bundle "
                                 f"(artifactType {doc.get('artifactType')!r})")
        subject = doc.get("subject") or {}
        if subject.get("digest") != digest:
            raise SignatureError(f"bundle manifest {ref} is attached to "
                                 f"{subject.get('digest')}, not {digest}")
        layers = [x for x in doc.get("layers", []) if x.get("mediaType") == BUNDLE_MEDIA]
        if len(layers) != 1:
            raise SignatureError(f"bundle manifest {ref} has {len(layers)} bundle layers, "
                                 "not one")
        blob = read_bundle_blob(registry, repo, layers[0], ref)
        predicate = (doc.get("annotations") or {}).get(PREDICATE_ANNOTATION)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SignatureError(f"bundle manifest {ref} is malformed ({type(exc).__name__}: "
                             f"{exc})") from exc
    except BuildError as exc:
        raise SignatureError(f"the bundle of manifest {ref} cannot be read "
                             f"({exc.message})") from exc
    return ref, blob, predicate if isinstance(predicate, str) else None


def read_bundle_blob(registry: BundleRegistry, repo: str, layer: dict[str, Any],
                     ref: str) -> bytes:
    """The bytes of the bundle blob that ``layer`` (a descriptor in bundle manifest ``ref``)
    names: its ``digest`` of the form ``sha256:<64 hex>``, its ``size`` a whole number of at
    most :data:`MAX_BUNDLE_BYTES` (refused before any request otherwise), the blob streamed
    and refused once more than :data:`MAX_BUNDLE_BYTES` bytes arrive, then checked against
    the digest and the size. Raises :class:`SignatureError` with the reason,
    :class:`BuildError` when the registry does not serve the blob.
    """
    blob = layer.get("digest")
    if not isinstance(blob, str) or not _DIGEST.fullmatch(blob):
        raise SignatureError(f"bundle manifest {ref}: the bundle layer has no digest of the "
                             f"form sha256:<64 hex> ({str(blob)[:80]!r})")
    size = layer.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise SignatureError(f"bundle manifest {ref}: the bundle layer's size "
                             f"{str(size)[:80]!r} is not a whole number of bytes")
    if size > MAX_BUNDLE_BYTES:
        raise SignatureError(f"bundle manifest {ref}: the bundle {blob} is {size} bytes, more "
                             f"than the {MAX_BUNDLE_BYTES} pin reads (MAX_BUNDLE_BYTES)")
    data = bytearray()
    try:
        with registry.open_blob(repo, blob) as resp:
            for chunk in resp.iter_content(chunk_size=_CHUNK):
                data += chunk
                if len(data) > MAX_BUNDLE_BYTES:
                    raise SignatureError(
                        f"bundle manifest {ref}: the registry sent more than "
                        f"{MAX_BUNDLE_BYTES} bytes (MAX_BUNDLE_BYTES) for the bundle {blob}, "
                        f"which the manifest says is {size} bytes")
    except OSError as exc:  # requests' errors while streaming are OSErrors
        raise SignatureError(f"the bundle {blob} of manifest {ref} cannot be read "
                             f"({clip_reason(type(exc).__name__ + ': ' + str(exc))})") from exc
    if sha256_digest(bytes(data)) != blob:
        raise SignatureError(f"the bundle {blob} of manifest {ref} came back with other bytes")
    if len(data) != size:
        raise SignatureError(f"bundle manifest {ref}: the bundle {blob} is {len(data)} "
                             f"bytes, not the {size} its descriptor says")
    return bytes(data)


def clip_reason(text: str, limit: int = REASON_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with ``... (N characters more)`` when cut."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} " \
        "characters more)"


