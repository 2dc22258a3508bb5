"""Host snapshots on disk: ``pin probe -o FILE`` writes one, ``--host FILE`` reads it back."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from pinning.errors import ProbeError, UsageError
from pinning.probe.models import HostFacts, canonical_json
from pinning.util.files import atomic_write_bytes, read_regular_bytes
from pinning.util.models import validation_summary


def snapshot_text(facts: HostFacts) -> str:
    """The snapshot as indented JSON (model field order, ``None`` left out), newline-ended."""
    data = facts.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_snapshot(facts: HostFacts, path: Path) -> None:
    """Write ``facts`` to ``path`` atomically (temp file, then rename).

    Raises :class:`~pinning.errors.UsageError` (exit 2) when ``path`` cannot be written;
    an existing file is then left as it was.
    """
    try:
        atomic_write_bytes(path, snapshot_text(facts).encode())
    except OSError as exc:
        raise UsageError(f"-o {path}: cannot write the snapshot ({exc.strerror or exc}).",
                         hint="Choose a writable file path (its folder must exist).") from exc


def read_snapshot(path: Path) -> HostFacts:
    """Read a snapshot written by ``pin probe -o``.

    Raises :class:`ProbeError` (exit 7) naming the file, and the line or field, when it
    cannot be read, is not JSON, or does not match ``schemas/host.schema.json``.
    """
    hint = "Write a fresh snapshot with `pin probe -o FILE` on the host."
    data_bytes = read_regular_bytes(path, ProbeError, label=f"Host snapshot {path}", hint=hint)
    try:
        raw = data_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProbeError(f"Host snapshot {path}: not UTF-8 ({exc}).", hint=hint) from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProbeError(
            f"Host snapshot {path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).",
            hint=hint,
        ) from exc
    except RecursionError as exc:
        raise ProbeError(f"Host snapshot {path}: JSON nested too deeply.", hint=hint) from exc
    try:
        facts = HostFacts.model_validate(data)
        canonical_json(facts)  # its hash must be computable (no lone surrogates)
        return facts
    except UnicodeEncodeError as exc:
        raise ProbeError(f"Host snapshot {path}: a string is not valid Unicode ({exc.reason}).",
                         hint=hint) from exc
    except ValidationError as exc:
        raise ProbeError(f"Host snapshot {path}: {validation_summary(exc, data, limit=3)}.",
                         hint=hint) from exc
