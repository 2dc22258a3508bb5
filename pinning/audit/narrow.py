"""Narrowing a bill after the scan: ``--exclude`` globs and ``--only`` kinds, and identical
files counted once (a source distribution that ships its kernel sources twice).

Both return a new :class:`~pinning.audit.bill.AuditReport` whose totals, files, packages,
effort and ``--fail-on`` decision are counted again from the findings that remain, so every
format (text, JSON, SARIF) shows the same narrowed bill. Globs are matched with
:mod:`fnmatch` (``*`` also crosses ``/``), the shell-style matching users know from
``.gitignore``-like flags, rather than a new pattern language.
"""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from pinning.audit.bill import AuditReport, retally
from pinning.audit.files import read_bytes
from pinning.audit.model import Finding, Kind, Skip


def relative(path: str, inputs: Iterable[str]) -> str:
    """``path`` as the bill prints it, made relative to the audited input it lies under
    (the longest match; a file given itself becomes its base name); unchanged when it lies
    under none (an installed environment, a closure).
    """
    best: str | None = None
    for typed in inputs:
        root = posixpath.normpath(typed).removeprefix("./")
        if root == ".":
            if best is None and not path.startswith("/"):
                best = path
        elif path == root:
            return posixpath.basename(path)
        elif path.startswith(root.rstrip("/") + "/"):
            rel = path[len(root.rstrip("/")) + 1:]
            if best is None or len(rel) < len(best):
                best = rel
    return path if best is None else best


def excluded(rel: str, globs: Iterable[str]) -> bool:
    """Whether the relative path ``rel`` or one of its leading folders matches a glob
    (``third_party`` excludes everything under that folder; ``*.cuh`` every ``.cuh`` file).
    """
    parts = rel.split("/")
    candidates = [rel, *("/".join(parts[:n]) for n in range(1, len(parts)))]
    return any(fnmatch.fnmatchcase(c, g.strip("/")) for g in globs for c in candidates)


def narrow(report: AuditReport, *, exclude: Iterable[str] = (),
           only: Iterable[Kind] = ()) -> AuditReport:
    """``report`` without the findings in files matched by ``exclude`` (globs relative to
    the audited root, see :func:`excluded`) and, when ``only`` names kinds, without the
    findings of other kinds. A finding without a file (a package from a closure) is never
    excluded by a glob. Kernel lines of excluded files with findings leave the total.
    Raises nothing.
    """
    globs, kinds = list(exclude), set(only)
    if not globs and not kinds:
        return report
    dropped: set[str] = set()

    def keep(f: Finding) -> bool:
        if kinds and f.kind not in kinds:
            return False
        if globs and f.path and excluded(relative(f.path, report.inputs), globs):
            dropped.add(f.path)
            return False
        return True

    findings = [f for f in report.findings if keep(f)]
    return retally(report, findings, gone=dropped)


def digests_on_disk(paths: Iterable[str],
                    locate: Callable[[str], Path] = Path) -> dict[str, str]:
    """The sha256 (hex) of each path that is a readable regular file on disk
    (``locate`` turns a printed path into a ``Path``); others (archive members, packages)
    are left out. Reads at most :data:`pinning.audit.files.MAX_SOURCE_BYTES` a file.
    """
    out: dict[str, str] = {}
    for path in dict.fromkeys(paths):
        try:
            out[path] = hashlib.sha256(read_bytes(locate(path))).hexdigest()
        except Skip:
            continue
    return out


def fold_copies(findings: list[Finding],
                digests: Mapping[str, str]) -> tuple[list[Finding], set[str]]:
    """``(findings, gone)``: ``findings`` with byte-identical files counted once. Of the
    files with the same ``digests`` value (printed path -> sha256), the one nearest the root
    (then first by name) keeps its findings, now listing the others in ``copies``; ``gone``
    names the others, whose findings are dropped. Paths not in ``digests`` are untouched.
    Raises nothing.
    """
    same: dict[str, list[str]] = defaultdict(list)
    for path in sorted({f.path for f in findings if f.path and f.path in digests},
                       key=lambda p: (p.count("/"), p)):
        same[digests[path]].append(path)
    copies = {paths[0]: paths[1:] for paths in same.values() if len(paths) > 1}
    if not copies:
        return findings, set()
    gone = {p for others in copies.values() for p in others}
    kept = [f.model_copy(update={"copies": [*f.copies, *copies[f.path]]})
            if f.path in copies else f for f in findings if f.path not in gone]
    return kept, gone


def merge_copies(report: AuditReport, digests: Mapping[str, str]) -> AuditReport:
    """``report`` with byte-identical files counted once (:func:`fold_copies`); the copies'
    findings and kernel lines leave the totals. Raises nothing.
    """
    findings, gone = fold_copies(report.findings, digests)
    return report if not gone else retally(report, findings, gone=gone)
