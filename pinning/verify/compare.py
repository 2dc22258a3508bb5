"""Comparing one locked value with one reading (pure).

Each locked fact is compared with what the host shows: an exact value frozen from a trial
host (``origin = "host"``) must match; a value the matrix allows (``allowed`` /
``constraint``) must lie inside it. :class:`Comparer` holds that machinery and the findings;
the fact groups live in :mod:`pinning.verify.hardware` (GPU, firmware, driver, OS,
runtime), :mod:`pinning.verify.software` (frameworks, packages, image, environment) and
:mod:`pinning.verify.model` (model revision and files); :func:`pinning.verify.report.verify`
runs them all.
"""

from __future__ import annotations

import re
from typing import Any

from pinning.guards.view import Finding, Severity, Status
from pinning.lockfile.models import Lockfile, Pinned
from pinning.matrix.load import Matrix
from pinning.probe.models import HostFacts, Reading
from pinning.util.versions import (
    allowed_contains,
    at_least,
    constraint_bounds,
    constraint_holds,
    numeric_parts,
    or_later,
)

SEVERITY: dict[Status, Severity] = {
    "match": "info",
    "mismatch": "error",
    "missing": "error",
    "not-probed": "warning",
    "outside-validated": "error",
    "not-locked": "info",
    "cannot-compare": "warning",
    "hazard": "error",
}


def torch_build_label(kind: str, cuda: str | None, hip: str | None) -> str:
    """``cu130`` for CUDA 13.0, ``rocm6.3`` for HIP ``6.3.42131-...``, else ``cpu`` / kind."""
    if kind == "cuda" and cuda:
        return "cu" + cuda.replace(".", "")
    if kind == "rocm" and hip:
        m = re.match(r"(\d+)\.(\d+)", hip)
        if m:
            return f"rocm{m.group(1)}.{m.group(2)}"
    return kind


def host_os_key(facts: HostFacts) -> tuple[str, str] | None:
    """``('ubuntu', '24.04.3')`` from os-release: ``ID`` and the dotted number that starts
    ``VERSION`` (which carries Ubuntu's point release), else ``VERSION_ID``.
    """
    os_id, vid = facts.os.id.value, facts.os.version_id.value
    if not os_id or not vid:
        return None
    version = facts.os.version.value or ""
    m = re.match(r"(\d+(?:\.\d+)*)", version)
    if m and m.group(1).startswith(vid):
        vid = m.group(1)
    return os_id.lower(), vid


def host_os_text(facts: HostFacts) -> str | None:
    """The host OS in the matrix's spelling (``ubuntu-24.04.3``), or ``None``."""
    key = host_os_key(facts)
    return f"{key[0]}-{key[1]}" if key else None


class LockPlan:
    """What verification derives from one lock alone, worked out once and shared by every
    host compared with it (``pin fleet verify``): the matrix rows by ref, the source text of
    each row (:meth:`row_source`), the freeze's source text and the runtime context of each
    row (:meth:`context`). Read-only for the fact groups; the lock is a frozen model.
    """

    def __init__(self, lock: Lockfile) -> None:
        self.lock = lock
        self.rows = {r.ref: r for r in lock.matrix.rows}
        snap = lock.frozen.snapshot if lock.frozen else "a host snapshot"
        self.host_source = f"frozen from the trial host ({snap})"
        self._sources: dict[str | None, str | None] = {}
        self._contexts: dict[str | None, str] = {}
        self.derived: dict[str, Any] = {}
        """Lock-only values a fact group caches by its own key (a pinned value rewritten
        for a comparison)."""

    def row_source(self, ref: str | None) -> str | None:
        """Source text of the matrix row ``ref`` (with its date), ``ref`` itself when the
        lock records no such row.
        """
        try:
            return self._sources[ref]
        except KeyError:
            pass
        row = self.rows.get(ref or "")
        if row is None:
            text = ref
        else:
            date = row.published or row.checked
            text = (f"{row.source} ({date}); row {row.ref}" if date
                    else f"{row.source}; row {row.ref}")
        self._sources[ref] = text
        return text

    def context(self, ref: str | None = None) -> str:
        """``"Instinct MI300X with ROCm 7.1.1"``: the runtime named by the matrix row ``ref``
        (the row the allowed set came from), else the lock's runtime.
        """
        try:
            return self._contexts[ref]
        except KeyError:
            pass
        lock = self.lock
        gpu = lock.target.gpu.value or lock.request.gpu
        rt = "CUDA" if lock.runtime.name == "cuda" else "ROCm"
        row = (ref or "").partition(":")[2]  # "<file>:rocm-7.1.1/MI300X" -> "rocm-7.1.1/MI300X"
        m = re.match(r"(rocm|cuda)-([0-9][0-9.]*[0-9])", row)
        version = m.group(2) if m and m.group(1) == lock.runtime.name else None
        if version is None and lock.runtime.version.origin != "host":
            version = lock.runtime.version.value
        text = f"{gpu} with {rt} {version}" if version else gpu
        self._contexts[ref] = text
        return text


class Comparer:
    """Collects findings for one lock and one host: the comparison of one pinned value
    with one reading, and the matrix context of a value. The fact groups
    (:mod:`pinning.verify.hardware`, :mod:`pinning.verify.software`,
    :mod:`pinning.verify.model`) build on it.
    ``plan`` is the lock's :class:`LockPlan` when one is shared across hosts (it must be
    of ``lock``); a new one otherwise.
    """

    def __init__(self, lock: Lockfile, facts: HostFacts, matrix: Matrix, *,
                 plan: LockPlan | None = None) -> None:
        self.lock, self.facts = lock, facts
        self.findings: list[Finding] = []
        self.plan = plan if plan is not None else LockPlan(lock)
        self.rows = self.plan.rows

    def source_of(self, pinned: Pinned) -> str | None:
        """Source text for a pinned value: the matrix row (with its date) or the host freeze."""
        if pinned.origin == "host":
            return self.plan.host_source
        return self.plan.row_source(pinned.ref)

    def add(self, code: str, fact: str, status: Status, message: str, *,
            expected: str | None = None, actual: str | None = None, gpu: int | None = None,
            source: str | None = None, severity: Severity | None = None) -> None:
        """Record one finding; its severity follows ``status`` unless given."""
        self.findings.append(Finding(
            code=code, fact=fact, status=status, severity=severity or SEVERITY[status],
            message=message, expected=expected, actual=actual, gpu=gpu, source=source))

    def compare(self, fact: str, label: str, pinned: Pinned, reading: Reading | None,
                *, gpu: int | None = None, comparable: bool = True) -> None:
        """Compare one pinned value with one reading (see the module docstring)."""
        src = self.source_of(pinned)
        where = f" (GPU {gpu})" if gpu is not None else ""
        if reading is None or not reading.known:
            if pinned.value is None and not (pinned.allowed or pinned.constraint):
                self.add("not-locked", fact, "not-locked", f"{label}{where}: the lock leaves it "
                         f"open ({pinned.reason or 'unknown'}); not probed either.", gpu=gpu)
                return
            why = reading.reason if reading is not None else "not probed"
            if reading is not None and reading.absent:
                self.add("missing", fact, "missing", f"{label}{where} is locked but absent on "
                         f"the host: {why}.", expected=pinned.value or allowed_text(pinned),
                         gpu=gpu, source=src)
                return
            self.add("not-probed", fact, "not-probed", f"{label}{where} could not be read: {why}.",
                     expected=pinned.value or allowed_text(pinned), gpu=gpu, source=src)
            return
        actual = reading.value or ""
        if pinned.value is not None:
            if actual == pinned.value:
                self.add("match", fact, "match", f"{label}{where} is {actual}.",
                         expected=pinned.value, actual=actual, gpu=gpu, source=src)
            else:
                self.add("mismatch", fact, "mismatch",
                         f"{label}{where} is {actual}, the lock has {pinned.value}.",
                         expected=pinned.value, actual=actual, gpu=gpu, source=src)
            if pinned.origin == "host":
                self._inside_matrix(fact, label, pinned, actual, gpu, comparable)
            return
        if pinned.allowed or pinned.constraint:
            self._inside_matrix(fact, label, pinned, actual, gpu, comparable, report_match=True)
            return
        self.add("not-locked", fact, "not-locked",
                 f"{label}{where} is {actual}; the lock leaves it open "
                 f"({pinned.reason or 'unknown'}).", actual=actual, gpu=gpu)

    def _inside_matrix(self, fact: str, label: str, pinned: Pinned, actual: str,
                       gpu: int | None, comparable: bool, report_match: bool = False) -> None:
        where = f" (GPU {gpu})" if gpu is not None else ""
        src = self.plan.row_source(pinned.ref)  # the matrix row the allowed set came from
        expected = allowed_text(pinned)
        if not comparable:
            tail = ("the frozen value is compared exactly instead." if pinned.origin == "host"
                    else "freeze the host to pin the exact value.")
            self.add("cannot-compare", fact, "cannot-compare", f"{label}{where} is {actual}; "
                     f"the matrix lists {expected} in another numbering and no public table maps "
                     f"one to the other: {tail}",
                     expected=expected, actual=actual, gpu=gpu, source=src,
                     severity="info" if pinned.origin == "host" else None)
            return
        ok: bool | None = None
        if pinned.allowed:
            ok = allowed_contains(pinned.allowed, actual)
        elif pinned.constraint:
            ok = constraint_holds(pinned.constraint, actual)
            high = constraint_bounds(pinned.constraint)[1]
            if ok and high and at_least(actual, high):
                self.add("above-range", fact, "outside-validated",
                         f"{label}{where} {actual} is at or above {high}, the end of the range "
                         f"listed for {self._context(pinned.ref)}; drivers are backward "
                         "compatible, so this is a warning.", expected=expected, actual=actual,
                         gpu=gpu, source=src, severity="warning")
                return
        if ok is None:
            return
        if ok:
            if report_match:
                self.add("match", fact, "match", f"{label}{where} {actual} is within {expected}.",
                         expected=expected, actual=actual, gpu=gpu, source=src)
            return
        floor = _floor(pinned)
        if floor and at_least(actual, floor) is False:
            what = f"is below {floor}, the lowest"
        else:
            what = f"is not among {expected},"
        self.add("outside-validated", fact, "outside-validated",
                 f"{label}{where} {actual} {what} listed for {self._context(pinned.ref)}.",
                 expected=expected, actual=actual, gpu=gpu, source=src)

    def _context(self, ref: str | None = None) -> str:
        """``"Instinct MI300X with ROCm 7.1.1"``: the runtime named by the matrix row ``ref``
        (the row the allowed set came from), else the lock's runtime.
        """
        return self.plan.context(ref)


def allowed_text(pinned: Pinned) -> str:
    """The set a pinned value allows, in words (``6.4.x, 7.0.x``, ``>=580``, the value)."""
    if pinned.allowed:
        return ", ".join(pinned.allowed)
    if pinned.constraint:
        return pinned.constraint
    return pinned.value or "unknown"


def _floor(pinned: Pinned) -> str | None:
    """The lowest version an ``allowed`` list or ``>=`` constraint accepts, if numeric."""
    if pinned.constraint:
        return constraint_bounds(pinned.constraint)[0]
    bases = [or_later(a)[0] for a in pinned.allowed or []]
    bases = [b for b in bases if re.fullmatch(r"[0-9]+(\.[0-9]+)+", b)]
    if not bases:
        return None
    return min(bases, key=numeric_parts)
