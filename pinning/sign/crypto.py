"""Keys and the signature primitives pin uses: ECDSA P-256 over SHA-256, ASN.1 DER, standard
base64, and DSSE with its pre-authentication encoding (§4.6).

Every verification failure is a :class:`~pinning.errors.SignatureError` (exit 9) with the
precise reason.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pinning.errors import SignatureError, UsageError
from pinning.util.digests import canonical_json
from pinning.util.files import MAX_KEY_BYTES, read_regular_bytes
from pinning.util.jsonread import load_json

PASSWORD_ENV = "PIN_KEY_PASSWORD"
IN_TOTO = "application/vnd.in-toto+json"


def generate(prefix: Path, password: bytes) -> tuple[Path, Path]:
    """Write ``<prefix>.key`` (PKCS#8 PEM encrypted with ``password``) and ``<prefix>.pub``
    (SubjectPublicKeyInfo PEM) for a new ECDSA P-256 key. Refuses to overwrite either file
    (:class:`UsageError`, exit 2).
    """
    key_path = prefix.parent / (prefix.name + ".key")
    pub_path = prefix.parent / (prefix.name + ".pub")
    if not password:
        raise UsageError(f"An empty passphrase is not accepted (set {PASSWORD_ENV}).")
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.BestAvailableEncryption(password))
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    _create(key_path, private, 0o600)
    try:
        _create(pub_path, public, 0o644)
    except UsageError:
        key_path.unlink()
        raise
    return key_path, pub_path


def _create(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` with ``mode`` from the start (O_EXCL: never overwrite, no window with
    wider permissions). :class:`UsageError` when it exists.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError as exc:
        raise UsageError(f"{path} exists; pin keygen never overwrites a key.",
                         hint="Choose another -o PREFIX or move the old keys away.") from exc
    except OSError as exc:
        raise UsageError(f"{path}: cannot be created ({exc.strerror or exc}).") from exc
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


KEY_HINT = "Pass the PEM file pin keygen wrote (PREFIX.key, or PREFIX.pub to verify)."


def read_key_file(path: Path, what: str) -> bytes:
    """The bytes of the key file ``path`` (``what`` is ``"Private key"`` or ``"Public
    key"``): a regular file of at most 1 MiB, opened without blocking. Raises
    :class:`SignatureError` (exit 9, the key cannot be used) naming the file when it is
    absent, unreadable, not a regular file (a FIFO, ``/dev/zero``, a directory) or larger.
    """
    return read_regular_bytes(path, SignatureError, label=f"{what} {path}", hint=KEY_HINT,
                              limit=MAX_KEY_BYTES)


def private_key_from(data: bytes, password: bytes | None,
                     path: Path | str) -> ec.EllipticCurvePrivateKey:
    """The ECDSA P-256 private key in the PEM bytes ``data`` read from ``path`` (named in
    messages). Raises :class:`SignatureError` for a wrong passphrase, a file that is not a
    PEM private key or another key type.
    """
    try:
        key = serialization.load_pem_private_key(data, password=password or None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise SignatureError(f"Private key {path}: cannot be loaded ({exc}).",
                             hint=f"Check the passphrase in {PASSWORD_ENV}.") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise SignatureError(f"Private key {path}: unsupported key type "
                             f"({type(key).__name__}); pin signs with ECDSA P-256.")
    return key


def load_private(path: Path, password: bytes | None) -> ec.EllipticCurvePrivateKey:
    """An ECDSA P-256 private key from a PEM file (see :func:`read_key_file` and
    :func:`private_key_from`). Raises :class:`SignatureError`.
    """
    return private_key_from(read_key_file(path, "Private key"), password, path)


def load_public(path: Path) -> ec.EllipticCurvePublicKey:
    """An ECDSA P-256 public key (SubjectPublicKeyInfo PEM). Raises :class:`SignatureError`
    for a file that is not a readable regular file of at most 1 MiB (see
    :func:`read_key_file`) or an unsupported key type (RSA, Ed25519, other curves).
    """
    data = read_key_file(path, "Public key")
    try:
        key = serialization.load_pem_public_key(data)
    except UnsupportedAlgorithm as exc:
        raise SignatureError(f"Public key {path}: unsupported key type ({exc}); pin verifies "
                             "ECDSA P-256 signatures only.") from exc
    except ValueError as exc:
        raise SignatureError(f"Public key {path}: cannot be loaded ({exc}).") from exc
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise SignatureError(f"Public key {path}: unsupported key type ({type(key).__name__}"
                             "); pin verifies ECDSA P-256 signatures only.")
    return key


def sign(key: ec.EllipticCurvePrivateKey, data: bytes) -> str:
    """Standard base64 of the DER ECDSA-SHA256 signature over ``data``."""
    return base64.b64encode(key.sign(data, ec.ECDSA(hashes.SHA256()))).decode()


def b64decode(text: str, what: str, *, urlsafe: bool = True) -> bytes:
    """Decode standard (or, when ``urlsafe``, URL-safe) base64; :class:`SignatureError`
    naming ``what``. cosign reads signature annotations as standard base64 only.
    """
    try:
        if urlsafe and ("-" in text or "_" in text):
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SignatureError(f"{what} is not valid base64.") from exc


def verify(key: ec.EllipticCurvePublicKey, data: bytes, signature_b64: str, what: str,
           *, urlsafe: bool = True) -> None:
    """Check the base64 DER signature of ``data``; :class:`SignatureError` saying ``what``."""
    sig = b64decode(signature_b64, f"the {what} signature", urlsafe=urlsafe)
    try:
        key.verify(sig, data, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature as exc:
        raise SignatureError(f"The {what} signature does not verify with this key (wrong "
                             "key, or the signed bytes or signature were changed).") from exc


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE pre-authentication encoding: ``DSSEv1 SP LEN(type) SP type SP LEN(body) SP body``."""
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)


def dsse_envelope(key: ec.EllipticCurvePrivateKey, payload_type: str, body: bytes,
                  keyid: str = "") -> bytes:
    """A DSSE envelope (JSON bytes) signing ``body`` as ``payload_type``."""
    doc = {"payload": base64.b64encode(body).decode(), "payloadType": payload_type,
           "signatures": [{"keyid": keyid, "sig": sign(key, pae(payload_type, body))}]}
    return canonical_json(doc, ascii_only=True)


@dataclass(frozen=True)
class Envelope:
    """A verified DSSE envelope: its payload type and body bytes."""

    payload_type: str
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON; :class:`SignatureError` when it is not."""
        return load_json(self.body, SignatureError, label="The attestation body")


def open_envelope(key: ec.EllipticCurvePublicKey, data: bytes) -> Envelope:
    """Parse and verify a DSSE envelope: every signature is tried (``keyid`` is only a
    hint). Raises :class:`SignatureError` for a malformed or truncated envelope or when no
    signature verifies.
    """
    try:
        doc = load_json(data, SignatureError, label="Malformed DSSE envelope")
        body = b64decode(str(doc["payload"]), "the envelope payload")
        payload_type = str(doc["payloadType"])
        sigs = [str(s["sig"]) for s in doc["signatures"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise SignatureError(f"Malformed DSSE envelope ({type(exc).__name__}: {exc}).") from exc
    if not sigs:
        raise SignatureError("The DSSE envelope carries no signature.")
    message = pae(payload_type, body)
    for sig in sigs:
        try:
            verify(key, message, sig, "attestation")
            return Envelope(payload_type=payload_type, body=body)
        except SignatureError:
            continue
    raise SignatureError("No signature of the DSSE envelope verifies with this key (wrong key, "
                         "or the envelope was changed).")
