"""Execute a :class:`~pinning.image.plan.BuildPlan` on a Docker Engine through its SDK.

:func:`engine_client` connects; :func:`pull_base` pulls the base by digest (with the Docker
config's login); :func:`engine_build` builds the rendered context with the network off and
surfaces the errors the SDK hides in its JSON stream; :func:`export_layers` streams the
image's layer tars out of ``docker save``, passing over the base's; :func:`build_once` runs
plan, pull, render, build, export, normalisation and compression in one go (no push). The
Docker SDK is imported inside the functions so that ``pin --help`` stays fast. Every
failure is a :class:`~pinning.errors.BuildError` (exit 8), or
:class:`~pinning.errors.GuardRefused` (exit 10) when the in-build guard stops a step.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import tempfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pinning.errors import BuildError, GuardRefused, PinError
from pinning.image.plan import BuildPlan, assemble, plan_build, render_context
from pinning.lockfile.models import Lockfile
from pinning.oci.auth import engine_auth
from pinning.oci.documents import ImageDocs
from pinning.oci.reference import parse_pinned
from pinning.oci.registry import clip_text, fetch_docs
from pinning.util.jsonread import load_json
from pinning.util.progress import NULL_PROGRESS, Progress, Task


def engine_client(url: str | None) -> Any:
    """A docker SDK client for ``url`` (default ``DOCKER_HOST`` or the local socket).

    Raises :class:`BuildError` (exit 8) when the engine does not answer.
    """
    import docker

    try:
        client = docker.DockerClient(base_url=url or os.environ.get("DOCKER_HOST")
                                     or "unix:///var/run/docker.sock", timeout=600)
        client.ping()
    except docker.errors.DockerException as exc:
        raise BuildError(f"Docker Engine at {url or 'the default socket'} does not answer: "
                         f"{clip_text(str(exc))}", hint="Start dockerd, or pass --engine unix:///path/docker.sock."
                         ) from exc
    return client


def build_tag(input_hash: str) -> str:
    """The engine tag of a build: ``pin-build:`` and 12 hex digits of the plan's
    ``input_hash`` (``sha256:<hex>``), e.g. ``pin-build:1a2b3c4d5e6f``.
    """
    return "pin-build:" + input_hash.removeprefix("sha256:")[:12]


def engine_errors() -> tuple[type[BaseException], ...]:
    """What the Docker SDK may raise when the engine fails or goes away mid-stream."""
    import docker
    import requests
    import urllib3

    return (docker.errors.DockerException, requests.RequestException,
            urllib3.exceptions.HTTPError, OSError, ValueError, KeyError)


def engine_build(client: Any, context: Path, *, tag: str, nocache: bool = False,
                 progress: Callable[[str], None] | None = None) -> str:
    """Build ``context`` on the engine (network off) as ``tag``; return the image ID.

    ``progress`` receives each build log line. The SDK reports build errors inside its JSON
    stream, not as exceptions: they become a :class:`BuildError` naming the failing step
    with its last log lines, or :class:`GuardRefused` (exit 10) when the in-build guard
    printed ``PIN-GUARD:`` lines.
    """
    step = "?"
    tail: list[str] = []
    image_id = None
    failure: PinError | None = None
    try:
        stream: Iterator[dict[str, Any]] = client.api.build(
            path=str(context), tag=tag, rm=True, forcerm=True, nocache=nocache,
            network_mode="none", decode=True, pull=False)
        for chunk in stream:
            text = str(chunk.get("stream", "")).rstrip()
            if text:
                for line in text.splitlines():
                    if line.startswith("Step "):
                        step = line
                    tail = [*tail, clip_text(line, 1000, squeeze=False)][-12:]
                    if progress:
                        progress(line)
            if failure is None and ("error" in chunk or "errorDetail" in chunk):
                msg = chunk.get("error") or chunk.get("errorDetail", {}).get("message", "")
                guard = [line.removeprefix("PIN-GUARD: ") for line in tail
                         if line.startswith("PIN-GUARD: ")]
                if guard:
                    failure = GuardRefused(
                        "The build-time guard stopped the build: a locked distribution "
                        "changed.\n" + "\n".join(f"  {g}" for g in guard)
                        + f"\n  ({clip_text(step)})",
                        hint="Apply the matching guard rule's remedy (pin guard list), e.g. "
                             "set AITER_USE_SYSTEM_TRITON=1 in the lock's [environment].")
                else:
                    failure = BuildError(
                        f"Image build failed at {clip_text(step)}: {clip_text(str(msg))}\n"
                        + "\n".join(tail[-8:]),
                        hint="Fix the failing step (a missing wheel, a hash mismatch) and build "
                             "again.")
                # Read the stream to its end (the engine ends it after an error), so that the
                # connection to the engine is closed before the error is raised.
            aux = chunk.get("aux")
            if isinstance(aux, dict) and "ID" in aux:
                image_id = str(aux["ID"])
    except engine_errors() as exc:
        raise BuildError(f"Docker Engine: {clip_text(str(exc))}",
                         hint="Check the engine is running (DOCKER_HOST / --engine).") from exc
    if failure is not None:
        raise failure
    if image_id is None:
        raise BuildError("Image build ended without an image ID.\n" + "\n".join(tail[-8:]))
    return image_id


_SPOOL_BYTES = 64 * 1024 * 1024
"""A legacy ``docker save`` layer is spooled to disk past this many bytes while it is hashed
(to tell a base layer, which is dropped, from one pin keeps)."""
_CHUNK = 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class _ChunkReader(io.RawIOBase):
    """A readable stream over an iterator of byte chunks (the engine's HTTP answer),
    reporting each chunk's size to ``task``.
    """

    def __init__(self, chunks: Iterator[bytes], task: Task) -> None:
        self._chunks = chunks
        self._buf = b""
        self._pos = 0
        self._task = task

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        while self._pos >= len(self._buf):
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._task.advance(len(chunk))
            self._buf, self._pos = chunk, 0
        n = min(len(buf), len(self._buf) - self._pos)
        buf[:n] = self._buf[self._pos:self._pos + n]
        self._pos += n
        return n


def _blob_digest(name: str) -> str | None:
    """``sha256:<hex>`` for an OCI-layout member name ``blobs/sha256/<hex>``, else ``None``."""
    head, _, hexa = name.rpartition("/")
    return f"sha256:{hexa}" if head == "blobs/sha256" and len(hexa) == 64 else None


def _read_unless(fh: IO[bytes], skip: Collection[str]) -> bytes | None:
    """The bytes of ``fh``, or ``None`` (and nothing kept) when their sha256 is in ``skip``;
    spooled to disk past :data:`_SPOOL_BYTES` meanwhile.
    """
    digest = hashlib.sha256()
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES, prefix="pin-layer-") as spool:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            spool.write(chunk)
        if "sha256:" + digest.hexdigest() in skip:
            return None
        spool.seek(0)
        return spool.read()


def _uncompressed(data: bytes, path: str) -> bytes:
    """A saved layer as a plain tar: gzip-compressed ones (an engine with the containerd
    image store saves the blobs it pulled) are decompressed; zstd is refused.
    """
    if data.startswith(_GZIP_MAGIC):
        return gzip.decompress(data)
    if data.startswith(_ZSTD_MAGIC):
        raise BuildError(f"docker save: layer {path} is zstd-compressed, which pin does not "
                         "read.", hint="Use a base image with gzip layers.")
    return data


def _read_save(reader: IO[bytes], skip: Collection[str]) -> tuple[dict[str, bytes], set[str]]:
    """Read a ``docker save`` stream: the regular members kept (name -> bytes) and the names
    of the layers passed over because their digest is in ``skip``.
    """
    held: dict[str, bytes] = {}
    skipped: set[str] = set()
    with tarfile.open(fileobj=reader, mode="r|") as tar:
        for member in tar:
            if not member.isreg():
                continue
            if _blob_digest(member.name) in skip:
                skipped.add(member.name)  # the stream passes over its data unread
                continue
            fh = tar.extractfile(member)
            if fh is None:
                continue
            data = (_read_unless(fh, skip) if skip and member.name.endswith("/layer.tar")
                    else fh.read())
            if data is None:
                skipped.add(member.name)
            else:
                held[member.name] = data
    return held, skipped


def export_layers(client: Any, image_id: str, *, skip: Collection[str] = (),
                  progress: Progress = NULL_PROGRESS) -> list[bytes | None]:
    """The image's uncompressed layer tars, bottom first, from a streamed ``docker save``.

    A layer whose digest is in ``skip`` (``sha256:<hex>``: the base's diff IDs and blob
    digests) is ``None`` in the list and never held in memory: in an OCI-layout archive
    (Docker Engine 25 and later) it is passed over by name, in a legacy one (``ID/layer.tar``)
    it is hashed on the way, spooled to disk past 64 MiB. ``progress`` gets an ``export``
    task counting the bytes read from the engine. Raises :class:`BuildError` when the
    engine fails or the saved archive is malformed or lacks a layer.
    """
    short = image_id.removeprefix("sha256:")[:12]
    task = progress.task(f"export {short}", None)
    try:
        reader = io.BufferedReader(_ChunkReader(iter(client.api.get_image(image_id)), task),
                                   buffer_size=_CHUNK)
        held, skipped = _read_save(reader, skip)
    except engine_errors() as exc:
        raise BuildError(f"Docker Engine: cannot export {image_id}: {clip_text(str(exc))}"
                         ) from exc
    except tarfile.TarError as exc:
        raise BuildError(f"docker save of {image_id} is not a readable tar: "
                         f"{clip_text(str(exc))}") from exc
    finally:
        task.done()
    try:
        manifest = load_json(held["manifest.json"], BuildError,
                             label=f"docker save of {image_id}: manifest.json")
        paths = [str(p) for p in manifest[0]["Layers"]]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise BuildError(f"docker save of {image_id} has no readable manifest.json") from exc
    layers: list[bytes | None] = []
    for path in paths:
        if path in skipped:
            layers.append(None)
        elif path in held:
            layers.append(_uncompressed(held.pop(path), path))
        else:
            raise BuildError(f"docker save of {image_id}: layer {path} missing")
    return layers


@dataclass
class Built:
    """One build: the plan, the normalised image documents, the engine's image ID."""

    plan: BuildPlan
    docs: ImageDocs
    image_id: str


def base_docs(base_ref: str, *, platform: str = "linux/amd64",
              ca_cert: Path | None = None) -> ImageDocs:
    """The base image's manifest, config and layer descriptors, read from its registry
    (``fetch_docs(..., layers=False)``: the layers' bytes stay there; each
    :class:`~pinning.oci.documents.LayerBlob` has ``data`` ``None`` and ``source`` = the
    base's ``HOST/REPO``); an index is resolved to ``platform``'s manifest. ``ca_cert`` as
    for :class:`~pinning.oci.registry.Registry`. Raises :class:`BuildError` (exit 8) for a
    registry failure, so an unreadable base never silently gives a different image.
    """
    return fetch_docs(parse_pinned(base_ref).registry_url, base_ref, layers=False,
                      platform=platform, ca_cert=ca_cert)


def engine_platform(image: Any) -> str:
    """``os/arch[/variant]`` of an SDK image (the engine's pick of a multi-platform base)."""
    attrs = getattr(image, "attrs", None) or {}
    parts = [str(attrs.get("Os") or "linux"), str(attrs.get("Architecture") or "amd64")]
    if attrs.get("Variant"):
        parts.append(str(attrs["Variant"]))
    return "/".join(parts)


def pull_base(client: Any, base_ref: str, *, progress: Progress = NULL_PROGRESS) -> Any:
    """Make sure the engine holds ``base_ref`` (``HOST/REPO[:TAG]@sha256:...``), pulling it
    by its digest alone (never by tag) with the Docker config's credentials for its host
    (:func:`pinning.oci.auth.engine_auth`); return the SDK image.

    ``progress`` gets one ``pull`` task per layer, in bytes downloaded. Errors the engine
    reports inside its pull stream, and engine failures, are :class:`BuildError` (exit 8).
    """
    import docker

    ref = parse_pinned(base_ref)
    pinned = f"{ref.name}@{ref.required_digest}"
    try:
        return client.images.get(pinned)
    except docker.errors.ImageNotFound:
        pass
    except engine_errors() as exc:
        raise BuildError(f"Docker Engine: cannot look up the base image {pinned}: "
                         f"{clip_text(str(exc))}") from exc
    tasks: dict[str, tuple[Task, int]] = {}
    failure = ""
    image = None
    try:
        stream: Iterator[dict[str, Any]] = client.api.pull(
            ref.name, tag=ref.required_digest, stream=True, decode=True,
            auth_config=engine_auth(ref.registry))
        for chunk in stream:
            if not failure and ("error" in chunk or "errorDetail" in chunk):
                failure = str(chunk.get("error")
                              or chunk.get("errorDetail", {}).get("message", "") or chunk)
            _pull_progress(chunk, tasks, progress)
        image = None if failure else client.images.get(pinned)
    except engine_errors() as exc:
        failure = str(exc) or type(exc).__name__
    finally:
        for task, _ in tasks.values():
            task.done()
    if failure or image is None:
        raise BuildError(f"Docker Engine: cannot pull the base image {pinned}: "
                         f"{clip_text(failure)}",
                         hint="Check the reference, that the engine reaches the registry, and "
                              "the login for it in the Docker config (docker login HOST).")
    return image


def _pull_progress(chunk: dict[str, Any], tasks: dict[str, tuple[Task, int]],
                   progress: Progress) -> None:
    """Advance the per-layer pull task from one line of the engine's pull stream
    (``{"status": "Downloading", "id": ..., "progressDetail": {"current", "total"}}``).

    The engine coalesces byte updates: a layer fetched quickly may reach ``Download
    complete`` without any ``Downloading`` line; it still gets its (byte-less) task, so
    every pulled layer is reported.
    """
    layer, status = str(chunk.get("id") or ""), str(chunk.get("status") or "")
    detail = chunk.get("progressDetail")
    if not layer or not isinstance(detail, dict):
        detail = {}
    current = detail.get("current")
    if status == "Downloading" and isinstance(current, int):
        total = detail.get("total")
        task, seen = tasks.get(layer) or (
            progress.task(f"pull {layer}", total if isinstance(total, int) else None), 0)
        task.advance(max(0, current - seen))
        tasks[layer] = (task, max(seen, current))
    elif status in ("Download complete", "Pull complete") and layer:
        if layer not in tasks:  # a small layer the engine fetched without a byte update
            tasks[layer] = (progress.task(f"pull {layer}", None), 0)
        tasks[layer][0].done()
    elif status == "Already exists" and layer in tasks:
        tasks[layer][0].done()


def build_once(client: Any, lock: Lockfile, base_ref: str, wheelhouse: Path, *,
               nocache: bool, log: Callable[[str], None] | None = None,
               progress: Progress = NULL_PROGRESS, jobs: int | None = None,
               ca_cert: Path | None = None) -> Built:
    """Plan, pull the base by digest, render, build on the engine, export, normalise and
    compress (no push).

    ``client`` is a docker SDK client (:func:`engine_client`); ``log`` receives each build
    log line; ``progress`` gets the pull, export, normalise and compress tasks (bytes);
    ``jobs`` compression threads (default: the CPUs); ``ca_cert`` the CA of the base's
    registry (before ``PIN_REGISTRY_CA`` and Docker's ``certs.d``). The base's
    layers are never held in memory nor re-compressed when the engine's diff IDs are the
    base's: the image reuses the base's blobs (``data`` ``None``, served from the base's
    repository). Raises :class:`BuildError` (exit 8) for a plan, engine or registry
    failure, :class:`GuardRefused` (exit 10) when the in-build guard stops a step.
    """
    plan = plan_build(lock, base_ref, wheelhouse)
    pulled = pull_base(client, base_ref, progress=progress)
    check_base_python(client, pulled, lock, base_ref)
    base = base_docs(base_ref, platform=engine_platform(pulled), ca_cert=ca_cert)
    with tempfile.TemporaryDirectory(prefix="pin-build-") as tmp:
        ctx = render_context(plan, wheelhouse, Path(tmp))
        image_id = engine_build(client, ctx, tag=build_tag(plan.input_hash), nocache=nocache,
                                progress=log)
    layers = export_layers(client, image_id, skip=base_skip(client, image_id, base),
                           progress=progress)
    docs = assemble(plan, layers, base, progress=progress, jobs=jobs)
    return Built(plan=plan, docs=docs, image_id=image_id)


_PYTHON_VERSION = "import sys; print('%d.%d' % sys.version_info[:2])"


def base_python(client: Any, image: Any) -> str | None:
    """``X.Y`` of the ``python3`` in the SDK ``image`` (run once, network off, as root, the
    base's entrypoint replaced), or ``None`` when the image has no ``python3`` that runs.
    Raises :class:`BuildError` when the engine cannot run a container at all.
    """
    import docker

    try:
        out = client.containers.run(image, entrypoint=["python3", "-c", _PYTHON_VERSION],
                                    command=[], network_mode="none", user="0", remove=True)
    except docker.errors.ContainerError:
        return None
    except engine_errors() as exc:  # APIError is a DockerException
        message = str(exc)
        if "executable file not found" in message or "no such file" in message.lower():
            return None
        raise BuildError(f"Docker Engine: cannot run the base image to read its Python: "
                         f"{clip_text(message)}") from exc
    text = out.decode("utf-8", "replace").strip() if isinstance(out, bytes) else str(out)
    return text if text.count(".") == 1 and text.replace(".", "").isdigit() else None


def check_base_python(client: Any, image: Any, lock: Lockfile, base_ref: str) -> None:
    """Raise :class:`BuildError` (exit 8) before the build when the lock's ``[python]``
    (the target ``pin lock packages`` resolved wheels for) names another ``X.Y`` than the
    base's ``python3``: the locked wheels would not install, or not run. Nothing is checked
    when the lock records no target or the base has no ``python3``.
    """
    if lock.python is None:
        return
    found = base_python(client, image)
    if found is not None and found != lock.python.version:
        raise BuildError(
            f"The base {base_ref} runs Python {found}, but the lock's wheels were resolved "
            f"for Python {lock.python.version} ([python] version).",
            hint=f"Resolve them again for the base: pin lock packages LOCK --python-version "
                 f"{found}; or build on a base with Python {lock.python.version}.")


def base_skip(client: Any, image_id: str, base: ImageDocs) -> set[str]:
    """The digests :func:`export_layers` may pass over: the base's diff IDs and blob digests
    when the engine's image starts with exactly the base's diff IDs, else none. Raises
    :class:`BuildError` when the engine cannot inspect the image.
    """
    try:
        diff_ids = [str(d) for d in client.images.get(image_id).attrs["RootFS"]["Layers"]]
    except engine_errors() as exc:
        raise BuildError(f"Docker Engine: cannot inspect the built image {image_id}: "
                         f"{clip_text(str(exc))}") from exc
    base_ids = [b.diff_id for b in base.layers]
    if diff_ids[:len(base_ids)] != base_ids:
        return set()
    return set(base_ids) | {b.digest for b in base.layers}
