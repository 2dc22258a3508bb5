"""Content digests and the canonical JSON they are taken over.

Every ``sha256:<hex>`` pin writes (lock content hashes, snapshot hashes, OCI blob and
manifest digests, build-input labels) is made here, so that the byte form hashed is the same
everywhere: JSON with sorted keys and no whitespace, UTF-8.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def sha256_hex(data: bytes) -> str:
    """The bare 64-hex sha256 of ``data`` (as pip's ``--hash=sha256:`` and wheel RECORDs
    write it, without a prefix).
    """
    return hashlib.sha256(data).hexdigest()


def sha256_digest(data: bytes) -> str:
    """``sha256:<64 hex>`` of ``data``: the OCI digest form, also used for lock, snapshot
    and matrix hashes.
    """
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_json(doc: Any, *, ascii_only: bool = False) -> bytes:
    """Canonical JSON bytes of ``doc``: keys sorted, no whitespace, UTF-8.

    ``ascii_only`` escapes non-ASCII characters as ``\\uXXXX`` (the form the signing payloads
    have always used); every other caller hashes UTF-8 text as is. Raises ``TypeError`` for
    values JSON cannot hold (a bug in the caller).
    """
    return json.dumps(doc, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=ascii_only).encode()


def canonical_digest(doc: Any) -> str:
    """``sha256:<hex>`` of :func:`canonical_json` of ``doc``."""
    return sha256_digest(canonical_json(doc))
