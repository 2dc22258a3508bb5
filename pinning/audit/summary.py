"""The text bill at real size: the summary it opens with (by verdict, by kind, by top
folder, the effort total) and the findings grouped one line per rule x file.

A tree with thousands of findings gives a summary of at most :data:`SUMMARY_MAX` lines;
full detail stays in JSON and SARIF, which are not grouped.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from pinning.audit.bill import AuditReport
from pinning.audit.model import VERDICTS_SHOWN, Finding, Kind, Verdict
from pinning.audit.narrow import relative

FOLDERS_SHOWN = 8
"""The most top folders the summary names (by findings, most first); the rest are counted."""

SUMMARY_MAX = 40
"""The most lines the summary takes: 17 kinds + 8 folders + headings fit."""

NO_FILE = "(no file)"
"""The folder shown for findings without a file (packages of a closure or environment)."""

TOP_LEVEL = "(top level)"
"""The folder shown for files directly in the audited folder."""

_COLUMNS = tuple(v.value.replace("-", " ") for v in VERDICTS_SHOWN)


def top_folder(path: str | None, inputs: Iterable[str], common: str = "") -> str:
    """The first folder of ``path`` below the audited root (and below ``common``, a folder
    every file shares, such as an sdist's ``name-version/``); :data:`TOP_LEVEL` for a
    file directly there, :data:`NO_FILE` for none.
    """
    if not path:
        return NO_FILE
    rel = relative(path, inputs)
    if common:
        rel = rel.removeprefix(common + "/")
    head, sep, _ = rel.partition("/")
    return head if sep else TOP_LEVEL


def _common_folder(findings: list[Finding], inputs: list[str]) -> str:
    """The folder every finding's file lies in below the root (``""`` when none or when
    some finding has no file).
    """
    rels = [relative(f.path, inputs) if f.path else "" for f in findings]
    heads = {rel.partition("/")[0] if "/" in rel else None for rel in rels}
    only = heads.pop() if len(heads) == 1 else None
    if only is None or all("/" not in rel.removeprefix(only + "/") for rel in rels):
        return ""  # no shared folder, or nothing below it but files: nothing to strip
    return only


def _row(label: str, counts: Counter[Verdict], width: int) -> str:
    cells = "".join(f"{counts.get(v, 0):>{len(c) + 2}}"
                    for v, c in zip(VERDICTS_SHOWN, _COLUMNS, strict=True))
    return f"  {label:<{width}}{cells}"


def summary_lines(report: AuditReport) -> list[str]:
    """The summary the text bill opens with: a table of findings per verdict in total, by
    kind and by top folder (the :data:`FOLDERS_SHOWN` with most findings, then how many
    more), and the effort total when there is one. At most :data:`SUMMARY_MAX` lines.
    """
    findings = report.findings
    by_kind: dict[Kind, Counter[Verdict]] = defaultdict(Counter)
    by_folder: dict[str, Counter[Verdict]] = defaultdict(Counter)
    common = _common_folder(findings, report.inputs)
    for f in findings:
        by_kind[f.kind][f.verdict] += 1
        by_folder[top_folder(f.path, report.inputs, common)][f.verdict] += 1
    folders = sorted(by_folder, key=lambda k: (-sum(by_folder[k].values()), k))
    labels = [f"kind {k.value}" for k in by_kind] + [f"folder {d}" for d in
                                                      folders[:FOLDERS_SHOWN]]
    width = max([len(label) for label in labels] + [20]) + 1
    where = f" (folders below {common}/)" if common else ""
    lines = ["", "SUMMARY" + " " * (width - 5) + "".join(f"  {c}" for c in _COLUMNS),
             _row("total", Counter(report.totals), width)]
    lines += [_row(f"kind {k.value}", by_kind[k], width)
              for k in sorted(by_kind, key=lambda k: (-sum(by_kind[k].values()), k.value))]
    lines += [_row(f"folder {d}", by_folder[d], width) for d in folders[:FOLDERS_SHOWN]]
    if len(folders) > FOLDERS_SHOWN:
        lines.append(f"  ... {len(folders) - FOLDERS_SHOWN} more folders{where}")
    elif where:
        lines.append(f"  {where.strip(' ()')}")
    if report.effort is not None:
        unpriced = (f"; no hours given for {len(report.effort.unpriced)} kind(s)"
                    if report.effort.unpriced else "")
        lines.append(f"  effort: {report.effort.total_hours:g} h of your hours{unpriced}")
    return lines


@dataclass(frozen=True)
class Group:
    """The findings of one rule in one file (a package finding stays alone): ``lines`` every
    line they occur on, sorted; ``copies`` the other files with the same bytes.
    """

    findings: tuple[Finding, ...]
    lines: tuple[int, ...]

    @property
    def first(self) -> Finding:
        """The group's first finding (its kind, rule, file and copies are the group's)."""
        return self.findings[0]


def groups(findings: Iterable[Finding]) -> list[Group]:
    """``findings`` (sorted as the bill sorts them) grouped one per rule x file, in the
    order of each group's first finding; package findings and findings without a file
    stay one per group.
    """
    keyed: dict[tuple[str, str], list[Finding]] = {}
    for n, f in enumerate(findings):
        key = ((f.rule, f.path) if f.path and f.kind is not Kind.PACKAGE
               else ("", str(n)))
        keyed.setdefault(key, []).append(f)
    out = []
    for items in keyed.values():
        lines = sorted({n for f in items for n in (f.lines or ([f.line] if f.line else []))})
        out.append(Group(findings=tuple(items), lines=tuple(lines)))
    return out
