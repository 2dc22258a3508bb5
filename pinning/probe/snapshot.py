"""Host snapshots on disk: ``pin probe -o FILE`` writes one, ``--host FILE`` reads it back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pinning.errors import ProbeError, UsageError
from pinning.probe.models import HostFacts, canonical_json
from pinning.util.envelope import unwrap
from pinning.util.files import atomic_write_bytes, is_stdio, read_regular_bytes, read_stdin_bytes
from pinning.util.models import validation_summary
from pinning.util.text import json_safe
from pinning.util.versions import version_fields_problem

#: Keys of a snapshot whose values are versions (bounded on read, pinning.util.versions).
SNAPSHOT_VERSION_FIELDS = frozenset({"version", "version-id", "driver", "rocm", "hip", "cuda",
                                     "cuda-toolkit", "files-version", "pldm-bundle", "glibc"})


class _DuplicateKey(ValueError):
    """A JSON object names one key twice (``args[0]`` is the key)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` object hook: the object as a dict; :class:`_DuplicateKey` when a key
    repeats (plain ``json`` keeps the last value, so an edit could hide behind the first).
    """
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def snapshot_text(facts: HostFacts) -> str:
    """The snapshot as indented JSON (model field order, ``None`` left out), newline-ended."""
    data = facts.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json_safe(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"


def write_snapshot(facts: HostFacts, path: Path) -> None:
    """Write ``facts`` to ``path`` with :func:`~pinning.util.files.atomic_write_bytes`:
    atomically (temp file, then rename) over a regular file or a symbolic link's target, as a
    stream to a character device or FIFO, to standard output for ``-``.

    Raises :class:`~pinning.errors.UsageError` (exit 2) when ``path`` cannot be written;
    an existing file is then left as it was.
    """
    try:
        atomic_write_bytes(path, snapshot_text(facts).encode())
    except OSError as exc:
        raise UsageError(f"-o {path}: cannot write the snapshot ({exc.strerror or exc}).",
                         hint="Choose a writable file path (its folder must exist).") from exc


def read_snapshot(path: Path) -> HostFacts:
    """Read a snapshot written by ``pin probe -o`` (``-``: standard input), or the envelope
    ``pin probe --format json`` printed (its result is the snapshot).

    Raises :class:`ProbeError` (exit 7) naming the file, and the line or field, when it
    cannot be read, is not JSON, names a key twice in one object, or does not match
    ``schemas/host.schema.json`` exactly (no type coercion: ``"live": "true"`` is an error;
    environment names are POSIX names, values have no control characters).
    """
    hint = "Write a fresh snapshot with `pin probe -o FILE` on the host."
    if is_stdio(path):
        path = Path("(standard input)")  # the name in messages; the bytes come from stdin
        data_bytes = read_stdin_bytes(ProbeError, label=f"Host snapshot {path}", hint=hint)
    else:
        data_bytes = read_regular_bytes(path, ProbeError, label=f"Host snapshot {path}",
                                        hint=hint)
    try:
        raw = data_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProbeError(f"Host snapshot {path}: not UTF-8 ({exc}).", hint=hint) from exc
    try:
        data = json.loads(raw, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise ProbeError(f"Host snapshot {path}: key {exc.args[0]!r} appears twice in one object; "
                         "a snapshot names each field once.", hint=hint) from exc
    except json.JSONDecodeError as exc:
        raise ProbeError(
            f"Host snapshot {path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).",
            hint=hint,
        ) from exc
    except RecursionError as exc:
        raise ProbeError(f"Host snapshot {path}: JSON nested too deeply.", hint=hint) from exc
    except ValueError as exc:  # a number int() refuses (over 4,300 digits)
        raise ProbeError(f"Host snapshot {path}: a number too long to read.", hint=hint) from exc
    data = unwrap(data, "probe")  # `pin probe --format json > FILE` wrote the envelope
    problem = version_fields_problem(data, SNAPSHOT_VERSION_FIELDS)
    if problem:
        raise ProbeError(f"Host snapshot {path}: {problem}.", hint=hint)
    try:
        facts = HostFacts.model_validate(data, strict=True)
        canonical_json(facts)  # its hash must be computable (no lone surrogates)
        return facts
    except UnicodeEncodeError as exc:
        raise ProbeError(f"Host snapshot {path}: a string is not valid Unicode ({exc.reason}).",
                         hint=hint) from exc
    except ValidationError as exc:
        raise ProbeError(f"Host snapshot {path}: {validation_summary(exc, data, limit=3)}.",
                         hint=hint) from exc
