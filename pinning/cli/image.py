"""Image commands of the CLI: ``pin build`` and ``pin rebuild``.

Loaded from :data:`pinning.cli.COMMANDS` when used. The commands parse, call
:mod:`pinning.image` (and :mod:`pinning.sign.policy` for ``--sign``) and render; the Docker
SDK, requests and cryptography are imported inside the commands so ``pin --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinning.cli.envelope import emit
from pinning.cli.options import (
    amends,
    ask_passphrase,
    ca_cert_option,
    cli_path,
    format_option,
    lock_target_option,
    output_path,
    path_given,
)
from pinning.cli.progress import end_log_line, log_lines, progress_for, quiet_option
from pinning.errors import BuildError, DriftError, UsageError
from pinning.oci.reference import ImageRef
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.image.build import Built
    from pinning.image.leftovers import Cleanup
    from pinning.lockfile.models import Lockfile
    from pinning.oci.documents import ImageDocs
    from pinning.oci.registry import Registry
    from pinning.util.progress import Progress


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


def _registry_of(lock: Lockfile, registry_url: str | None, repo: str | None,
                 ca_cert: str | None) -> tuple[Registry, str]:
    """The registry and repository to push to: ``--registry`` / ``--repo``, else the
    registry and repository of the image the lock records, else ``pin/trial``. Raises
    ``UsageError`` (exit 2) when neither ``--registry`` nor the lock names a registry.
    """
    from pinning.oci.reference import parse_pinned
    from pinning.oci.registry import Registry

    recorded = lock.image.ref.value if lock.image.ref else None
    old = parse_pinned(recorded) if recorded else None
    if registry_url is None and old is None:
        raise UsageError("The lock records no image yet, so pin does not know where to push.",
                         hint="Pass --registry URL (e.g. https://registry.example.com or "
                              "127.0.0.1:5000) and, if you like, --repo NAME.")
    ca = Path(ca_cert) if ca_cert else None
    if registry_url is None and old is not None:
        return Registry(old.registry_url, ca_cert=ca), repo or old.repository
    assert registry_url is not None
    same = old is not None and Registry(registry_url, ca_cert=ca).host == old.registry
    default = old.repository if same and old is not None else "pin/trial"
    return Registry(registry_url, ca_cert=ca), repo or default


def _wheels_dir(lock: Lockfile, wheelhouse: str | None, progress: Progress) -> Path:
    """The wheel house to build from: ``--wheelhouse``, else the lock's wheels fetched by URL
    (hash-checked) into pin's wheel cache. Raises ``BuildError`` (exit 8) when the lock
    records no wheels to fetch and no wheel house was given.
    """
    from pinning.image.fetch import default_wheel_cache, fetch_wheels

    _check_wheels(lock, wheelhouse)
    if wheelhouse is not None:
        return Path(wheelhouse)
    return fetch_wheels(lock, default_wheel_cache(), progress=progress)


def _check_wheels(lock: Lockfile, wheelhouse: str | None) -> None:
    """Raise ``BuildError`` (exit 8) when the lock records no wheels to fetch and no wheel
    house was given (checked before anything slow starts).
    """
    if wheelhouse is None and not lock.wheels:
        raise BuildError("The lock records no wheels to fetch and no --wheelhouse was given.",
                         hint="Lock the whole Python environment first (pin lock packages "
                              "LOCK), or pass --wheelhouse DIR holding the wheels of its "
                              "[packages] (an air-gapped site's local copy).")


def _report_engine(done: Cleanup) -> None:
    """Say on stderr what a build left on the engine: the image ``--keep-image`` kept, and
    each image of the build pin could not remove, with why.
    """
    end_log_line()
    if done.kept:
        click.echo(printable(f"Kept the built image on the engine as {done.kept} "
                             "(--keep-image).", newlines=False), err=True)
    for image_id, why in done.left:
        click.echo(printable(f"pin: warning: left image {image_id} on the engine: {why}",
                             newlines=False), err=True)


_KEEP_HELP = ("Leave the image built on the engine (tagged pin-build:HASH) and its step "
              "images there, to run or inspect it; by default pin removes them.")

_WHEELHOUSE_HELP = ("Folder holding the lock's wheels (an air-gapped site's copy; default: "
                    "fetch the wheels `pin lock packages` recorded, by URL and sha256, into "
                    "$PIN_CACHE_DIR/wheels).")


@click.command()
@amends("lock_path")
@click.argument("lock_path", metavar="LOCK", type=click.Path())
@click.option("--base", metavar="HOST/REPO@sha256:...",
              help="Base image by digest (pin base build prints one; a vendor base such as "
                   "docker.io/rocm/pytorch@sha256:... works too); recorded in the lock "
                   "(default: the lock's).")
@click.option("--wheelhouse", metavar="DIR", type=click.Path(file_okay=False),
              callback=path_given, help=_WHEELHOUSE_HELP)
@click.option("--registry", "registry_url", metavar="URL",
              help="Registry to push to: https://HOST[:PORT] or HOST[:PORT] (plain HTTP only "
                   "for 127.0.0.1 / localhost). Default: the registry of the image the lock "
                   "records.")
@click.option("--repo", metavar="NAME",
              help="Repository name (default: the lock's image's, else pin/trial).")
@click.option("--engine", metavar="URL", help="Docker Engine (default: DOCKER_HOST).")
@click.option("--no-cache", is_flag=True, help="Build from scratch even if the lock's image "
              "is already in the registry.")
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Write the updated lock here instead ('-': standard output, messages then "
                   "go to stderr; exit 2 when it cannot be written).")
@click.option("--sign", "sign_key", metavar="KEY", type=click.Path(),
              help="Sign the image and attest the lock and the build with this private key.")
@click.option("--keep-image", is_flag=True, help=_KEEP_HELP)
@lock_target_option
@ca_cert_option
@quiet_option
@format_option
def build(lock_path: str, base: str | None, wheelhouse: str | None,
          registry_url: str | None, repo: str | None, engine: str | None, no_cache: bool,
          output: str | None, sign_key: str | None, keep_image: bool, target: str | None,
          ca_cert: str | None, quiet: bool, fmt: str) -> None:
    """Build the trial image LOCK describes, normalise it, push it, record its digest.

    Steps, each with progress on standard error: fetch the wheels the lock records (by URL,
    sha256-checked; or take them from --wheelhouse), pull the base by digest through the
    engine (credentials from the Docker config), build with the network off (pip
    --require-hashes, no index), export, rewrite the layers deterministically (sorted
    entries, the lock's epoch, no owners, no caches), compress them in parallel with a pinned
    compressor, and push the exact bytes (blobs the registry has are skipped, the base's are
    mounted). The same lock gives the same manifest digest every time. When the lock's image
    is already in the registry with the same inputs, nothing is built.

    Once the lock is updated (or the build failed) pin removes from the engine the image
    tagged pin-build:HASH and each step's image (its build cache: a changed lock builds
    again from the base); the base, images that were there before and images others tagged
    stay (--keep-image: all stay). The pushed image is in the registry.

    Exit 8 for a build, engine or registry failure; the lock is only updated after the
    registry holds the image, and not when another command changed it meanwhile (exit 5).
    LOCK '-' reads standard input and writes the updated lock to standard output (unless -o).
    -o may not name another input (exit 2); -o naming LOCK itself (links followed) is the
    same in-place update as no -o. With a multi-target lock (pin lock's pin.lock) --target
    NAME builds that target's image and records it in its section, the others unchanged.
    """
    from pinning.image.plan import plan_build
    from pinning.image.record import already_built, base_of, publish
    from pinning.lockfile.io import read_lock_at
    from pinning.sign.policy import sign_and_attest, signing_key

    dest = cli_path(output or lock_path)
    to_stdout = str(dest) == "-"
    _check_stdout(to_stdout, fmt, sign_key)
    read = read_lock_at(cli_path(lock_path), target)
    raw, lock = read.raw, read.lock
    key = signing_key(Path(sign_key), ask_passphrase) if sign_key else None  # before building
    base_ref = base_of(lock, base)
    registry, repo = _checked_inputs(lock, base, registry_url, repo, ca_cert, wheelhouse)
    ca = Path(ca_cert) if ca_cert else None
    with progress_for(fmt, quiet=quiet) as progress:
        registry.ping()  # before a long fetch: a registry that is not there fails fast
        wheels = _wheels_dir(lock, wheelhouse, progress)
        plan = plan_build(lock, base_ref, wheels)
        if not no_cache and already_built(registry, lock, repo, plan.input_hash):
            _answer_unchanged(lock_path, raw, lock.image.digest.value, registry, repo, key,
                              ca, to_stdout=to_stdout, fmt=fmt, target=read.target)
            return
        in_place = not to_stdout and (
            output is None or dest.resolve() == cli_path(lock_path).resolve())
        built, ref = _build_and_publish(
            engine, lock, base_ref, wheels, keep_image=keep_image, no_cache=no_cache, ca=ca,
            publish_to=lambda b: publish(registry, repo, lock, b, dest,
                                         if_unchanged=raw if in_place else None,
                                         into=read, progress=progress),
            log=log_lines(fmt, quiet=quiet), progress=progress)
    if key is not None:
        sign_and_attest(ref, key, dest, registry.base, ca_cert=ca, target=read.target)
    _answer_built(built, ref, dest, signed=key is not None, fmt=fmt)


def _checked_inputs(lock: Lockfile, base: str | None, registry_url: str | None,
                    repo: str | None, ca_cert: str | None, wheelhouse: str | None
                    ) -> tuple[Registry, str]:
    """The registry and repository to push to, after the checks that fail fast (exit 2)
    before a long fetch: ``--base`` pinned by digest, the lock's wheels known.
    """
    from pinning.oci.reference import parse_pinned

    if base is not None:
        parse_pinned(base, error=UsageError)
    registry, repo_name = _registry_of(lock, registry_url, repo, ca_cert)
    _check_wheels(lock, wheelhouse)
    return registry, repo_name


def _build_and_publish(engine: str | None, lock: Lockfile, base_ref: str, wheels: Path, *,
                       keep_image: bool,
                       no_cache: bool, ca: Path | None, publish_to: Callable[[Built], str],
                       log: Any, progress: Progress) -> tuple[Built, str]:
    """Build ``lock``'s image on ``base_ref`` with the wheels in ``wheels`` on the engine at
    ``engine`` and hand the result to ``publish_to``
    (which pushes it and records it in the lock, returning the pushed reference), while
    :func:`~pinning.image.leftovers.engine_leftovers` removes the build's images from the
    engine (unless ``keep_image``): the push needs only the layers already read, so the
    removal runs in the background while it pushes. Raises ``BuildError`` (exit 8).
    """
    from pinning.image.build import build_once
    from pinning.image.engine import engine_client
    from pinning.image.leftovers import clean_early, engine_leftovers

    client = engine_client(engine)
    with engine_leftovers(client, keep=keep_image, report=_report_engine) as made:
        built = build_once(client, lock, base_ref, wheels, nocache=no_cache,
                           log=made.watch(log), progress=progress, ca_cert=ca)
        made.image_id = built.image_id
        end_log_line()
        clean_early(client, made)
        return built, publish_to(built)


def _answer_built(built: Built, ref: str, dest: Path, *, signed: bool, fmt: str) -> None:
    """Say what ``pin build`` pushed and where the lock went (text on stderr when the lock
    went to standard output, or the JSON result).
    """
    to_stdout = str(dest) == "-"
    if fmt == "json":
        emit({"lockfile": str(dest), "digest": built.docs.digest, "ref": ref, "built": True,
              "signed": signed, "layers": len(built.docs.layers)})
        return
    where = "standard output" if to_stdout else str(dest)
    click.echo(f"Built and pushed {ref} ({len(built.docs.layers)} layers); recorded in "
               f"{where}." + (" Signed, with lock and build attestations." if signed
                              else ""), err=to_stdout)


def _answer_unchanged(lock_path: str, raw: bytes, digest: str | None, registry: Any, repo: str,
                      key: Any, ca: Path | None, *, to_stdout: bool, fmt: str,
                      target: str | None = None) -> None:
    """The lock's image ``digest`` is already in ``registry``/``repo`` with the same inputs:
    sign it (the lock's ``target``, for a multi-target one) when ``key`` is given, pass the
    lock's bytes ``raw`` through to standard output when that is the destination, and say
    so (text or JSON).
    """
    from pinning.sign.policy import sign_and_attest

    if key is not None:
        pushed = ImageRef(registry=registry.host, repository=repo, digest=digest)
        sign_and_attest(str(pushed), key, cli_path(lock_path), registry.base, ca_cert=ca,
                        target=target)
    if to_stdout:  # the lock, unchanged, is still what the caller asked to see
        _write_through(raw)
    if fmt == "json":
        emit({"lockfile": lock_path, "digest": digest, "built": False,
              "signed": key is not None})
    else:
        click.echo(f"{lock_path}: image {digest} is already in {registry.host}/{repo}"
                   "; nothing to build." + (" Signed." if key is not None else ""),
                   err=to_stdout)


@click.command()
@click.argument("lock_path", metavar="LOCK", type=click.Path())
@click.option("--wheelhouse", metavar="DIR", type=click.Path(file_okay=False),
              callback=path_given, help=_WHEELHOUSE_HELP)
@click.option("--runs", default=1, show_default=True, type=click.IntRange(1, 100),
              help="How many builds from scratch to compare.")
@click.option("--engine", metavar="URL", help="Docker Engine (default: DOCKER_HOST).")
@click.option("--registry", "registry_url", metavar="URL",
              help="Registry holding the lock's image, to name the files that differ "
                   "(default: the one its reference names).")
@click.option("--keep-image", is_flag=True,
              help="Leave the last run's image on the engine (tagged pin-build:HASH) and its "
                   "step images, to run or inspect it; by default pin removes each run's.")
@lock_target_option
@ca_cert_option
@quiet_option
@format_option
def rebuild(lock_path: str, wheelhouse: str | None, runs: int, engine: str | None,
            registry_url: str | None, keep_image: bool, target: str | None,
            ca_cert: str | None, quiet: bool, fmt: str) -> None:
    """Build LOCK's image again from scratch (no engine cache) and prove the manifest digest
    equals the one the lock records; with --runs N, N times.

    On a difference exit 6 and print the first differing layer and the files that differ
    (path, size, mode, mtime, content hash), against the registry's copy of the lock's
    image. Exit 8 for build, engine or registry failures.

    After each run pin removes from the engine the image it built (pin-build:HASH) and the
    intermediate images of its steps, as pin build does; the base and every image that was
    on the engine before stay. --keep-image leaves the last run's (the one that differed or
    failed, if any). --target NAME: that target of a multi-target lock.
    """
    from pinning.image.build import build_once
    from pinning.image.engine import engine_client
    from pinning.image.leftovers import engine_leftovers
    from pinning.image.record import base_of
    from pinning.lockfile.io import read_lock

    lock = read_lock(cli_path(lock_path), target)
    want = lock.image.digest.value
    if not want:
        raise BuildError(f"{lock_path} records no image digest.",
                         hint="Build it first: pin build LOCK --registry URL.")
    base_ref = base_of(lock, None)
    ca = Path(ca_cert) if ca_cert else None
    digests: list[str] = []
    first = None
    with progress_for(fmt, quiet=quiet) as progress:
        wheels = _wheels_dir(lock, wheelhouse, progress)
        client = engine_client(engine)
        for i in range(runs):
            with engine_leftovers(client, keep=keep_image, report=_report_engine) as made:
                built = build_once(client, lock, base_ref, wheels, nocache=True,
                                   log=made.watch(log_lines(fmt, quiet=quiet)),
                                   progress=progress, ca_cert=ca)
                made.image_id = built.image_id
                end_log_line()
                digests.append(built.docs.digest)
                if fmt != "json":
                    mark = "identical" if built.docs.digest == want else "DIFFERENT"
                    click.echo(f"run {i + 1}/{runs}: {built.docs.digest} {mark}")
                if built.docs.digest != want:
                    _differs(lock_path, lock, want, built, first, digests, registry_url, fmt,
                             ca)
                made.keep = keep_image and i == runs - 1  # an identical earlier run goes
            first = first or built.docs
    if fmt == "json":
        emit({"lockfile": lock_path, "expected": want, "digests": digests, "identical": True})
    else:
        click.echo(f"{runs} rebuild(s) from scratch gave {want}.")


def _differs(lock_path: str, lock: Lockfile, want: str, built: Built, first: ImageDocs | None,
             digests: list[str], registry_url: str | None, fmt: str, ca: Path | None) -> None:
    """Print what differs between the lock's image and a rebuild and raise ``DriftError``
    (exit 6).
    """
    from pinning.image.record import diff_images, recorded_docs

    expected = recorded_docs(lock, registry_url, ca_cert=ca) or first
    lines = diff_images(expected, built.docs) if expected is not None else [
        "pass --registry URL to name the files that differ"]
    if fmt == "json":
        emit({"lockfile": lock_path, "expected": want, "digests": digests,
              "differences": lines})
    else:
        click.echo("\n".join(printable(line, newlines=False) for line in lines))
    raise DriftError(f"Rebuild {len(digests)} of {lock_path} gave {built.docs.digest}, the "
                     f"lock records {want}.",
                     hint="The differing files above are not reproducible; fix the step that "
                          "writes them.")
