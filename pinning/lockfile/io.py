"""Deterministic lockfile read/write and the content hash.

Writing uses tomlkit with a fixed key order (the model's field order), no timestamps, and an
atomic rename, so the same inputs give the same bytes. Reading uses :mod:`tomllib` and the
pydantic model; every problem is a ``LockfileError`` (exit 5) naming the file and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pinning.errors import InternalError, LockfileError, UsageError
from pinning.lockfile.models import LOCK_VERSION, Lockfile
from pinning.lockfile.multi import (
    MULTI_VERSION,
    NAME_RULE,
    READABLE_VERSIONS,
    MultiLock,
    bad_target_name,
    multi_hash,
    pick,
    render_multi,
    replace_target,
    view_data,
)
from pinning.lockfile.tomlout import schema_hint, toml_item
from pinning.util.digests import canonical_digest
from pinning.util.files import TargetChanged, atomic_write_bytes, parse_toml, read_toml
from pinning.util.locks import WriteConflict
from pinning.util.models import validation_summary
from pinning.util.text import printable

DAMAGED_MULTI_HINT = ("Restore the file (from version control), or write it anew from the "
                      "project file: `pin lock --force` re-resolves every target (values "
                      "frozen from a host are lost).")
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


def render(lock: Lockfile, *, dest: Path | None = None) -> str:
    """Render ``lock`` as TOML text: a ``#:schema`` hint (when a schemas folder is found
    above ``dest``), a header saying how to regenerate it (``pin lock upgrade``, which keeps
    frozen host values) and the canonical ``pin resolve`` command it came from, then the
    lock. Only the ``#:schema`` line depends on ``dest`` (its folder, not its name).
    """
    import tomlkit

    doc = tomlkit.document()
    hint = schema_hint(dest)
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
        doc.add(key, toml_item(value))
    text = tomlkit.dumps(doc)
    if hint:
        text = text.replace("# schema ", "#:schema ", 1)
    return text


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


@dataclass(frozen=True)
class LockRead:
    """A lock as read: the file's exact ``raw`` bytes, the ``lock`` (in a multi-target file,
    the chosen target's view), and for such a file the ``target`` name and the whole
    ``multi`` lock, which :func:`write_lock` writes back with that target replaced.
    """

    raw: bytes
    lock: Lockfile
    target: str | None = None
    multi: MultiLock | None = None


def write_lock(lock: Lockfile, path: Path, *, if_unchanged: bytes | None = None,
               into: LockRead | None = None) -> bytes:
    """Write ``lock`` to ``path`` atomically (temp file + rename) under the path's advisory
    write lock (:func:`~pinning.util.files.atomic_write_bytes`); return the bytes written.
    With ``into`` from a multi-target file, the whole file is written with ``into.target``'s
    section replaced by ``lock`` (the other targets as they were).

    ``if_unchanged`` is the exact bytes of ``path`` the caller read (``pin freeze`` reads a
    lock, probes, then replaces it): the write happens only if the file still holds them.
    Raises ``LockfileError`` (exit 5) when it changed meanwhile or another writer holds
    the lock too long, nothing written; :class:`LockWriteError` (exit 2) when the file
    cannot be written.
    """
    if into is not None and into.multi is not None and into.target is not None:
        multi = replace_target(into.multi, into.target, lock)
        return write_bytes(render_multi(multi, dest=path).encode(), path,
                           if_unchanged=if_unchanged)
    return write_bytes(render(lock, dest=path).encode(), path, if_unchanged=if_unchanged)


def write_bytes(data: bytes, path: Path, *, if_unchanged: bytes | None = None) -> bytes:
    """Write rendered lock ``data`` to ``path`` as :func:`write_lock` does; return it."""
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


def read_lock(path: Path, target: str | None = None) -> Lockfile:
    """Read and validate a lockfile, checking its version and content hash; in a
    multi-target file, the view of ``target`` (or of its only target).

    Raises ``LockfileError`` (exit 5) naming the file and, for schema errors, the field path
    (``frameworks[0].version.origin``); for a hand edit, the hash mismatch; for a path that
    is missing, a directory or not readable, why. ``UsageError`` (exit 2) as
    :func:`pinning.lockfile.multi.pick` for a target it does not have (or none named of
    several), and for ``target`` given with a single-target lock.
    """
    return read_lock_at(path, target).lock


def read_lock_bytes(path: Path, target: str | None = None) -> tuple[bytes, Lockfile]:
    """:func:`read_lock`, with the exact bytes read (what ``write_lock(if_unchanged=...)``
    compares with, and attestations hash). Raises as it does.
    """
    read = read_lock_at(path, target)
    return read.raw, read.lock


def read_lock_at(path: Path, target: str | None = None) -> LockRead:
    """:func:`read_lock`, keeping what :func:`write_lock` needs to write the lock back."""
    raw, multi, locks = read_locks(path)
    return _chosen(raw, multi, locks, target, str(path))


def read_locks(path: Path) -> tuple[bytes, MultiLock | None, dict[str, Lockfile]]:
    """Every lock of the file at ``path``: its bytes, the multi-target lock (``None`` for a
    single-target file) and each target's lock by name (``""`` for a single-target file).
    Raises ``LockfileError`` (exit 5) as :func:`read_lock`.
    """
    path = Path(path)
    raw, data = read_toml(
        path, LockfileError, label=str(path),
        unreadable_hint="Check the path; `pin resolve ... -o FILE` writes a lockfile.",
    )
    return (raw, *_locks_of(data, str(path)))


def parse_lock_bytes(raw: bytes, *, label: str, target: str | None = None) -> Lockfile:
    """Validate the exact bytes of a lockfile received other than from a file (an upload),
    as :func:`read_lock` validates a file: version, schema (strict) and content hash.

    ``label`` starts every message (``"uploaded lock"``). Raises ``LockfileError`` (exit 5)
    when the bytes are not UTF-8 TOML or not a valid lock; ``UsageError`` (exit 2) as
    :func:`read_lock` for the target.
    """
    data = parse_toml(raw, LockfileError, label=label)
    return _chosen(raw, *_locks_of(data, label), target, label).lock


def _chosen(raw: bytes, multi: MultiLock | None, locks: dict[str, Lockfile],
            target: str | None, label: str) -> LockRead:
    """The :class:`LockRead` of ``target`` among ``locks``."""
    if multi is None:
        if target is not None:
            raise UsageError(
                f"--target {target!r}: {label} is a single-target lock (lock-version 1); "
                "--target chooses a section of a multi-target lock.",
                hint=f"Leave out --target, or convert it: pin lock migrate {label}.")
        return LockRead(raw, locks[""])
    name = pick(multi, target, label=label)
    return LockRead(raw, locks[name], name, multi)


def _locks_of(data: dict[str, Any], label: str) -> tuple[MultiLock | None, dict[str, Lockfile]]:
    """The multi-target lock (or ``None``) and each lock of a parsed TOML table."""
    version = data.get("lock-version")
    if version is None:
        raise LockfileError(
            f"{label}: not a pin lockfile (no `lock-version`"
            + (", the file is empty)." if not data else ")."),
            hint="Pass a file written by `pin resolve`, `pin lock` or `pin freeze`.",
        )
    if type(version) is not int:  # `true == 1` and `2.0 == 2` in Python: not in a lock
        raise LockfileError(
            f"{label}: invalid lockfile: lock-version must be an integer "
            f"({' or '.join(map(str, READABLE_VERSIONS))}), not {type(version).__name__} "
            f"{printable(repr(version), newlines=False)[:40]}.",
            hint="Write it as a bare integer (`lock-version = 2`), or restore the file.")
    if version == LOCK_VERSION:
        return None, {"": _lock_of(data, label)}
    if version != MULTI_VERSION:
        raise LockfileError(
            f"{label}: lock-version {version!r} is not supported (this pin reads "
            f"lock-version {' and '.join(map(str, READABLE_VERSIONS))}).",
            hint="A newer pin wrote it: upgrade pin (docs/concepts/lock-versions.md), or "
            "re-resolve it with the `Resolved by:` command in its header comment.",
        )
    multi = _multi_of(data, label)
    try:  # each target first: a hand edit is named by its section
        views = {name: _lock_of(view_data(multi, name, label=label),
                                f"{label} [targets.{name}]") for name in multi.targets}
    except LockfileError as err:
        err.hint = DAMAGED_MULTI_HINT
        raise
    _check_multi_hash(multi, data, label)
    return multi, views


def _multi_of(data: dict[str, Any], label: str) -> MultiLock:
    """The validated :class:`MultiLock` of a parsed ``lock-version = 2`` table."""
    from pydantic import ValidationError

    bad = bad_target_name(data)
    if bad:
        raise LockfileError(f"{label}: invalid lockfile: [targets] has a section {bad}, "
                            f"which is not a target name ({NAME_RULE}).",
                            hint=DAMAGED_MULTI_HINT)
    try:
        multi = MultiLock.model_validate(data, strict=True)
    except ValidationError as exc:
        raise LockfileError(f"{label}: invalid lockfile: {validation_summary(exc, data)}.",
                            hint=DAMAGED_MULTI_HINT) from exc
    return multi


def _check_multi_hash(multi: MultiLock, data: dict[str, Any], label: str) -> None:
    """``LockfileError`` (exit 5) when the file's own ``content-hash`` is not its content's."""
    expected = multi_hash(data)
    if multi.content_hash != expected:
        raise LockfileError(
            f"{label}: content-hash {multi.content_hash} does not match the file's content "
            f"({expected}); the file was edited by hand or damaged.", hint=DAMAGED_MULTI_HINT)


def _lock_of(data: dict[str, Any], label: str) -> Lockfile:
    """The validated single-target lock of ``data``; ``LockfileError`` naming ``label``."""
    _check_versions(label, data)
    from pydantic import ValidationError

    try:
        lock = Lockfile.model_validate(data, strict=True)
    except ValidationError as exc:
        raise LockfileError(
            f"{label}: invalid lockfile: {validation_summary(exc, data)}.",
            hint=DAMAGED_HINT) from exc
    # Over the data as read, not the model re-dumped: a field a later pin added with a
    # default (`[]`) is not in an older lock's bytes, nor in the hash its writer computed.
    expected = content_hash(data)
    if lock.content_hash != expected:
        raise LockfileError(
            f"{label}: content-hash {lock.content_hash} does not match the lock's content "
            f"({expected}); the file was edited by hand or damaged.",
            hint=DAMAGED_HINT,
        )
    return lock
