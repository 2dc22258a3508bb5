"""Record a pushed image in its lock, and compare images for ``pin rebuild``.

:func:`base_of` gives the base reference a build uses; :func:`publish` pushes a built image
(:mod:`pinning.image.engine`), checks the registry serves it and writes the lock with the
image recorded (:func:`record`); :func:`already_built` tells when the lock's image is already
in the registry with the same inputs; :func:`recorded_docs` and :func:`diff_images` name the
first differing layer and files when a rebuild is not identical. Every failure is a
:class:`~pinning.errors.BuildError` (exit 8).
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path
from typing import Any

from pinning.errors import BuildError
from pinning.image.build import Built
from pinning.image.layers import compressor_identity
from pinning.lockfile.io import LockRead, amend, write_lock
from pinning.lockfile.models import Image, Lockfile, Pinned
from pinning.oci.documents import LOCK_LABEL, ImageDocs
from pinning.oci.reference import ImageRef, parse_pinned
from pinning.oci.registry import Registry, fetch_docs
from pinning.util.digests import sha256_hex
from pinning.util.jsonread import load_json
from pinning.util.progress import NULL_PROGRESS, Progress


def base_of(lock: Lockfile, base: str | None) -> str:
    """The base reference from ``--base`` or the lock (``image.base`` + ``base-digest``).

    Raises :class:`BuildError` when neither gives one.
    """
    if base:
        return base
    ref, digest = lock.image.base.value, lock.image.base_digest.value
    if not ref or not digest:
        raise BuildError("The lock has no base image digest.",
                         hint="Pass --base HOST/REPO@sha256:<digest> (pin records it).")
    return f"{ref}@{digest}"


def record(lock: Lockfile, built: Built, ref: str) -> Lockfile:
    """The lock with the base, wheels, epoch and pushed image ``ref`` recorded (re-sealed).

    Raises :class:`BuildError` when the plan's base reference names no digest.
    """
    base = parse_pinned(built.plan.base_ref)
    image = Image(
        base=Pinned(value=str(base.without_digest()), origin="user"),
        base_digest=Pinned(value=base.required_digest, origin="user"),
        digest=Pinned(value=built.docs.digest, origin="derived"),
        ref=Pinned(value=ref, origin="derived"),
        epoch=built.plan.epoch,
    )
    return amend(lock, image=image, wheels=list(built.plan.wheels))


def publish(registry: Registry, repo: str, lock: Lockfile, built: Built, dest: Path,
            *, if_unchanged: bytes | None = None, into: LockRead | None = None,
            progress: Progress = NULL_PROGRESS) -> str:
    """Push ``built`` to ``repo`` (tagged with the start of its input hash; ``progress``
    gets the push tasks), check the registry serves it, and write ``lock`` with the image
    recorded to ``dest``; return the image reference ``HOST/REPO@sha256:<digest>``. The lock
    is written only once the registry holds the image, and with ``if_unchanged`` (the bytes
    ``lock`` was read from) only if ``dest`` still holds them. With ``into`` (``lock`` read
    from a multi-target file) the whole file is written with that target's section
    recording the image, the other targets as they were. Raises :class:`BuildError`
    (exit 8), ``LockfileError`` (exit 5) when ``dest`` changed meanwhile, exit 2 when it
    cannot be written.
    """
    tag = built.plan.input_hash[7:19]
    digest = registry.push_image(repo, tag, built.docs, progress=progress)
    if registry.manifest_digest(repo, digest) != digest:
        raise BuildError(f"Registry {registry.host} does not serve {repo}@{digest} after the push.")
    ref = str(ImageRef(registry=registry.host, repository=repo, digest=digest))
    write_lock(record(lock, built, ref), dest, if_unchanged=if_unchanged, into=into)
    return ref


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
        manifest = load_json(registry.get_manifest(repo, digest), BuildError, label=digest)
        config = load_json(registry.get_blob(repo, manifest["config"]["digest"]), BuildError,
                           label=f"the config of {digest}")
        label = config.get("config", {}).get("Labels", {}).get(LOCK_LABEL)
    except (BuildError, ValueError, KeyError, TypeError, AttributeError):
        return False
    return bool(label == plan_hash)


def layer_files(blob: bytes) -> dict[str, tuple[int, str, int, str]]:
    """Member path -> (size in bytes, octal mode text, mtime in seconds, sha256 hex of the
    data; empty data for what is not a regular file) of a gzip layer blob.
    """
    out = {}
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob))) as tar:
        for m in tar:
            data = tar.extractfile(m).read() if m.isreg() else b""  # type: ignore[union-attr]
            out[m.name] = (m.size, oct(m.mode), int(m.mtime), sha256_hex(data))
    return out


def diff_images(a: ImageDocs, b: ImageDocs) -> list[str]:
    """Human lines naming the first differing layer and the files that differ (at most 60),
    or the config fields that differ when every layer is identical; ``[]`` when ``a`` and
    ``b`` have the same manifest digest.
    """
    if a.digest == b.digest:
        return []
    for i, (la, lb) in enumerate(zip(a.layers, b.layers, strict=False)):
        if la.digest != lb.digest and la.diff_id == lb.diff_id:
            return [f"layer {i}: same files, different compression ({la.digest} vs "
                    f"{lb.digest}); the compressor differs (this machine: "
                    f"{compressor_identity()})"]
        if la.digest != lb.digest and (la.data is None or lb.data is None):
            return [f"layer {i} differs: {la.digest} vs {lb.digest} (a base layer pin "
                    "does not hold: the bases differ)"]
        if la.digest != lb.digest:
            assert la.data is not None and lb.data is not None
            fa, fb = layer_files(la.data), layer_files(lb.data)
            lines = [f"layer {i} differs: {la.digest} vs {lb.digest}"]
            for path in sorted(set(fa) | set(fb)):
                if fa.get(path) != fb.get(path):
                    lines.append(f"  {path}: {_show(fa.get(path))} vs {_show(fb.get(path))}")
            return lines[:60]
    if len(a.layers) != len(b.layers):
        return [f"layer count differs: {len(a.layers)} vs {len(b.layers)}"]
    ca = load_json(a.config, BuildError, label=f"the config of {a.digest}")
    cb = load_json(b.config, BuildError, label=f"the config of {b.digest}")
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


def recorded_docs(lock: Lockfile, registry_url: str | None, *,
                  ca_cert: Path | None = None) -> ImageDocs | None:
    """The image the lock records (``image.ref``), read from ``registry_url`` or else from
    the registry its reference names (``ca_cert``: that registry's CA, see
    :class:`~pinning.oci.registry.Registry`); ``None`` when the lock records no image
    reference. Raises :class:`BuildError` (exit 8) for a malformed reference or a registry
    failure.
    """
    ref = lock.image.ref.value if lock.image.ref else None
    if not ref:
        return None
    return fetch_docs(registry_url or parse_pinned(ref).registry_url, ref, ca_cert=ca_cert)
