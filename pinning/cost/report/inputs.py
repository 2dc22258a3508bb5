"""What ``pin report`` reads: a lockfile, a ``pin verify`` report, a porting audit, acceptance
results and a cost report, each optional, each read and validated here so the renderers
work on models only.

JSON documents may be the bare document (what ``-o FILE`` writes) or the ``--format json``
envelope ``{pin, command, ok, exit-code, result, error}`` whose ``result`` holds it.
Acceptance results may be plain or signed (a DSSE envelope): see
:func:`pinning.accept.attest.open_signed_result`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from pinning.accept.result import AcceptanceResult
from pinning.audit.bill import AuditReport
from pinning.cost.model import CostReport
from pinning.errors import UsageError
from pinning.lockfile.models import Lockfile
from pinning.util.jsonread import load_json
from pinning.util.models import validation_summary
from pinning.verify.report import VerifyReport

__all__ = ["AcceptInput", "Loaded", "ReportInputs", "read_accept", "read_audit", "read_cost",
           "read_document", "read_lock_input", "read_verify"]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

#: The most a JSON input may hold, in bytes (a result with detailed per-request data is
#: a few MiB; an audit of a large tree a few tens).
MAX_JSON_BYTES = 256 * 1024 * 1024

Signature = Literal["verified", "not-verified", "unsigned"]


@dataclass(frozen=True)
class Loaded(Generic[T]):
    """One input: ``path`` as the user gave it, ``value`` the validated model and
    ``sha256`` the hex digest of the exact bytes read.
    """

    path: str
    value: T
    sha256: str


@dataclass(frozen=True)
class AcceptInput:
    """One acceptance result: ``path`` as given, the ``result``, ``signature`` (``verified``
    with the key given, ``not-verified``: a signed envelope read without a key, or
    ``unsigned``: a plain document) and the ``sha256`` of the bytes read.
    """

    path: str
    result: AcceptanceResult
    signature: Signature
    sha256: str


@dataclass(frozen=True)
class ReportInputs:
    """Everything a report is made from; any part may be absent (its section then says
    "not given"). ``results`` keeps the order given on the command line.
    """

    lock: Loaded[Lockfile] | None = None
    verify: Loaded[VerifyReport] | None = None
    audit: Loaded[AuditReport] | None = None
    results: tuple[AcceptInput, ...] = ()
    cost: Loaded[CostReport] | None = None

    def paths(self) -> list[str]:
        """Every input file as given, in the order lock, verify, audit, results, cost."""
        out = [x.path for x in (self.lock, self.verify, self.audit) if x is not None]
        out += [r.path for r in self.results]
        return out + ([self.cost.path] if self.cost is not None else [])


def _read(path: Path, label: str, hint: str) -> bytes:
    from pinning.util.files import read_regular_bytes

    return read_regular_bytes(path, UsageError, label=label, hint=hint, limit=MAX_JSON_BYTES)


def read_document(path: Path, model: type[M], *, label: str, hint: str) -> Loaded[M]:
    """Read ``path`` as JSON and validate it as ``model``: the bare document or a ``pin ...
    --format json`` envelope whose ``result`` is it.

    Raises ``UsageError`` (exit 2) starting with ``label`` for an unreadable file, text that
    is not JSON, an envelope of a command that failed (no result), or a document that does
    not validate (naming the first fields); ``hint`` says what to pass instead.
    """
    data = _read(path, label, hint)
    doc = load_json(data, UsageError, label=label, hint=hint)
    if isinstance(doc, dict) and {"pin", "command", "ok", "result"} <= doc.keys():
        if doc["result"] is None:
            raise UsageError(f"{label}: a `pin {doc.get('command')}` envelope with no result "
                             "(the command failed).", hint=hint)
        doc = doc["result"]
    try:
        value = model.model_validate(doc)
    except ValidationError as exc:
        raise UsageError(f"{label}: not a valid {model.__name__}: "
                         f"{validation_summary(exc, doc)}.", hint=hint) from exc
    return Loaded(str(path), value, hashlib.sha256(data).hexdigest())


def read_audit(path: Path) -> Loaded[AuditReport]:
    """A porting bill (``pin audit --format json -o FILE``, or its envelope). Raises
    ``UsageError`` (exit 2) as :func:`read_document` does.
    """
    return read_document(path, AuditReport, label=f"--audit {path}",
                         hint="Pass the file `pin audit --format json -o audit.json` wrote.")


def read_cost(path: Path) -> Loaded[CostReport]:
    """A cost report (``pin cost --format json``, bare or in its envelope). Raises
    ``UsageError`` (exit 2) as :func:`read_document` does.
    """
    return read_document(path, CostReport, label=f"--cost {path}",
                         hint="Pass what `pin cost ... --format json` wrote.")


def read_verify(path: Path) -> Loaded[VerifyReport]:
    """A ``pin verify --format json`` report (bare or in its envelope). Raises
    ``UsageError`` (exit 2) as :func:`read_document` does.
    """
    return read_document(path, VerifyReport, label=f"--verify {path}",
                         hint="Pass what `pin verify LOCK --format json` printed.")


def read_lock_input(path: Path, target: str | None = None) -> Loaded[Lockfile]:
    """A lockfile, read and checked by :func:`pinning.lockfile.io.read_lock_at`
    (``LockfileError``, exit 5, when it is not a valid lock); of a multi-target lock the
    view of ``target`` (named `` [targets.NAME]`` after the path; ``UsageError``, exit 2, as
    ``read_lock`` for the target). The sha256 is the file's.
    """
    from pinning.lockfile.io import read_lock_at

    read = read_lock_at(path, target)
    name = str(path) if read.target is None else f"{path} [targets.{read.target}]"
    return Loaded(name, read.lock, hashlib.sha256(read.raw).hexdigest())


def read_accept(path: Path, key_path: Path | None = None) -> AcceptInput:
    """An acceptance result, plain or signed. With ``key_path`` (a PEM public key) a
    signed result's signature must verify (``SignatureError``, exit 9, otherwise, also for
    a plain result); without it a signed one is read unverified. Raises ``UsageError``
    (exit 2) for a file that is not a result.
    """
    from pinning.accept.attest import open_signed_result

    label = f"--accept {path}"
    data = _read(path, label, "Pass a file `pin accept run` or `pin accept judge` wrote (-o).")
    key = None
    if key_path is not None:
        from pinning.sign.crypto import load_public

        key = load_public(key_path)
    result, verified = open_signed_result(data, key, label=label)
    doc = load_json(data, UsageError, label=label)  # valid: open_signed_result parsed it
    signed = isinstance(doc, dict) and "payloadType" in doc
    signature: Signature = "verified" if verified else ("not-verified" if signed
                                                        else "unsigned")
    return AcceptInput(str(path), result, signature, hashlib.sha256(data).hexdigest())
