"""The record of ``pin trial``: one JSON document per run, kept in ``.pin/trial/record.json``
in the project folder, and the re-run rule that reads it.

A stage's inputs hash is ``sha256:`` over the canonical JSON of its name, pin's version, the
project file sections it reads and the sha256 of every input file it consumes (the project's
sources, the lock, results files, prices, the gates file and the outputs of earlier stages;
a missing file hashes as ``null``). A stage whose hash equals the recorded one, whose
recorded status was ``ran`` or ``unchanged`` and whose outputs still hold the bytes the
record names is not run again. Only click and the standard library are imported at module
level (this module is loaded with ``pin trial``).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pinning import __version__
from pinning.errors import UsageError
from pinning.util.digests import canonical_digest, sha256_digest

__all__ = ["RECORD", "STAGES", "TRIAL_DIR", "Inputs", "StageRecord", "file_sha256",
           "inputs_hash", "outputs_intact", "read_record", "record_document", "utc_now",
           "write_record"]

#: The stages of a trial, in order.
STAGES: tuple[str, ...] = ("audit", "lock", "build", "accept", "cost", "report")
#: Where a trial's outputs live, relative to the project folder.
TRIAL_DIR = Path(".pin") / "trial"
#: The record of the last run, relative to the project folder.
RECORD = TRIAL_DIR / "record.json"
_RECORD_VERSION = 1


def utc_now() -> str:
    """The time now, UTC, to the second: ``2026-12-05T12:00:00Z``."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def file_sha256(path: Path) -> str | None:
    """``sha256:<hex>`` of the regular file at ``path``; ``None`` when it is missing or not
    a readable regular file. Raises nothing.
    """
    try:
        if not path.is_file():
            return None
        return sha256_digest(path.read_bytes())
    except OSError:
        return None


@dataclass
class Inputs:
    """What a stage reads: ``sections`` (plain JSON data, e.g. the project file's tables)
    and ``files``, paths relative to the project folder (POSIX form).
    """

    sections: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def inputs_hash(stage: str, inputs: Inputs, folder: Path,
                known: dict[str, str] | None = None) -> str:
    """The inputs hash of ``stage`` (``sha256:<hex>``) over its name, pin's version,
    ``inputs.sections`` and the sha256 of each of ``inputs.files`` under ``folder``; a
    file an earlier stage wrote counts with the hash that stage recorded (``known``), so
    a stage that rewrites its own input (``build`` writes the image into ``pin.lock``)
    is not made stale by its own write.
    """
    known = known or {}
    files = {name: known.get(name) or file_sha256(folder / name)
             for name in sorted(set(inputs.files))}
    return canonical_digest({"stage": stage, "pin": __version__,
                             "sections": inputs.sections, "files": files})


@dataclass
class StageRecord:
    """One stage of a run. ``status`` is ``ran``, ``skipped``, ``unchanged`` or
    ``failed``; ``commands`` are ``{"argv": [...], "exit-code": N}`` (the pin command
    lines run, without the leading ``pin``); ``outputs`` ``{"path", "sha256"}`` (paths
    relative to the project folder); ``notes`` one line per target or finding; ``at`` when
    the outputs were made (UTC); ``exit_code`` the stage's (0 unless it failed).
    """

    name: str
    status: str
    reason: str | None = None
    commands: list[dict[str, Any]] = field(default_factory=list)
    inputs_hash: str | None = None
    outputs: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    at: str | None = None
    exit_code: int = 0
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The stage as the record writes it (kebab-case keys)."""
        return {"name": self.name, "status": self.status, "reason": self.reason,
                "commands": self.commands, "inputs-hash": self.inputs_hash,
                "outputs": self.outputs, "notes": self.notes, "at": self.at,
                "exit-code": self.exit_code, "error": self.error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StageRecord:
        """A stage read back from a record (``KeyError`` / ``TypeError`` when malformed)."""
        return cls(name=str(data["name"]), status=str(data["status"]), reason=data["reason"],
                   commands=list(data["commands"]), inputs_hash=data["inputs-hash"],
                   outputs=list(data["outputs"]), notes=list(data["notes"]),
                   at=data["at"], exit_code=int(data["exit-code"]), error=data["error"])


def outputs_intact(stage: StageRecord, folder: Path, later: dict[str, str]) -> bool:
    """Whether every output ``stage`` recorded still holds the recorded bytes (for a path
    a later stage of the record rewrote, such as ``pin.lock`` after ``build``, the bytes
    ``later`` maps it to).
    """
    return all(file_sha256(folder / out["path"]) == later.get(out["path"], out["sha256"])
               for out in stage.outputs)


def read_record(folder: Path) -> dict[str, StageRecord]:
    """The stages of the record in ``folder`` by name; empty when there is none. A record
    that cannot be read (another version, torn by hand) is treated as none: every stage
    runs again. Raises nothing.
    """
    from pinning.util.jsonread import load_json

    path = folder / RECORD
    try:
        doc = load_json(path.read_bytes(), UsageError, label=str(RECORD))
        if doc.get("record-version") != _RECORD_VERSION:
            return {}
        return {s["name"]: StageRecord.from_json(s) for s in doc["stages"]}
    except (OSError, UsageError, AttributeError, KeyError, TypeError, ValueError):
        return {}


def record_document(project: dict[str, Any], stages: list[StageRecord],
                    verdict: dict[str, Any], exit_code: int) -> dict[str, Any]:
    """The whole record: ``record-version``, ``project`` (``name``, ``file``), ``pin``
    (version), ``written-at`` (UTC), ``stages`` (in order), ``verdict`` and
    ``exit-code``.
    """
    return {"record-version": _RECORD_VERSION, "project": project, "pin": __version__,
            "written-at": utc_now(), "stages": [s.as_json() for s in stages],
            "verdict": verdict, "exit-code": exit_code}


def write_record(folder: Path, document: dict[str, Any], extra: Path | None) -> None:
    """Write ``document`` to ``.pin/trial/record.json`` in ``folder`` (atomically) and to
    ``extra`` (``-o RECORD``) when given. Raises ``UsageError`` (exit 2) naming a file
    that cannot be written.
    """
    from pinning.util.files import atomic_write_bytes

    data = (json.dumps(document, indent=2, ensure_ascii=True) + "\n").encode()
    for path in (folder / RECORD, extra):
        if path is None:
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, data)
        except OSError as exc:
            raise UsageError(f"The trial record {path} cannot be written "
                             f"({exc.strerror or exc}).",
                             hint=f"Make {path.parent} writable, or name another -o.") from exc
