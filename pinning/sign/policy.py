"""What ``pin sign``, ``pin build --sign`` and ``pin verify-image`` decide, without the CLI.

Signing: :func:`sign_and_attest` signs an image by digest and, with a lock, attests the lock
and the build, after checking the lock records that image; each is written twice, in cosign's
legacy ``.sig`` / ``.att`` tags and as a Sigstore bundle (v0.3) attached as an OCI referrer
(:mod:`pinning.sign.referrers`). :func:`image_from` takes the image reference from the command
line or the lock's ``image.ref``. Verifying:
:func:`verify_signed_image` checks that the registry serves the digest the reference names
(and that a tag given with a digest names it), that a signature by the key signs that digest,
that every Sigstore bundle of the key attached to it verifies, and, with a
:class:`LockEvidence`, that an attested lockfile is that lock and the image's label is the
one the lock's build inputs give. The expected label is passed in as a value:
it is computed from the lock by the build plan, which this package does not import.

Nothing here prints or exits; a passphrase prompt is a callback the CLI passes in. Errors are
:class:`~pinning.errors.UsageError` (exit 2) for a bad reference or an unreadable ``--lock``,
:class:`~pinning.errors.SignatureError` (exit 9) for anything not signed or attested as
required, :class:`~pinning.errors.BuildError` (exit 8) when the registry fails.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec

from pinning.errors import LockfileError, SignatureError, UsageError
from pinning.lockfile.io import read_lock_at, render
from pinning.lockfile.models import Lockfile
from pinning.oci.documents import LOCK_LABEL
from pinning.oci.reference import ImageRef, parse
from pinning.oci.registry import Registry
from pinning.sign.bundle import SIGN_PREDICATE
from pinning.sign.bundlecheck import verify_bundles
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
from pinning.sign.referrers import attach_bundle, bundle_entries, list_referrers
from pinning.util.digests import sha256_hex
from pinning.util.files import read_regular_bytes
from pinning.util.jsonread import load_json

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


def read_lock_file(path: Path, label: str,
                   target: str | None = None) -> tuple[bytes, Lockfile, str | None]:
    """What attestations of the lock ``path`` hash, its parsed model and its target name.

    For a single-target lock: its exact bytes, the lock, ``None``. For a multi-target lock
    (``pin lock``'s, lock-version 2): the view of ``target`` (or of its only target)
    rendered as the lock-version 1 document it is (:func:`pinning.lockfile.io.render`,
    no ``#:schema`` line), that view and the target's name. An attestation so binds the
    target's content-hash, not the whole file: the other targets may change (be locked,
    built) without voiding it, and the attested text is a lock that reads on its own.
    ``label`` names the file in messages (``--lock FILE``). Raises
    :class:`~pinning.errors.LockfileError` (exit 5) for a file that is not a readable
    regular file (missing, a directory, unreadable) and for an invalid lock;
    :class:`UsageError` (exit 2) for a target the lock does not have, none named of several,
    or ``target`` with a single-target lock.
    """
    read_regular_bytes(path, LockfileError, label=label)
    read = read_lock_at(path, target)
    if read.multi is None:
        return read.raw, read.lock, None
    return render(read.lock).encode(), read.lock, read.target


def attested_name(path: Path | str, target: str | None) -> str:
    """The lock's name in an attestation and messages: the file name, and for a target of a
    multi-target lock `` [targets.NAME]`` after it.
    """
    name = Path(path).name
    return name if target is None else f"{name} [targets.{target}]"


def image_from(ref: str | None, lock: Lockfile | None, lock_label: str = "--lock") -> ImageRef:
    """The image a command acts on: ``ref`` (``HOST/REPO[:TAG][@sha256:DIGEST]``), else the
    lock's ``image.ref`` (what ``pin build`` recorded). With both, they must name the same
    repository and, where ``ref`` names a digest, the same digest; a ``ref`` without a digest
    takes the lock's. ``lock_label`` names the lock in messages (``--lock FILE``).

    Raises :class:`UsageError` (exit 2) when neither gives a reference, when the two name
    different images, or for a malformed ``ref``; :class:`LockfileError` (exit 5) for a
    recorded ``image.ref`` that is not an image reference.
    """
    given = parse(ref) if ref is not None else None
    text = lock.image.ref.value if lock is not None and lock.image.ref else None
    recorded = parse(text, error=LockfileError) if text else None
    if given is not None and recorded is not None:
        if given.name != recorded.name or (given.digest is not None
                                           and given.digest != recorded.digest):
            raise UsageError(f"REF {given} and {lock_label} (image.ref {recorded}) name "
                             "different images.", hint="Pass only one of them (--lock alone "
                                                       "uses the lock's image.ref).")
        return dataclasses.replace(given, digest=given.digest or recorded.digest)
    if given is not None:
        return given
    if recorded is not None:
        return recorded
    if lock is None:
        raise UsageError("No image given: pass REF (HOST/REPO@sha256:DIGEST) or --lock LOCK "
                         "(its image.ref names the image pin build pushed).")
    raise UsageError(f"{lock_label} records no image reference (image.ref) yet.",
                     hint="Build and push it first (pin build), or pass REF.")


def sign_and_attest(ref: str | None, key: Path | ec.EllipticCurvePrivateKey,
                    lock_path: Path | None, registry_url: str | None = None, *,
                    ask: Ask | None = None, ca_cert: Path | None = None,
                    target: str | None = None) -> dict[str, Any]:
    """Sign ``ref`` (``HOST/REPO[:TAG]@sha256:<digest>``; ``None`` takes the lock's
    ``image.ref``, see :func:`image_from`) and, with a lock, attest the lock and the build;
    return ``{"image": ref, "signature": <.sig manifest digest>, "bundles": [<referrer
    manifest digests>], "bundle_source": "referrers API" | "tag sha256-<hex>"}`` plus
    ``"attestation"`` (the ``.att`` manifest digest) when a lock was given.

    Each signature and attestation is written in the legacy tags and as a Sigstore bundle:
    the signature with predicate type ``https://sigstore.dev/cosign/sign/v1`` (empty
    predicate), the lock and build attestations with the same predicate types as in
    ``.att``. ``key`` is a private-key file (decrypted with :func:`password` and ``ask``),
    or an already loaded key. The lock is read and checked (it must record this image
    digest) before anything is pushed. ``registry_url`` overrides the registry the
    reference names; ``ca_cert`` is a PEM CA file for its TLS. ``target`` chooses the
    target of a multi-target lock: its view is attested (:func:`read_lock_file`), the
    predicate adding ``target`` and ``content-hash``. Raises :class:`UsageError`
    for no reference, two different ones or one without a digest, :class:`SignatureError`
    (exit 9) when the lock records another image, the key cannot be used or the image is
    not in the registry, :class:`~pinning.errors.BuildError` (exit 8) when the registry
    fails.
    """
    raw = lock = None
    if lock_path is not None:  # read and check the lock before anything is pushed
        raw, lock, target = read_lock_file(lock_path, f"--lock {lock_path}", target)
    elif target is not None:
        raise UsageError(f"--target {target!r} chooses a target of --lock LOCK; give --lock.")
    image = image_from(ref, lock, f"--lock {lock_path}")
    digest = image.digest
    if digest is None:
        raise UsageError(f"{image}: sign by digest (REF@sha256:...), never by tag.")
    if lock is not None:
        recorded = lock.image.digest.value
        if recorded is None:
            raise SignatureError(f"{lock_path} records no image yet (pin build records the "
                                 f"manifest digest); build it, then sign {digest} with it.")
        if recorded != digest:
            raise SignatureError(f"{lock_path} records image {recorded}, not "
                                 f"{digest}; attest the lock its image was built from.")
    private = signing_key(key, ask) if isinstance(key, Path) else key
    with Registry(registry_url or image.registry_url, ca_cert=ca_cert) as registry:
        return _sign_in(registry, image, digest, private,
                        None if lock is None or raw is None or lock_path is None
                        else (lock, raw, lock_path, target))


def _sign_in(registry: Registry, image: ImageRef, digest: str,
             private: ec.EllipticCurvePrivateKey,
             lock: tuple[Lockfile, bytes, Path, str | None] | None) -> dict[str, Any]:
    """The registry part of :func:`sign_and_attest` (``lock``: the model, the bytes
    attested, its path and target), in the order: image present, referrers listing
    readable, then every write.
    """
    repo = image.repository
    if registry.manifest_digest(repo, digest) != digest:
        raise SignatureError(f"{image} is not in the registry; nothing to sign.")
    listing = list_referrers(registry, repo, digest)  # a corrupt tag index stops us here
    bundle_entries(listing, digest)  # and so do more referrers than pin examines
    out: dict[str, Any] = {"image": str(image),
                           "signature": sign_image(registry, repo, digest, private,
                                                   reference=image.name)}
    bundles = [attach_bundle(registry, repo, digest, private, SIGN_PREDICATE, {},
                             name=image.name)]
    if lock is not None:
        model, raw, path, target = lock
        base = (f"{model.image.base.value}@{model.image.base_digest.value}"
                if model.image.base.value and model.image.base_digest.value else None)
        wheels = [w.model_dump(mode="json") for w in model.wheels or []]
        name = attested_name(path, target)
        attested = lock_predicate(raw, name)
        if target is not None:
            attested["lockfile"].update({"target": target, "content-hash": model.content_hash})
        for predicate_type, predicate in (
                (LOCK_PREDICATE, attested),
                (SLSA_PREDICATE, provenance_predicate(raw, name, base, wheels))):
            out["attestation"] = attest_image(registry, repo, digest, private, predicate_type,
                                              predicate, reference=image.name)
            bundles.append(attach_bundle(registry, repo, digest, private, predicate_type,
                                         predicate, name=image.name))
    out["bundles"] = bundles
    out["bundle_source"] = listing.source(digest)
    return out


@dataclass(frozen=True)
class LockEvidence:
    """A lock an image must have been built from: ``name`` as the user gave it (used in
    messages), its exact bytes ``raw``, and ``label``, the value of the image's
    ``dev.pin.lock.content-hash`` label its build inputs give (``None`` when the lock
    records no build). ``content_hash`` is set for a target of a multi-target lock: an
    attested lockfile whose ``content-hash`` is this one counts too (the rendered view's
    bytes, ``raw``, may differ in comments between pin versions; its content hash does
    not).
    """

    name: str
    raw: bytes
    label: str | None
    content_hash: str | None = None


def image_label(registry: Registry, repo: str, digest: str) -> str | None:
    """The lock label of the image ``repo@digest`` (read from its config), or ``None`` when
    the image has none. Raises :class:`SignatureError` (exit 9) when the manifest or config
    is not readable JSON of the expected shape.
    """
    try:
        manifest = load_json(registry.get_manifest(repo, digest), SignatureError,
                             label=f"The manifest of {digest}")
        config = load_json(registry.get_blob(repo, manifest["config"]["digest"]),
                           SignatureError, label=f"The image config of {digest}")
        labels = (config.get("config") or {}).get("Labels") or {}
        label = labels.get(LOCK_LABEL) if isinstance(labels, dict) else None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SignatureError(f"The image config of {digest} cannot be read ({exc}).") from exc
    return None if label is None else str(label)


def _check_lock(registry: Registry, repo: str, result: ImageVerification,
                lock: LockEvidence) -> None:
    """Require an attested lockfile equal to ``lock`` and the image label it gives."""
    mine = sha256_hex(lock.raw)
    predicates = [*result.attestations.get(LOCK_PREDICATE, []),
                  *result.bundle_attestations.get(LOCK_PREDICATE, [])]
    locks: list[dict[str, Any]] = [
        p["lockfile"] for p in predicates
        if isinstance(p, dict) and isinstance(p.get("lockfile"), dict)]
    if not locks:
        raise SignatureError("No lockfile attestation for this image.")
    if not any(x.get("sha256") == mine or (lock.content_hash is not None and x.get(
            "content-hash") == lock.content_hash) for x in locks):
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
                        registry_url: str | None = None,
                        ca_cert: Path | None = None) -> ImageVerification:
    """Verify, with a public key, that ``image`` is signed and (with ``lock``) was built
    from that lock; return what was established (the served manifest digest, the number of
    valid signatures, the attestation predicates, the Sigstore bundles that verified, the
    checks passed, in order).

    The registry (``registry_url``, else the one the reference names; ``ca_cert`` a PEM CA
    file for its TLS) must serve the reference; a digest given must be what it serves, and a
    tag given with it must name it. Legacy signatures and attestations are verified over the
    exact bytes fetched (:func:`pinning.sign.cosign.verify_image`); then every Sigstore
    bundle of this key attached to the digest (referrers API or tag index) must verify
    (:func:`pinning.sign.bundlecheck.verify_bundles`): none attached is no failure, and bundles
    whose key hint names another key are left aside. With ``lock``, the attested lockfile
    (legacy or bundle) must be that lock. Raises :class:`SignatureError` (exit 9) with the
    precise reason, or :class:`~pinning.errors.BuildError` (exit 8) when the registry fails.
    """
    with Registry(registry_url or image.registry_url, ca_cert=ca_cert) as registry:
        return _verify_in(registry, image, key, lock)


def _verify_in(registry: Registry, image: ImageRef, key: ec.EllipticCurvePublicKey,
               lock: LockEvidence | None) -> ImageVerification:
    """The registry part of :func:`verify_signed_image`."""
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
    _check_bundles(registry, repo, result, key)
    if lock is not None:
        _check_lock(registry, repo, result, lock)
    return result


def _check_bundles(registry: Registry, repo: str, result: ImageVerification,
                   key: ec.EllipticCurvePublicKey) -> None:
    """Verify the Sigstore bundles of ``result.digest`` and record them in ``result``."""
    check = verify_bundles(registry, repo, result.digest, key)
    result.bundle_source = check.source
    for predicate_type, predicate in check.verified:
        result.bundle_attestations.setdefault(predicate_type, []).append(predicate)
    result.bundles = len(check.verified)
    others = f"; {check.other_keys} of other keys left aside" if check.other_keys else ""
    if result.bundles:
        result.checks.append(f"{result.bundles} Sigstore bundle(s) ({check.source}) verify: "
                             f"{', '.join(sorted(result.bundle_attestations))}{others}")
    else:
        result.checks.append(f"no Sigstore bundle of this key ({check.source}){others}")
