"""Images and locks for the sign tests: a small OCI image put into a fake registry's
:class:`~tests.support.oci_registry.Store`, and a lock that records a build (and then its
pushed image)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinning.image.plan import expected_label
from pinning.lockfile.io import amend, lock_json, read_lock
from pinning.lockfile.models import Lockfile
from pinning.oci.documents import MEDIA_CONFIG, MEDIA_MANIFEST
from pinning.util.digests import canonical_json, sha256_digest
from tests.support.oci_registry import Store

ROOT = Path(__file__).resolve().parents[3]


def image_docs(created: str | None = "2023-11-14T22:13:20Z",
               labels: dict[str, str] | None = None) -> tuple[bytes, bytes]:
    """A small OCI image without layers: its config (with ``created`` and ``labels``) and
    manifest bytes.
    """
    config_doc: dict[str, Any] = {"architecture": "amd64", "os": "linux",
                                  "config": {"Labels": labels or {"x": "x"}},
                                  "rootfs": {"type": "layers", "diff_ids": []}}
    if created is not None:
        config_doc["created"] = created
    config = canonical_json(config_doc)
    manifest = canonical_json({"schemaVersion": 2, "mediaType": MEDIA_MANIFEST,
                               "config": {"mediaType": MEDIA_CONFIG,
                                          "digest": sha256_digest(config), "size": len(config)},
                               "layers": []})
    return config, manifest


def image(store: Store, repo: str, created: str | None = "2023-11-14T22:13:20Z",
          label: str = "x", labels: dict[str, str] | None = None) -> str:
    """Put a small OCI image (:func:`image_docs`; ``label`` tells images apart) into
    ``repo`` under ``latest``; return its manifest digest.
    """
    config, manifest = image_docs(created, labels or {"x": label})
    store.blobs[(repo, sha256_digest(config))] = config
    return store.put_manifest(repo, "latest", manifest, MEDIA_MANIFEST)


EPOCH = 1700000000


def built_lock() -> tuple[Lockfile, str]:
    """A lock that records a build (a wheel, a base digest, an epoch) but no image yet, and
    the lock label its image must carry.
    """
    lock = read_lock(ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock")
    img = lock_json(lock)["image"]
    img["base"] = {"value": "127.0.0.1:5000/pin/base", "origin": "user"}
    img["base-digest"] = {"value": "sha256:" + "1" * 64, "origin": "user"}
    img["epoch"] = EPOCH
    lock = amend(lock, image=img, wheels=[{"name": "demo", "version": "1.0", "sha256": "0" * 64,
                                           "filename": "demo-1.0-py3-none-any.whl"}])
    label = expected_label(lock)
    assert label is not None
    return lock, label


def recorded(lock: Lockfile, ref: str, digest: str) -> Lockfile:
    """``lock`` recording the pushed image ``ref`` (``HOST/REPO@DIGEST``)."""
    img = lock_json(lock)["image"]
    img["digest"] = {"value": digest, "origin": "derived"}
    img["ref"] = {"value": ref, "origin": "derived"}
    return amend(lock, image=img)
