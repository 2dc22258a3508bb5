"""What ``pin sign``, ``pin build --sign`` and ``pin verify-image`` decide, without the CLI.

Signing: :func:`sign_and_attest` signs an image by digest and, with a lock, attests the lock
and the build, after checking the lock records that image. Verifying:
:func:`verify_signed_image` checks that the registry serves the digest the reference names
(and that a tag given with a digest names it), that a signature by the key signs that digest,
and, with a :class:`LockEvidence`, that an attested lockfile is that lock and the image's
label is the one the lock's build inputs give. The expected label is passed in as a value:
it is computed from the lock by the build plan, which this package does not import.

Nothing here prints or exits; a passphrase prompt is a callback the CLI passes in. Errors are
:class:`~pinning.errors.UsageError` (exit 2) for a bad reference or an unreadable ``--lock``,
:class:`~pinning.errors.SignatureError` (exit 9) for anything not signed or attested as
required, :class:`~pinning.errors.BuildError` (exit 8) when the registry fails.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec

from pinning.errors import LockfileError, SignatureError, UsageError
from pinning.lockfile.io import read_lock
from pinning.lockfile.models import Lockfile
from pinning.oci.documents import LOCK_LABEL
from pinning.oci.reference import ImageRef, parse
from pinning.oci.registry import Registry
from pinning.sign.cosign import (
    LOCK_PREDICATE,
    SLSA_PREDICATE,
    ImageVerification,
    attest_image,
    lock_predicate,
    provenance_predicate,
    sign_image,
    verify_image,
)
from pinning.sign.crypto import PASSWORD_ENV, private_key_from, read_key_file
from pinning.util.digests import sha256_hex
from pinning.util.files import read_regular_bytes

# Asks the user for the key passphrase; the argument says whether to ask twice (confirm).
Ask = Callable[[bool], str]


def password(ask: Ask | None = None, *, confirm: bool = False) -> bytes:
    """The key passphrase as bytes: ``PIN_KEY_PASSWORD`` when set, else what ``ask(confirm)``
    answers when standard input is a terminal. Raises :class:`UsageError` (exit 2) when
    neither gives one.
    """
    value = os.environ.get(PASSWORD_ENV)
    if value is None:
        if ask is None or not sys.stdin.isatty():
            raise UsageError(f"No passphrase: set {PASSWORD_ENV} (no terminal to prompt on).")
        value = ask(confirm)
    return value.encode()


def signing_key(path: Path, ask: Ask | None = None) -> ec.EllipticCurvePrivateKey:
    """The ECDSA P-256 private key in ``path``, decrypted with :func:`password`. The file is
    read (a regular file of at most 1 MiB) before the passphrase is asked for. Raises
    :class:`UsageError` without a passphrase, :class:`SignatureError` (exit 9) for a key
    file that cannot be read or a key that cannot be loaded.
    """
    data = read_key_file(path, "Private key")
    return private_key_from(data, password(ask), path)


def read_lock_file(path: Path, label: str) -> tuple[bytes, Lockfile]:
    """The exact bytes (what attestations hash) and the parsed model of the lock ``path``.

    ``label`` names the file in messages (``--lock FILE``). Raises
    :class:`~pinning.errors.LockfileError` (exit 5) for a file that is not a readable
    regular file (missing, a directory, unreadable) and for an invalid lock.
    """
    raw = read_regular_bytes(path, LockfileError, label=label)
    return raw, read_lock(path)


def sign_and_attest(ref: str, key: Path | ec.EllipticCurvePrivateKey, lock_path: Path | None,
                    registry_url: str | None = None, *,
                    ask: Ask | None = None) -> dict[str, Any]:
    """Sign ``ref`` (``HOST/REPO[:TAG]@sha256:<digest>``) and, with a lock, attest the lock
    and the build; return ``{"image": ref, "signature": <.sig manifest digest>}`` plus
    ``"attestation"`` (the ``.att`` manifest digest) when a lock was given.

    ``key`` is a private-key file (decrypted with :func:`password` and ``ask``), or an
    already loaded key. The lock is read and checked (it must record this image digest)
    before anything is pushed. ``registry_url`` overrides the registry the reference names.
    Raises :class:`UsageError` for a reference without a digest, :class:`SignatureError`
    (exit 9) when the lock records another image, the key cannot be used or the image is not
    in the registry, :class:`~pinning.errors.BuildError` (exit 8) when the registry fails.
    """
    image = parse(ref)
    digest = image.digest
    if digest is None:
        raise UsageError(f"{ref}: sign by digest (REF@sha256:...), never by tag.")
    raw = lock = None
    if lock_path is not None:  # read and check the lock before anything is pushed
        raw, lock = read_lock_file(lock_path, f"--lock {lock_path}")
        recorded = lock.image.digest.value
        if recorded is None:
            raise SignatureError(f"{lock_path} records no image yet (pin build records the "
                                 f"manifest digest); build it, then sign {digest} with it.")
        if recorded != digest:
            raise SignatureError(f"{lock_path} records image {recorded}, not "
                                 f"{digest}; attest the lock its image was built from.")
    private = signing_key(key, ask) if isinstance(key, Path) else key
    registry = Registry(registry_url or image.registry_url)
    repo = image.repository
    if registry.manifest_digest(repo, digest) != digest:
        raise SignatureError(f"{ref} is not in the registry; nothing to sign.")
    out: dict[str, Any] = {"image": ref, "signature": sign_image(registry, repo, digest, private,
                                                                 reference=image.name)}
    if lock is not None and raw is not None and lock_path is not None:
        base = (f"{lock.image.base.value}@{lock.image.base_digest.value}"
                if lock.image.base.value and lock.image.base_digest.value else None)
        wheels = [w.model_dump(mode="json") for w in lock.wheels or []]
        attest_image(registry, repo, digest, private, LOCK_PREDICATE,
                     lock_predicate(raw, lock_path.name), reference=image.name)
        out["attestation"] = attest_image(
            registry, repo, digest, private, SLSA_PREDICATE,
            provenance_predicate(raw, lock_path.name, base, wheels), reference=image.name)
    return out


@dataclass(frozen=True)
class LockEvidence:
    """A lock an image must have been built from: ``name`` as the user gave it (used in
    messages), its exact bytes ``raw``, and ``label``, the value of the image's
    ``dev.pin.lock.content-hash`` label its build inputs give (``None`` when the lock
    records no build).
    """

    name: str
    raw: bytes
    label: str | None


def image_label(registry: Registry, repo: str, digest: str) -> str | None:
    """The lock label of the image ``repo@digest`` (read from its config), or ``None`` when
    the image has none. Raises :class:`SignatureError` (exit 9) when the manifest or config
    is not readable JSON of the expected shape.
    """
    try:
        manifest = json.loads(registry.get_manifest(repo, digest))
        config = json.loads(registry.get_blob(repo, manifest["config"]["digest"]))
        labels = (config.get("config") or {}).get("Labels") or {}
        label = labels.get(LOCK_LABEL) if isinstance(labels, dict) else None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SignatureError(f"The image config of {digest} cannot be read ({exc}).") from exc
    return None if label is None else str(label)


def _check_lock(registry: Registry, repo: str, result: ImageVerification,
                lock: LockEvidence) -> None:
    """Require an attested lockfile equal to ``lock`` and the image label it gives."""
    mine = sha256_hex(lock.raw)
    locks: list[dict[str, Any]] = [
        p["lockfile"] for p in result.attestations.get(LOCK_PREDICATE, [])
        if isinstance(p, dict) and isinstance(p.get("lockfile"), dict)]
    if not locks:
        raise SignatureError("No lockfile attestation for this image.")
    if not any(x.get("sha256") == mine for x in locks):
        names = ", ".join(f"{x.get('name')} (sha256 {str(x.get('sha256'))[:12]}…)"
                          for x in locks)
        raise SignatureError(f"The attested lockfile ({names}) is not {lock.name}.")
    label = image_label(registry, repo, result.digest)
    if lock.label is None or label != lock.label:
        raise SignatureError(f"The image label {LOCK_LABEL}={label} does not match the "
                             f"lock's build inputs ({lock.label}).")
    result.checks.append(f"attested lockfile is {lock.name}; the image label agrees")


def verify_signed_image(image: ImageRef, key: ec.EllipticCurvePublicKey, *,
                        lock: LockEvidence | None = None,
                        registry_url: str | None = None) -> ImageVerification:
    """Verify, with a public key, that ``image`` is signed and (with ``lock``) was built
    from that lock; return what was established (the served manifest digest, the number of
    valid signatures, the attestation predicates, the checks passed, in order).

    The registry (``registry_url``, else the one the reference names) must serve the
    reference; a digest given must be what it serves, and a tag given with it must name it.
    Signatures and attestations are verified over the exact bytes fetched. Raises
    :class:`SignatureError` (exit 9) with the precise reason, or
    :class:`~pinning.errors.BuildError` (exit 8) when the registry fails.
    """
    registry = Registry(registry_url or image.registry_url)
    repo, tag, digest = image.repository, image.tag, image.digest
    served = registry.manifest_digest(repo, image.manifest_reference)
    if served is None:
        raise SignatureError(f"{image} is not in the registry.")
    if digest is not None and tag is not None:
        by_tag = registry.manifest_digest(repo, tag)
        if by_tag != digest:
            raise SignatureError(f"Tag {tag} names {by_tag}, not {digest}.")
    if digest is not None and served != digest:
        raise SignatureError(f"The registry serves {served} for {image}, not {digest}.")
    result = verify_image(registry, repo, served, key, need_attestations=lock is not None,
                          reference=image.name)
    if lock is not None:
        _check_lock(registry, repo, result, lock)
    return result
