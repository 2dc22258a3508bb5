"""The user's copy of vendor data that ``pin matrix update`` wrote: where it lives, its
provenance manifest, and its atomic replacement.

The folder is ``<data>/matrix/`` (:func:`data_root`, the XDG data folder, found as
:func:`pinning.util.cache.cache_root` finds the cache). ``update.json`` (the manifest) names
every matrix file of the copy with its sha256 and every vendor source it was built from (URL,
commit or ETag, date fetched, sha256): the loader takes exactly the files the manifest names
and only when their bytes still match, so a copy half written or edited by hand is never
used (it is a ``MatrixError``, exit 3, naming the file and ``pin matrix update --reset``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path

from pydantic import Field

from pinning.errors import MatrixError
from pinning.util.models import Strict

__all__ = ["MANIFEST", "Manifest", "SourceRecord", "UserFile", "data_root", "read_manifest",
           "remove_copy", "user_folder", "user_paths", "write_copy"]

MANIFEST = "update.json"
"""The manifest's file name inside :func:`user_folder`."""

MAX_MANIFEST_BYTES = 1024 * 1024
"""The largest manifest read (one is a few KiB)."""


class SourceRecord(Strict):
    """One vendor file an update read: ``id`` (``amd-csv``, ``amd-page``, ``amd-notes``,
    ``pytorch``), the ``url`` it came from, the ``commit`` it was read at (when known) or the
    server's ``etag``, the day it was ``fetched``, the ``sha256`` (``sha256:<hex>``) and
    ``bytes`` (length) of what was read.
    """

    id: str
    url: str
    commit: str | None = None
    etag: str | None = None
    fetched: dt.date
    sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    bytes: int = Field(ge=0)


class UserFile(Strict):
    """One matrix file of the copy: its ``name`` (``<name>.toml`` in the folder) and the
    ``sha256`` (``sha256:<hex>``) of its bytes.
    """

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")


class Manifest(Strict):
    """``update.json``: the files of the user's copy, the sources read and when."""

    schema_version: int = 1
    fetched: dt.date
    files: list[UserFile]
    sources: list[SourceRecord]


def data_root() -> Path | None:
    """Pin's data folder: ``$PIN_DATA_DIR``; else ``$XDG_DATA_HOME/pin`` when that is an
    absolute path (the XDG Base Directory Specification ignores a relative one); else
    ``~/.local/share/pin``; ``None`` with no home folder (then there is no user copy).
    """
    from pinning.util.cache import xdg_folder

    return xdg_folder("PIN_DATA_DIR", "XDG_DATA_HOME", ".local", "share")


def user_folder() -> Path | None:
    """``<data>/matrix``, the folder of the user's copy (``None``: no data folder)."""
    root = data_root()
    return root / "matrix" if root is not None else None


def read_manifest() -> Manifest | None:
    """The manifest of the user's copy, or ``None`` when there is none. Raises
    ``MatrixError`` (exit 3) for a manifest that is not valid JSON of this shape.
    """
    from pydantic import ValidationError

    from pinning.util.files import read_regular_bytes

    folder = user_folder()
    if folder is None or not (folder / MANIFEST).exists():
        return None
    path = folder / MANIFEST
    raw = read_regular_bytes(path, MatrixError, label=f"Matrix update manifest {path}",
                             hint=_RESET_HINT, limit=MAX_MANIFEST_BYTES)
    from pinning.util.jsonread import load_json

    doc = load_json(raw, MatrixError, label=f"Matrix update manifest {path}", hint=_RESET_HINT)
    try:
        return Manifest.model_validate(doc)
    except ValidationError as exc:
        raise MatrixError(f"Matrix update manifest {path}: not a manifest pin wrote "
                          f"({exc.error_count()} problem(s)).", hint=_RESET_HINT) from exc


_RESET_HINT = ("Run `pin matrix update` again, or `pin matrix update --reset` to go back to "
               "the data pin ships.")


def user_paths() -> list[Path]:
    """The files of the user's copy, in the manifest's order, each checked against the
    manifest's sha256; ``[]`` when there is no copy. Raises ``MatrixError`` (exit 3) for a
    file missing or changed since the update wrote it.
    """
    from pinning.util.digests import sha256_digest
    from pinning.util.files import read_regular_bytes

    manifest = read_manifest()
    folder = user_folder()
    if manifest is None or folder is None:
        return []
    out = []
    for f in manifest.files:
        path = folder / f"{f.name}.toml"
        raw = read_regular_bytes(path, MatrixError, label=f"Matrix file {path}",
                                 hint=_RESET_HINT)
        if sha256_digest(raw) != f.sha256:
            raise MatrixError(f"Matrix file {path}: its bytes are not those `pin matrix "
                              f"update` wrote ({f.sha256} in {MANIFEST}).", hint=_RESET_HINT)
        out.append(path)
    return out


def write_copy(files: dict[str, bytes], manifest: Manifest) -> Path:
    """Write a new copy: each ``files`` entry (name -> TOML bytes) atomically, then the
    manifest (the switch: a reader sees the old copy or the new one), then remove files of
    the old copy the new one does not name. Returns the folder. Raises ``MatrixError`` (exit
    3) when there is no data folder or it cannot be written.
    """
    from pinning.util.digests import canonical_json
    from pinning.util.files import atomic_write_bytes

    folder = user_folder()
    if folder is None:
        raise MatrixError("No data folder: set XDG_DATA_HOME or PIN_DATA_DIR.")
    old = read_manifest() if (folder / MANIFEST).exists() else None
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        for name, raw in files.items():
            atomic_write_bytes(folder / f"{name}.toml", raw)
        atomic_write_bytes(folder / MANIFEST,
                           canonical_json(manifest.model_dump(mode="json", by_alias=True)) + b"\n")
    except OSError as exc:
        raise MatrixError(f"{folder}: cannot write the matrix copy "
                          f"({exc.strerror or exc}).") from exc
    for f in old.files if old else []:
        if f.name not in files:
            with contextlib.suppress(OSError):
                (folder / f"{f.name}.toml").unlink()
    return folder


def remove_copy() -> bool:
    """Remove the user's copy (manifest first, so a reader never sees half of it); True when
    there was one. Raises ``MatrixError`` (exit 3) when it cannot be removed.
    """
    folder = user_folder()
    manifest = read_manifest()
    if folder is None or manifest is None:
        return False
    try:
        (folder / MANIFEST).unlink()
    except OSError as exc:
        raise MatrixError(f"{folder / MANIFEST}: cannot remove ({exc.strerror or exc}).") from exc
    for f in manifest.files:
        with contextlib.suppress(OSError):
            (folder / f"{f.name}.toml").unlink()
    return True
