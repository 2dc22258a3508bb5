"""Sigstore bundles (v0.3) attached to an image through the OCI 1.1 referrers API, or its tag
fallback, keyed and offline: the layout of cosign's ``specs/BUNDLE_SPEC.md`` (cited under
"Storage" below), which cosign writes with ``--new-bundle-format``; that flag defaults to true
in ``cosign sign``
(``sigstore/cosign@009fee078cd3d0112f3e5a24a88c85dbeff25339:cmd/cosign/cli/options/sign.go``,
date not recorded) and "Cosign v3 now defaults to producing a bundle"
(https://github.com/sigstore/docs/pull/396, 2025-10-13).

A bundle is JSON in the proto3 JSON form of the messages ``Bundle`` and
``VerificationMaterial`` (``sigstore/protobuf-specs@1f59877d5c182d72107e46fd53d96988af5e7454:
protos/sigstore_bundle.proto``), ``io.intoto.Envelope`` (``...@02624f254a99854532ba34688f764
80ac8fd9188:protos/envelope.proto``) and ``PublicKeyIdentifier``
(``...@679923855d097e76f0b454ce4334b61161a6f6b4:protos/sigstore_common.proto``), all read
2026-12-01; the v0.3 media type and the third ``verificationMaterial`` form ``certificate`` are
in the proto on ``main`` (https://github.com/sigstore/protobuf-specs/blob/main/protos/
sigstore_bundle.proto, date not recorded) and in ``sigstore-models`` 0.0.6
(``sigstore_models/bundle/v1``, read 2026-12-01)::

    {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
     "verificationMaterial": {"publicKey": {"hint": HINT}, "tlogEntries": []},
     "dsseEnvelope": {"payload": B64(statement), "payloadType": "application/vnd.in-toto+json",
                      "signatures": [{"sig": B64(ECDSA-P256-SHA256 over PAE)}]}}

``verificationMaterial`` holds exactly one of ``publicKey`` / ``x509CertificateChain`` /
``certificate``; pin signs with a key, so ``publicKey``, whose ``hint`` is unauthenticated and
agreed out of band: pin writes what sigstore-go's ``EphemeralKeypair`` writes, standard base64
of the sha256 of the DER SubjectPublicKeyInfo (``sigstore/sigstore-go@3280a6017c880f6a4288ee4
3759b828977a1a810:pkg/sign/keys.go``, read 2026-12-01), the RFC 6962 §3.2 key id the proto
recommends. ``tlogEntries`` is empty (offline, no transparency log) and written out: proto3
JSON allows that, and a strict parser (``sigstore-models`` 0.0.6) requires the field. The
DSSE signature has no ``keyid`` (optional in ``envelope.proto``). The statement is an in-toto
Statement v1 with the image manifest digest as subject; a signature has predicate type
``https://sigstore.dev/cosign/sign/v1`` and an empty predicate (cosign v3
``pkg/types/predicate.go``, date not recorded).

Storage (``sigstore/cosign@109caea3d1ba1a14a22f36c7509764a8fb04d7a4:specs/BUNDLE_SPEC.md``,
read 2026-12-01): the bundle is a blob;
an OCI image manifest with ``artifactType`` = the bundle media type, ``config`` = the OCI empty
descriptor (``application/vnd.oci.empty.v1+json``, the 2 bytes ``{}``), one layer (the bundle),
``subject`` = the image manifest's descriptor and the annotations ``dev.sigstore.bundle.content``
= ``dsse-envelope``, ``dev.sigstore.bundle.predicateType`` and
``org.opencontainers.image.created``, is pushed by digest. A registry with the referrers API
(``GET /v2/<repo>/referrers/<digest>``) lists it by itself; for one without (observed in pin's
tests: Debian's ``docker-registry`` 2.8.2 answers 404 to that request) pin reads, extends and
writes back the OCI index under the tag ``sha256-<hex>`` (the referrers tag schema of
opencontainers/distribution-spec v1.1.0 ``spec.md``, "Unavailable Referrers API", released
2024-02-15 per https://opencontainers.org/posts/blog/2024-03-13-image-and-distribution-1-1/),
keeping every entry there.

``org.opencontainers.image.created`` is, by choice, not the wall clock (cosign writes
``time.Now()``, ``sigstore/cosign@07c0708b46648b5d90f54a0ff6e27ba6b0cf4319:pkg/oci/remote/
write.go``, read 2026-12-01): pin writes the image
config's own ``created`` (for a pin build, the lock's epoch), so signing never depends on the
time of day; it is a label for telling bundles apart, not a verified time. An image whose
config has no RFC 3339 ``created`` gets no such annotation.

Bounds: an image's referrers listing is read from another party's registry, so what pin
fetches from it is bounded. Only entries whose ``artifactType`` is the bundle media type are
looked at (other tools' referrers are ignored without a request); at most
:data:`MAX_BUNDLES` of them, a listing with more being refused as a whole (exit 9) rather
than examined in part, so no bundle is ever skipped; a bundle blob is read to at most
:data:`MAX_BUNDLE_BYTES`; and a failure message names at most :data:`MAX_REASONS` reasons.

Nothing here prints; errors are :class:`~pinning.errors.SignatureError` (exit 9) for a bundle,
manifest or index that is not what it must be, :class:`~pinning.errors.BuildError` (exit 8)
when the registry fails.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pinning.errors import BuildError, SignatureError
from pinning.oci.documents import MEDIA_MANIFEST
from pinning.sign.cosign import STATEMENT_V1, statement
from pinning.sign.crypto import IN_TOTO, open_envelope, pae, sign
from pinning.util.digests import canonical_json, sha256_digest, sha256_hex
from pinning.util.jsonread import load_json

BUNDLE_MEDIA = "application/vnd.dev.sigstore.bundle.v0.3+json"
SIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1"
MEDIA_EMPTY = "application/vnd.oci.empty.v1+json"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
EMPTY_JSON = b"{}"
EMPTY_DIGEST = sha256_digest(EMPTY_JSON)  # sha256:44136fa3...caaff8a, the OCI empty descriptor
CONTENT_ANNOTATION = "dev.sigstore.bundle.content"
PREDICATE_ANNOTATION = "dev.sigstore.bundle.predicateType"
CREATED_ANNOTATION = "org.opencontainers.image.created"
TITLE_ANNOTATION = "org.opencontainers.image.title"
DSSE_CONTENT = "dsse-envelope"

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# RFC 3339 date-time (only matched with fullmatch: linear).
_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
                      r"(?:Z|[+-][0-9]{2}:[0-9]{2})")
T = TypeVar("T")
HINT = "Delete the tag (or referrer) in the registry and sign the image again."

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
MAX_REASONS = 5
"""The most failure reasons one :func:`verify_bundles` message lists; the rest are counted."""
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


def referrers_tag(digest: str) -> str:
    """``sha256:<hex>`` -> ``sha256-<hex>``: the referrers tag schema's tag for ``digest``."""
    return digest.replace(":", "-")


def key_hint(key: ec.EllipticCurvePublicKey) -> str:
    """The ``publicKey.hint`` pin writes: standard base64 of the sha256 of ``key``'s DER
    SubjectPublicKeyInfo (44 characters).
    """
    der = key.public_bytes(serialization.Encoding.DER,
                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(bytes.fromhex(sha256_hex(der))).decode()


def make_bundle(key: ec.EllipticCurvePrivateKey, body: bytes) -> bytes:
    """The bundle JSON bytes (canonical: sorted keys, no spaces, ASCII) DSSE-signing the
    in-toto statement ``body`` with ``key`` (ECDSA P-256, SHA-256, DER signature).
    """
    envelope = {"payload": base64.b64encode(body).decode(), "payloadType": IN_TOTO,
                "signatures": [{"sig": sign(key, pae(IN_TOTO, body))}]}
    doc = {"mediaType": BUNDLE_MEDIA,
           "verificationMaterial": {"publicKey": {"hint": key_hint(key.public_key())},
                                    "tlogEntries": []},
           "dsseEnvelope": envelope}
    return canonical_json(doc, ascii_only=True)


@dataclass(frozen=True)
class BundleContent:
    """A bundle that verified: its statement's predicate type and predicate, the statement
    bytes, and the key hint it carries (``""`` when none).
    """

    predicate_type: str
    predicate: Any
    body: bytes
    hint: str


def _object(value: Any, where: str) -> dict[str, Any]:
    """``value`` when it is a JSON object, else :class:`SignatureError` naming ``where``."""
    if not isinstance(value, dict):
        raise SignatureError(f"the bundle's {where} is a {type(value).__name__}, not an object")
    return value


def bundle_hint(data: bytes) -> str:
    """The ``verificationMaterial.publicKey.hint`` of the bundle bytes ``data`` (``""`` when
    it has none). Raises :class:`SignatureError` for bytes that are not a v0.3 bundle
    signed with a key (not JSON, another media type, a certificate instead of a key).
    """
    doc = _object(load_json(data, SignatureError, label="the bundle"), "top level")
    if doc.get("mediaType") != BUNDLE_MEDIA:
        raise SignatureError(f"the bundle's mediaType is {doc.get('mediaType')!r}, not "
                             f"{BUNDLE_MEDIA!r}")
    material = _object(doc.get("verificationMaterial"), "verificationMaterial")
    if "publicKey" not in material:
        raise SignatureError("the bundle carries no publicKey (pin verifies keyed bundles "
                             "only, not certificates)")
    hint = _object(material["publicKey"], "verificationMaterial.publicKey").get("hint", "")
    if not isinstance(hint, str):
        raise SignatureError("the bundle's publicKey.hint is not a string")
    _object(doc.get("dsseEnvelope"), "dsseEnvelope")
    return hint


def open_bundle(key: ec.EllipticCurvePublicKey, data: bytes, digest: str) -> BundleContent:
    """Verify the bundle bytes ``data`` with ``key``: a v0.3 keyed bundle whose DSSE envelope
    verifies over its PAE, of payload type in-toto, holding an in-toto Statement v1 whose
    subject names the manifest ``digest``. Returns what it says; raises
    :class:`SignatureError` with the first reason it is not that.
    """
    hint = bundle_hint(data)
    envelope_doc = load_json(data, SignatureError, label="the bundle")["dsseEnvelope"]
    envelope = open_envelope(key, canonical_json(envelope_doc))
    if envelope.payload_type != IN_TOTO:
        raise SignatureError(f"the bundle's payload type is {envelope.payload_type!r}, not "
                             f"{IN_TOTO!r}")
    doc = envelope.json()
    if not isinstance(doc, dict) or doc.get("_type") != STATEMENT_V1:
        got = doc.get("_type") if isinstance(doc, dict) else type(doc).__name__
        raise SignatureError(f"the bundle's payload is not an in-toto Statement v1 ({got!r})")
    subjects = doc.get("subject")
    hexes = [s.get("digest", {}).get("sha256") for s in subjects
             if isinstance(s, dict) and isinstance(s.get("digest"), dict)] \
        if isinstance(subjects, list) else []
    if digest.split(":", 1)[1] not in hexes:
        named = ", ".join(f"sha256:{h}" for h in hexes if isinstance(h, str)) or "nothing"
        raise SignatureError(f"the bundle's statement is about {named}, not {digest}")
    predicate_type = doc.get("predicateType")
    if not isinstance(predicate_type, str):
        raise SignatureError("the bundle's statement has no string predicateType")
    return BundleContent(predicate_type=predicate_type, predicate=doc.get("predicate"),
                         body=envelope.body, hint=hint)


def referrer_manifest(bundle: bytes, subject: dict[str, Any], predicate_type: str,
                      created: str | None) -> bytes:
    """The OCI image manifest (canonical JSON bytes) that attaches ``bundle`` to the image
    whose descriptor is ``subject`` (``mediaType``, ``digest``, ``size``).
    """
    digest = sha256_digest(bundle)
    annotations = {CONTENT_ANNOTATION: DSSE_CONTENT, PREDICATE_ANNOTATION: predicate_type}
    if created is not None:
        annotations[CREATED_ANNOTATION] = created
    return canonical_json({
        "schemaVersion": 2, "mediaType": MEDIA_MANIFEST, "artifactType": BUNDLE_MEDIA,
        "config": {"mediaType": MEDIA_EMPTY, "digest": EMPTY_DIGEST, "size": len(EMPTY_JSON)},
        "layers": [{"mediaType": BUNDLE_MEDIA, "digest": digest, "size": len(bundle),
                    "annotations": {TITLE_ANNOTATION: referrers_tag(digest) + ".sigstore.json"}}],
        "subject": subject, "annotations": annotations}, ascii_only=True)


def index_entry(manifest: bytes) -> dict[str, Any]:
    """The descriptor of a referrer ``manifest`` in a referrers index: media type, digest,
    size, its ``artifactType`` and its annotations (as a registry's referrers API gives them).
    """
    doc = load_json(manifest, SignatureError, label="the referrer manifest")
    entry: dict[str, Any] = {"mediaType": doc.get("mediaType", MEDIA_MANIFEST),
                             "digest": sha256_digest(manifest), "size": len(manifest),
                             "artifactType": doc.get("artifactType", BUNDLE_MEDIA)}
    if doc.get("annotations"):
        entry["annotations"] = doc["annotations"]
    return entry


def index_entries(raw: bytes, where: str) -> list[dict[str, Any]]:
    """The ``manifests`` of the referrers index bytes ``raw`` (``where`` names it in
    messages): a JSON object whose ``manifests``, when present, is a list of objects.
    Raises :class:`SignatureError` for anything else.
    """
    doc = load_json(raw, SignatureError, label=where, hint=HINT)
    if not isinstance(doc, dict):
        raise SignatureError(f"{where} is a JSON {type(doc).__name__}, not an index.", hint=HINT)
    manifests = doc.get("manifests", [])
    if not isinstance(manifests, list) or not all(isinstance(m, dict) for m in manifests):
        raise SignatureError(f"{where}: `manifests` is not a list of descriptors.", hint=HINT)
    return list(manifests)


def merged_index(existing: bytes | None, entry: dict[str, Any], where: str) -> bytes:
    """The referrers tag index with ``entry`` appended (once: an entry of the same digest is
    kept as it is): ``existing`` read, every entry and other field of it kept, or a new OCI
    index when ``existing`` is ``None``. Raises :class:`SignatureError` when ``existing`` is
    not an index (see :func:`index_entries`).
    """
    doc: dict[str, Any] = {"schemaVersion": 2, "mediaType": MEDIA_INDEX}
    manifests: list[dict[str, Any]] = []
    if existing is not None:
        manifests = index_entries(existing, where)
        doc = {**load_json(existing, SignatureError, label=where), "schemaVersion": 2,
               "mediaType": MEDIA_INDEX}
    if all(m.get("digest") != entry["digest"] for m in manifests):
        manifests.append(entry)
    doc["manifests"] = manifests
    return canonical_json(doc, ascii_only=True)


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
                             f"({_clip(type(exc).__name__ + ': ' + str(exc))})") from exc
    if sha256_digest(bytes(data)) != blob:
        raise SignatureError(f"the bundle {blob} of manifest {ref} came back with other bytes")
    if len(data) != size:
        raise SignatureError(f"bundle manifest {ref}: the bundle {blob} is {len(data)} "
                             f"bytes, not the {size} its descriptor says")
    return bytes(data)


def _clip(text: str, limit: int = REASON_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with ``... (N characters more)`` when cut."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} " \
        "characters more)"


def failure_summary(reasons: list[str]) -> str:
    """``reasons`` joined with ``; ``: at most :data:`MAX_REASONS` of them, each clipped to
    :data:`REASON_CHARS` characters, then ``and N more`` for the rest.
    """
    shown = "; ".join(_clip(r) for r in reasons[:MAX_REASONS])
    rest = len(reasons) - MAX_REASONS
    return shown if rest <= 0 else f"{shown}; and {rest} more"


@dataclass
class BundleCheck:
    """What :func:`verify_bundles` established: where bundles are listed (``source``), the
    predicate type and predicate of each bundle that verified, and how many bundles were
    left aside as another key's (their hint names another key).
    """

    source: str
    verified: list[tuple[str, Any]] = field(default_factory=list)
    other_keys: int = 0


def verify_bundles(registry: BundleRegistry, repo: str, digest: str,
                   key: ec.EllipticCurvePublicKey) -> BundleCheck:
    """Verify every Sigstore bundle listed for ``repo@digest`` that is ``key``'s.

    Bundles are found through the referrers API or the tag index (entries whose
    ``artifactType`` is not the bundle media type are not bundles and are skipped without
    a request; more than :data:`MAX_BUNDLES` bundles listed is refused before any is
    fetched, see :func:`bundle_entries`). A
    bundle whose key hint names another key is counted in ``other_keys`` and not checked
    further (the hint is unauthenticated: hiding a bundle this way is no more than deleting
    it). Every other listed bundle must be readable, attached to ``digest``, verify with
    ``key`` over the DSSE PAE, name ``digest`` as statement subject and have the predicate
    type its manifest annotation says. Raises :class:`SignatureError` (exit 9) when one does
    not, with the first :data:`MAX_REASONS` reasons and how many more
    (:func:`failure_summary`).
    """
    listing = list_referrers(registry, repo, digest)
    result = BundleCheck(source=listing.source(digest))
    mine = key_hint(key)
    reasons: list[str] = []
    for entry in bundle_entries(listing, digest):
        try:
            content = _check_entry(registry, repo, entry, digest, key, mine)
        except SignatureError as exc:
            reasons.append(exc.message)
            continue
        if content is None:
            result.other_keys += 1
        else:
            result.verified.append((content.predicate_type, content.predicate))
    if reasons:
        raise SignatureError(f"Sigstore bundle check failed for {digest} "
                             f"({result.source}): {failure_summary(reasons)}.", hint=HINT)
    return result


def _check_entry(registry: BundleRegistry, repo: str, entry: dict[str, Any], digest: str,
                 key: ec.EllipticCurvePublicKey, mine: str) -> BundleContent | None:
    """One listed bundle verified (``None`` when its hint names another key)."""
    ref, data, annotated = read_bundle(registry, repo, entry, digest)
    hint = _reason(lambda: bundle_hint(data), ref)
    if hint and hint != mine:
        return None
    content = _reason(lambda: open_bundle(key, data, digest), ref)
    if annotated is not None and annotated != content.predicate_type:
        raise SignatureError(f"bundle {ref}: the manifest says predicate type {annotated!r}, "
                             f"the signed statement {content.predicate_type!r}")
    return content


def _reason(check: Callable[[], T], ref: str) -> T:
    """Run ``check``; a :class:`SignatureError` it raises names the bundle manifest ``ref``."""
    try:
        return check()
    except SignatureError as exc:
        raise SignatureError(f"bundle {ref}: {exc.message}") from exc
