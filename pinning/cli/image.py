"""Image commands of the CLI: ``pin build`` and ``pin rebuild``.

Registered on the main group by :func:`register`; the Docker SDK and requests are imported
inside the commands so ``pin --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from pinning.errors import BuildError, DriftError

FORMAT = click.Choice(["text", "json"])


def _progress(fmt: str) -> object:
    """A progress printer for build log lines: one rewritten line on a terminal, plain
    lines otherwise, nothing for JSON output (stderr, so stdout stays machine-readable).
    """
    if fmt == "json":
        return None
    tty = sys.stderr.isatty()

    def show(line: str) -> None:
        if tty:
            click.echo("\r\033[K  " + line[:110], err=True, nl=False)
        else:
            click.echo("  " + line, err=True)

    return show


def _end_progress() -> None:
    if sys.stderr.isatty():
        click.echo("\r\033[K", err=True, nl=False)


@click.command()
@click.argument("lock_path", metavar="LOCK", type=click.Path(dir_okay=False))
@click.option("--base", metavar="HOST/REPO@sha256:...",
              help="Base image by digest (recorded in the lock; default: the lock's).")
@click.option("--wheelhouse", required=True, metavar="DIR", type=click.Path(file_okay=False),
              help="Folder of wheels for the lock's packages (pip --find-links; no index).")
@click.option("--registry", "registry_url", required=True, metavar="URL",
              help="OCI registry to push to, e.g. http://127.0.0.1:5000.")
@click.option("--repo", default="pin/trial", show_default=True, help="Repository name.")
@click.option("--engine", metavar="URL", help="Docker Engine (default: DOCKER_HOST).")
@click.option("--no-cache", is_flag=True, help="Build from scratch even if the lock's image "
              "is already in the registry.")
@click.option("-o", "--output", metavar="FILE", help="Write the updated lock here instead.")
@click.option("--sign", "sign_key", metavar="KEY", type=click.Path(dir_okay=False),
              help="Sign the image and attest the lock and the build with this private key.")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def build(lock_path: str, base: str | None, wheelhouse: str, registry_url: str, repo: str,
          engine: str | None, no_cache: bool, output: str | None, sign_key: str | None,
          fmt: str) -> None:
    """Build the trial image LOCK describes, normalise it, push it, record its digest.

    The image is the base (by digest) plus the lock's Python packages installed from the
    wheel house with --require-hashes, with the network off. pin rewrites the layers
    deterministically (sorted entries, the lock's epoch, no owners, no caches) and pushes
    the exact bytes, so the same lock gives the same manifest digest every time. The first
    build records every wheel's sha256 in the lock. When the lock's image is already in the
    registry with the same inputs, nothing is built.

    Exit 8 for a build, engine or registry failure; the lock is only updated after the
    registry holds the image.
    """
    from pinning.image.plan import plan_build
    from pinning.image.record import already_built, base_of, build_once, engine_client, record
    from pinning.lockfile.io import read_lock, write_lock
    from pinning.oci.registry import Registry

    lock = read_lock(Path(lock_path))
    signing_key = None
    if sign_key:  # the passphrase is asked before anything is built
        from pinning.cli.sign import password
        from pinning.sign.crypto import load_private

        signing_key = load_private(Path(sign_key), password())
    base_ref = base_of(lock, base)
    plan = plan_build(lock, base_ref, Path(wheelhouse))
    registry = Registry(registry_url)
    registry.ping()
    if not no_cache and already_built(registry, lock, repo, plan.input_hash):
        digest = lock.image.digest.value
        if signing_key is not None:
            from pinning.cli.sign import sign_and_attest

            sign_and_attest(f"{registry.host}/{repo}@{digest}", signing_key, Path(lock_path),
                            registry_url)
        if fmt == "json":
            click.echo(json.dumps({"lockfile": lock_path, "digest": digest, "built": False,
                                   "signed": signing_key is not None}))
        else:
            click.echo(f"{lock_path}: image {digest} is already in {registry.host}/{repo}; "
                       "nothing to build." + (" Signed." if signing_key is not None else ""))
        return
    client = engine_client(engine)
    show = _progress(fmt)
    built = build_once(client, lock, base_ref, Path(wheelhouse), nocache=no_cache,
                       progress=show)  # type: ignore[arg-type]
    _end_progress()
    tag = plan.input_hash[7:19]
    digest = registry.push_image(repo, tag, built.docs)
    if registry.manifest_digest(repo, digest) != digest:
        raise BuildError(f"Registry {registry.host} does not serve {repo}@{digest} after the push.")
    ref = f"{registry.host}/{repo}@{digest}"
    new = record(lock, built, ref)
    dest = Path(output or lock_path)
    write_lock(new, dest)
    if signing_key is not None:
        from pinning.cli.sign import sign_and_attest

        sign_and_attest(ref, signing_key, dest, registry_url)
    if fmt == "json":
        click.echo(json.dumps({"lockfile": str(dest), "digest": digest, "ref": ref,
                               "built": True, "signed": bool(sign_key),
                               "layers": len(built.docs.layers)}))
    else:
        click.echo(f"Built and pushed {ref} ({len(built.docs.layers)} layers); recorded in "
                   f"{dest}." + (" Signed, with lock and build attestations." if sign_key
                                 else ""))


@click.command()
@click.argument("lock_path", metavar="LOCK", type=click.Path(dir_okay=False))
@click.option("--wheelhouse", required=True, metavar="DIR", type=click.Path(file_okay=False),
              help="Folder holding the wheels the lock records.")
@click.option("--runs", default=1, show_default=True, type=click.IntRange(1, 100),
              help="How many builds from scratch to compare.")
@click.option("--engine", metavar="URL", help="Docker Engine (default: DOCKER_HOST).")
@click.option("--registry", "registry_url", metavar="URL",
              help="Registry holding the lock's image, to name the files that differ.")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def rebuild(lock_path: str, wheelhouse: str, runs: int, engine: str | None,
            registry_url: str | None, fmt: str) -> None:
    """Build LOCK's image again from scratch (no engine cache) and prove the manifest digest
    equals the one the lock records; with --runs N, N times.

    On a difference exit 6 and print the first differing layer and the files that differ
    (path, size, mode, mtime, content hash), against the registry's copy when --registry is
    given, else against the first run. Exit 8 for build, engine or registry failures.
    """
    from pinning.image.record import base_of, build_once, diff_images, engine_client, fetch_docs
    from pinning.lockfile.io import read_lock

    lock = read_lock(Path(lock_path))
    want = lock.image.digest.value
    if not want:
        raise BuildError(f"{lock_path} records no image digest.",
                         hint="Build it first: pin build LOCK --wheelhouse DIR --registry URL.")
    base_ref = base_of(lock, None)
    client = engine_client(engine)
    show = _progress(fmt)
    digests: list[str] = []
    first = None
    for i in range(runs):
        built = build_once(client, lock, base_ref, Path(wheelhouse), nocache=True,
                           progress=show)  # type: ignore[arg-type]
        _end_progress()
        digests.append(built.docs.digest)
        if fmt != "json":
            mark = "identical" if built.docs.digest == want else "DIFFERENT"
            click.echo(f"run {i + 1}/{runs}: {built.docs.digest} {mark}")
        if built.docs.digest != want:
            if lock.image.ref and lock.image.ref.value:
                from pinning.image.record import registry_url as url_for
                from pinning.image.record import split_ref

                url = registry_url or url_for(split_ref(lock.image.ref.value)[0])
                expected = fetch_docs(url, lock.image.ref.value)
            elif first is not None:
                expected = first
            else:
                expected = None
            lines = diff_images(expected, built.docs) if expected is not None else [
                "pass --registry URL to name the files that differ"]
            if fmt == "json":
                click.echo(json.dumps({"lockfile": lock_path, "expected": want,
                                       "digests": digests, "differences": lines}))
            else:
                click.echo("\n".join(lines))
            raise DriftError(f"Rebuild {i + 1} of {lock_path} gave {built.docs.digest}, the lock "
                             f"records {want}.",
                             hint="The differing files above are not reproducible; fix the "
                                  "step that writes them.")
        first = first or built.docs
    if fmt == "json":
        click.echo(json.dumps({"lockfile": lock_path, "expected": want, "digests": digests,
                               "identical": True}))
    else:
        click.echo(f"{runs} rebuild(s) from scratch gave {want}.")


def register(group: click.Group) -> None:
    """Add the image commands to the ``pin`` group."""
    group.add_command(build)
    group.add_command(rebuild)
