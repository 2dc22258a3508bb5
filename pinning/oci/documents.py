"""Deterministic OCI image config and manifest bytes (OCI image spec v1.15).

The config carries ``created`` = the lock's epoch, normalised history, the environment and
labels; both documents are serialised canonically (sorted keys, no spaces, UTF-8:
:func:`pinning.util.digests.canonical_json`) so the same inputs always give the same
manifest digest. What is pushed is exactly these bytes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pinning.util.digests import canonical_json, sha256_digest

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
# Label holding the lock's content hash (reverse-DNS key).
LOCK_LABEL = "dev.pin.lock.content-hash"


@dataclass(frozen=True)
class LayerBlob:
    """A layer blob as pushed: its compressed bytes, ``digest`` (sha256 of those bytes),
    ``diff_id`` (sha256 of the uncompressed tar) and ``size`` in bytes of the blob.

    ``data`` is ``None`` for a blob pin does not hold (a vendor base's layer, gigabytes): it
    lives in ``source`` (``HOST/REPO`` of the registry repository that serves it) and is
    pushed by HEAD (already there), cross-repository mount, or a streamed copy; then
    ``length`` gives its size. ``media_type`` is the descriptor's media type.
    """

    data: bytes | None
    digest: str
    diff_id: str
    media_type: str = "application/vnd.oci.image.layer.v1.tar+gzip"
    source: str | None = None
    length: int | None = None

    @property
    def size(self) -> int:
        """Compressed size in bytes (``len(data)``, else ``length``; ``ValueError`` when
        neither is known, a bug in the caller).
        """
        if self.data is not None:
            return len(self.data)
        if self.length is None:
            raise ValueError(f"layer {self.digest} has neither data nor a length")
        return self.length


def epoch_iso(epoch: int) -> str:
    """RFC 3339 UTC time of ``epoch`` seconds (``2023-11-14T22:13:20Z``)."""
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ImageDocs:
    """An image ready to push: layer blobs, config bytes and manifest bytes with digests."""

    layers: tuple[LayerBlob, ...]
    config: bytes
    manifest: bytes

    @property
    def config_digest(self) -> str:
        """Digest of the config blob (the Docker image ID)."""
        return sha256_digest(self.config)

    @property
    def digest(self) -> str:
        """The manifest digest (what ``image@sha256:...`` names)."""
        return sha256_digest(self.manifest)


def image_docs(
    layers: Sequence[LayerBlob],
    *,
    epoch: int,
    env: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    cmd: Sequence[str] | None = None,
    history: Sequence[str] | None = None,
    annotations: Mapping[str, str] | None = None,
    architecture: str = "amd64",
    entrypoint: Sequence[str] | None = None,
    working_dir: str | None = None,
    user: str | None = None,
) -> ImageDocs:
    """Build the config and manifest for ``layers`` (base first).

    ``history`` gives one ``created_by`` text per layer (default ``"pin layer N"``);
    every history entry and ``created`` use ``epoch`` (seconds). ``env``, ``labels``,
    ``cmd``, ``entrypoint``, ``working_dir`` and ``user`` become the config's ``Env``
    (sorted ``KEY=VALUE``), ``Labels``, ``Cmd``, ``Entrypoint``, ``WorkingDir`` and
    ``User``; an empty or absent one is left out. Raises ``ValueError`` (a bug in the
    caller) when ``history`` does not have one entry per layer.
    """
    created = epoch_iso(epoch)
    steps = list(history or [f"pin layer {i}" for i in range(len(layers))])
    if len(steps) != len(layers):
        raise ValueError("history needs one entry per layer")
    container: dict[str, Any] = {}
    if env:
        container["Env"] = [f"{k}={v}" for k, v in sorted(env.items())]
    if labels:
        container["Labels"] = dict(sorted(labels.items()))
    if cmd:
        container["Cmd"] = list(cmd)
    if entrypoint:
        container["Entrypoint"] = list(entrypoint)
    if working_dir:
        container["WorkingDir"] = working_dir
    if user:
        container["User"] = user
    config_doc: dict[str, Any] = {
        "architecture": architecture,
        "os": "linux",
        "created": created,
        "config": container,
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [{"created": created, "created_by": s} for s in steps],
    }
    config = canonical_json(config_doc)
    manifest_doc: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, "digest": sha256_digest(config),
                   "size": len(config)},
        "layers": [{"mediaType": layer.media_type, "digest": layer.digest, "size": layer.size}
                   for layer in layers],
    }
    if annotations:
        manifest_doc["annotations"] = dict(sorted(annotations.items()))
    return ImageDocs(layers=tuple(layers), config=config, manifest=canonical_json(manifest_doc))
