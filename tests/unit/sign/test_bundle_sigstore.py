"""pin's Sigstore bundles read and verified by an independent implementation: the
``sigstore`` package (sigstore-python) and its models (``sigstore-models``).

sigstore-python 4.5.1 verifies bundles only against Fulcio certificates and a transparency
log; it has no verification with a bare public key (sigstore/sigstore-python#1244, open when
read 2026-12-01), and ``sigstore.models.Bundle.from_json`` refuses a bundle without a
certificate ("expected certificate in bundle", ``sigstore/models.py``). So this test parses
the bundle with ``sigstore_models.bundle.v1.Bundle`` (the pydantic models of the
protobuf-specs that sigstore-python uses: strict types, unknown fields refused, the
``verificationMaterial`` and content one-ofs checked) and verifies its DSSE envelope with
sigstore-python's own DSSE code (``sigstore.dsse.Envelope`` and ``sigstore.dsse._verify``:
its PAE, ECDSA P-256 SHA-256; a private function, so pinned to that version), then reads the
statement with ``sigstore.dsse.Statement``.

Skipped when ``sigstore`` is not installed, except under ``PIN_REQUIRE_DOCKER=1`` (CI), where
its absence is a failure.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
from types import ModuleType
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from pinning.sign.bundle import SIGN_PREDICATE, key_hint, make_bundle
from pinning.sign.cosign import LOCK_PREDICATE, statement
from pinning.util.digests import canonical_json

DIGEST = "sha256:" + "ab" * 32
NAME = "127.0.0.1:5000/pin/trial"


def _modules() -> tuple[ModuleType, ModuleType]:
    try:
        return (importlib.import_module("sigstore_models.bundle.v1"),
                importlib.import_module("sigstore.dsse"))
    except ImportError as exc:
        if os.environ.get("PIN_REQUIRE_DOCKER") == "1":
            pytest.fail(f"PIN_REQUIRE_DOCKER=1 but the sigstore package is missing ({exc})")
        pytest.skip(f"the sigstore package is not installed ({exc})")


def independently_verified(raw: bytes, pub: ec.EllipticCurvePublicKey) -> tuple[str, Any]:
    """Parse the bundle bytes ``raw`` with sigstore-models, verify its DSSE envelope with
    sigstore-python's DSSE code and ``pub``; return the statement it parsed (its pydantic
    model) and the key hint it read. Raises what those libraries raise.
    """
    models, dsse = _modules()
    bundle = models.Bundle.from_json(raw)
    assert bundle.media_type == "application/vnd.dev.sigstore.bundle.v0.3+json"
    assert bundle.message_signature is None and bundle.dsse_envelope is not None
    assert bundle.verification_material.tlog_entries == []
    envelope = dsse.Envelope(bundle.dsse_envelope)
    payload = dsse._verify(pub, envelope)
    assert bundle.dsse_envelope.payload_type == "application/vnd.in-toto+json"
    return bundle.verification_material.public_key.hint, dsse.Statement(payload)._inner


@pytest.mark.parametrize("predicate_type,predicate", [
    (SIGN_PREDICATE, {}), (LOCK_PREDICATE, {"lockfile": {"name": "t.lock", "sha256": "0"}})])
def test_sigstore_python_reads_and_verifies_pins_bundle(predicate_type: str,
                                                        predicate: dict[str, Any]) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    raw = make_bundle(key, statement(DIGEST, NAME, predicate_type, predicate))
    hint, stmt = independently_verified(raw, key.public_key())
    assert hint == key_hint(key.public_key())
    assert stmt.predicate_type == predicate_type
    assert (stmt.predicate or {}) == predicate
    assert [(s.name, s.digest.root) for s in stmt.subjects] == [(NAME, {"sha256": "ab" * 32})]


def test_sigstore_python_refuses_a_tampered_or_foreign_bundle() -> None:
    _models, dsse = _modules()
    key, other = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    raw = make_bundle(key, statement(DIGEST, NAME, SIGN_PREDICATE, {}))
    with pytest.raises(dsse.VerificationError):
        independently_verified(raw, other.public_key())  # wrong key (and hint)
    doc = json.loads(raw)
    body = json.loads(base64.b64decode(doc["dsseEnvelope"]["payload"]))
    body["subject"][0]["digest"]["sha256"] = "cd" * 32
    doc["dsseEnvelope"]["payload"] = base64.b64encode(canonical_json(body)).decode()
    with pytest.raises(dsse.VerificationError):
        independently_verified(canonical_json(doc), key.public_key())
    doc = json.loads(raw)
    doc["verificationMaterial"]["extra"] = 1  # not a field of VerificationMaterial
    with pytest.raises(ValueError, match="extra"):
        independently_verified(canonical_json(doc), key.public_key())
