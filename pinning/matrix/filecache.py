"""Validated matrix files, kept in pin's cache so a command does not parse and validate the
same TOML on every start (about 45 ms of ``pin resolve``'s start-up).

A cached :class:`~pinning.matrix.models.MatrixFile` is found by the sha256 of the file's
bytes and a digest of the code that validated it (:func:`_code_key`); the cache folder is
``<cache>/matrix/`` (:func:`pinning.util.cache.cache_root`), read only when it may be trusted
(:mod:`pinning.util.cache`).
"""

from __future__ import annotations

import functools
from pathlib import Path

from pinning.errors import MatrixError
from pinning.matrix.models import MatrixFile
from pinning.util.cache import cache_root, load_cached, save_cached
from pinning.util.digests import sha256_digest
from pinning.util.files import parse_toml
from pinning.util.models import validation_summary

__all__ = ["validated"]


@functools.cache
def _code_key() -> str:
    """A digest of what a cached :class:`MatrixFile` depends on besides its bytes: the
    sources of the model modules, pydantic's version and Python's.
    """
    import sys

    import pydantic

    from pinning.matrix import models, provenance
    from pinning.util import models as base

    parts = [Path(m.__file__ or "").read_bytes() for m in (models, provenance, base)]
    parts.append(f"{pydantic.VERSION} {sys.version}".encode())
    return sha256_digest(b"\0".join(parts)).removeprefix("sha256:")[:16]


def validated(path: Path, raw: bytes) -> MatrixFile:
    """``raw`` (the bytes of ``path``) parsed and validated as a :class:`MatrixFile`, or the
    model validated earlier from the same bytes by the same code (``<cache>/matrix/``).

    Raises ``MatrixError`` (exit 3) naming ``path`` when ``raw`` is not TOML (line and
    column) or breaks the schema (the field path).
    """
    folder = cache_root() / "matrix"
    name = f"{sha256_digest(raw).removeprefix('sha256:')}-{_code_key()}.pickle"
    cached = load_cached(folder, name)
    if isinstance(cached, MatrixFile):
        return cached
    data = parse_toml(raw, MatrixError, label=f"Matrix file {path}",
                      syntax_hint="Fix the syntax at the line and column named "
                      "(schema: schemas/matrix.schema.json).")
    from pydantic import ValidationError

    try:
        model = MatrixFile.model_validate(data, strict=True)
    except ValidationError as exc:
        raise MatrixError(
            f"Matrix file {path}: {validation_summary(exc, data)}.",
            hint="Fix the named field; every row needs `source` and a `published` or `checked` "
            "date (schema: schemas/matrix.schema.json).",
        ) from exc
    save_cached(folder, name, model)
    return model

