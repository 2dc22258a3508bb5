"""Signing commands of the CLI: ``pin keygen``, ``pin sign``, ``pin verify-image``.

Loaded from :data:`pinning.cli.COMMANDS` when used. The commands parse, call
:mod:`pinning.sign.policy` and render; cryptography and requests are imported inside the
commands so ``pin --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit
from pinning.cli.options import (
    ask_passphrase,
    ca_cert_option,
    cli_path,
    format_option,
    lock_target_option,
    output_path,
)
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile
    from pinning.sign.policy import LockEvidence


@click.command()
@click.option("-o", "--output", "prefix", callback=output_path, default="pin",
              show_default=True, metavar="PREFIX",
              help="Writes PREFIX.key (encrypted private key) and PREFIX.pub (exit 2 when "
                   "they cannot be written).")
def keygen(prefix: str) -> None:
    """Make an ECDSA P-256 key pair: PREFIX.key (PKCS#8 PEM, encrypted with the passphrase
    from PIN_KEY_PASSWORD or a prompt) and PREFIX.pub (SubjectPublicKeyInfo PEM, what
    `cosign verify --key` and skopeo's sigstoreSigned policy read). Never overwrites.
    """
    from pinning.errors import UsageError
    from pinning.sign.crypto import generate
    from pinning.sign.policy import password

    if prefix == "-":
        raise UsageError("-o PREFIX names two files (PREFIX.key, PREFIX.pub); '-' (standard "
                         "output) cannot hold them.", hint="Give a file prefix, e.g. -o pin.")
    key, pub = generate(cli_path(prefix), password(ask_passphrase, confirm=True))
    click.echo(f"Wrote {key} (private, keep it secret) and {pub} (public).")


@click.command()
@click.argument("ref", metavar="[HOST/REPO@sha256:DIGEST]", required=False)
@click.option("--key", "key_path", required=True, type=click.Path(),
              help="Private key from pin keygen.")
@click.option("--lock", "lock_path", type=click.Path(),
              help="Also attest this lockfile (in-toto) and the build (SLSA provenance v1); "
                   "without REF, sign the image it records (image.ref). '-' reads it from "
                   "standard input.")
@click.option("--registry", "registry_url", metavar="URL",
              help="Registry URL (default: the reference's host, https, or http on "
                   "loopback when it has no TLS).")
@lock_target_option
@ca_cert_option
@format_option
def sign(ref: str | None, key_path: str, lock_path: str | None, registry_url: str | None,
         target: str | None, ca_cert: str | None, fmt: str) -> None:
    """Sign an image by digest, cosign-compatibly: the simple-signing payload under the
    sha256-<hex>.sig tag, and a Sigstore bundle (v0.3, the layout of cosign's
    --new-bundle-format, sigstore/cosign specs/BUNDLE_SPEC.md) attached as an OCI referrer
    (referrers API, or the sha256-<hex> tag index). With --lock, add
    DSSE-signed in-toto attestations of the lockfile and of the build, under
    sha256-<hex>.att and as bundles. Signing again appends; nothing is lost.

    REF may be left out with --lock: the lock's image.ref is signed. With a multi-target
    lock (pin lock's pin.lock) --target NAME chooses the target: its section records the
    image, and the attestations hold that target's lock (its view, a lock-version 1
    document with the target's content-hash), not the whole file. Exit 2 without REF and
    --lock, when they name different images, for a tag instead of a digest or for a
    malformed registry address, 8 when the registry fails (unreachable, refused, an error
    answer), 9 when the key cannot be used, the lock records another image digest or the
    image is not in the registry.
    """
    from pinning.sign.policy import sign_and_attest

    out = sign_and_attest(ref, Path(key_path), cli_path(lock_path) if lock_path else None,
                          registry_url, ask=ask_passphrase,
                          ca_cert=Path(ca_cert) if ca_cert else None, target=target)
    if fmt == "json":
        emit(out)
    else:
        what = " and attested the lock and the build" if lock_path else ""
        click.echo(printable(f"Signed {out['image']}{what} ({len(out['bundles'])} Sigstore "
                             f"bundle(s), {out['bundle_source']}).", newlines=False))


@click.command("verify-image")
@click.argument("ref", metavar="[HOST/REPO[:TAG][@sha256:DIGEST]]", required=False)
@click.option("--key", "pub_path", required=True, type=click.Path(),
              help="Public key (PEM).")
@click.option("--lock", "lock_path", type=click.Path(),
              help="Also check the attested lockfile is this file and the image label "
                   "agrees; without REF, verify the image it records (image.ref).")
@click.option("--require-acceptance", "require_acceptance", is_flag=True,
              help="Also require a signed, passing acceptance result (pin accept run --sign) "
                   "for exactly this lock (its content hash) and this image digest; needs "
                   "--lock.")
@click.option("--registry", "registry_url", metavar="URL", help="Registry URL override.")
@lock_target_option
@ca_cert_option
@format_option
def verify_image(ref: str | None, pub_path: str, lock_path: str | None,
                 require_acceptance: bool, registry_url: str | None, target: str | None,
                 ca_cert: str | None, fmt: str) -> None:
    """Check offline, with a public key, that the image REF is signed and (with --lock) was
    built from that lockfile. Signatures and attestations are verified over the exact bytes
    fetched; the signed digest must be the image's manifest digest. Every Sigstore bundle
    of the key attached to the image (referrers API or sha256-<hex> tag index) must verify
    too; their number is reported (0 for an image signed in the legacy layout only).

    REF may be left out with --lock: the lock's image.ref is verified. With
    --require-acceptance (and --lock), one of the image's verified attestations must also
    be a pin acceptance result that passed, run against this lock's content hash and this
    image's digest. With a multi-target lock, --target NAME (needed when it has several)
    checks against that target: its attested lock, label, image and content hash.

    Exit 0 when valid, 9 with the precise reason when not, 8 when the registry fails
    (unreachable, refused, an error answer), 2 for --require-acceptance without --lock,
    without REF and --lock, when they name different images or for a malformed registry
    address.
    """
    from pinning.errors import UsageError
    from pinning.oci.reference import parse
    from pinning.sign.crypto import load_public
    from pinning.sign.policy import image_from, verify_signed_image

    if target is not None and lock_path is None:
        raise UsageError(f"--target {target!r} chooses a target of --lock LOCK; give --lock.")
    if require_acceptance and lock_path is None:
        raise UsageError("--require-acceptance needs --lock LOCK: an acceptance result counts "
                         "only for the lock it was run against.",
                         hint="Add --lock with the lockfile the image was built from.")
    if ref is not None:
        parse(ref)  # a malformed REF is refused before any file is read
    key = load_public(Path(pub_path))
    evidence, lock = _evidence(lock_path, target) if lock_path is not None else (None, None)
    image = image_from(ref, lock, f"--lock {lock_path}")
    result = verify_signed_image(image, key, lock=evidence, registry_url=registry_url,
                                 ca_cert=Path(ca_cert) if ca_cert else None)
    if require_acceptance and lock is not None:
        from pinning.accept.require import require_acceptance as require

        result.checks.append(require(result, lock_content_hash=lock.content_hash,
                                     digest=result.digest))
    served = f"{image.name}@{result.digest}"
    if fmt == "json":
        emit({"image": served, "valid": True, "signatures": result.signatures,
              "attestations": sorted(result.attestations), "bundles": result.bundles,
              "bundle_predicates": sorted(result.bundle_attestations),
              "bundle_source": result.bundle_source, "checks": result.checks})
    else:
        click.echo(printable(f"{served}: valid", newlines=False))
        for check in result.checks:
            click.echo(printable(f"  ✓ {check}", newlines=False))


def _evidence(lock_path: str, target: str | None) -> tuple[LockEvidence, Lockfile]:
    """What ``pin verify-image --lock LOCK [--target NAME]`` checks the image against, and
    the lock (of a multi-target lock, the target's view). Raises as
    :func:`pinning.sign.policy.read_lock_file`.
    """
    from pinning.image.plan import expected_label
    from pinning.sign.policy import LockEvidence, read_lock_file

    raw, lock, chosen = read_lock_file(cli_path(lock_path), f"--lock {lock_path}", target)
    return LockEvidence(
        name=lock_path if chosen is None else f"{lock_path} [targets.{chosen}]", raw=raw,
        label=expected_label(lock),
        content_hash=None if chosen is None else lock.content_hash), lock
