"""Execute a :class:`~pinning.image.plan.BuildPlan` on a Docker Engine through its SDK.

:func:`engine_client` connects; :func:`engine_build` builds the rendered context with the
network off and surfaces the errors the SDK hides in its JSON stream; :func:`export_layers`
saves the image's layer tars; :func:`build_once` runs plan, render, build, export and
normalisation in one go (no push). The Docker SDK is imported inside the functions so that
``pin --help`` stays fast. Every failure is a :class:`~pinning.errors.BuildError` (exit 8),
or :class:`~pinning.errors.GuardRefused` (exit 10) when the in-build guard stops a step.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinning.errors import BuildError, GuardRefused, PinError
from pinning.image.plan import BuildPlan, assemble, plan_build, render_context
from pinning.lockfile.models import Lockfile
from pinning.oci.documents import ImageDocs, LayerBlob
from pinning.oci.reference import parse_pinned
from pinning.oci.registry import clip_text, fetch_docs


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


def export_layers(client: Any, image_id: str) -> list[bytes]:
    """The image's uncompressed layer tars, bottom first, from ``docker save``. Raises
    :class:`BuildError` when the engine fails or the saved archive lacks a layer.
    """
    try:
        raw = b"".join(client.api.get_image(image_id))
    except engine_errors() as exc:
        raise BuildError(f"Docker Engine: cannot export {image_id}: {clip_text(str(exc))}"
                         ) from exc
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        manifest_file = tar.extractfile("manifest.json")
        if manifest_file is None:
            raise BuildError(f"docker save of {image_id} has no manifest.json")
        manifest = json.loads(manifest_file.read())
        layers = []
        for path in manifest[0]["Layers"]:
            fh = tar.extractfile(path)
            if fh is None:
                raise BuildError(f"docker save of {image_id}: layer {path} missing")
            layers.append(fh.read())
    return layers


@dataclass
class Built:
    """One build: the plan, the normalised image documents, the engine's image ID."""

    plan: BuildPlan
    docs: ImageDocs
    image_id: str


def base_blobs_of(base_ref: str) -> tuple[LayerBlob, ...]:
    """The base image's own layer blobs, read from its registry. They are reused as they
    are, so the image never depends on re-compressing the base; an unreadable base is a
    :class:`BuildError` rather than a silently different image.
    """
    return fetch_docs(parse_pinned(base_ref).registry_url, base_ref).layers


def build_once(client: Any, lock: Lockfile, base_ref: str, wheelhouse: Path, *,
               nocache: bool, progress: Callable[[str], None] | None = None) -> Built:
    """Plan, render, build on the engine, export and normalise (no push).

    ``client`` is a docker SDK client (:func:`engine_client`); ``progress`` receives each
    build log line. Raises :class:`BuildError` (exit 8) for a plan, engine or registry
    failure, :class:`GuardRefused` (exit 10) when the in-build guard stops a step.
    """
    plan = plan_build(lock, base_ref, wheelhouse)
    import docker

    try:
        try:
            base_image = client.images.get(base_ref)
        except docker.errors.ImageNotFound:
            base_image = client.images.pull(base_ref)
        base_layers = len(base_image.attrs["RootFS"]["Layers"])
        architecture = str(base_image.attrs.get("Architecture") or "amd64")
    except engine_errors() as exc:
        raise BuildError(f"Docker Engine: cannot get the base image {base_ref}: "
                         f"{clip_text(str(exc))}",
                         hint="Check the engine runs and the base's registry is reachable."
                         ) from exc
    with tempfile.TemporaryDirectory(prefix="pin-build-") as tmp:
        ctx = render_context(plan, wheelhouse, Path(tmp))
        tag = "pin-build:" + plan.input_hash[7:19]
        image_id = engine_build(client, ctx, tag=tag, nocache=nocache, progress=progress)
    docs = assemble(plan, export_layers(client, image_id), base_layers,
                    base_blobs=base_blobs_of(base_ref), architecture=architecture)
    return Built(plan=plan, docs=docs, image_id=image_id)
