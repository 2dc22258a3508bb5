"""The porting bill: findings grouped by verdict with totals, per file and per package, lines of
kernel code, the team's own effort estimate, and the ``--fail-on`` decision.

The report is the pydantic model :class:`AuditReport` (``schemas/audit-report.schema.json``);
text and SARIF renderings live in :mod:`pinning.audit.render`.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from pinning.audit.model import Finding, Kind, Skipped, Verdict
from pinning.errors import UsageError
from pinning.util.models import Strict

SCHEMA_VERSION = 1


class FileTotal(Strict):
    """One file with findings: how many per verdict, its lines of kernel code, and the
    other files with the same bytes (``copies``: counted once, here).
    """

    path: str
    counts: dict[Verdict, int]
    kernel_lines: int = 0
    copies: list[str] = Field(
        default_factory=list, description="Other files with the same bytes, counted here.")


class PackageTotal(Strict):
    """One distribution: its worst verdict, where it was declared or found (``origins``:
    ``requirements.txt:3``, ``site-packages``), and how many findings concern it.
    """

    name: str
    versions: list[str]
    verdict: Verdict
    origins: list[str]
    findings: int


class EffortLine(Strict):
    """Hours for one finding kind and verdict: ``count`` findings x ``hours_each``."""

    kind: Kind
    verdict: Verdict
    count: int
    hours_each: float
    hours: float


class Effort(Strict):
    """The team's estimate from its ``--effort`` file: one line per (kind, verdict) found
    with hours given, the total, and the kinds found that the file gives no hours for
    (``unpriced``: their hours are unknown, not zero). pin ships no effort numbers.
    """

    source: str = Field(description="The effort file as named on the command line.")
    lines: list[EffortLine]
    total_hours: float
    unpriced: list[str]


class AuditReport(Strict):
    """What ``pin audit`` found.

    ``findings`` sorted by verdict (blocked first), then path and line; ``totals`` counts per
    verdict (every verdict present, zero included); ``kernel_lines`` counts non-blank lines of
    ``.cu``/``.cuh`` files and embedded kernel strings; ``failed`` is true when a finding is at
    or above ``fail_on`` (exit 11).
    """

    schema_version: int = SCHEMA_VERSION
    inputs: list[str]
    requirements: list[str] = Field(default_factory=list)
    gpu: str | None = None
    gfx_targets: list[str] = Field(default_factory=list)
    files_scanned: int = 0
    kernel_lines: int = 0
    totals: dict[Verdict, int]
    totals_by_kind: dict[Kind, int]
    files: list[FileTotal]
    packages: list[PackageTotal]
    findings: list[Finding]
    skipped: list[Skipped]
    effort: Effort | None = None
    hipify_perl: dict[str, Any] | None = Field(
        default=None, description="hipify-perl -examine statistics, when it is on PATH.")
    fail_on: Verdict
    failed: bool


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """``findings`` with the most expensive verdict first, then by path, line and rule."""
    return sorted(findings, key=lambda f: (-f.verdict.rank, f.verdict is Verdict.NO_DATA,
                                           f.path or "", f.line or 0, f.rule, f.subject))


def _package_totals(findings: list[Finding]) -> list[PackageTotal]:
    by_name: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        if f.package:
            by_name[f.package].append(f)
    out = []
    for name in sorted(by_name):
        items = by_name[name]
        pkg_items = [f for f in items if f.kind is Kind.PACKAGE] or items
        worst = max((f.verdict for f in pkg_items), key=lambda v: v.rank)
        versions = sorted({f.subject for f in pkg_items if f.kind is Kind.PACKAGE})
        origins = sorted({f"{f.path}:{f.line}" if f.line else (f.path or "index")
                          for f in pkg_items})
        out.append(PackageTotal(name=name, versions=versions, verdict=worst, origins=origins,
                                findings=len(items)))
    return out


def _file_totals(findings: list[Finding], kernel_lines: Mapping[str, int]) -> list[FileTotal]:
    counts: dict[str, Counter[Verdict]] = defaultdict(Counter)
    copies: dict[str, list[str]] = {}
    for f in findings:
        if f.path and f.kind is not Kind.PACKAGE:
            counts[f.path][f.verdict] += 1
            copies.setdefault(f.path, f.copies)
    return [FileTotal(path=p, counts=dict(sorted(c.items(), key=lambda kv: -kv[0].rank)),
                      kernel_lines=kernel_lines.get(p, 0), copies=copies[p])
            for p, c in sorted(counts.items())]


def effort_units(findings: list[Finding]) -> Counter[tuple[Kind, Verdict]]:
    """How many billable units each (kind, verdict) has: a package counts once however many
    files declare it; any other finding counts once per file and subject.
    """
    units: Counter[tuple[Kind, Verdict]] = Counter()
    seen_packages: set[tuple[str, Verdict]] = set()
    for f in findings:
        if f.kind is Kind.PACKAGE:
            key = (f.package or f.subject, f.verdict)
            if key in seen_packages:
                continue
            seen_packages.add(key)
        units[(f.kind, f.verdict)] += 1
    return units


def read_effort(path: Path) -> dict[Kind, dict[Verdict, float]]:
    """Read the team's effort file: TOML with a ``[hours]`` table whose keys are finding
    kinds (:class:`~pinning.audit.model.Kind` values) and whose values are hours per finding,
    either one number for every verdict or a table per verdict
    (``package = { swap = 0.5, port = 8, blocked = 40 }``).

    Raises ``UsageError`` (exit 2) naming the file and key for an unknown kind or verdict, a
    value that is not a finite number >= 0, or a file that is not such TOML.
    """
    import tomllib

    from pinning.util.files import read_regular_bytes

    raw = read_regular_bytes(path, UsageError, label=f"effort file {path}", limit=1024 * 1024)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"effort file {path}: not valid TOML ({exc}).",
                         hint=_EFFORT_HINT) from exc
    hours = data.get("hours")
    extra = sorted(set(data) - {"hours"})
    if not isinstance(hours, dict) or extra:
        raise UsageError(f"effort file {path}: expected one [hours] table"
                         + (f"; unknown key(s) {', '.join(extra)}" if extra else "") + ".",
                         hint=_EFFORT_HINT)
    kinds = {k.value: k for k in Kind}
    verdicts = {v.value: v for v in Verdict if v is not Verdict.NO_DATA}
    out: dict[Kind, dict[Verdict, float]] = {}
    for key, value in hours.items():
        if key not in kinds:
            raise UsageError(f"effort file {path}: [hours] {key!r} is not a finding kind.",
                             hint=f"Kinds: {', '.join(kinds)}.")
        per = value if isinstance(value, dict) else {v: value for v in verdicts}
        table: dict[Verdict, float] = {}
        for vkey, number in per.items():
            where = f"[hours] {key}" + (f".{vkey}" if isinstance(value, dict) else "")
            if vkey not in verdicts:
                raise UsageError(f"effort file {path}: {where}: {vkey!r} is not a verdict.",
                                 hint=f"Verdicts: {', '.join(verdicts)}.")
            if (isinstance(number, bool) or not isinstance(number, (int, float))
                    or not math.isfinite(number) or not 0 <= number <= MAX_HOURS):
                raise UsageError(f"effort file {path}: {where} = {number!r}: hours must be a "
                                 f"number from 0 to {MAX_HOURS:,}.", hint=_EFFORT_HINT)
            table[verdicts[vkey]] = float(number)
        out[kinds[key]] = table
    return out


MAX_HOURS = 1_000_000
"""The most hours an effort file may give one finding (so no total overflows)."""

_EFFORT_HINT = ("Example:\n  [hours]\n  inline-ptx = 16\n  warp-size = 4\n"
                "  package = { swap = 0.5, port = 8, blocked = 40 }")


def estimate(findings: list[Finding], hours: dict[Kind, dict[Verdict, float]],
             source: str) -> Effort:
    """The effort for ``findings`` at the team's ``hours`` (from :func:`read_effort`); ready
    and no-data findings cost nothing and are not listed.
    """
    lines = []
    unpriced: set[str] = set()
    for (kind, verdict), count in sorted(effort_units(findings).items(),
                                         key=lambda kv: (kv[0][0].value, -kv[0][1].rank)):
        if verdict in (Verdict.READY, Verdict.NO_DATA):
            continue
        each = hours.get(kind, {}).get(verdict)
        if each is None:
            unpriced.add(f"{kind.value} ({verdict.value})")
            continue
        lines.append(EffortLine(kind=kind, verdict=verdict, count=count, hours_each=each,
                                hours=round(each * count, 3)))
    return Effort(source=source, lines=lines,
                  total_hours=round(sum(line.hours for line in lines), 3),
                  unpriced=sorted(unpriced))


def build_report(*, inputs: list[str], requirements: list[str], gpu: str | None,
                 gfx_targets: list[str], findings: list[Finding], skipped: list[Skipped],
                 files_scanned: int, kernel_lines: dict[str, int], fail_on: Verdict,
                 effort: Effort | None = None,
                 hipify_perl: dict[str, Any] | None = None) -> AuditReport:
    """Assemble the report from what the scanners found (``kernel_lines``: display path ->
    lines of kernel code). ``failed`` is set when a finding's verdict ranks at or above
    ``fail_on``; :mod:`pinning.audit.narrow` narrows it and counts identical files once.
    """
    return AuditReport(
        inputs=inputs, requirements=requirements, gpu=gpu, gfx_targets=gfx_targets,
        files_scanned=files_scanned, skipped=sorted(skipped, key=lambda s: (s.path, s.reason)),
        effort=effort, hipify_perl=hipify_perl, fail_on=fail_on,
        **_tally(findings, kernel_lines, fail_on))


def _tally(findings: Iterable[Finding], kernel_lines: Mapping[str, int],
           fail_on: Verdict) -> dict[str, Any]:
    """The fields of :class:`AuditReport` counted from ``findings``."""
    ordered = sort_findings(findings)
    totals = Counter(f.verdict for f in ordered)
    by_kind = Counter(f.kind for f in ordered)
    return {"kernel_lines": sum(kernel_lines.values()),
            "totals": {v: totals.get(v, 0) for v in Verdict},
            "totals_by_kind": {k: by_kind[k] for k in Kind if by_kind.get(k)},
            "files": _file_totals(ordered, kernel_lines),
            "packages": _package_totals(ordered), "findings": ordered,
            "failed": any(f.verdict.rank >= fail_on.rank for f in ordered)}


def _reprice(effort: Effort, findings: list[Finding]) -> Effort:
    """``effort`` counted again for ``findings`` (a subset of those it was made for), at
    the hours its lines give; kinds it had no hours for stay unpriced.
    """
    hours: dict[Kind, dict[Verdict, float]] = defaultdict(dict)
    for line in effort.lines:
        hours[line.kind][line.verdict] = line.hours_each
    return estimate(findings, hours, effort.source)


def retally(report: AuditReport, findings: list[Finding], *,
            gone: Iterable[str] = ()) -> AuditReport:
    """``report`` with only ``findings`` (a subset of its own, maybe with ``copies`` set),
    everything counted again: totals, files, packages, effort, ``failed``. The kernel lines
    of the files in ``gone`` (printed paths) leave the total. Raises nothing.
    """
    gone = set(gone)
    per_file = {ft.path: ft.kernel_lines for ft in report.files}
    attributed = sum(per_file.values())
    kept = {p: n for p, n in per_file.items() if p not in gone}
    rest = {"": max(report.kernel_lines - attributed, 0)}  # lines of files without findings
    fields = _tally(findings, {**kept, **rest}, report.fail_on)
    if report.effort is not None:
        fields["effort"] = _reprice(report.effort, fields["findings"])
    return report.model_copy(update=fields)
