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
    """A layer blob as pushed: its gzip bytes, ``digest`` (sha256 of those bytes), ``diff_id``
    (sha256 of the uncompressed tar) and ``size`` in bytes of the gzip blob.
    """

    data: bytes
    digest: str
    diff_id: str

    @property
    def size(self) -> int:
        """Compressed size in bytes."""
        return len(self.data)


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
) -> ImageDocs:
    """Build the config and manifest for ``layers`` (base first).

    ``history`` gives one ``created_by`` text per layer (default ``"pin layer N"``);
    every history entry and ``created`` use ``epoch`` (seconds). Raises ``ValueError`` (a
    bug in the caller) when ``history`` does not have one entry per layer.
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
        "layers": [{"mediaType": MEDIA_LAYER_GZIP, "digest": layer.digest, "size": layer.size}
                   for layer in layers],
    }
    if annotations:
        manifest_doc["annotations"] = dict(sorted(annotations.items()))
    return ImageDocs(layers=tuple(layers), config=config, manifest=canonical_json(manifest_doc))
