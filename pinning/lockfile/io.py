"""Deterministic lockfile read/write and the content hash.

Writing uses tomlkit with a fixed key order (the model's field order), no timestamps, and an
atomic rename, so the same inputs give the same bytes. Reading uses :mod:`tomllib` and the
pydantic model; every problem is a ``LockfileError`` (exit 5) naming the file and field.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pinning.errors import InternalError, LockfileError
from pinning.lockfile.models import LOCK_VERSION, Lockfile
from pinning.util.digests import canonical_digest
from pinning.util.files import atomic_write_bytes, read_toml
from pinning.util.models import validation_summary

SCHEMA_NAME = "lockfile.schema.json"


def content_hash(data: dict[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of ``data`` without
    ``content-hash``; ``data`` is the lock's JSON form (kebab-case keys).
    """
    return canonical_digest({k: v for k, v in data.items() if k != "content-hash"})


def lock_json(lock: Lockfile) -> dict[str, Any]:
    """The lock as JSON-ready data with kebab-case keys, ``None`` values left out."""
    return lock.model_dump(mode="json", by_alias=True, exclude_none=True)


def seal(data: dict[str, Any]) -> Lockfile:
    """Validate lock ``data`` (without a hash) and return it with its ``content-hash`` set."""
    data = dict(data)
    data["content-hash"] = "sha256:" + "0" * 64
    draft = Lockfile.model_validate(data)
    as_json = lock_json(draft)
    as_json["content-hash"] = content_hash(as_json)
    return Lockfile.model_validate(as_json)


def amend(lock: Lockfile, **updates: object) -> Lockfile:
    """The one way to change a sealed lock: ``lock`` with the named top-level fields
    replaced, validated and re-sealed (a new ``content-hash``).

    Keys are the model's field names (``environment``, ``image``, ``build_steps``, ...);
    values are models of that field's type or their JSON form (kebab-case keys). Raises
    :class:`~pinning.errors.InternalError` for a name the lock does not have (a bug) and
    pydantic's ``ValidationError`` when a value does not fit its field.
    """
    unknown = sorted(set(updates) - set(Lockfile.model_fields))
    if unknown:
        raise InternalError(f"amend(): the lock has no field {', '.join(unknown)}.")
    data = lock_json(lock)
    for name, value in updates.items():
        field = Lockfile.model_fields[name]
        data[field.alias or name] = _json_form(value)
    data.pop("content-hash", None)
    return seal(data)


def _json_form(value: object) -> object:
    """A model (or a list/dict of models) as JSON-ready data; plain data as it is."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list):
        return [_json_form(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_form(v) for k, v in value.items()}
    return value


def _schema_hint(dest: Path | None) -> str | None:
    """Relative path from ``dest``'s folder to a ``schemas/lockfile.schema.json`` above it."""
    if dest is None:
        return None
    folder = dest.resolve().parent
    for parent in [folder, *folder.parents]:
        cand = parent / "schemas" / SCHEMA_NAME
        if cand.is_file():
            return os.path.relpath(cand, folder).replace(os.sep, "/")
    return None


def render(lock: Lockfile, *, dest: Path | None = None) -> str:
    """Render ``lock`` as TOML text: a ``#:schema`` hint (when a schemas folder is found
    above ``dest``), a header saying how to regenerate it, then the lock.
    """
    import tomlkit

    doc = tomlkit.document()
    hint = _schema_hint(dest)
    if hint:
        doc.add(tomlkit.comment(f"schema {hint}"))
    doc.add(tomlkit.comment(
        f"pin lockfile for {lock.target.gpu.value or lock.request.gpu} + "
        f"{', '.join(lock.request.frameworks)}: written by pin {lock.generator.version}; "
        "do not edit by hand."
    ))
    doc.add(tomlkit.comment(f"Regenerate: {lock.generator.command}"))
    doc.add(tomlkit.comment("Check: pin lock validate FILE    Show: pin lock show FILE"))
    data = lock_json(lock)
    for key, value in data.items():
        doc.add(key, _item(value))
    text = tomlkit.dumps(doc)
    if hint:
        text = text.replace("# schema ", "#:schema ", 1)
    return text


def _item(value: Any) -> Any:
    import tomlkit

    if isinstance(value, dict):
        t = tomlkit.table()
        for k, v in value.items():
            t.add(k, _item(v))
        return t
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        aot = tomlkit.aot()
        for v in value:
            aot.append(_item(v))
        return aot
    if isinstance(value, list):
        arr = tomlkit.array()
        arr.extend(value)
        if sum(len(str(v)) + 4 for v in value) > 80:
            arr.multiline(True)
        return arr
    return value


def write_lock(lock: Lockfile, path: Path) -> bytes:
    """Write ``lock`` to ``path`` atomically (temp file + rename); return the bytes written.

    Raises ``LockfileError`` when the file cannot be written.
    """
    data = render(lock, dest=path).encode()
    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        raise LockfileError(
            f"{path}: cannot write the lockfile ({exc.strerror or exc}).",
            hint="Choose a writable path with -o FILE.",
        ) from exc
    return data


def read_lock(path: Path) -> Lockfile:
    """Read and validate a lockfile, checking its version and content hash.

    Raises ``LockfileError`` (exit 5) naming the file and, for schema errors, the field path
    (``frameworks[0].version.origin``); for a hand edit, the hash mismatch.
    """
    path = Path(path)
    _, data = read_toml(
        path, LockfileError, label=str(path),
        unreadable_hint="Check the path; `pin resolve ... -o FILE` writes a lockfile.",
    )
    version = data.get("lock-version")
    if version is None:
        raise LockfileError(
            f"{path}: not a pin lockfile (no `lock-version`"
            + (", the file is empty)." if not data else ")."),
            hint="Pass a file written by `pin resolve` / `pin freeze`.",
        )
    if version != LOCK_VERSION:
        raise LockfileError(
            f"{path}: lock-version {version!r} is not supported (this pin reads "
            f"lock-version {LOCK_VERSION}).",
            hint="Upgrade pin to read a newer lock, or regenerate it with the command in its "
            "header comment.",
        )
    from pydantic import ValidationError

    try:
        lock = Lockfile.model_validate(data)
    except ValidationError as exc:
        raise LockfileError(
            f"{path}: invalid lockfile: {validation_summary(exc, data)}.") from exc
    expected = content_hash(lock_json(lock))
    if lock.content_hash != expected:
        raise LockfileError(
            f"{path}: content-hash {lock.content_hash} does not match the lock's content "
            f"({expected}); the file was edited by hand or damaged.",
        )
    return lock
