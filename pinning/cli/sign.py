"""Signing commands of the CLI: ``pin keygen``, ``pin sign``, ``pin verify-image``.

Registered on the main group by :func:`register`; cryptography and requests are imported
inside the commands so ``pin --help`` stays fast.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import click

from pinning.errors import SignatureError, UsageError

FORMAT = click.Choice(["text", "json"])


def password(confirm: bool = False) -> bytes:
    """The key passphrase: ``PIN_KEY_PASSWORD``, else a prompt on a terminal."""
    from pinning.sign.crypto import PASSWORD_ENV

    value = os.environ.get(PASSWORD_ENV)
    if value is None:
        if not sys.stdin.isatty():
            raise UsageError(f"No passphrase: set {PASSWORD_ENV} (no terminal to prompt on).")
        value = click.prompt("Key passphrase", hide_input=True, confirmation_prompt=confirm)
    return value.encode()


def parse_ref(ref: str) -> tuple[str, str, str | None, str | None]:
    """``host/repo[:tag][@sha256:hex]`` -> ``(host, repo, tag, digest)``."""
    m = re.fullmatch(r"(?P<host>[^/]+)/(?P<repo>[a-z0-9._/-]+?)(?::(?P<tag>[\w.-]+))?"
                     r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?", ref)
    if not m:
        raise UsageError(f"Image reference {ref!r} is not HOST/REPO[:TAG][@sha256:DIGEST].")
    return m["host"], m["repo"], m["tag"], m["digest"]


def _registry(host: str, url: str | None) -> Any:
    from pinning.image.record import registry_url
    from pinning.oci.registry import Registry

    return Registry(url or registry_url(host))


def sign_and_attest(ref: str, key_path: Path | Any, lock_path: Path | None,
                    registry_url: str | None = None) -> dict[str, Any]:
    """Sign ``ref`` (with a digest) and, with a lock, attest the lock and the build.

    ``key_path`` is a private-key file, or an already loaded key. The lock is read and
    checked (it must record this image digest) before anything is pushed.
    """
    from pinning.lockfile.io import read_lock
    from pinning.sign.cosign import (
        LOCK_PREDICATE,
        SLSA_PREDICATE,
        attest_image,
        lock_predicate,
        provenance_predicate,
        sign_image,
    )
    from pinning.sign.crypto import load_private
    from pinning.util.files import read_regular_bytes

    host, repo, _tag, digest = parse_ref(ref)
    if digest is None:
        raise UsageError(f"{ref}: sign by digest (REF@sha256:...), never by tag.")
    raw = lock = None
    if lock_path is not None:  # read and check the lock before anything is pushed
        raw = read_regular_bytes(lock_path, UsageError, label=f"--lock {lock_path}")
        lock = read_lock(lock_path)
        if lock.image.digest.value != digest:
            raise SignatureError(f"{lock_path} records image {lock.image.digest.value}, not "
                                 f"{digest}; attest the lock its image was built from.")
    key = load_private(key_path, password()) if isinstance(key_path, Path) else key_path
    registry = _registry(host, registry_url)
    if registry.manifest_digest(repo, digest) != digest:
        raise SignatureError(f"{ref} is not in the registry; nothing to sign.")
    reference = f"{host}/{repo}"
    out: dict[str, Any] = {"image": ref, "signature": sign_image(registry, repo, digest, key,
                                                                 reference=reference)}
    if lock is not None and raw is not None and lock_path is not None:
        base = (f"{lock.image.base.value}@{lock.image.base_digest.value}"
                if lock.image.base.value and lock.image.base_digest.value else None)
        wheels = [w.model_dump(mode="json") for w in lock.wheels or []]
        attest_image(registry, repo, digest, key, LOCK_PREDICATE,
                     lock_predicate(raw, lock_path.name), reference=reference)
        out["attestation"] = attest_image(
            registry, repo, digest, key, SLSA_PREDICATE,
            provenance_predicate(raw, lock_path.name, base, wheels), reference=reference)
    return out


@click.command()
@click.option("-o", "--output", "prefix", default="pin", show_default=True, metavar="PREFIX",
              help="Writes PREFIX.key (encrypted private key) and PREFIX.pub.")
def keygen(prefix: str) -> None:
    """Make an ECDSA P-256 key pair: PREFIX.key (PKCS#8 PEM, encrypted with the passphrase
    from PIN_KEY_PASSWORD or a prompt) and PREFIX.pub (SubjectPublicKeyInfo PEM, what
    `cosign verify --key` and skopeo's sigstoreSigned policy read). Never overwrites.
    """
    from pinning.sign.crypto import generate

    key, pub = generate(Path(prefix), password(confirm=True))
    click.echo(f"Wrote {key} (private, keep it secret) and {pub} (public).")


@click.command()
@click.argument("ref", metavar="HOST/REPO@sha256:DIGEST")
@click.option("--key", "key_path", required=True, type=click.Path(dir_okay=False),
              help="Private key from pin keygen.")
@click.option("--lock", "lock_path", type=click.Path(dir_okay=False),
              help="Also attest this lockfile (in-toto) and the build (SLSA provenance v1).")
@click.option("--registry", "registry_url", metavar="URL",
              help="Registry URL (default: http:// for loopback hosts, else https://).")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def sign(ref: str, key_path: str, lock_path: str | None, registry_url: str | None,
         fmt: str) -> None:
    """Sign an image by digest, cosign-compatibly (simple-signing payload under the
    sha256-<hex>.sig tag); with --lock, add DSSE-signed in-toto attestations of the lockfile
    and of the build under sha256-<hex>.att. Signing again appends; nothing is lost.

    Exit 9 when the key cannot be used or the image is not in the registry.
    """
    out = sign_and_attest(ref, Path(key_path), Path(lock_path) if lock_path else None,
                          registry_url)
    if fmt == "json":
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(f"Signed {ref}" + (" and attested the lock and the build." if lock_path
                                      else "."))


@click.command("verify-image")
@click.argument("ref", metavar="HOST/REPO[:TAG][@sha256:DIGEST]")
@click.option("--key", "pub_path", required=True, type=click.Path(dir_okay=False),
              help="Public key (PEM).")
@click.option("--lock", "lock_path", type=click.Path(dir_okay=False),
              help="Also check the attested lockfile is this file and the image label agrees.")
@click.option("--registry", "registry_url", metavar="URL", help="Registry URL override.")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def verify_image(ref: str, pub_path: str, lock_path: str | None, registry_url: str | None,
                 fmt: str) -> None:
    """Check offline, with a public key, that the image REF is signed and (with --lock) was
    built from that lockfile. Signatures and attestations are verified over the exact bytes
    fetched; the signed digest must be the image's manifest digest.

    Exit 0 when valid, 9 with the precise reason when not.
    """
    import hashlib

    from pinning.image.plan import expected_label
    from pinning.lockfile.io import read_lock
    from pinning.oci.documents import LOCK_LABEL
    from pinning.sign.cosign import LOCK_PREDICATE
    from pinning.sign.cosign import verify_image as do_verify
    from pinning.sign.crypto import load_public
    from pinning.util.files import read_regular_bytes

    host, repo, tag, digest = parse_ref(ref)
    key = load_public(Path(pub_path))
    raw = None
    if lock_path is not None:
        raw = read_regular_bytes(Path(lock_path), UsageError, label=f"--lock {lock_path}")
        lock = read_lock(Path(lock_path))
    registry = _registry(host, registry_url)
    served = registry.manifest_digest(repo, digest or tag or "latest")
    if served is None:
        raise SignatureError(f"{ref} is not in the registry.")
    if digest is not None and tag is not None:
        by_tag = registry.manifest_digest(repo, tag)
        if by_tag != digest:
            raise SignatureError(f"Tag {tag} names {by_tag}, not {digest}.")
    if digest is not None and served != digest:
        raise SignatureError(f"The registry serves {served} for {ref}, not {digest}.")
    result = do_verify(registry, repo, served, key, need_attestations=lock_path is not None,
                       reference=f"{host}/{repo}")
    if lock_path is not None and raw is not None:
        mine = hashlib.sha256(raw).hexdigest()
        locks: list[dict[str, Any]] = [
            p["lockfile"] for p in result.attestations.get(LOCK_PREDICATE, [])
            if isinstance(p, dict) and isinstance(p.get("lockfile"), dict)]
        if not locks:
            raise SignatureError("No lockfile attestation for this image.")
        if not any(x.get("sha256") == mine for x in locks):
            names = ", ".join(f"{x.get('name')} (sha256 {str(x.get('sha256'))[:12]}…)"
                              for x in locks)
            raise SignatureError(f"The attested lockfile ({names}) is not {lock_path}.")
        want = expected_label(lock)
        try:
            manifest = json.loads(registry.get_manifest(repo, served))
            config = json.loads(registry.get_blob(repo, manifest["config"]["digest"]))
            labels = (config.get("config") or {}).get("Labels") or {}
            label = labels.get(LOCK_LABEL) if isinstance(labels, dict) else None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SignatureError(f"The image config of {served} cannot be read ({exc}).") from exc
        if want is None or label != want:
            raise SignatureError(f"The image label {LOCK_LABEL}={label} does not match the "
                                 f"lock's build inputs ({want}).")
        result.checks.append(f"attested lockfile is {lock_path}; the image label agrees")
    if fmt == "json":
        click.echo(json.dumps({"image": f"{host}/{repo}@{served}", "valid": True,
                               "signatures": result.signatures,
                               "attestations": sorted(result.attestations),
                               "checks": result.checks}, indent=2))
    else:
        click.echo(f"{host}/{repo}@{served}: valid")
        for check in result.checks:
            click.echo(f"  ✓ {check}")


def register(group: click.Group) -> None:
    """Add the signing commands to the ``pin`` group."""
    group.add_command(keygen)
    group.add_command(sign)
    group.add_command(verify_image)
