"""Signatures and attestations in cosign's tag layout.

For an image with manifest digest ``sha256:<hex>`` in ``repo``: the ``sha256-<hex>.sig``
manifest holds one layer per simple-signing payload with its base64 signature in the
``dev.cosignproject.cosign/signature`` annotation; ``sha256-<hex>.att`` holds one DSSE
envelope per in-toto statement. Adding one is read-modify-write: existing layers are kept.
Verification works on the exact bytes fetched (:mod:`pinning.sign.crypto`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cryptography.hazmat.primitives.asymmetric import ec

from pinning import __version__
from pinning.errors import BuildError, SignatureError
from pinning.oci.documents import MEDIA_CONFIG, MEDIA_MANIFEST
from pinning.oci.reference import ImageRef, parse_pinned
from pinning.oci.registry import Registry
from pinning.sign.crypto import IN_TOTO, dsse_envelope, open_envelope, sign, verify
from pinning.util.digests import canonical_json, sha256_digest, sha256_hex
from pinning.util.jsonread import load_json

SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
DSSE_MEDIA = "application/vnd.dsse.envelope.v1+json"
SIG_ANNOTATION = "dev.cosignproject.cosign/signature"
COSIGN_TYPE = "cosign container image signature"
STATEMENT_V1 = "https://in-toto.io/Statement/v1"
LOCK_PREDICATE = "https://pin.dev/attestation/lockfile/v1"
SLSA_PREDICATE = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "https://pin.dev/build/v1"
BUILDER_ID = "https://pin.dev/builder"


T = TypeVar("T")

def sig_tag(digest: str, suffix: str) -> str:
    """``sha256:<hex>`` -> ``sha256-<hex>.sig`` (or ``.att``)."""
    return digest.replace(":", "-") + suffix


def payload_bytes(reference: str, digest: str, optional: dict[str, Any] | None = None) -> bytes:
    """The simple-signing payload, serialised once (these exact bytes are signed and stored).

    ``reference`` is the repository without tag or digest (``127.0.0.1:5000/pin/trial``).
    """
    doc = {"critical": {"identity": {"docker-reference": reference},
                        "image": {"docker-manifest-digest": digest},
                        "type": COSIGN_TYPE},
           "optional": optional or None}
    return canonical_json(doc, ascii_only=True)


def _config(payloads: list[bytes]) -> bytes:
    """A fixed minimal OCI config for a signature manifest (cosign never reads it)."""
    return canonical_json({"architecture": "", "os": "", "config": {},
                           "rootfs": {"type": "layers",
                                      "diff_ids": [sha256_digest(p) for p in payloads]}})


def _existing_layers(registry: Registry, repo: str, tag: str) -> list[dict[str, Any]]:
    """The layers of the manifest at ``repo:tag`` (``[]`` when the tag is absent), each
    checked by :func:`manifest_layers`. Raises :class:`SignatureError` (exit 9) for a
    manifest of another shape, :class:`BuildError` (exit 8) when the registry fails.
    """
    if registry.manifest_digest(repo, tag) is None:
        return []
    return manifest_layers(registry.get_manifest(repo, tag), f"{repo}:{tag}")


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def manifest_layers(raw: bytes, where: str) -> list[dict[str, Any]]:
    """The ``layers`` of the signature (``.sig``) or attestation (``.att``) manifest bytes
    ``raw``: a list of objects, each with a string ``mediaType``, a ``sha256:<64 hex>``
    ``digest``, a non-negative integer ``size`` when given, and ``annotations``, when given,
    an object of strings. A manifest without ``layers`` has none.

    ``where`` (``repo:tag``) names the manifest in messages. Raises :class:`SignatureError`
    (exit 9) with the reason for bytes that are not such a JSON object (not JSON, nested
    too deeply, ``layers: 5``, a layer that is not an object, ...).
    """
    def bad(reason: str) -> SignatureError:
        return SignatureError(f"{where} is not a valid signature manifest: {reason}.",
                              hint="Delete the tag in the registry and sign the image again.")

    doc = load_json(raw, SignatureError, label=f"{where} is not a valid signature manifest",
                    hint="Delete the tag in the registry and sign the image again.")
    if not isinstance(doc, dict):
        raise bad(f"the manifest is a JSON {type(doc).__name__}, not an object")
    layers = doc.get("layers", [])
    if not isinstance(layers, list):
        raise bad(f"`layers` is a {type(layers).__name__}, not a list")
    for i, layer in enumerate(layers):
        reason = _layer_problem(layer)
        if reason:
            raise bad(f"layers[{i}] {reason}")
    return list(layers)


def _layer_problem(layer: object) -> str | None:
    """Why ``layer`` is not a well-formed descriptor of a signature manifest, or ``None``."""
    if not isinstance(layer, dict):
        return f"is a {type(layer).__name__}, not an object"
    if not isinstance(layer.get("mediaType"), str):
        return "has no string `mediaType`"
    digest = layer.get("digest")
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        return "has no `digest` of the form sha256:<64 hex>"
    size = layer.get("size", 0)
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return "has a `size` that is not a non-negative integer"
    annotations = layer.get("annotations", {})
    if not isinstance(annotations, dict) or not all(
            isinstance(v, str) for v in annotations.values()):
        return "has `annotations` that are not an object of strings"
    return None


def _append(registry: Registry, repo: str, tag: str, blob: bytes, layer: dict[str, Any]) -> str:
    """Upload ``blob`` and put the manifest at ``tag`` with ``layer`` appended (kept once)."""
    layers = _existing_layers(registry, repo, tag)
    if layer not in layers:
        layers.append(layer)
    registry.put_blob(repo, blob)
    payloads = [registry.get_blob(repo, str(x["digest"])) for x in layers]
    config = _config(payloads)
    registry.put_blob(repo, config)
    manifest = canonical_json({"schemaVersion": 2, "mediaType": MEDIA_MANIFEST,
                               "config": {"mediaType": MEDIA_CONFIG,
                                          "digest": sha256_digest(config), "size": len(config)},
                               "layers": layers})
    return registry.put_manifest(repo, tag, manifest)


def sign_image(registry: Registry, repo: str, digest: str, key: ec.EllipticCurvePrivateKey,
               *, reference: str | None = None, optional: dict[str, Any] | None = None) -> str:
    """Add a cosign signature of ``repo@digest`` naming ``reference`` (the repository as
    users pull it, default ``registry.host/repo``); return the ``.sig`` manifest digest. A
    signature of the same payload by the same key is not added twice.
    """
    payload = payload_bytes(reference or f"{registry.host}/{repo}", digest, optional)
    tag = sig_tag(digest, ".sig")
    pub = key.public_key()
    for old in _existing_layers(registry, repo, tag):
        if old.get("digest") == sha256_digest(payload):
            try:
                verify(pub, payload, str(old.get("annotations", {}).get(SIG_ANNOTATION, "")),
                       "image", urlsafe=False)
                return str(registry.manifest_digest(repo, tag))
            except SignatureError:
                continue
    layer = {"mediaType": SIMPLE_SIGNING, "digest": sha256_digest(payload),
             "size": len(payload), "annotations": {SIG_ANNOTATION: sign(key, payload)}}
    return _append(registry, repo, tag, payload, layer)


def statement(digest: str, name: str, predicate_type: str, predicate: dict[str, Any]) -> bytes:
    """An in-toto Statement v1 about the image manifest ``digest``."""
    doc = {"_type": STATEMENT_V1,
           "subject": [{"name": name, "digest": {"sha256": digest.split(":", 1)[1]}}],
           "predicateType": predicate_type, "predicate": predicate}
    return canonical_json(doc, ascii_only=True)


def lock_predicate(lock_bytes: bytes, lock_name: str) -> dict[str, Any]:
    """The lockfile predicate: sha256 of the lock's exact bytes, and its text."""
    return {"lockfile": {"name": lock_name, "sha256": sha256_hex(lock_bytes),
                         "content": lock_bytes.decode("utf-8", errors="replace")}}


def provenance_predicate(lock_bytes: bytes, lock_name: str, base_ref: str | None,
                         wheels: list[dict[str, str]]) -> dict[str, Any]:
    """SLSA Provenance v1 for a pin build: the lock as external parameter, the base image
    and wheels as resolved dependencies, pin as the builder.

    ``base_ref`` is the base image reference (``HOST/REPO[:TAG]@sha256:<hex>``); it is listed
    only when it parses (:mod:`pinning.oci.reference`) and names a digest. ``wheels`` are
    the lock's wheel records (``filename``, ``sha256`` hex).
    """
    deps: list[dict[str, Any]] = []
    base = _pinned_or_none(base_ref)
    if base is not None:
        deps.append({"uri": f"oci://{base.without_digest()}",
                     "digest": {"sha256": base.required_digest.removeprefix("sha256:")}})
    deps += [{"name": w["filename"], "digest": {"sha256": w["sha256"]}} for w in wheels]
    lock_digest = {"sha256": sha256_hex(lock_bytes)}
    return {"buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {"lockfile": {"uri": lock_name, "digest": lock_digest}},
                "resolvedDependencies": deps},
            "runDetails": {"builder": {"id": BUILDER_ID, "version": {"pin": __version__}}}}


def _pinned_or_none(text: str | None) -> ImageRef | None:
    """``text`` parsed as an image reference with a digest, or ``None``."""
    if not text:
        return None
    try:
        return parse_pinned(text)
    except BuildError:
        return None


def attest_image(registry: Registry, repo: str, digest: str, key: ec.EllipticCurvePrivateKey,
                 predicate_type: str, predicate: dict[str, Any],
                 *, reference: str | None = None) -> str:
    """Add a DSSE-signed in-toto statement about ``repo@digest`` under the ``.att`` tag (not
    again when the same statement is already there, signed by this key).
    """
    body = statement(digest, reference or f"{registry.host}/{repo}", predicate_type, predicate)
    tag = sig_tag(digest, ".att")
    for old in _existing_layers(registry, repo, tag):
        try:
            if open_envelope(key.public_key(),
                             registry.get_blob(repo, str(old["digest"]))).body == body:
                return str(registry.manifest_digest(repo, tag))
        except (SignatureError, BuildError, KeyError, TypeError):
            continue
    envelope = dsse_envelope(key, IN_TOTO, body)
    layer = {"mediaType": DSSE_MEDIA, "digest": sha256_digest(envelope), "size": len(envelope),
             "annotations": {"predicateType": predicate_type}}
    return _append(registry, repo, tag, envelope, layer)


def parse_payload(payload: bytes, reference: str) -> str:
    """Check a simple-signing payload the way containers/image does (exact key sets, no
    duplicate keys, ``optional`` null or an object, the cosign type.10) and that
    it names ``reference``; return the signed digest. Raises :class:`SignatureError`.
    """

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise SignatureError("the signed payload repeats a key")
        return dict(pairs)

    doc = load_json(payload, SignatureError, label="the signed payload",
                    object_pairs_hook=no_duplicates)

    def exact(obj: Any, keys: set[str], where: str) -> dict[str, Any]:
        if not isinstance(obj, dict) or set(obj) != keys:
            got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
            raise SignatureError(f"the signed payload's {where} must have exactly "
                                 f"{sorted(keys)}, it has {got}")
        return obj

    top = exact(doc, {"critical", "optional"}, "top level")
    critical = exact(top["critical"], {"identity", "image", "type"}, "critical")
    image = exact(critical["image"], {"docker-manifest-digest"}, "critical.image")
    identity = exact(critical["identity"], {"docker-reference"}, "critical.identity")
    if top["optional"] is not None and not isinstance(top["optional"], dict):
        raise SignatureError("the signed payload's optional must be null or an object")
    if critical["type"] != COSIGN_TYPE:
        raise SignatureError(f"payload type {critical['type']!r} is not {COSIGN_TYPE!r}")
    if identity["docker-reference"] != reference:
        raise SignatureError(f"the signature names {identity['docker-reference']!r}, not "
                             f"{reference!r}")
    return str(image["docker-manifest-digest"])


@dataclass
class ImageVerification:
    """What ``verify_image`` established: the digest, valid signatures and attestations (the
    legacy ``.sig`` / ``.att`` layout), and, filled in by
    :func:`pinning.sign.policy.verify_signed_image`, the Sigstore bundles that verified:
    ``bundles`` their number, ``bundle_attestations`` their predicates by predicate type,
    ``bundle_source`` where they are listed (``referrers API`` or ``tag sha256-<hex>``).
    """

    digest: str
    signatures: int = 0
    attestations: dict[str, list[Any]] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)
    bundles: int = 0
    bundle_attestations: dict[str, list[Any]] = field(default_factory=dict)
    bundle_source: str | None = None


def _layers(registry: Registry, repo: str, tag: str, what: str) -> list[dict[str, Any]]:
    try:
        layers = _existing_layers(registry, repo, tag)
    except BuildError as exc:
        raise SignatureError(f"Cannot read the {what}: {exc.message}") from exc
    if not layers:
        raise SignatureError(f"No {what} for this digest ({repo}:{tag} is absent).",
                             hint="Sign the image (pin sign / pin build --sign).")
    return layers


def verify_image(registry: Registry, repo: str, digest: str, key: ec.EllipticCurvePublicKey,
                 *, need_attestations: bool = False,
                 reference: str | None = None) -> ImageVerification:
    """Verify the cosign signatures (and attestations) of ``repo@digest`` with ``key``.

    At least one signature must verify over the payload bytes fetched, with the cosign type
    and ``docker-manifest-digest`` equal to ``digest``. Attestations must verify as DSSE,
    be in-toto statements and name ``digest`` as a subject. Raises :class:`SignatureError`
    (exit 9) with the first precise reason when nothing valid is found.
    """
    result = ImageVerification(digest=digest)
    signer = reference or f"{registry.host}/{repo}"

    signed, reasons = _each_layer(
        _layers(registry, repo, sig_tag(digest, ".sig"), "signature"),
        lambda layer: _check_signature(registry, repo, layer, key, digest, signer), "signature")
    result.signatures = len(signed)
    if not result.signatures:
        raise SignatureError("No valid signature for " + digest + ": " + "; ".join(reasons))
    result.checks.append(f"{result.signatures} signature(s) verify and sign {digest}")
    if not need_attestations:
        return result

    attested, att_reasons = _each_layer(
        _layers(registry, repo, sig_tag(digest, ".att"), "attestation"),
        lambda layer: _check_attestation(registry, repo, layer, key, digest), "attestation")
    for predicate_type, predicate in attested:
        result.attestations.setdefault(predicate_type, []).append(predicate)
    if not result.attestations:
        raise SignatureError("No valid attestation for " + digest + ": " + "; ".join(att_reasons))
    result.checks.append(f"attestations verify: {', '.join(sorted(result.attestations))}")
    return result


def _each_layer(layers: list[dict[str, Any]], check: Callable[[dict[str, Any]], T], what: str
                ) -> tuple[list[T], list[str]]:
    """Run ``check`` on every layer: the results of those that pass, and for the others the
    reason (a :class:`SignatureError`'s message, or why the layer could not be read).
    """
    passed: list[T] = []
    reasons: list[str] = []
    for layer in layers:
        try:
            passed.append(check(layer))
        except SignatureError as exc:
            reasons.append(exc.message)
        except (BuildError, ValueError, KeyError, TypeError, AttributeError) as exc:
            reasons.append(f"unreadable {what} ({type(exc).__name__}: {exc})")
    return passed, reasons


def _check_signature(registry: Registry, repo: str, layer: dict[str, Any],
                     key: ec.EllipticCurvePublicKey, digest: str, signer: str) -> None:
    """One signature layer must be a simple-signing payload whose signature verifies with
    ``key`` and that signs ``digest`` for ``signer``; raises :class:`SignatureError` if not.
    """
    if layer.get("mediaType") != SIMPLE_SIGNING:
        raise SignatureError(f"signature layer of media type {layer.get('mediaType')}")
    payload = registry.get_blob(repo, str(layer["digest"]))
    sig = str(layer.get("annotations", {}).get(SIG_ANNOTATION, ""))
    if not sig:
        raise SignatureError("a signature layer without its signature annotation")
    verify(key, payload, sig, "image", urlsafe=False)
    signed = parse_payload(payload, signer)
    if signed != digest:
        raise SignatureError(f"the signature is for {signed}, the image is {digest}")


def _check_attestation(registry: Registry, repo: str, layer: dict[str, Any],
                       key: ec.EllipticCurvePublicKey, digest: str) -> tuple[str, Any]:
    """One attestation layer must be a DSSE envelope verifying with ``key`` holding an
    in-toto statement about ``digest``; returns its predicate type and predicate, raises
    :class:`SignatureError` if not.
    """
    envelope = open_envelope(key, registry.get_blob(repo, str(layer["digest"])))
    if envelope.payload_type != IN_TOTO:
        raise SignatureError(f"attestation payload type {envelope.payload_type!r}")
    doc = envelope.json()
    if doc.get("_type") not in (STATEMENT_V1, "https://in-toto.io/Statement/v0.1"):
        raise SignatureError(f"the attestation is not an in-toto statement "
                             f"({doc.get('_type')!r})")
    subjects = [s.get("digest", {}).get("sha256") for s in doc.get("subject", [])]
    if digest.split(":", 1)[1] not in subjects:
        raise SignatureError(f"the attestation's subject is not {digest}")
    return str(doc.get("predicateType")), doc.get("predicate") or {}
