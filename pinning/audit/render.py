"""The bill for people (text) and for code-scanning views (SARIF 2.1.0).

SARIF follows the OASIS standard "Static Analysis Results Interchange Format (SARIF) Version
2.1.0" (https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html, OASIS Standard of
2020-03-27): one run, pin as the tool driver with one reporting descriptor per rule, one
result per finding with its physical location relative to ``%SRCROOT%``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from pinning.audit.bill import AuditReport
from pinning.audit.model import VERDICTS_SHOWN, Finding, Kind, Verdict
from pinning.audit.summary import Group, groups, summary_lines
from pinning.util.text import printable

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
GROUP_LINES = 3
"""How many line numbers a group of findings shows before ``(+N more)``."""
_LEVEL = {Verdict.BLOCKED: "error", Verdict.PORT: "warning", Verdict.SWAP: "note",
          Verdict.NO_DATA: "none"}


def _cite(f: Finding) -> str:
    c = f.citation
    date = c.published.isoformat() if c.published else "date unknown"
    return f"{c.source}, {date}"


def _where(f: Finding) -> str:
    if f.path and f.line:
        more = f" (+{len(f.lines) - 1} more)" if len(f.lines) > 1 else ""
        return f"{f.path}:{f.line}{more}{_also(f)}"
    return (f.path + _also(f) if f.path
            else f"package {f.package}" if f.package else "-")


def _also(f: Finding) -> str:
    also = f" (also at {', '.join(f.copies)})" if f.copies else ""
    if f.binaries:
        shown = ", ".join(b.split(": ", 1)[0].rsplit("/", 1)[-1] for b in f.binaries[:3])
        more = f" and {len(f.binaries) - 3} more" if len(f.binaries) > 3 else ""
        also += f" ({len(f.binaries)} binaries: {shown}{more})"
    return also


def _todo(f: Finding) -> str:
    return f.todo + (f" (use {f.replacement})" if f.replacement
                     and f.replacement not in f.todo else "")


def _group_text(g: Group) -> list[str]:
    """Two lines for a group: where, kind and what (one finding: its subject and why;
    several: how many and their subjects), then what to do and the source.
    """
    f = g.first
    if len(g.findings) == 1:
        head = f"  {_where(f)}  [{f.kind.value}] {f.subject}: {f.why}"
    else:
        shown = ",".join(str(n) for n in g.lines[:GROUP_LINES])
        more = f" (+{len(g.lines) - GROUP_LINES} more)" if len(g.lines) > GROUP_LINES else ""
        subjects = list(dict.fromkeys(x.subject for x in g.findings))
        names = "; ".join(subjects[:3]) + (f"; +{len(subjects) - 3} more"
                                           if len(subjects) > 3 else "")
        head = (f"  {f.path}:{shown}{more}{_also(f)}  [{f.kind.value}] {len(g.findings)} x "
                f"{f.rule}: {names}: {f.why}")
    same = len({(_todo(x), _cite(x)) for x in g.findings}) == 1
    tail = "" if same else " (the first's advice; each item's is in --format json)"
    return [printable(head, newlines=False),
            printable(f"      do: {_todo(f)}  [{_cite(f)}]{tail}", newlines=False)]


def _findings_text(report: AuditReport, limit: int | None) -> list[str]:
    """Every finding but ready packages, by verdict, grouped one per rule x file (at most
    ``limit`` groups per verdict): ready code findings (a TF32 switch: it runs, with other
    numerics) are listed last as notes.
    """
    lines: list[str] = []
    for verdict in VERDICTS_SHOWN:
        found = [f for f in report.findings if f.verdict is verdict
                 and not (verdict is Verdict.READY and f.kind is Kind.PACKAGE)]
        if not found:
            continue
        title = ("READY, WITH A NOTE" if verdict is Verdict.READY
                 else verdict.value.upper().replace("-", " "))
        grouped = groups(found)
        count = (f"{len(found)}" if len(grouped) == len(found)
                 else f"{len(found)}, in {len(grouped)} group"
                      + ("s" if len(grouped) > 1 else ""))
        lines += ["", f"{title} ({count})"]
        for g in grouped[:limit]:
            lines += _group_text(g)
        lines += _more(len(grouped), limit, "group")
    return lines


def _totals_text(report: AuditReport, limit: int | None) -> list[str]:
    """The packages and the files with findings (at most ``limit`` of each)."""
    lines: list[str] = []
    if report.packages:
        lines += ["", f"PACKAGES ({len(report.packages)})"]
        for p in report.packages[:limit]:
            more = ", ..." if len(p.origins) > 3 else ""
            lines.append(printable(f"  {p.verdict.value:8} {p.name}  {', '.join(p.versions)}  "
                                   f"({', '.join(p.origins[:3])}{more})", newlines=False))
        lines += _more(len(report.packages), limit, "package")
    if report.files:
        lines += ["", f"FILES ({len(report.files)} with findings)"]
        for ft in report.files[:limit]:
            counts = " ".join(f"{v.value} {n}" for v, n in ft.counts.items())
            kl = f"; {ft.kernel_lines} kernel lines" if ft.kernel_lines else ""
            also = f" (also at {', '.join(ft.copies)})" if ft.copies else ""
            lines.append(printable(f"  {ft.path}: {counts}{kl}{also}", newlines=False))
        lines += _more(len(report.files), limit, "file")
    return lines


def _more(count: int, limit: int | None, what: str) -> list[str]:
    if limit is None or count <= limit:
        return []
    more = count - limit
    return [f"  ... {more} more {what}{'s' if more > 1 else ''} (--limit {limit}; "
            "--format json lists all)"]


def _effort_text(report: AuditReport) -> list[str]:
    e = report.effort
    if e is None:
        return []
    lines = ["", f"EFFORT (your hours, from {printable(e.source, newlines=False)}): "
                 f"{e.total_hours:g} h"]
    for el in e.lines:
        lines.append(f"  {el.kind.value} ({el.verdict.value}): {el.count} x "
                     f"{el.hours_each:g} h = {el.hours:g} h")
    if e.unpriced:
        lines.append("  no hours given for: " + ", ".join(e.unpriced)
                     + " (not counted: unknown, not zero)")
    return lines


def _tail_text(report: AuditReport) -> list[str]:
    lines: list[str] = []
    if report.hipify_perl is not None:
        lines += ["", "hipify-perl -examine (beside pin's findings; it misses inline PTX and "
                      "warp-32 masks):"]
        for key, value in sorted(report.hipify_perl.items()):
            if isinstance(value, (int, float, str)):
                lines.append(printable(f"  {key}: {value}", newlines=False))
    if report.skipped:
        lines += ["", f"SKIPPED ({len(report.skipped)})"]
        lines += [printable(f"  {s.path}: {s.reason}", newlines=False) for s in report.skipped]
    verdict = (f"fails: something is at or above --fail-on {report.fail_on.value}"
               if report.failed else f"passes: nothing at or above --fail-on "
                                     f"{report.fail_on.value}")
    return [*lines, "", f"Result: {verdict}."]


def render_text(report: AuditReport, *, limit: int | None = None) -> str:
    """The bill as text: a totals line, a summary table (by verdict, kind and top folder;
    the effort total), findings by verdict (blocked first; ready packages only counted)
    grouped one line per rule x file, packages, files, effort and what was skipped;
    ``limit``: at most that many groups per verdict (and packages, files), saying how many
    more. Every value from the inputs is shown escaped (no terminal control sequences
    pass through).
    """
    t = report.totals
    lines = [
        "pin audit: " + ", ".join(f"{t.get(v, 0)} {v.value.replace('-', ' ')}"
                                  for v in VERDICTS_SHOWN)
        + f"  ({report.files_scanned} files scanned; {report.kernel_lines} lines of kernel "
          "code)"]
    if report.gpu:
        lines.append(printable(f"GPU: {report.gpu} "
                               f"({', '.join(report.gfx_targets) or 'no gfx target'})",
                               newlines=False))
    if report.findings:
        lines += [printable(line, newlines=False) for line in summary_lines(report)]
    lines += (_findings_text(report, limit) + _totals_text(report, limit)
              + _effort_text(report))
    lines += _tail_text(report)
    return "\n".join(lines) + "\n"


def _artifact(path: str) -> dict[str, str]:
    """A SARIF artifactLocation for a path as pin printed it: relative paths are relative to
    the folder pin ran in (``%SRCROOT%``); an absolute path is a ``file://`` URI.
    """
    if path.startswith("/"):
        return {"uri": "file://" + quote(path, safe="/")}
    return {"uri": quote(path, safe="/"), "uriBaseId": "%SRCROOT%"}


def _sarif_rule(f: Finding) -> dict[str, Any]:
    """The SARIF ``reportingDescriptor`` of ``f``'s rule (``helpUri``: its source when a URL)."""
    rule: dict[str, Any] = {
        "id": f.rule, "name": f.kind.value,
        "shortDescription": {"text": f"{f.kind.value}: {f.verdict.value}"},
        "properties": {"kind": f.kind.value},
    }
    if f.citation.source.startswith(("https://", "http://")):
        rule["helpUri"] = f.citation.source
    return rule


def _sarif_results(f: Finding, rule_index: int) -> list[dict[str, Any]]:
    """The SARIF results of ``f``: one per line it occurs on (so a code-scanning view marks
    every line), one without a location when it names no file.
    """
    base: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": rule_index,
        "level": _LEVEL[f.verdict],
        "message": {"text": f"{f.subject}: {f.why} Do: {f.todo}"},
        "properties": {
            "verdict": f.verdict.value, "kind": f.kind.value,
            "source": f.citation.source,
            "published": f.citation.published.isoformat() if f.citation.published
            else None,
            **({"package": f.package} if f.package else {}),
            **({"replacement": f.replacement} if f.replacement else {}),
        },
    }
    if not f.path:
        return [base]
    results = []
    occurrences: list[int | None] = list(f.lines) or [f.line]
    for line in occurrences:
        physical: dict[str, Any] = {"artifactLocation": _artifact(f.path)}
        if line:
            region: dict[str, Any] = {"startLine": line}
            if f.column and line == f.line:
                region["startColumn"] = f.column
            physical["region"] = region
        results.append({**base, "locations": [{"physicalLocation": physical}]})
    return results


def render_sarif(report: AuditReport, *, version: str) -> dict[str, Any]:
    """The report as a SARIF 2.1.0 log (a JSON-ready dict): ready findings are left out;
    blocked is ``error``, port ``warning``, swap ``note``, no-data ``none``; a finding
    on several lines gives one result per line. Each rule's
    ``helpUri`` is its source when that is a URL; the verdict, kind and citation are in the
    result's ``properties``.
    """
    rules: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    for f in report.findings:
        if f.verdict is not Verdict.READY:
            rules.setdefault(f.rule, _sarif_rule(f))
            results += _sarif_results(f, list(rules).index(f.rule))
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {
                "name": "pin", "version": version,
                "rules": list(rules.values()),
            }},
            "columnKind": "unicodeCodePoints",
            "originalUriBaseIds": {"%SRCROOT%": {"description": {
                "text": "The folder pin audit ran in: relative paths are as given on its command "
                         "line."}}},
            "results": results,
            "invocations": [{"executionSuccessful": True,
                             "toolExecutionNotifications": [
                                 {"level": "note", "message": {"text": f"skipped {s.path}: "
                                                                       f"{s.reason}"}}
                                 for s in report.skipped]}],
        }],
    }
