"""Image commands of the CLI: ``pin build`` and ``pin rebuild``.

Registered on the main group by :func:`register`. The commands parse, call
:mod:`pinning.image` (and :mod:`pinning.sign.policy` for ``--sign``) and render; the Docker
SDK, requests and cryptography are imported inside the commands so ``pin --help`` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click

from pinning.cli.envelope import emit
from pinning.cli.options import cli_path, format_option, output_path
from pinning.errors import BuildError, DriftError, UsageError
from pinning.oci.reference import ImageRef
from pinning.util.text import printable


def _ask(confirm: bool) -> str:
    """Prompt for the key passphrase on the terminal (twice when ``confirm``)."""
    return str(click.prompt("Key passphrase", hide_input=True, confirmation_prompt=confirm))


def _progress(fmt: str) -> Callable[[str], None] | None:
    """A progress printer for build log lines: one rewritten line on a terminal, plain
    lines otherwise, nothing for JSON output (stderr, so stdout stays machine-readable).
    """
    if fmt == "json":
        return None
    tty = sys.stderr.isatty()

    def show(line: str) -> None:
        if tty:
            click.echo("\r\033[K  " + printable(line[:110], newlines=False), err=True,
                       nl=False)
        else:
            click.echo("  " + printable(line, newlines=False), err=True)

    return show


def _end_progress() -> None:
    if sys.stderr.isatty():
        click.echo("\r\033[K", err=True, nl=False)


def _check_stdout(to_stdout: bool, fmt: str, sign_key: str | None) -> None:
    """Refuse (``UsageError``, exit 2, before anything is built) what cannot share standard
    output with the lock written there: ``--format json``, and ``--sign``, which attests the
    lock file it wrote.
    """
    if to_stdout and fmt == "json":
        raise UsageError("The updated lock goes to standard output ('-') and so would "
                         "--format json; choose one.")
    if to_stdout and sign_key:
        raise UsageError("--sign attests the lock file pin build writes; with the lock on "
                         "standard output there is none.",
                         hint="Write the lock with -o FILE, or sign later: pin sign REF --key "
                              "KEY --lock FILE.")


def _write_through(data: bytes) -> None:
    """Write ``data`` to standard output (exit 2 when it cannot be written)."""
    from pinning.util.files import atomic_write_bytes

    try:
        atomic_write_bytes(Path("-"), data)
    except OSError as exc:
        raise UsageError(f"standard output cannot be written ({exc.strerror or exc}).") from exc


@click.command()
@click.argument("lock_path", metavar="LOCK", type=click.Path())
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
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Write the updated lock here instead ('-': standard output, messages then "
                   "go to stderr; exit 2 when it cannot be written).")
@click.option("--sign", "sign_key", metavar="KEY", type=click.Path(),
              help="Sign the image and attest the lock and the build with this private key.")
@format_option
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
    registry holds the image, and not when another command changed it meanwhile (exit 5).
    LOCK '-' reads standard input and writes the updated lock to standard output (unless -o).
    """
    from pinning.image.engine import build_once, engine_client
    from pinning.image.plan import plan_build
    from pinning.image.record import already_built, base_of, publish
    from pinning.lockfile.io import read_lock_bytes
    from pinning.oci.registry import Registry
    from pinning.sign.policy import sign_and_attest, signing_key

    dest = cli_path(output or lock_path)
    to_stdout = str(dest) == "-"
    _check_stdout(to_stdout, fmt, sign_key)
    raw, lock = read_lock_bytes(cli_path(lock_path))
    # The passphrase is asked before anything is built.
    key = signing_key(Path(sign_key), _ask) if sign_key else None
    base_ref = base_of(lock, base)
    plan = plan_build(lock, base_ref, Path(wheelhouse))
    registry = Registry(registry_url)
    registry.ping()
    if not no_cache and already_built(registry, lock, repo, plan.input_hash):
        digest = lock.image.digest.value
        if key is not None:
            pushed = ImageRef(registry=registry.host, repository=repo, digest=digest)
            sign_and_attest(str(pushed), key, cli_path(lock_path), registry_url)
        if to_stdout:  # the lock, unchanged, is still what the caller asked to see
            _write_through(raw)
        if fmt == "json":
            emit({"lockfile": lock_path, "digest": digest, "built": False,
                  "signed": key is not None})
        else:
            click.echo(f"{lock_path}: image {digest} is already in {registry.host}/{repo}; "
                       "nothing to build." + (" Signed." if key is not None else ""),
                       err=to_stdout)
        return
    client = engine_client(engine)
    built = build_once(client, lock, base_ref, Path(wheelhouse), nocache=no_cache,
                       progress=_progress(fmt))
    _end_progress()
    in_place = not to_stdout and (
        output is None or dest.resolve() == cli_path(lock_path).resolve())
    ref = publish(registry, repo, lock, built, dest, if_unchanged=raw if in_place else None)
    if key is not None:
        sign_and_attest(ref, key, dest, registry_url)
    if fmt == "json":
        emit({"lockfile": str(dest), "digest": built.docs.digest, "ref": ref, "built": True,
              "signed": bool(sign_key), "layers": len(built.docs.layers)})
    else:
        where = "standard output" if to_stdout else str(dest)
        click.echo(f"Built and pushed {ref} ({len(built.docs.layers)} layers); recorded in "
                   f"{where}." + (" Signed, with lock and build attestations." if sign_key
                                  else ""), err=to_stdout)


@click.command()
@click.argument("lock_path", metavar="LOCK", type=click.Path())
@click.option("--wheelhouse", required=True, metavar="DIR", type=click.Path(file_okay=False),
              help="Folder holding the wheels the lock records.")
@click.option("--runs", default=1, show_default=True, type=click.IntRange(1, 100),
              help="How many builds from scratch to compare.")
@click.option("--engine", metavar="URL", help="Docker Engine (default: DOCKER_HOST).")
@click.option("--registry", "registry_url", metavar="URL",
              help="Registry holding the lock's image, to name the files that differ.")
@format_option
def rebuild(lock_path: str, wheelhouse: str, runs: int, engine: str | None,
            registry_url: str | None, fmt: str) -> None:
    """Build LOCK's image again from scratch (no engine cache) and prove the manifest digest
    equals the one the lock records; with --runs N, N times.

    On a difference exit 6 and print the first differing layer and the files that differ
    (path, size, mode, mtime, content hash), against the registry's copy when --registry is
    given, else against the first run. Exit 8 for build, engine or registry failures.
    """
    from pinning.image.engine import build_once, engine_client
    from pinning.image.record import base_of, diff_images, recorded_docs
    from pinning.lockfile.io import read_lock

    lock = read_lock(cli_path(lock_path))
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
                           progress=show)
        _end_progress()
        digests.append(built.docs.digest)
        if fmt != "json":
            mark = "identical" if built.docs.digest == want else "DIFFERENT"
            click.echo(f"run {i + 1}/{runs}: {built.docs.digest} {mark}")
        if built.docs.digest != want:
            expected = recorded_docs(lock, registry_url)
            if expected is None:
                expected = first
            lines = diff_images(expected, built.docs) if expected is not None else [
                "pass --registry URL to name the files that differ"]
            if fmt == "json":
                emit({"lockfile": lock_path, "expected": want, "digests": digests,
                      "differences": lines})
            else:
                click.echo("\n".join(printable(line, newlines=False) for line in lines))
            raise DriftError(f"Rebuild {i + 1} of {lock_path} gave {built.docs.digest}, the lock "
                             f"records {want}.",
                             hint="The differing files above are not reproducible; fix the "
                                  "step that writes them.")
        first = first or built.docs
    if fmt == "json":
        emit({"lockfile": lock_path, "expected": want, "digests": digests, "identical": True})
    else:
        click.echo(f"{runs} rebuild(s) from scratch gave {want}.")


def register(group: click.Group) -> None:
    """Add the image commands to the ``pin`` group."""
    group.add_command(build)
    group.add_command(rebuild)
