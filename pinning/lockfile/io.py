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

from pinning.errors import InternalError, LockfileError, UsageError
from pinning.lockfile.models import LOCK_VERSION, Lockfile
from pinning.util.digests import canonical_digest
from pinning.util.files import TargetChanged, atomic_write_bytes, read_toml
from pinning.util.locks import WriteConflict
from pinning.util.models import validation_summary
from pinning.util.text import printable

SCHEMA_NAME = "lockfile.schema.json"
DAMAGED_HINT = ("Restore the file (from version control); to change a lock on purpose run "
                "`pin lock upgrade FILE`, which re-resolves it and keeps frozen host values.")


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
    try:
        folder = dest.resolve().parent
    except (OSError, RuntimeError):  # a loop of links: the write itself refuses it (exit 2)
        return None
    for parent in [folder, *folder.parents]:
        cand = parent / "schemas" / SCHEMA_NAME
        if cand.is_file():
            return os.path.relpath(cand, folder).replace(os.sep, "/")
    return None


def render(lock: Lockfile, *, dest: Path | None = None) -> str:
    """Render ``lock`` as TOML text: a ``#:schema`` hint (when a schemas folder is found
    above ``dest``), a header saying how to regenerate it (``pin lock upgrade``, which keeps
    frozen host values) and the canonical ``pin resolve`` command it came from, then the
    lock. Only the ``#:schema`` line depends on ``dest`` (its folder, not its name).
    """
    import tomlkit

    doc = tomlkit.document()
    hint = _schema_hint(dest)
    if hint:
        doc.add(tomlkit.comment(f"schema {hint}"))
    # The header repeats text from the command line: escaped, so `cat` of a lock acts on nothing.
    doc.add(tomlkit.comment(printable(
        f"pin lockfile for {lock.target.gpu.value or lock.request.gpu} + "
        f"{', '.join(lock.request.frameworks)}: written by pin {lock.generator.version}; "
        "do not edit by hand.", newlines=False)))
    doc.add(tomlkit.comment("Regenerate: pin lock upgrade FILE (re-resolves [request], keeps "
                            "frozen host values)"))
    doc.add(tomlkit.comment(f"Resolved by: {printable(lock.generator.command, newlines=False)}"))
    doc.add(tomlkit.comment("Check: pin lock check FILE    Validate: pin lock validate FILE    "
                            "Show: pin lock show FILE"))
    data = lock_json(lock)
    for key, value in data.items():
        doc.add(key, _item(value))
    text = tomlkit.dumps(doc)
    if hint:
        text = text.replace("# schema ", "#:schema ", 1)
    return text


def _is_aot(value: Any) -> bool:
    """True for a non-empty list of tables (rendered as ``[[name]]`` blocks)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _item(value: Any) -> Any:
    """``value`` (lock JSON) as a tomlkit item: a table, an array of tables, an array or a
    scalar. Linear in the size of ``value``.

    tomlkit, when it adds a key to a table it builds, scans the whole table for where the
    first sub-table starts (so that plain keys stay above ``[sub]`` headers): n keys cost
    O(n**2), 72 s for the 20,000 packages of a frozen host. A table whose values are all
    plain (no sub-table, no array of tables) has no sub-table to keep keys above, so it is
    filled in tomlkit's parser mode, which appends without that scan and gives the same
    bytes (``tests/unit/lockfile/test_render_one_pass.py`` checks it against plain tomlkit).
    """
    import tomlkit

    if isinstance(value, dict):
        t = tomlkit.table()
        plain = not any(isinstance(v, dict) or _is_aot(v) for v in value.values())
        if plain:
            t.value.parsing(True)
        for k, v in value.items():
            t.add(k, _item(v))
        if plain:
            t.value.parsing(False)
        return t
    if _is_aot(value):
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


#: Keys of a lock whose values are versions, and those holding specifiers (``request``).
LOCK_VERSION_FIELDS = frozenset({"version", "hip", "toolkit", "toolkit-driver", "packages"})
LOCK_SPECIFIER_FIELDS = frozenset({"rocm", "cuda", "frameworks"})


def _check_versions(path: Path | str, data: dict[str, Any]) -> None:
    """Raise ``LockfileError`` (exit 5) naming the field of a version past the bounds of
    :mod:`pinning.util.versions` (64 characters, 18 digits a number) in the lock as read.
    """
    from pinning.util.versions import version_fields_problem

    problem = version_fields_problem(data, LOCK_VERSION_FIELDS, LOCK_SPECIFIER_FIELDS)
    if problem:
        raise LockfileError(f"{path}: invalid lockfile: {problem}.")


class LockWriteError(UsageError, LockfileError):
    """The lockfile cannot be written to the path asked for (a missing or read-only folder,
    a directory in its place): exit 2, like every output file pin cannot write (README,
    "Exit codes"), and a ``LockfileError`` for callers that catch those.
    """

    exit_code = 2
    default_hint = "Choose a writable path with -o FILE."


def write_lock(lock: Lockfile, path: Path, *, if_unchanged: bytes | None = None) -> bytes:
    """Write ``lock`` to ``path`` atomically (temp file + rename) under the path's advisory
    write lock (:func:`~pinning.util.files.atomic_write_bytes`); return the bytes written.

    ``if_unchanged`` is the exact bytes of ``path`` the caller read (``pin freeze`` reads a
    lock, probes, then replaces it): the write happens only if the file still holds them.
    Raises ``LockfileError`` (exit 5) when it changed meanwhile or another writer holds
    the lock too long, nothing written; :class:`LockWriteError` (exit 2) when the file
    cannot be written.
    """
    data = render(lock, dest=path).encode()
    try:
        atomic_write_bytes(path, data, if_unchanged=if_unchanged)
    except TargetChanged as exc:
        raise LockfileError(
            f"{path}: changed since pin read it (another command wrote it meanwhile); "
            "nothing was written.",
            hint="Re-run the command: it reads the lock again.",
        ) from exc
    except WriteConflict as exc:
        raise LockfileError(f"{path}: {exc}; nothing was written.",
                            hint="Re-run when the other pin command has finished.") from exc
    except OSError as exc:
        raise LockWriteError(
            f"{path}: cannot write the lockfile ({exc.strerror or exc})."
        ) from exc
    return data


def read_lock(path: Path) -> Lockfile:
    """Read and validate a lockfile, checking its version and content hash.

    Raises ``LockfileError`` (exit 5) naming the file and, for schema errors, the field path
    (``frameworks[0].version.origin``); for a hand edit, the hash mismatch; for a path that
    is missing, a directory or not readable, why.
    """
    return read_lock_bytes(path)[1]


def read_lock_bytes(path: Path) -> tuple[bytes, Lockfile]:
    """:func:`read_lock`, with the exact bytes read (what ``write_lock(if_unchanged=...)``
    compares with, and attestations hash). Raises ``LockfileError`` (exit 5) as it does.
    """
    path = Path(path)
    raw, data = read_toml(
        path, LockfileError, label=str(path),
        unreadable_hint="Check the path; `pin resolve ... -o FILE` writes a lockfile.",
    )
    return raw, _lock_of(data, str(path))


def parse_lock_bytes(raw: bytes, *, label: str) -> Lockfile:
    """Validate the exact bytes of a lockfile received other than from a file (an upload),
    as :func:`read_lock` validates a file: version, schema (strict) and content hash.

    ``label`` starts every message (``"uploaded lock"``). Raises ``LockfileError`` (exit 5)
    when the bytes are not UTF-8 TOML or not a valid lock.
    """
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LockfileError(f"{label}: not valid TOML: {exc}.") from exc
    except (RecursionError, ValueError) as exc:
        raise LockfileError(f"{label}: not valid TOML: nested too deeply or a number too "
                            "long to read.") from exc
    return _lock_of(data, label)


def _lock_of(data: dict[str, Any], label: str) -> Lockfile:
    """The validated lock of a parsed TOML table; ``LockfileError`` naming ``label``."""
    version = data.get("lock-version")
    if version is None:
        raise LockfileError(
            f"{label}: not a pin lockfile (no `lock-version`"
            + (", the file is empty)." if not data else ")."),
            hint="Pass a file written by `pin resolve` / `pin freeze`.",
        )
    if version != LOCK_VERSION:
        raise LockfileError(
            f"{label}: lock-version {version!r} is not supported (this pin reads "
            f"lock-version {LOCK_VERSION}).",
            hint="Upgrade pin to read a newer lock, or re-resolve it with the `Resolved by:` "
            "command in its header comment.",
        )
    _check_versions(label, data)
    from pydantic import ValidationError

    try:
        lock = Lockfile.model_validate(data, strict=True)
    except ValidationError as exc:
        raise LockfileError(
            f"{label}: invalid lockfile: {validation_summary(exc, data)}.",
            hint=DAMAGED_HINT) from exc
    expected = content_hash(lock_json(lock))
    if lock.content_hash != expected:
        raise LockfileError(
            f"{label}: content-hash {lock.content_hash} does not match the lock's content "
            f"({expected}); the file was edited by hand or damaged.",
            hint=DAMAGED_HINT,
        )
    return lock


def frozen_fields(lock: Lockfile) -> list[str]:
    """Dotted names of the values a ``pin freeze`` set (``origin = "host"``, the firmware
    blocks, ``packages``, the frozen ``environment``): what writing a fresh resolve over
    ``lock`` would drop. Empty for a lock no host was frozen into.
    """
    out: list[str] = []

    def walk(path: str, value: Any) -> None:
        if is_pinned(value):
            if value.get("origin") == "host":
                out.append(path)
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{path}.{k}" if path else k, v)
        elif isinstance(value, list) and path == "frameworks":
            for fw in value:
                walk(f"frameworks.{fw.get('name')}", fw)

    data = lock_json(lock)
    for key in ("target", "firmware", "kernel-driver", "os", "kernel", "runtime", "frameworks"):
        walk(key, data.get(key))
    if lock.firmware.blocks is not None:
        out.append("firmware.blocks")
    if lock.packages is not None:
        out.append("packages")
    if lock.frozen is not None and lock.environment:
        out.append("environment")
    return out


def is_pinned(value: Any) -> bool:
    """True for the JSON form of a :class:`~pinning.lockfile.models.Pinned` value."""
    return isinstance(value, dict) and "origin" in value


def guard_frozen(path: Path, *, force: bool, command: str = "pin resolve") -> bytes | None:
    """Refuse to replace a lock that holds frozen host values at ``path``, unless ``force``.

    Returns the bytes now at ``path`` when it is a regular file (pass them to
    :func:`write_lock` as ``if_unchanged`` so a write made meanwhile is not lost), else
    ``None``. A file that is not a valid lock is not judged here. Raises ``LockfileError``
    (exit 5), nothing written, naming the frozen values, when ``path`` holds any
    (:func:`frozen_fields`) and ``force`` is false.
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        raw, old = read_lock_bytes(path)
    except LockfileError:
        try:
            return path.read_bytes()
        except OSError:
            return None
    frozen = frozen_fields(old)
    if frozen and not force:
        shown = ", ".join(frozen[:6]) + (f" and {len(frozen) - 6} more" if len(frozen) > 6 else "")
        raise LockfileError(
            f"{path} holds {len(frozen)} value(s) frozen from a host ({shown}); {command} "
            "would replace them with a fresh resolve and lose them. Nothing was written.",
            hint=f"Run `pin lock upgrade {path}` to re-resolve and keep the frozen values, "
                 "write elsewhere with -o FILE, or pass --force to replace the lock.",
        )
    return raw
