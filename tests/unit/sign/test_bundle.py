"""Sigstore bundles (v0.3) as OCI referrers: the bundle and manifest bytes, the referrers tag
index read-modify-write, attaching and verifying on a registry with and without the
referrers API, and every tamper case refused with its reason (exit 9)."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pinning.errors import SignatureError
from pinning.oci.documents import MEDIA_MANIFEST
from pinning.oci.registry import MEDIA_INDEX, Registry
from pinning.sign.bundle import (
    BUNDLE_MEDIA,
    EMPTY_DIGEST,
    SIGN_PREDICATE,
    index_entry,
    key_hint,
    make_bundle,
    merged_index,
    open_bundle,
    referrer_manifest,
    referrers_tag,
)
from pinning.sign.bundlecheck import MAX_REASONS, failure_summary, verify_bundles
from pinning.sign.cosign import LOCK_PREDICATE, STATEMENT_V1, statement
from pinning.sign.referrers import (
    MAX_BUNDLE_BYTES,
    MAX_BUNDLES,
    REASON_CHARS,
    attach_bundle,
    list_referrers,
)
from pinning.util.digests import canonical_json, sha256_digest
from tests.support.oci_registry import MemoryRegistry, Store, serve
from tests.unit.sign.images import image

REPO = "pin/trial"
NAME = "127.0.0.1:5000/pin/trial"
IN_TOTO = "application/vnd.in-toto+json"


def key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


KEY, OTHER = key(), key()


def test_the_oci_empty_descriptor_digest() -> None:
    # image-spec manifest.md, "Guidance for an Empty Descriptor": sha256 of the two bytes {}.
    assert EMPTY_DIGEST == \
        "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"


def test_key_hint_is_base64_sha256_of_the_der_spki() -> None:
    der = KEY.public_key().public_bytes(serialization.Encoding.DER,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    hint = key_hint(KEY.public_key())
    assert hint == base64.b64encode(hashlib.sha256(der).digest()).decode()
    assert len(hint) == 44 and hint != key_hint(OTHER.public_key())


def test_bundle_bytes_shape_and_signature_over_pae() -> None:
    digest = "sha256:" + "ab" * 32
    body = statement(digest, NAME, SIGN_PREDICATE, {})
    raw = make_bundle(KEY, body)
    doc = json.loads(raw)
    assert raw == canonical_json(doc, ascii_only=True)  # canonical bytes
    assert set(doc) == {"mediaType", "verificationMaterial", "dsseEnvelope"}
    assert doc["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json"
    assert doc["verificationMaterial"] == {"publicKey": {"hint": key_hint(KEY.public_key())},
                                           "tlogEntries": []}
    env = doc["dsseEnvelope"]
    assert set(env) == {"payload", "payloadType", "signatures"}
    assert env["payloadType"] == IN_TOTO
    payload = base64.b64decode(env["payload"])
    assert payload == body
    stmt = json.loads(payload)
    assert stmt == {"_type": STATEMENT_V1, "predicateType": SIGN_PREDICATE, "predicate": {},
                    "subject": [{"name": NAME, "digest": {"sha256": "ab" * 32}}]}
    assert [set(s) for s in env["signatures"]] == [{"sig"}]
    # The signature is ECDSA P-256 SHA-256 (DER) over the DSSE PAE, checked here by hand.
    pae = b"DSSEv1 %d %s %d %s" % (len(IN_TOTO), IN_TOTO.encode(), len(payload), payload)
    KEY.public_key().verify(base64.b64decode(env["signatures"][0]["sig"]), pae,
                            ec.ECDSA(hashes.SHA256()))
    opened = open_bundle(KEY.public_key(), raw, digest)
    assert (opened.predicate_type, opened.predicate, opened.body) == (SIGN_PREDICATE, {}, body)


def test_referrer_manifest_shape() -> None:
    bundle = make_bundle(KEY, statement("sha256:" + "cd" * 32, NAME, SIGN_PREDICATE, {}))
    subject = {"mediaType": MEDIA_MANIFEST, "digest": "sha256:" + "cd" * 32, "size": 321}
    raw = referrer_manifest(bundle, subject, SIGN_PREDICATE, "2023-11-14T22:13:20Z")
    doc = json.loads(raw)
    assert doc == {
        "schemaVersion": 2, "mediaType": MEDIA_MANIFEST, "artifactType": BUNDLE_MEDIA,
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": EMPTY_DIGEST,
                   "size": 2},
        "layers": [{"mediaType": BUNDLE_MEDIA, "digest": sha256_digest(bundle),
                    "size": len(bundle),
                    "annotations": {"org.opencontainers.image.title":
                                    sha256_digest(bundle).replace(":", "-") + ".sigstore.json"}}],
        "subject": subject,
        "annotations": {"dev.sigstore.bundle.content": "dsse-envelope",
                        "dev.sigstore.bundle.predicateType": SIGN_PREDICATE,
                        "org.opencontainers.image.created": "2023-11-14T22:13:20Z"}}
    assert "org.opencontainers.image.created" not in json.loads(
        referrer_manifest(bundle, subject, SIGN_PREDICATE, None))["annotations"]
    entry = index_entry(raw)
    assert entry == {"mediaType": MEDIA_MANIFEST, "digest": sha256_digest(raw),
                     "size": len(raw), "artifactType": BUNDLE_MEDIA,
                     "annotations": doc["annotations"]}


SBOM = {"mediaType": MEDIA_MANIFEST, "digest": "sha256:" + "11" * 32, "size": 5,
        "artifactType": "application/spdx+json", "annotations": {"x": "y"}}
NEW = {"mediaType": MEDIA_MANIFEST, "digest": "sha256:" + "22" * 32, "size": 7,
       "artifactType": BUNDLE_MEDIA}


def test_merged_index_new_append_keep_and_once() -> None:
    fresh = json.loads(merged_index(None, NEW, "r:t"))
    assert fresh == {"schemaVersion": 2, "mediaType": MEDIA_INDEX, "manifests": [NEW]}
    existing = canonical_json({"schemaVersion": 2, "mediaType": MEDIA_INDEX,
                               "annotations": {"kept": "yes"}, "manifests": [SBOM]})
    merged = merged_index(existing, NEW, "r:t")
    doc = json.loads(merged)
    assert doc["manifests"] == [SBOM, NEW] and doc["annotations"] == {"kept": "yes"}
    assert merged_index(merged, NEW, "r:t") == merged  # the same entry is listed once


@pytest.mark.parametrize("raw,reason", [
    (b"\xff{", ": not JSON"),
    (b"[1]", "is a JSON list, not an index"),
    (b'{"manifests":5}', "`manifests` is not a list of descriptors"),
    (b'{"manifests":[1]}', "`manifests` is not a list of descriptors"),
])
def test_merged_index_refuses_what_is_not_an_index(raw: bytes, reason: str) -> None:
    with pytest.raises(SignatureError, match=reason) as info:
        merged_index(raw, NEW, "pin/trial:sha256-x")
    assert info.value.exit_code == 9 and "pin/trial:sha256-x" in info.value.message


def _tag_index(reg: MemoryRegistry, digest: str) -> list[dict[str, Any]]:
    manifests: list[dict[str, Any]] = json.loads(
        reg.get_manifest(REPO, referrers_tag(digest)))["manifests"]
    return manifests


def test_attach_and_verify_through_the_tag_index() -> None:
    reg = MemoryRegistry()
    digest = image(reg.store, REPO)
    # Another artifact already listed under the tag is kept.
    reg.put_manifest(REPO, referrers_tag(digest),
                     canonical_json({"schemaVersion": 2, "mediaType": MEDIA_INDEX,
                                     "manifests": [SBOM]}), MEDIA_INDEX)
    first = attach_bundle(reg, REPO, digest, KEY, SIGN_PREDICATE, {}, name=NAME)
    entries = _tag_index(reg, digest)
    assert entries[0] == SBOM and entries[1]["digest"] == first
    assert entries[1]["artifactType"] == BUNDLE_MEDIA
    assert entries[1]["annotations"] == {
        "dev.sigstore.bundle.content": "dsse-envelope",
        "dev.sigstore.bundle.predicateType": SIGN_PREDICATE,
        "org.opencontainers.image.created": "2023-11-14T22:13:20Z"}
    manifest = json.loads(reg.get_manifest(REPO, first))
    assert manifest["subject"] == {"mediaType": MEDIA_MANIFEST, "digest": digest,
                                   "size": len(reg.get_manifest(REPO, digest))}
    assert reg.get_blob(REPO, EMPTY_DIGEST) == b"{}"
    # Signing the same statement again with the same key adds nothing.
    writes = len(reg.store.writes)
    assert attach_bundle(reg, REPO, digest, KEY, SIGN_PREDICATE, {}, name=NAME) == first
    assert len(reg.store.writes) == writes
    lock = attach_bundle(reg, REPO, digest, KEY, LOCK_PREDICATE, {"lockfile": {"sha256": "0"}},
                         name=NAME)
    assert [e["digest"] for e in _tag_index(reg, digest)] == [SBOM["digest"], first, lock]
    check = verify_bundles(reg, REPO, digest, KEY.public_key())
    assert check.source == f"tag {referrers_tag(digest)}" and check.other_keys == 0
    assert check.verified == [(SIGN_PREDICATE, {}), (LOCK_PREDICATE, {"lockfile": {"sha256": "0"}})]
    # Another key's bundle is left aside by a verifier holding the first key, and verifies
    # with its own.
    attach_bundle(reg, REPO, digest, OTHER, SIGN_PREDICATE, {}, name=NAME)
    assert verify_bundles(reg, REPO, digest, KEY.public_key()).other_keys == 1
    mine = verify_bundles(reg, REPO, digest, OTHER.public_key())
    assert mine.other_keys == 2 and mine.verified == [(SIGN_PREDICATE, {})]


def test_an_image_without_bundles_has_none_and_no_error() -> None:
    reg = MemoryRegistry()
    digest = image(reg.store, REPO)
    check = verify_bundles(reg, REPO, digest, KEY.public_key())
    assert check.verified == [] and check.other_keys == 0
    assert list_referrers(reg, REPO, digest).raw is None


def test_attach_and_verify_through_the_referrers_api() -> None:
    reg = MemoryRegistry(Store(referrers_api=True))
    digest = image(reg.store, REPO)
    first = attach_bundle(reg, REPO, digest, KEY, SIGN_PREDICATE, {}, name=NAME)
    assert reg.manifest_digest(REPO, referrers_tag(digest)) is None  # no tag index written
    listing = list_referrers(reg, REPO, digest)
    assert listing.api and [e["digest"] for e in listing.entries] == [first]
    check = verify_bundles(reg, REPO, digest, KEY.public_key())
    assert check.source == "referrers API" and check.verified == [(SIGN_PREDICATE, {})]
    assert attach_bundle(reg, REPO, digest, KEY, SIGN_PREDICATE, {}, name=NAME) == first


def test_created_annotation_is_left_out_when_the_image_has_no_created_time() -> None:
    reg = MemoryRegistry()
    digest = image(reg.store, REPO, created=None)
    ref = attach_bundle(reg, REPO, digest, KEY, SIGN_PREDICATE, {}, name=NAME)
    annotations = json.loads(reg.get_manifest(REPO, ref))["annotations"]
    assert "org.opencontainers.image.created" not in annotations


# ---- tampering: each must be exit 9 naming the reason ------------------------------------


def _signed() -> tuple[MemoryRegistry, str, str]:
    reg = MemoryRegistry()
    digest = image(reg.store, REPO)
    return reg, digest, attach_bundle(reg, REPO, digest, KEY, SIGN_PREDICATE, {}, name=NAME)


def _replace_bundle(reg: MemoryRegistry, digest: str, ref: str, bundle: bytes,
                    **manifest_changes: Any) -> str:
    """Point the tag index at a new referrer manifest holding ``bundle`` instead of ``ref``."""
    doc = json.loads(reg.get_manifest(REPO, ref))
    reg.put_blob(REPO, bundle)
    doc["layers"][0].update(digest=sha256_digest(bundle), size=len(bundle))
    doc.update(manifest_changes)
    return _swap_referrer(reg, digest, ref, doc)


def _refused(reg: MemoryRegistry, digest: str, reason: str,
             pub: ec.EllipticCurvePublicKey | None = None) -> None:
    with pytest.raises(SignatureError) as info:
        verify_bundles(reg, REPO, digest, pub or KEY.public_key())
    assert info.value.exit_code == 9
    assert f"Sigstore bundle check failed for {digest}" in info.value.message
    assert reason in info.value.message, info.value.message


def test_wrong_key_with_this_keys_hint() -> None:
    reg, digest, ref = _signed()
    forged = json.loads(make_bundle(OTHER, statement(digest, NAME, SIGN_PREDICATE, {})))
    forged["verificationMaterial"]["publicKey"]["hint"] = key_hint(KEY.public_key())
    _replace_bundle(reg, digest, ref, canonical_json(forged))
    _refused(reg, digest, "No signature of the DSSE envelope verifies with this key")


def test_edited_bundle_payload() -> None:
    reg, digest, ref = _signed()
    doc = json.loads(reg.get_blob(REPO, json.loads(reg.get_manifest(REPO, ref))
                                  ["layers"][0]["digest"]))
    body = json.loads(base64.b64decode(doc["dsseEnvelope"]["payload"]))
    body["predicate"] = {"edited": True}
    doc["dsseEnvelope"]["payload"] = base64.b64encode(canonical_json(body)).decode()
    new = _replace_bundle(reg, digest, ref, canonical_json(doc))
    _refused(reg, digest, f"bundle {new}: No signature of the DSSE envelope verifies")


def test_edited_signature_bytes() -> None:
    reg, digest, ref = _signed()
    doc = json.loads(reg.get_blob(REPO, json.loads(reg.get_manifest(REPO, ref))
                                  ["layers"][0]["digest"]))
    sig = bytearray(base64.b64decode(doc["dsseEnvelope"]["signatures"][0]["sig"]))
    sig[-1] ^= 0x01
    doc["dsseEnvelope"]["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    _replace_bundle(reg, digest, ref, canonical_json(doc))
    _refused(reg, digest, "No signature of the DSSE envelope verifies")


def test_bundle_of_another_image_listed_for_this_one() -> None:
    reg, digest, ref = _signed()
    other = image(reg.store, REPO, label="other")
    # The referrer manifest (subject: the first image) copied into the other's index.
    index = reg.get_manifest(REPO, referrers_tag(digest))
    reg.put_manifest(REPO, referrers_tag(other), index, MEDIA_INDEX)
    _refused(reg, other, f"bundle manifest {ref} is attached to {digest}, not {other}")


def test_bundle_statement_about_another_image_with_a_rewritten_subject() -> None:
    reg, digest, ref = _signed()
    other = image(reg.store, REPO, label="other")
    doc = json.loads(reg.get_manifest(REPO, ref))
    doc["subject"]["digest"] = other
    raw = canonical_json(doc)
    reg.put_manifest(REPO, sha256_digest(raw), raw)
    reg.put_manifest(REPO, referrers_tag(other), merged_index(None, index_entry(raw), "x"),
                     MEDIA_INDEX)
    _refused(reg, other, f"the bundle's statement is about {digest}, not {other}")


def test_index_pointing_at_a_missing_manifest() -> None:
    reg, digest, ref = _signed()
    del reg.store.manifests[(REPO, ref)]
    _refused(reg, digest, f"the index lists manifest {ref}, which cannot be read")


def test_index_entry_without_a_digest() -> None:
    reg, digest, _ref = _signed()
    index = merged_index(reg.get_manifest(REPO, referrers_tag(digest)),
                         {"mediaType": MEDIA_MANIFEST, "digest": "../etc", "size": 1,
                          "artifactType": BUNDLE_MEDIA}, "x")
    reg.put_manifest(REPO, referrers_tag(digest), index, MEDIA_INDEX)
    _refused(reg, digest, "an index entry has no digest of the form sha256:<64 hex>")


def test_predicate_annotation_that_disagrees_with_the_signed_statement() -> None:
    reg, digest, ref = _signed()
    doc = json.loads(reg.get_manifest(REPO, ref))
    bundle = reg.get_blob(REPO, doc["layers"][0]["digest"])
    annotations = {**doc["annotations"], "dev.sigstore.bundle.predicateType": LOCK_PREDICATE}
    _replace_bundle(reg, digest, ref, bundle, annotations=annotations)
    _refused(reg, digest, f"the manifest says predicate type {LOCK_PREDICATE!r}")


@pytest.mark.parametrize("change,reason", [
    (lambda d: d.update(mediaType="application/vnd.dev.sigstore.bundle+json;version=0.1"),
     "the bundle's mediaType is"),
    (lambda d: d["verificationMaterial"].pop("publicKey")
     and d["verificationMaterial"].update(certificate={"rawBytes": "AA=="}),
     "pin verifies keyed bundles only"),
    (lambda d: d.pop("dsseEnvelope"), "the bundle's dsseEnvelope is a NoneType"),
    (lambda d: d["dsseEnvelope"].update(payloadType="application/json"),
     "No signature of the DSSE envelope verifies"),  # the PAE covers the type
])
def test_malformed_bundles(change: Any, reason: str) -> None:
    reg, digest, ref = _signed()
    doc = json.loads(reg.get_blob(REPO, json.loads(reg.get_manifest(REPO, ref))
                                  ["layers"][0]["digest"]))
    change(doc)
    _replace_bundle(reg, digest, ref, canonical_json(doc))
    _refused(reg, digest, reason)


def test_bundle_blob_that_is_not_json() -> None:
    reg, digest, ref = _signed()
    _replace_bundle(reg, digest, ref, b"\x00not json")
    _refused(reg, digest, "the bundle: not JSON")


def test_a_statement_of_another_payload_type_is_refused() -> None:
    reg, digest, ref = _signed()
    body = statement(digest, NAME, SIGN_PREDICATE, {})
    doc = json.loads(make_bundle(KEY, body))
    from pinning.sign.crypto import pae, sign

    doc["dsseEnvelope"]["payloadType"] = "application/json"
    doc["dsseEnvelope"]["signatures"] = [{"sig": sign(KEY, pae("application/json", body))}]
    _replace_bundle(reg, digest, ref, canonical_json(doc))
    _refused(reg, digest, "the bundle's payload type is 'application/json'")


def test_a_corrupt_tag_index_stops_attaching_before_any_write() -> None:
    reg = MemoryRegistry()
    digest = image(reg.store, REPO)
    reg.put_manifest(REPO, referrers_tag(digest), b"[1,2]", MEDIA_INDEX)
    writes = list(reg.store.writes)
    with pytest.raises(SignatureError, match="is a JSON list, not an index"):
        attach_bundle(reg, REPO, digest, KEY, SIGN_PREDICATE, {}, name=NAME)
    assert reg.store.writes == writes


# ---- bounds: what a registry's listing makes pin fetch -------------------------------------


def _missing(i: int, artifact_type: str = BUNDLE_MEDIA) -> dict[str, Any]:
    """An index entry naming a manifest the registry does not hold."""
    return {"mediaType": MEDIA_MANIFEST, "artifactType": artifact_type, "size": 100,
            "digest": sha256_digest(f"missing {i}".encode())}


def _list(reg: MemoryRegistry, digest: str, *entries: dict[str, Any]) -> None:
    """Add ``entries`` to the tag index of ``digest``."""
    tag = referrers_tag(digest)
    raw = reg.get_manifest(REPO, tag) if reg.manifest_digest(REPO, tag) else None
    reg.put_manifest(REPO, tag, merged_index(raw, entries[0], tag), MEDIA_INDEX)
    doc: dict[str, Any] = json.loads(reg.get_manifest(REPO, tag))
    doc["manifests"] += list(entries[1:])
    reg.put_manifest(REPO, tag, canonical_json(doc), MEDIA_INDEX)


def _fetched(reg: MemoryRegistry, digest: str) -> list[str]:
    """The reads other than the tag index and the image itself."""
    skip = {f"manifest {REPO}:{referrers_tag(digest)}", f"manifest {REPO}:{digest}"}
    return [r for r in reg.store.reads if r not in skip and EMPTY_DIGEST not in r]


def test_other_tools_referrers_are_not_fetched() -> None:
    reg, digest, ref = _signed()
    _list(reg, digest, *(_missing(i, "application/spdx+json") for i in range(MAX_BUNDLES * 5)))
    reg.store.reads.clear()
    check = verify_bundles(reg, REPO, digest, KEY.public_key())
    assert check.verified == [(SIGN_PREDICATE, {})]
    fetched = _fetched(reg, digest)
    assert len(fetched) == 2 and fetched[0] == f"manifest {REPO}:{ref}", fetched
    reg.store.reads.clear()
    assert attach_bundle(reg, REPO, digest, KEY, SIGN_PREDICATE, {}, name=NAME) == ref
    assert len(_fetched(reg, digest)) == 2


def test_more_bundles_than_the_cap_are_refused_before_any_is_fetched() -> None:
    reg, digest, _ref = _signed()
    _list(reg, digest, *(_missing(i) for i in range(MAX_BUNDLES)))  # 1 + MAX_BUNDLES listed
    reg.store.reads.clear()
    with pytest.raises(SignatureError) as info:
        verify_bundles(reg, REPO, digest, KEY.public_key())
    assert info.value.exit_code == 9
    assert f"{MAX_BUNDLES + 1} Sigstore bundles are listed for {digest}" in info.value.message
    assert f"more than the {MAX_BUNDLES} pin examines" in info.value.message
    assert _fetched(reg, digest) == []
    # Signing refuses the same listing before writing anything.
    writes = list(reg.store.writes)
    with pytest.raises(SignatureError, match=f"more than the {MAX_BUNDLES} pin examines"):
        attach_bundle(reg, REPO, digest, KEY, LOCK_PREDICATE, {}, name=NAME)
    assert reg.store.writes == writes and _fetched(reg, digest) == []


def test_at_the_cap_every_bundle_is_examined_and_the_message_is_bounded() -> None:
    reg, digest, _ref = _signed()
    _list(reg, digest, *(_missing(i) for i in range(MAX_BUNDLES - 1)))  # MAX_BUNDLES listed
    reg.store.reads.clear()
    with pytest.raises(SignatureError) as info:
        verify_bundles(reg, REPO, digest, KEY.public_key())
    message = info.value.message
    assert message.count("which cannot be read") == MAX_REASONS
    assert f"and {MAX_BUNDLES - 1 - MAX_REASONS} more." in message
    assert len(message) < (MAX_REASONS + 1) * (REASON_CHARS + 40)
    # Every listed manifest was asked for once (none skipped), the good one's blob too.
    manifests = [r for r in _fetched(reg, digest) if r.startswith("manifest")]
    assert len(manifests) == len(set(manifests)) == MAX_BUNDLES


def test_the_reviewers_thousand_missing_referrers_cost_one_listing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    reg = MemoryRegistry(Store(referrers_api=True))
    digest = image(reg.store, REPO)
    index = canonical_json({"schemaVersion": 2, "mediaType": MEDIA_INDEX,
                            "manifests": [_missing(i) for i in range(1000)]})
    monkeypatch.setattr(reg, "referrers", lambda repo, d: index)
    with pytest.raises(SignatureError) as info:
        verify_bundles(reg, REPO, digest, KEY.public_key())
    assert "1000 Sigstore bundles are listed" in info.value.message
    assert len(info.value.message) < 1000 and reg.store.reads == []


def test_failure_summary_shows_five_reasons_clipped_and_counts_the_rest() -> None:
    assert failure_summary(["a", "b"]) == "a; b"
    reasons = [f"r{i}" for i in range(MAX_REASONS)]
    assert failure_summary(reasons) == "; ".join(reasons)
    assert failure_summary([*reasons, "x", "y"]) == "; ".join(reasons) + "; and 2 more"
    long = failure_summary(["z" * (REASON_CHARS + 50)])
    assert long == "z" * REASON_CHARS + "... (50 characters more)"


def _layer_changed(reg: MemoryRegistry, digest: str, ref: str, layer: dict[str, Any],
                   blob: bytes | None = None) -> str:
    """Point the tag index at a copy of referrer ``ref`` whose bundle layer is changed
    (``blob`` stored under the layer's digest as it is, unchecked)."""
    doc = json.loads(reg.get_manifest(REPO, ref))
    doc["layers"][0].update(layer)
    if blob is not None:
        reg.store.blobs[(REPO, doc["layers"][0]["digest"])] = blob
    return _swap_referrer(reg, digest, ref, doc)


def _blob_reads(reg: MemoryRegistry) -> list[str]:
    return [r for r in reg.store.reads if r.startswith("blob") and EMPTY_DIGEST not in r]


def test_a_bundle_layer_larger_than_the_cap_is_refused_before_it_is_fetched() -> None:
    reg, digest, ref = _signed()
    new = _layer_changed(reg, digest, ref, {"size": MAX_BUNDLE_BYTES + 1})
    reg.store.reads.clear()
    _refused(reg, digest, f"bundle manifest {new}: the bundle sha256:")
    _refused(reg, digest, f"is {MAX_BUNDLE_BYTES + 1} bytes, more than the {MAX_BUNDLE_BYTES}")
    assert _blob_reads(reg) == [] and reg.store.streamed == 0


def test_a_blob_larger_than_its_descriptor_says_is_cut_off_at_the_cap() -> None:
    reg, digest, ref = _signed()
    huge = b"x" * (4 * MAX_BUNDLE_BYTES)
    _layer_changed(reg, digest, ref, {"digest": sha256_digest(b"small"), "size": 5}, huge)
    _refused(reg, digest, f"the registry sent more than {MAX_BUNDLE_BYTES} bytes")
    assert MAX_BUNDLE_BYTES < reg.store.streamed <= MAX_BUNDLE_BYTES + 64 * 1024


@pytest.mark.parametrize("layer,blob,reason", [
    ({"size": 3}, None, "bytes, not the 3 its descriptor says"),
    ({"size": "700"}, None, "the bundle layer's size '700' is not a whole number"),
    ({"size": True}, None, "the bundle layer's size 'True' is not a whole number"),
    ({"size": -1}, None, "the bundle layer's size '-1' is not a whole number"),
    ({"digest": "sha256:../../etc"}, None, "the bundle layer has no digest of the form"),
    ({}, b"other bytes", "came back with other bytes"),
])
def test_bundle_layer_descriptor_and_bytes_are_checked(layer: dict[str, Any],
                                                        blob: bytes | None,
                                                        reason: str) -> None:
    reg, digest, ref = _signed()
    _layer_changed(reg, digest, ref, layer, blob)
    _refused(reg, digest, reason)


def test_attach_refuses_a_bundle_larger_than_it_reads_back_before_writing() -> None:
    reg = MemoryRegistry()
    digest = image(reg.store, REPO)
    writes = list(reg.store.writes)
    with pytest.raises(SignatureError, match="more than the 4194304 pin reads back") as info:
        attach_bundle(reg, REPO, digest, KEY, LOCK_PREDICATE,
                      {"lockfile": {"content": "x" * MAX_BUNDLE_BYTES}}, name=NAME)
    assert info.value.exit_code == 9 and reg.store.writes == writes


def test_over_http_a_lying_blob_is_read_only_to_the_cap() -> None:
    store = Store(referrers_api=True)
    reg = MemoryRegistry(store)
    digest = image(store, REPO)
    ref = attach_bundle(reg, REPO, digest, KEY, SIGN_PREDICATE, {}, name=NAME)
    blob = (REPO, json.loads(reg.get_manifest(REPO, ref))["layers"][0]["digest"])
    good = store.blobs[blob]
    with serve(store) as host, Registry(host) as http:
        # A good bundle verifies through the real client's streamed read ...
        check = verify_bundles(http, REPO, digest, KEY.public_key())
        assert check.verified == [(SIGN_PREDICATE, {})]
        # ... and 8 times the cap behind the same descriptor is refused at the cap.
        store.blobs[blob] = good + b" " * (8 * MAX_BUNDLE_BYTES)
        with pytest.raises(SignatureError, match="the registry sent more than") as info:
            verify_bundles(http, REPO, digest, KEY.public_key())
    assert info.value.exit_code == 9 and "referrers API" in info.value.message


def _swap_referrer(reg: Any, digest: str, ref: str, doc: dict[str, Any]) -> str:
    """Push ``doc`` as a manifest and put it in the tag index of ``digest`` in place of the
    referrer ``ref``; its digest."""
    raw = canonical_json(doc)
    new = reg.put_manifest(REPO, sha256_digest(raw), raw)
    index = json.loads(reg.get_manifest(REPO, referrers_tag(digest)))
    index["manifests"] = [index_entry(raw) if e["digest"] == ref else e
                          for e in index["manifests"]]
    reg.put_manifest(REPO, referrers_tag(digest), canonical_json(index), MEDIA_INDEX)
    return str(new)
