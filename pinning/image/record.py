"""``pin build`` / ``pin rebuild``: execute a :class:`~pinning.image.plan.BuildPlan` on a
Docker Engine, push the normalised image, record it in the lock, or prove a rebuild is
identical and say which files differ when it is not.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinning.errors import BuildError
from pinning.image.plan import (
    BuildPlan,
    assemble,
    engine_build,
    export_layers,
    plan_build,
    render_context,
)
from pinning.lockfile.io import lock_json, seal
from pinning.lockfile.models import Lockfile
from pinning.oci.documents import LOCK_LABEL, ImageDocs
from pinning.oci.registry import Registry


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
                         f"{exc}", hint="Start dockerd, or pass --engine unix:///path/docker.sock."
                         ) from exc
    return client


def split_ref(ref: str) -> tuple[str, str, str]:
    """``host/repo@sha256:...`` -> ``(host, repo, digest)``."""
    name, _, digest = ref.partition("@")
    host, _, repo = name.partition("/")
    if not digest or not repo:
        raise BuildError(f"Image reference {ref!r} is not HOST/REPO@sha256:<digest>.")
    return host, repo, digest


def base_of(lock: Lockfile, base: str | None) -> str:
    """The base reference from ``--base`` or the lock (``image.base`` + ``base-digest``)."""
    if base:
        return base
    ref, digest = lock.image.base.value, lock.image.base_digest.value
    if not ref or not digest:
        raise BuildError("The lock has no base image digest.",
                         hint="Pass --base HOST/REPO@sha256:<digest> (pin records it).")
    return f"{ref}@{digest}"


@dataclass
class Built:
    """One build: the plan, the normalised image documents, the engine's image ID."""

    plan: BuildPlan
    docs: ImageDocs
    image_id: str


def build_once(client: Any, lock: Lockfile, base_ref: str, wheelhouse: Path, *,
               nocache: bool, progress: Callable[[str], None] | None = None) -> Built:
    """Plan, render, build on the engine, export and normalise (no push)."""
    plan = plan_build(lock, base_ref, wheelhouse)
    import docker

    from pinning.image.plan import engine_errors

    try:
        try:
            base_image = client.images.get(base_ref)
        except docker.errors.ImageNotFound:
            base_image = client.images.pull(base_ref)
        base_layers = len(base_image.attrs["RootFS"]["Layers"])
        architecture = str(base_image.attrs.get("Architecture") or "amd64")
    except engine_errors() as exc:
        raise BuildError(f"Docker Engine: cannot get the base image {base_ref}: {exc}",
                         hint="Check the engine runs and the base's registry is reachable."
                         ) from exc
    with tempfile.TemporaryDirectory(prefix="pin-build-") as tmp:
        ctx = render_context(plan, wheelhouse, Path(tmp))
        tag = "pin-build:" + plan.input_hash[7:19]
        image_id = engine_build(client, ctx, tag=tag, nocache=nocache, progress=progress)
    docs = assemble(plan, export_layers(client, image_id), base_layers,
                    base_blobs=base_blobs_of(base_ref), architecture=architecture)
    return Built(plan=plan, docs=docs, image_id=image_id)


def registry_url(host: str) -> str:
    """The registry URL for an image host: plain HTTP on loopback, HTTPS elsewhere."""
    name = host.split(":", 1)[0]
    local = name in ("localhost", "::1") or name.startswith("127.")
    return ("http://" if local else "https://") + host


def base_blobs_of(base_ref: str) -> tuple[Any, ...]:
    """The base image's own layer blobs, read from its registry. They are reused as they
    are, so the image never depends on re-compressing the base; an unreadable base is a
    :class:`BuildError` rather than a silently different image.
    """
    return fetch_docs(registry_url(split_ref(base_ref)[0]), base_ref).layers


def record(lock: Lockfile, built: Built, ref: str) -> Lockfile:
    """The lock with the base, wheels, epoch and pushed image recorded (re-sealed)."""
    data = lock_json(lock)
    base_name, _, base_digest = built.plan.base_ref.partition("@")
    image = data["image"]
    image["base"] = {"value": base_name, "origin": "user"}
    image["base-digest"] = {"value": base_digest, "origin": "user"}
    image["digest"] = {"value": built.docs.digest, "origin": "derived"}
    image["ref"] = {"value": ref, "origin": "derived"}
    image["epoch"] = built.plan.epoch
    data["wheels"] = [w.model_dump(mode="json", by_alias=True) for w in built.plan.wheels]
    data.pop("content-hash", None)
    return seal(data)


def already_built(registry: Registry, lock: Lockfile, repo: str, plan_hash: str) -> bool:
    """True when the lock's recorded image is in ``repo`` and carries this input hash (the
    lock, base digest and epoch it was built from).
    """
    digest = lock.image.digest.value
    if not digest or not lock.wheels:
        return False
    if registry.manifest_digest(repo, digest) != digest:
        return False
    try:
        manifest = json.loads(registry.get_manifest(repo, digest))
        config = json.loads(registry.get_blob(repo, manifest["config"]["digest"]))
        label = config.get("config", {}).get("Labels", {}).get(LOCK_LABEL)
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    return bool(label == plan_hash)


def layer_files(blob: bytes) -> dict[str, tuple[int, str, int, str]]:
    """Path -> (size, mode, mtime, sha256) of a gzip layer blob."""
    out = {}
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob))) as tar:
        for m in tar:
            data = tar.extractfile(m).read() if m.isreg() else b""  # type: ignore[union-attr]
            out[m.name] = (m.size, oct(m.mode), int(m.mtime), hashlib.sha256(data).hexdigest())
    return out


def diff_images(a: ImageDocs, b: ImageDocs) -> list[str]:
    """Human lines naming the first differing layer and the files that differ."""
    if a.digest == b.digest:
        return []
    for i, (la, lb) in enumerate(zip(a.layers, b.layers, strict=False)):
        if la.digest != lb.digest and la.diff_id == lb.diff_id:
            return [f"layer {i}: same files, different compression ({la.digest} vs "
                    f"{lb.digest}); the zlib of this machine differs"]
        if la.digest != lb.digest:
            fa, fb = layer_files(la.data), layer_files(lb.data)
            lines = [f"layer {i} differs: {la.digest} vs {lb.digest}"]
            for path in sorted(set(fa) | set(fb)):
                if fa.get(path) != fb.get(path):
                    lines.append(f"  {path}: {_show(fa.get(path))} vs {_show(fb.get(path))}")
            return lines[:60]
    if len(a.layers) != len(b.layers):
        return [f"layer count differs: {len(a.layers)} vs {len(b.layers)}"]
    ca, cb = json.loads(a.config), json.loads(b.config)
    lines = ["layers are identical; the image config differs:"]
    for key in sorted(set(_flatten(ca)) | set(_flatten(cb))):
        va, vb = _flatten(ca).get(key), _flatten(cb).get(key)
        if va != vb:
            lines.append(f"  {key}: {va!r} vs {vb!r}")
    return lines


def _flatten(doc: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists by index), for naming config fields."""
    if isinstance(doc, dict):
        out: dict[str, Any] = {}
        for k, v in doc.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    if isinstance(doc, list):
        out = {}
        for i, v in enumerate(doc):
            out.update(_flatten(v, f"{prefix}{i}."))
        return out
    return {prefix.rstrip("."): doc}


def _show(entry: tuple[int, str, int, str] | None) -> str:
    if entry is None:
        return "absent"
    size, mode, mtime, sha = entry
    return f"size {size} mode {mode} mtime {mtime} sha256 {sha[:12]}"


def fetch_docs(registry_url: str, ref: str) -> ImageDocs:
    """The image ``ref`` (``host/repo@digest``) as stored in the registry at ``registry_url``."""
    from pinning.image.layers import LayerBlob

    _host, repo, digest = split_ref(ref)
    reg = Registry(registry_url)
    manifest = reg.get_manifest(repo, digest)
    try:
        doc = json.loads(manifest)
        config = reg.get_blob(repo, doc["config"]["digest"])
        diff_ids = json.loads(config)["rootfs"]["diff_ids"]
        layers = tuple(
            LayerBlob(data=reg.get_blob(repo, layer["digest"]), digest=layer["digest"],
                      diff_id=diff_id)
            for layer, diff_id in zip(doc["layers"], diff_ids, strict=True))
    except (ValueError, KeyError, TypeError) as exc:
        raise BuildError(f"Registry {registry_url}: {ref} is not a well-formed OCI image "
                         f"({exc}).") from exc
    return ImageDocs(layers=layers, config=config, manifest=manifest)
