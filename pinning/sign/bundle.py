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

Storage, done by :mod:`pinning.sign.referrers`
(``sigstore/cosign@109caea3d1ba1a14a22f36c7509764a8fb04d7a4:specs/BUNDLE_SPEC.md``,
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

pin keeps its own code for these layouts because it signs and verifies exact bytes, never a
re-serialisation of them.

Nothing here prints or touches a registry; errors are :class:`~pinning.errors.SignatureError`
(exit 9) for a bundle, manifest or index that is not what it must be.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pinning.errors import SignatureError
from pinning.oci.documents import MEDIA_MANIFEST
from pinning.oci.registry import MEDIA_INDEX
from pinning.sign.cosign import STATEMENT_V1
from pinning.sign.crypto import IN_TOTO, open_envelope, pae, sign
from pinning.util.digests import canonical_json, sha256_digest, sha256_hex
from pinning.util.jsonread import load_json

BUNDLE_MEDIA = "application/vnd.dev.sigstore.bundle.v0.3+json"
SIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1"
MEDIA_EMPTY = "application/vnd.oci.empty.v1+json"
EMPTY_JSON = b"{}"
EMPTY_DIGEST = sha256_digest(EMPTY_JSON)  # sha256:44136fa3...caaff8a, the OCI empty descriptor
CONTENT_ANNOTATION = "dev.sigstore.bundle.content"
PREDICATE_ANNOTATION = "dev.sigstore.bundle.predicateType"
CREATED_ANNOTATION = "org.opencontainers.image.created"
TITLE_ANNOTATION = "org.opencontainers.image.title"
DSSE_CONTENT = "dsse-envelope"
HINT = "Delete the tag (or referrer) in the registry and sign the image again."


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


