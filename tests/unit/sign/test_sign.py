"""Signature primitives: DSSE PAE, cosign payload bytes, ECDSA P-256 round trips and every
tamper case rejected with its reason (exit 9)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes

from pinning.errors import SignatureError, UsageError
from pinning.sign.cosign import COSIGN_TYPE, payload_bytes, statement
from pinning.sign.crypto import (
    IN_TOTO,
    dsse_envelope,
    generate,
    load_private,
    load_public,
    open_envelope,
    pae,
    sign,
    verify,
)

DIGEST = "sha256:" + "ab" * 32


def keypair() -> tuple[ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    return key, key.public_key()


def test_pae_test_vector() -> None:
    assert pae("http://example.com/HelloWorld", b"hello world") == \
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"


def test_payload_is_the_cosign_simple_signing_shape() -> None:
    raw = payload_bytes("127.0.0.1:5000/pin/trial", DIGEST)
    assert raw == (b'{"critical":{"identity":{"docker-reference":"127.0.0.1:5000/pin/trial"},'
                   b'"image":{"docker-manifest-digest":"' + DIGEST.encode() + b'"},'
                   b'"type":"cosign container image signature"},"optional":null}')
    assert json.loads(raw)["critical"]["type"] == COSIGN_TYPE


def test_signature_round_trip_and_tampering() -> None:
    key, pub = keypair()
    data = payload_bytes("r/x", DIGEST)
    sig = sign(key, data)
    verify(pub, data, sig, "image")
    with pytest.raises(SignatureError, match="does not verify"):
        verify(pub, data.replace(b"r/x", b"r/y"), sig, "image")  # payload edited
    raw = bytearray(base64.b64decode(sig))
    raw[-1] ^= 0x01
    with pytest.raises(SignatureError, match="does not verify"):
        verify(pub, data, base64.b64encode(bytes(raw)).decode(), "image")  # bytes flipped
    with pytest.raises(SignatureError, match="does not verify"):
        verify(keypair()[1], data, sig, "image")  # wrong key
    with pytest.raises(SignatureError, match="not valid base64"):
        verify(pub, data, "%%%", "image")


def test_dsse_round_trip_and_malformed_envelopes() -> None:
    key, pub = keypair()
    body = statement(DIGEST, "r/x", "https://example.com/p", {"a": 1})
    env = dsse_envelope(key, IN_TOTO, body)
    opened = open_envelope(pub, env)
    assert opened.payload_type == IN_TOTO and opened.json()["subject"][0]["digest"] == {
        "sha256": "ab" * 32}
    with pytest.raises(SignatureError, match="Malformed DSSE envelope"):
        open_envelope(pub, env[: len(env) // 2])  # truncated
    with pytest.raises(SignatureError, match="Malformed DSSE envelope"):
        open_envelope(pub, b'{"payload": "eA=="}')
    doc = json.loads(env)
    doc["payloadType"] = "application/json"  # the PAE covers the type
    with pytest.raises(SignatureError, match="No signature"):
        open_envelope(pub, json.dumps(doc).encode())
    doc = json.loads(env)
    doc["signatures"] = []
    with pytest.raises(SignatureError, match="no signature"):
        open_envelope(pub, json.dumps(doc).encode())
    with pytest.raises(SignatureError, match="No signature"):
        open_envelope(keypair()[1], env)


def test_keygen_files_and_refusal(tmp_path: Path) -> None:
    key_path, pub_path = generate(tmp_path / "k", b"secret")
    assert b"ENCRYPTED PRIVATE KEY" in key_path.read_bytes()
    assert pub_path.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    assert oct(key_path.stat().st_mode & 0o777) == "0o600"
    key = load_private(key_path, b"secret")
    verify(load_public(pub_path), b"x", sign(key, b"x"), "test")
    with pytest.raises(SignatureError, match="Incorrect password") as exc:
        load_private(key_path, b"wrong")
    assert "PIN_KEY_PASSWORD" in exc.value.hint
    with pytest.raises(UsageError, match="never overwrites"):
        generate(tmp_path / "k", b"secret")


@pytest.mark.parametrize("make", [
    lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key(),
    lambda: ed25519.Ed25519PrivateKey.generate().public_key(),
    lambda: ec.generate_private_key(ec.SECP384R1()).public_key(),
])
def test_unsupported_key_types(tmp_path: Path, make: Callable[[], PublicKeyTypes]) -> None:
    pem = make().public_bytes(serialization.Encoding.PEM,
                              serialization.PublicFormat.SubjectPublicKeyInfo)
    path = tmp_path / "other.pub"
    path.write_bytes(pem)
    with pytest.raises(SignatureError, match="unsupported key type") as exc:
        load_public(path)
    assert exc.value.exit_code == 9


REF = "127.0.0.1:5000/pin/trial"


def test_payload_rules_of_containers_image() -> None:
    from pinning.sign.cosign import parse_payload

    assert parse_payload(payload_bytes(REF, DIGEST), REF) == DIGEST
    good = json.loads(payload_bytes(REF, DIGEST))
    cases = {
        "extra top-level key": {**good, "x": 1},
        "extra critical key": {**good, "critical": {**good["critical"], "x": 1}},
        "missing identity": {**good, "critical": {"image": good["critical"]["image"],
                                                 "type": COSIGN_TYPE}},
        "optional a list": {**good, "optional": []},
        "other type": {**good, "critical": {**good["critical"], "type": "x"}},
    }
    for why, doc in cases.items():
        with pytest.raises(SignatureError):
            parse_payload(json.dumps(doc).encode(), REF)
        assert why
    with pytest.raises(SignatureError, match="names"):
        parse_payload(payload_bytes("127.0.0.1:5000/other", DIGEST), REF)
    dup = payload_bytes(REF, DIGEST).replace(
        b'"docker-manifest-digest"', b'"docker-manifest-digest":"sha256:00","docker-manifest-digest"')
    with pytest.raises(SignatureError, match="repeats a key"):
        parse_payload(dup, REF)


def test_cosign_annotations_are_standard_base64_only() -> None:
    key, pub = keypair()
    sig = sign(key, b"x")
    urlsafe = sig.replace("+", "-").replace("/", "_")
    verify(pub, b"x", urlsafe, "dsse")  # DSSE accepts both
    if urlsafe != sig:
        with pytest.raises(SignatureError, match="base64"):
            verify(pub, b"x", urlsafe, "image", urlsafe=False)
