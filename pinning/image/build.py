"""One whole build on a Docker Engine: :func:`pull_base` pulls the base by digest (with the
Docker config's login, :func:`pinning.oci.auth.engine_auth`), :func:`check_base_python`
checks its Python against the lock's wheels, and :func:`build_once` runs plan, pull, render,
build (:mod:`pinning.image.engine`), export of the layers the build added
(:func:`added_layers`), normalisation (:mod:`pinning.image.assemble`)
and compression in one go (no push). The Docker SDK is imported inside the functions so that
``pin --help`` stays fast. Every failure is a :class:`~pinning.errors.BuildError` (exit 8),
or :class:`~pinning.errors.GuardRefused` (exit 10) when the in-build guard stops a step.
"""


import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinning.errors import BuildError
from pinning.image.assemble import assemble
from pinning.image.engine import build_tag, engine_build, engine_errors, export_layers
from pinning.image.layerdirs import local_layers
from pinning.image.plan import BuildPlan, plan_build, render_context
from pinning.lockfile.models import Lockfile
from pinning.oci.auth import engine_auth
from pinning.oci.documents import ImageDocs
from pinning.oci.reference import parse_pinned
from pinning.oci.registry import fetch_docs
from pinning.oci.text import clip_text
from pinning.util.progress import NULL_PROGRESS, Progress, Task


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
    layers = added_layers(client, image_id, base, progress=progress)
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


def added_layers(client: Any, image_id: str, base: ImageDocs, *,
                 progress: Progress = NULL_PROGRESS) -> list[bytes | None]:
    """The engine image's uncompressed layer tars, bottom first, the base's ``None`` when
    the image starts with the base's diff IDs (never exported: the registry has them).
    Only the layers the build added are read, from the engine's layer store
    (:func:`~pinning.image.layerdirs.local_layers`) when it is readable here, else the
    whole image is exported with ``docker save`` (:func:`export_layers`), passing over the
    base's. ``progress`` gets one ``export`` task (bytes). Raises :class:`BuildError` as
    :func:`export_layers` and :func:`base_skip` do.
    """
    skip = base_skip(client, image_id, base)
    if skip:
        local = local_layers(client, image_id, len(base.layers), progress=progress)
        if local is not None:
            return local
    return export_layers(client, image_id, skip=skip, progress=progress)


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
