"""Execute a :class:`~pinning.image.plan.BuildPlan` on a Docker Engine through its SDK.

:func:`engine_client` connects; :func:`engine_build` builds the rendered context with the
network off and surfaces the errors the SDK hides in its JSON stream; :func:`export_layers`
streams the image's layer tars out of ``docker save``, passing over the base's;
:mod:`pinning.image.build` runs a whole build with them. The Docker SDK is imported inside
the functions so that ``pin --help`` stays fast. Every failure is a
:class:`~pinning.errors.BuildError` (exit 8), or :class:`~pinning.errors.GuardRefused`
(exit 10) when the in-build guard stops a step.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import tempfile
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import IO, Any

from pinning.errors import BuildError, GuardRefused, PinError
from pinning.oci.text import clip_text
from pinning.util.jsonread import load_json
from pinning.util.progress import NULL_PROGRESS, Progress, Task


def engine_client(url: str | None) -> Any:
    """A docker SDK client for ``url`` (default ``DOCKER_HOST`` or the local socket).

    Raises :class:`BuildError` (exit 8) when the engine does not answer.
    """
    import docker

    base = url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    hint = "Start dockerd, or pass --engine unix:///path/docker.sock."
    path = base.removeprefix("unix://")
    if base.startswith("unix://") and not os.path.exists(path):
        # The SDK would try, fail and leave the socket of its failed connect open (seen
        # with docker 7 as a ResourceWarning): a missing socket file is said here.
        raise BuildError(f"Docker Engine at {url or 'the default socket'} does not answer: "
                         f"{path} does not exist.", hint=hint)
    client = None
    try:
        client = docker.DockerClient(base_url=base, timeout=600)
        client.ping()
    except docker.errors.DockerException as exc:
        if client is not None:
            client.close()
        raise BuildError(f"Docker Engine at {url or 'the default socket'} does not answer: "
                         f"{clip_text(str(exc))}", hint=hint) from exc
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
