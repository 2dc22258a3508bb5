"""The Docker Engine side of running gates inside an image: connecting (:func:`connect`),
the GPUs a container gets per vendor (:func:`device_options`), which digest identifies the
image (:func:`image_identity`) and removing the containers a killed shim left
(:func:`remove_leftovers`). The shim itself is :mod:`pinning.accept.container`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pinning.errors import BuildError, UsageError
from pinning.util.text import printable

__all__ = ["ACCEPT_LABEL", "Vendor", "connect", "device_options", "engine_error",
           "image_identity", "missing_image", "remove_leftovers"]

# Every container the shim creates carries this label (value "1"); remove_leftovers only
# removes containers that do.
ACCEPT_LABEL = "dev.pin.accept"

Vendor = Literal["amd", "nvidia", "cpu"]


def device_options(vendor: Vendor, root: Path = Path("/")) -> dict[str, Any]:
    """Keyword arguments for ``containers.create`` that pass the host's GPUs of ``vendor``.

    ``amd``: ``{"devices": ["<root>/dev/kfd:/dev/kfd:rwm", "<root>/dev/dri/<node>:/dev/dri/
    <node>:rwm", ...], "group_add": [gid, ...]}`` for ``/dev/kfd`` and every entry of
    ``/dev/dri`` that is not a folder, with the group IDs (decimal strings, sorted) that own
    those nodes (the ``video`` and ``render`` groups of the host, read with ``os.stat``);
    ``nvidia``: ``{"device_requests": [DeviceRequest(count=-1, capabilities=[["gpu"]])]}``
    (every GPU, through the engine's NVIDIA runtime hook); ``cpu``: ``{}``. ``root`` is the
    folder that holds ``dev`` (``/``; a fake tree in tests). Raises
    :class:`~pinning.errors.UsageError` (exit 2) for ``amd`` when ``/dev/kfd`` is missing.
    """
    if vendor == "cpu":
        return {}
    if vendor == "nvidia":
        import docker.types

        return {"device_requests": [docker.types.DeviceRequest(count=-1,
                                                               capabilities=[["gpu"]])]}
    kfd = root / "dev" / "kfd"
    if not os.path.exists(kfd):
        raise UsageError(f"{kfd} does not exist: an AMD GPU cannot be used in a container "
                         "on this host.",
                         hint="Load the amdgpu driver (ROCm), or run the gates on a host "
                              "with an AMD GPU.")
    nodes = [kfd]
    dri = root / "dev" / "dri"
    if dri.is_dir():
        nodes += sorted(p for p in dri.iterdir() if not p.is_dir())
    devices, gids = [], set()
    for node in nodes:
        inside = "/" + node.relative_to(root).as_posix()
        devices.append(f"{node}:{inside}:rwm")
        gids.add(os.stat(node).st_gid)
    return {"devices": devices, "group_add": [str(g) for g in sorted(gids)]}


def connect(engine: str | None) -> Any:
    """A Docker SDK client for ``engine`` (a URL; ``None``: ``DOCKER_HOST``, else
    ``unix:///var/run/docker.sock``), as ``pin build`` connects.

    Raises :class:`~pinning.errors.BuildError` (exit 8) when the engine does not answer,
    saying how to point pin at one.
    """
    from pinning.image.engine import engine_client

    try:
        return engine_client(engine)
    except BuildError as exc:
        raise BuildError(exc.message,
                         hint="Start dockerd, or point pin at a running engine: set "
                              "DOCKER_HOST=unix:///path/docker.sock (or tcp://HOST:PORT), "
                              "or pass --engine URL.") from exc


def engine_error(what: str, exc: BaseException) -> BuildError:
    """The error (exit 8) for an engine that failed at ``what``, quoting it (clipped)."""
    from pinning.oci.text import clip_text

    return BuildError(f"Docker Engine: {what}: {clip_text(str(exc))}",
                      hint="Check the engine is running (DOCKER_HOST / --engine).")


def missing_image(ref: str) -> UsageError:
    """The error (exit 2) for an image ``ref`` the engine does not have."""
    return UsageError(f"Image {printable(ref, newlines=False)} is not in the Docker Engine.",
                      hint=f"Pull it (docker pull {printable(ref, newlines=False)}) or build "
                           "it (pin build LOCK), then run again.")


def _repository(ref: str) -> str:
    """The repository part of ``ref`` (``HOST/REPO`` without tag or digest), in Docker's
    short form (``docker.io/library/`` and ``docker.io/`` dropped) for comparison.
    """
    name = ref.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name = name[:colon]
    for prefix in ("docker.io/library/", "docker.io/", "index.docker.io/library/",
                   "index.docker.io/"):
        if name.startswith(prefix):
            return name.removeprefix(prefix)
    return name


def image_identity(client: Any, ref: str) -> tuple[str, Literal["manifest", "image-id"], str]:
    """``(digest, kind, reason)`` that identify the image ``ref`` names in the engine.

    ``kind`` is ``manifest`` when the registry manifest digest is known: ``ref`` names one
    (``...@sha256:<hex>``) or the image's ``RepoDigests`` hold exactly one for ``ref``'s
    repository; else ``image-id`` with the engine's local image ID (``sha256:<hex>`` of
    the image config), which no registry can check. ``reason`` says which, in one line.
    Raises :class:`~pinning.errors.UsageError` (exit 2) when the image is not in the engine
    (pull or build it), :class:`~pinning.errors.BuildError` (exit 8) when the engine fails.
    """
    import docker.errors

    from pinning.image.engine import engine_errors

    try:
        image = client.images.get(ref)
    except docker.errors.ImageNotFound as exc:
        raise missing_image(ref) from exc
    except engine_errors() as exc:
        raise engine_error(f"cannot inspect image {printable(ref, newlines=False)}",
                            exc) from exc
    shown = printable(ref, newlines=False)
    image_id = str(image.id)
    if "@" in ref:
        digest = ref.rsplit("@", 1)[1]
        if digest.startswith("sha256:"):
            return digest, "manifest", f"{shown} names its manifest digest"
    repo = _repository(ref)
    found = sorted({str(d).rsplit("@", 1)[1] for d in image.attrs.get("RepoDigests") or []
                    if "@" in str(d) and _repository(str(d)) == repo})
    if len(found) == 1:
        return found[0], "manifest", f"the engine records the manifest digest of {repo}"
    why = (f"the engine records {len(found)} manifest digests for {repo}" if found else
           f"the engine records no registry manifest digest for {repo} (built or "
           "tagged locally, never pushed or pulled by digest)")
    return image_id, "image-id", f"{why}; the local image ID stands in"


def remove_leftovers(client: Any, names: Iterable[str]) -> list[str]:
    """Remove (killing them first) the containers called ``names`` that carry the
    ``dev.pin.accept`` label, as a shim killed by SIGKILL leaves them; return the names
    removed. A name with no container, or a container without the label, is left alone.
    Raises :class:`~pinning.errors.BuildError` (exit 8) when the engine fails.
    """
    import docker.errors

    from pinning.image.engine import engine_errors

    removed = []
    for name in names:
        try:
            container = client.containers.get(name)
            if (container.labels or {}).get(ACCEPT_LABEL) != "1":
                continue
            container.remove(force=True)
        except docker.errors.NotFound:
            continue
        except engine_errors() as exc:
            raise engine_error(f"cannot remove container {name}", exc) from exc
        removed.append(name)
    return removed
