"""Import AMD's historical ROCm compatibility CSV into matrix ``Release`` rows and the OS
restrictions its footnotes state.

Source format: ``ROCm/ROCm:docs/compatibility/compatibility-matrix-historical-6.0.csv``, read as
a table by :mod:`pinning.matrix.importers.amd_table` (markup, damage checks); its footnotes'
rules are :mod:`pinning.matrix.importers.amd_footnotes`'.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

from pinning.matrix.importers.amd_footnotes import (
    OsParser,
    only_on_rocm,
    os_rules,
    plain,
    series_exclusion,
    version_listed,
)
from pinning.matrix.importers.amd_table import (
    LABELS,
    OS_IDS,
    Column,
    TableState,
    check_complete,
    list_cell,
    parse_os_cell,
    read_columns,
    read_rows,
    row_label,
    split_footnotes,
)
from pinning.matrix.models import FrameworkSupport, OsRestriction, Release

CSV_PATH = "docs/compatibility/compatibility-matrix-historical-6.0.csv"
PAGE_PATH = "docs/compatibility/compatibility-matrix.rst"
SOURCE = f"AMD ROCm compatibility matrix, historical table: ROCm/ROCm:{CSV_PATH}"
URL = "https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html"
PAGE_SOURCE = f"AMD ROCm compatibility matrix page: ROCm/ROCm:{PAGE_PATH}"

#: The dated copies pin ships, by date: the repository and commit read (a fork of ROCm/ROCm
#: whose ``docs/compatibility`` matches upstream, or upstream itself).
COPIES: dict[dt.date, tuple[str, str]] = {
    dt.date(2026, 1, 21): ("alanina/ROCm", "c6bf8d2"),
    dt.date(2025, 3, 21): ("ROCm/ROCm", "e396b48"),
}


def cite(base: str, path: str, published: dt.date) -> tuple[str, str]:
    """Source text and URL of one file of the copy dated ``published``: the upstream path,
    the copy read and its date; the live page's URL for a copy pin does not know.
    """
    copy = COPIES.get(published)
    if copy is None:
        return f"{base} (copy dated {published.isoformat()})", URL
    repo, commit = copy
    return (f"{base} (copy read: {repo}@{commit}, {published.isoformat()})",
            f"https://github.com/{repo}/blob/{commit}/{path}")

_DATE_IN_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})")

#: Framework rows imported, label -> framework name used by pin.
FRAMEWORKS: dict[str, str] = {
    "pytorch": "pytorch",
    "tensorflow": "tensorflow",
    "jax": "jax",
    "onnx runtime": "onnxruntime",
    "verl": "verl",
    "dgl": "dgl",
    "megablocks": "megablocks",
    "ray": "ray",
    "flashinfer": "flashinfer",
    "llama.cpp": "llama.cpp",
    "stanford megatron-lm": "stanford-megatron-lm",
}

#: Library and tool rows a ROCm user-space lock records (label -> pin name); the HIP runtime
#: is the ``hip`` field.
COMPONENTS: dict[str, str] = {
    "hipblaslt": "hipblaslt",
    "rocblas": "rocblas",
    "miopen": "miopen",
    "rccl": "rccl",
    "composable kernel": "composable-kernel",
    "amd smi": "amd-smi",
    "rocm smi": "rocm-smi",
}

_FRAMEWORK_LABEL: dict[str, str] = {v: k for k, v in FRAMEWORKS.items()}


@dataclass
class AmdCopy:
    """What one dated copy of AMD's matrix states: releases and the OS restrictions its
    footnotes state (:mod:`pinning.matrix.importers.amd_footnotes`).
    """

    releases: list[Release]
    restrictions: list[OsRestriction]


def import_amd_copy(
    text: str,
    *,
    published: dt.date,
    name: str = "amd-matrix.csv",
    footnotes: dict[str, str] | None = None,
) -> AmdCopy:
    """Parse the historical CSV ``text`` into one ``Release`` per ROCm version and the OS
    restrictions its footnotes state.

    ``published`` is the date of the copy (it dates every row); ``name`` is used in error
    messages; ``footnotes`` (from :func:`parse_footnote_texts`) turns footnote names into
    their text and rules: per-GPU OS footnotes become ``OsRestriction`` rows, "X is supported
    only on ROCm ..." on a framework row limits that framework to those releases (a combined
    ``7.0.1/7.0.0`` column validates it only on the ones named), "X v is not supported on
    MI350 Series" keeps ``v`` off the series' gfx targets; a footnote of another shape is kept,
    with its text, in the notes of every release it touches. Releases come newest first as in
    the CSV. Raises ``MatrixError`` naming the CSV line (and column) for a header or cell it
    cannot read, and for a damaged copy (:func:`read_rows`: a truncated row, a one-column
    file, an open quote at the end; a missing required row), which is never read as releases
    with unknown fields.
    """
    rows = read_rows(text, name)
    columns = read_columns(rows, name)
    check_complete(rows, name)
    fn_text = footnotes or {}
    state = TableState()
    for lineno, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        cells = row[1 : len(columns) + 1]
        if not row_label(state, row, cells) or state.label is None:
            continue
        where = f"{name}, line {lineno}"
        for col, cell in zip(columns, cells, strict=False):
            if cell.strip():
                _fill(col, state, cell, where=where, footnotes=fn_text)
    restrictions: list[OsRestriction] = []
    releases: list[Release] = []
    for col in columns:
        restrictions += _restrictions(col, published, fn_text)
        releases += _releases(col, state, published, name, fn_text)
    return AmdCopy(releases=releases, restrictions=_merge(restrictions))


def _fill(col: Column, state: TableState, cell: str, *, where: str,
          footnotes: dict[str, str]) -> None:
    """Store one non-empty cell of row ``state.label`` in its column."""
    label = state.label or ""
    fieldname = LABELS.get(label)
    framework = FRAMEWORKS.get(label)
    component = COMPONENTS.get(label)
    if fieldname == "os":
        value, fns = split_footnotes(cell)
        ids = parse_os_cell(value, where=where)
        col.os.extend(ids)
        for fn in fns:
            col.os_fns.append((fn, ids))
            col.notes.append(_note(f"OS {', '.join(ids)}: footnote {fn}", fn, footnotes))
        _label_notes(col, state.label_fns, "Operating systems", footnotes)
    elif fieldname == "targets":
        value, fns = split_footnotes(cell)
        col.targets.append(value)
        for fn in fns:
            col.os_fns.append((fn, []))
            col.notes.append(_note(f"{value}: footnote {fn}", fn, footnotes))
        _label_notes(col, state.label_fns, "GPU / LLVM target", footnotes)
    elif fieldname in ("kmd", "tested"):
        items = list_cell(cell)
        (col.kmd if fieldname == "kmd" else col.tested).extend(v for v, _ in items)
        col.notes.extend(_note(f"{v}: footnote {fn}", fn, footnotes) for v, fns in items
                         for fn in fns)
        _label_notes(col, state.section_fns, "driver and user space", footnotes)
    elif fieldname == "hip":
        value, _ = split_footnotes(cell)
        col.hip = value or None
    elif framework is not None:
        _fill_framework(col, state, framework, cell)
    elif component is not None:
        value, _ = split_footnotes(cell)
        if value and value.upper() != "N/A":
            col.components[component] = value


def _fill_framework(col: Column, state: TableState, framework: str, cell: str) -> None:
    """Store a framework cell: its versions, and the footnotes on them and on the label."""
    col.framework_label_fns[framework] = list(state.label_fns)
    for value, fns in list_cell(cell):
        col.frameworks.setdefault(framework, []).append(value)
        col.framework_cell_fns.setdefault(framework, []).extend((value, fn) for fn in fns)


def _note(head: str, fn: str, footnotes: dict[str, str]) -> str:
    """``head``, then the text of footnote ``fn`` when ``footnotes`` has it."""
    text_ = footnotes.get(fn, "")
    return head + (f": {text_}" if text_ else "")


def _label_notes(col: Column, fns: list[str], label: str, footnotes: dict[str, str]) -> None:
    """Keep the footnotes ``fns`` of a row label (``os-compatibility``, ``gpu-compatibility``)
    or section in the column's notes, once: they limit support in words pin cannot turn into
    a rule.
    """
    for fn in fns:
        key = f"{label}: footnote {fn}"
        if not any(n.startswith(key) for n in col.notes):
            col.notes.append(_note(key, fn, footnotes))


def _restrictions(col: Column, published: dt.date,
                  footnotes: dict[str, str]) -> list[OsRestriction]:
    """The OS restrictions the footnotes on the column's OS and GPU-target cells state."""
    parser = OsParser(OS_IDS, lambda item: parse_os_cell(item, where="footnote"))
    out: list[OsRestriction] = []
    for fn, cell_os in col.os_fns:
        rules = os_rules(fn, footnotes.get(fn, ""), versions=col.versions, column_os=col.os,
                         cell_os=cell_os, parse=parser)
        for rule in rules or []:
            source, url = cite(PAGE_SOURCE, PAGE_PATH, published)
            out.append(OsRestriction(
                source=f"{source}, footnote {fn}", url=url, published=published,
                mode=rule.mode,
                gpus=rule.gpus, os=rule.os, runtimes=f"=={rule.runtime}", footnote=fn,
                note=rule.note, targets=rule.targets,
            ))
    return out


def _merge(rows: list[OsRestriction]) -> list[OsRestriction]:
    """``rows`` without repeats (a footnote on several cells of one column)."""
    seen: set[str] = set()
    out: list[OsRestriction] = []
    for r in rows:
        key = r.model_dump_json()
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _frameworks(col: Column, version: str, state: TableState, footnotes: dict[str, str]
                ) -> tuple[list[FrameworkSupport], dict[str, list[str]]]:
    """The column's framework entries as they hold for ROCm ``version``, and notes by
    framework (a footnote that limits a framework to other releases drops it, with a note
    saying so, shown only when that framework is asked for).
    """
    fws: list[FrameworkSupport] = []
    notes: dict[str, list[str]] = {}
    for fw, vers in col.frameworks.items():
        label = state.row_labels.get(_FRAMEWORK_LABEL[fw], fw)
        fw_notes: list[str] = []
        keep = True
        for fn in col.framework_label_fns.get(fw, []):
            text_ = footnotes.get(fn, "")
            only = only_on_rocm(text_)
            if only is not None and not version_listed(only, version):
                notes.setdefault(fw, []).append(
                             f"{label} {', '.join(vers)} is listed in the column {col.header}, "
                             f"but footnote {fn} says: {plain(text_)} pin does not validate "
                             f"{label} on ROCm {version}.")
                keep = False
            else:
                fw_notes.append(_note(f"{label}: footnote {fn}", fn, footnotes))
        if not keep:
            continue
        fws += _split_by_cell_notes(fw, vers, col, fw_notes, footnotes)
    return fws, notes


def _split_by_cell_notes(fw: str, vers: list[str], col: Column, fw_notes: list[str],
                         footnotes: dict[str, str]) -> list[FrameworkSupport]:
    """One entry for ``vers``; a version whose footnote keeps it off a GPU series gets its
    own entry limited to the column's other gfx targets.
    """
    if not all(_is_pep440(v) for v in vers):
        return [FrameworkSupport(
            name=fw, versions=None, builds=list(vers), notes=list(fw_notes),
            versions_unknown=(f"AMD lists {fw} {', '.join(vers)} for {col.header}: a build "
                              "name, not a PEP 440 version; recorded as written, and pin "
                              "cannot compare it with a requested version"))]
    plain_vers = list(vers)
    extra: list[FrameworkSupport] = []
    notes = list(fw_notes)
    for value, fn in col.framework_cell_fns.get(fw, []):
        rule = series_exclusion(footnotes.get(fn, ""))
        if rule is not None and rule.version == value and value in plain_vers:
            plain_vers.remove(value)
            extra.append(FrameworkSupport(
                name=fw, versions=[value],
                targets=[t for t in col.targets if t not in rule.targets],
                notes=[*fw_notes, f"{value}: footnote {fn}: {rule.text}"],
            ))
        else:
            notes.append(_note(f"{value}: footnote {fn}", fn, footnotes))
    main = [FrameworkSupport(name=fw, versions=plain_vers, notes=notes)] if plain_vers else []
    return main + extra


def _releases(col: Column, state: TableState, published: dt.date, name: str,
              footnotes: dict[str, str]) -> list[Release]:
    del name  # the public document, not the local file, is named in unknown reasons
    source, url = cite(SOURCE, CSV_PATH, published)
    out: list[Release] = []
    for version in col.versions:
        notes = list(col.notes)
        if len(col.versions) > 1:
            notes.insert(0, f"Listed in the combined column {col.header}.")
        fws, fw_notes = _frameworks(col, version, state, footnotes)
        unknown: dict[str, str] = {}
        table = "AMD's historical compatibility table"
        if not col.os:
            unknown["os"] = f"{table} lists no operating system for {col.header}"
        if col.tested and not col.kmd:
            unknown["kmd"] = (
                f"{table} lists, for {col.header}, the user-space series tested with its kernel "
                f"driver (Tested user space versions: {', '.join(col.tested)}), not the AMD "
                "GPU Driver versions this user space supports")
        elif not col.kmd:
            unknown["kmd"] = f"{table} lists no AMD GPU Driver (KMD) for {col.header}"
        if not col.targets:
            unknown["targets"] = f"{table} lists no GPU target for {col.header}"
        out.append(Release(
            vendor="amd", runtime="rocm", version=version,
            column=col.header if len(col.versions) > 1 else None,
            source=source, url=url, published=published,
            targets=col.targets or None, os=col.os or None, kmd=col.kmd or None, hip=col.hip,
            tested_user_space=col.tested or None, components=dict(col.components),
            frameworks=fws, notes=notes, framework_notes=fw_notes, unknown=unknown,
        ))
    return out


def _is_pep440(value: str) -> bool:
    """True when ``value`` is a PEP 440 version (``2.9.1``; not ``b6652`` or ``85f95ae``)."""
    from packaging.version import InvalidVersion, Version

    try:
        Version(value)
    except InvalidVersion:
        return False
    return True


def date_from_filename(path: Path) -> dt.date | None:
    """The ``YYYY-MM-DD`` in a dated copy's file name, or ``None``."""
    m = _DATE_IN_NAME.search(path.name)
    try:
        return dt.date.fromisoformat(m.group(1)) if m else None
    except ValueError:  # 2026-13-45 is no date
        return None
