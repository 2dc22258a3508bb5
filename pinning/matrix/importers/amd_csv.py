"""Import AMD's historical ROCm compatibility CSV into matrix ``Release`` rows.

Source format: ``ROCm/ROCm:docs/compatibility/compatibility-matrix-historical-6.0.csv``. Quirks
handled here: RST markup in column 0 (link text is the label), empty column 0 continuing the
previous label, section rows (``FRAMEWORK SUPPORT``) and anchor rows (``.. _x-past-60:``),
footnote markers (``[#name]_``), combined headers (``7.0.1/7.0.0``), leading spaces in headers,
and the renamed kernel-driver row (``Tested user space versions`` -> ``KMD versions`` -> ``AMD
GPU Driver``).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from pinning.errors import MatrixError
from pinning.matrix.importers.amd_footnotes import (
    OsParser,
    only_on_rocm,
    os_rules,
    plain,
    series_exclusion,
    version_listed,
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

# Linear-time patterns (a hostile cell cannot make them backtrack quadratically): white
# space before a footnote is matched only from the start of its run, and link texts are
# matched greedily, their trailing white space stripped by _text().
_FOOTNOTE = re.compile(r"(?<!\s)\s*\[#([^\][]*)\]_")
_ROLE = re.compile(r":(?:doc|ref):`([^`<]*)(?:<[^>`]*>)?`")
_LINK = re.compile(r"`([^`<]*)<[^>`]*>`__?")
_DATE_IN_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})")
_VERSION_HEADER = re.compile(r"^[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,6}$")

#: Row labels (link text, lower-cased) and the field they fill.
_LABELS: dict[str, str] = {
    "operating systems & kernels": "os",
    "gpu / llvm target": "targets",
    "amd gpu driver": "kmd",
    "kmd versions": "kmd",
    "tested user space versions": "tested",
    "hip": "hip",
}

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

#: OS family as AMD writes it -> os-release ``ID``.
OS_IDS: dict[str, str] = {
    "ubuntu": "ubuntu",
    "rhel": "rhel",
    "sles": "sles",
    "oracle linux": "ol",
    "debian": "debian",
    "azure linux": "azurelinux",
    "rocky linux": "rocky",
    "centos": "centos",
}


def clean_label(cell: str) -> str:
    """Return the plain label of a column-0 cell: link text, no footnotes, no spaces."""
    text = _FOOTNOTE.sub("", cell)
    text = _ROLE.sub(_text, text)
    text = _LINK.sub(_text, text)
    return text.strip()


def _text(m: re.Match[str]) -> str:
    """The link or role text of ``m`` without its trailing white space."""
    return m.group(1).rstrip()


def split_footnotes(cell: str) -> tuple[str, list[str]]:
    """Split ``'gfx942 [#mi300_600-past-60]_'`` into ``('gfx942', ['mi300_600'])``."""
    names = [n.removesuffix("-past-60") for n in _FOOTNOTE.findall(cell)]
    return _FOOTNOTE.sub("", cell).strip(), names


def parse_os_cell(cell: str, *, where: str) -> list[str]:
    """Expand one OS cell into os-release style ids.

    ``'RHEL 10.1, 10.0'`` -> ``['rhel-10.1', 'rhel-10.0']``; ``'SLES 15 SP7, SP6'`` ->
    ``['sles-15.7', 'sles-15.6']`` (os-release ``VERSION_ID`` form). Raises ``MatrixError``
    naming ``where`` for an OS family pin does not know.
    """
    items = [p.strip() for p in cell.split(",") if p.strip()]
    if not items:
        return []
    m = re.match(r"^(?P<fam>[A-Za-z](?:[A-Za-z ]*[A-Za-z])?)\s+(?P<ver>\d.*)$", items[0])
    if not m:
        raise MatrixError(f"{where}: cannot read the operating system {cell!r}.")
    fam = m.group("fam").strip().lower()
    if fam not in OS_IDS:
        raise MatrixError(
            f"{where}: unknown operating system family {m.group('fam')!r} in {cell!r}.",
            hint="Add the family to amd_csv.OS_IDS with its os-release ID.",
        )
    os_id = OS_IDS[fam]
    out: list[str] = []
    major = ""
    for ver in [m.group("ver"), *items[1:]]:
        ver = ver.strip()
        if os_id == "sles":
            sm = re.match(r"^(?:(\d+)\s+)?SP(\d+)$", ver)
            if not sm:
                raise MatrixError(f"{where}: cannot read the SLES version {ver!r} in {cell!r}.")
            major = sm.group(1) or major
            out.append(f"sles-{major}.{sm.group(2)}")
        else:
            if not re.match(r"^\d+(\.\d+)*$", ver):
                raise MatrixError(f"{where}: cannot read the version {ver!r} in {cell!r}.")
            out.append(f"{os_id}-{ver}")
    return out


def _list_cell(cell: str) -> tuple[list[str], list[str]]:
    """Split a comma list cell, returning values and the footnotes attached to each value."""
    values: list[str] = []
    notes: list[str] = []
    for part in cell.replace("|br|", ",").split(","):
        value, fns = split_footnotes(part)
        if not value or value.upper() == "N/A":
            continue
        values.append(value)
        notes.extend(f"{value}: footnote {fn}" for fn in fns)
    return values, notes


@dataclass
class _Column:
    header: str
    versions: list[str]
    os: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    kmd: list[str] = field(default_factory=list)
    hip: str | None = None
    frameworks: dict[str, list[str]] = field(default_factory=dict)
    framework_label_fns: dict[str, list[str]] = field(default_factory=dict)
    framework_cell_fns: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    tested: list[str] = field(default_factory=list)
    components: dict[str, str] = field(default_factory=dict)
    os_fns: list[tuple[str, list[str]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def parse_footnote_texts(page: str) -> dict[str, str]:
    """Read ``.. [#name] text`` footnotes of the matrix's .rst page, ``-past-60`` removed;
    where the page has both forms (the current table's and the historical one's), the
    historical text is kept, as the CSV's cells cite it.
    """
    out: dict[str, str] = {}
    historical: dict[str, str] = {}
    for m in re.finditer(r"^[ \t]*\.\. \[#([^\]\n]+)\]\s+(\S.*)$", page, flags=re.M):
        text = _LINK.sub(_text, _ROLE.sub(_text, m.group(2))).replace("**", "").strip()
        name = m.group(1)
        if name.endswith("-past-60"):
            historical.setdefault(name.removesuffix("-past-60"), text)
        else:
            out.setdefault(name, text)
    # The historical CSV's cells cite the ``-past-60`` footnotes: their text wins.
    return out | historical


MAX_CELL_CHARS = 4096
"""The longest cell read (AMD's longest is under 200 characters)."""

DAMAGED_HINT = ("Pass AMD's compatibility-matrix-historical-6.0.csv as published, whole: a "
                "damaged copy is refused rather than read as releases with unknown fields.")

#: The fields every copy has a row for, and the row labels AMD has used for each.
REQUIRED_ROWS: dict[str, str] = {
    "os": "Operating Systems & Kernels",
    "targets": "GPU / LLVM target",
    "kmd": "AMD GPU Driver (KMD versions, Tested user space versions)",
    "hip": "HIP",
}


def read_rows(text: str, name: str) -> list[list[str]]:
    """The rows of the CSV ``text``, each as wide as the header.

    AMD's file is rectangular (every row has a cell per column), so a row of another width
    (a line cut short, a one-column file, cells lost) or a quote left open at the end is
    damage, not an unknown: :class:`MatrixError` naming ``name``, the line and the first
    column missing or extra. So is a cell over :data:`MAX_CELL_CHARS` characters. Blank
    lines are kept (as empty rows).
    """
    reader = csv.reader(io.StringIO(text), strict=True)
    rows: list[list[str]] = []
    try:
        for row in reader:
            rows.append(row)
    except csv.Error as exc:
        raise MatrixError(f"{name}, line {reader.line_num}: not a complete CSV row ({exc}); "
                          "the file is truncated or damaged.", hint=DAMAGED_HINT) from exc
    width = len(rows[0]) if rows else 0
    for lineno, row in enumerate(rows, start=1):
        long = next((i for i, cell in enumerate(row, start=1) if len(cell) > MAX_CELL_CHARS), 0)
        if long:
            raise MatrixError(f"{name}, line {lineno}, column {long}: a cell of "
                              f"{len(row[long - 1])} characters (AMD's are under "
                              f"{MAX_CELL_CHARS}); the file is damaged.", hint=DAMAGED_HINT)
        if row and len(row) != width:
            where = (f"column {len(row) + 1} of {width} and those after it are missing"
                     if len(row) < width else f"column {width + 1} is beyond the header")
            raise MatrixError(f"{name}, line {lineno}: {len(row)} cells where the header has "
                              f"{width}: {where}; the file is truncated or damaged.",
                              hint=DAMAGED_HINT)
    return rows


def _columns(rows: list[list[str]], name: str) -> list[_Column]:
    """The ROCm version columns of the header row; :class:`MatrixError` naming line 1 and
    the column when the header is not AMD's or has no version column.
    """
    if not rows or clean_label(rows[0][0]).lower() != "rocm version":
        raise MatrixError(
            f"{name}, line 1: expected the header 'ROCm Version,<version>,...'.",
            hint="Pass AMD's compatibility-matrix-historical-6.0.csv, unmodified.",
        )
    if len(rows[0]) < 2:
        raise MatrixError(f"{name}, line 1: the header has no ROCm version column (a "
                          "one-column file).", hint=DAMAGED_HINT)
    columns: list[_Column] = []
    for col, header in enumerate(rows[0][1:], start=2):
        h = header.strip()
        versions = [v.strip() for v in h.split("/") if v.strip()]
        if not versions or not all(_VERSION_HEADER.match(v) for v in versions):
            raise MatrixError(f"{name}, line 1, column {col}: cannot read the ROCm version "
                              f"header {header[:80]!r}.")
        columns.append(_Column(header=h, versions=versions))
    return columns


def _check_complete(rows: list[list[str]], name: str) -> None:
    """:class:`MatrixError` when a row every copy has (:data:`REQUIRED_ROWS`) is missing:
    a copy cut at a line end keeps its width but loses its last rows.
    """
    found = {_LABELS.get(clean_label(row[0]).lower()) for row in rows[1:] if row}
    if "tested" in found:
        found.add("kmd")
    missing = [label for field_, label in REQUIRED_ROWS.items() if field_ not in found]
    if missing:
        raise MatrixError(f"{name}, line {len(rows) + 1} (end of file): no row for "
                          f"{'; '.join(missing)}; the file is truncated or damaged.",
                          hint=DAMAGED_HINT)


@dataclass
class AmdCopy:
    """What one dated copy of AMD's matrix states: releases and the OS restrictions its
    footnotes state (:mod:`pinning.matrix.importers.amd_footnotes`).
    """

    releases: list[Release]
    restrictions: list[OsRestriction]


@dataclass
class _State:
    """The reader's position: the current row label and the footnotes of it and its section."""

    label: str | None = None
    label_fns: list[str] = field(default_factory=list)
    section_fns: list[str] = field(default_factory=list)
    row_labels: dict[str, str] = field(default_factory=dict)


def _row_label(state: _State, row: list[str], cells: list[str]) -> bool:
    """Update ``state`` from column 0 of ``row``; ``False`` when the row carries no values
    (a section header or an anchor row).
    """
    first = clean_label(row[0]) if row else ""
    if first:
        raw = row[0].strip()
        fns = split_footnotes(raw)[1]
        is_section = "`" not in raw and _FOOTNOTE.sub("", raw).strip().isupper()
        if is_section or (cells and cells[0].strip().startswith(".. _")):
            state.label = None  # section header row (FRAMEWORK SUPPORT, DRIVER & USER SPACE, ...)
            state.section_fns = fns
            return False
        state.label = first.lower()
        state.label_fns = fns
        state.row_labels.setdefault(state.label, first)
    return not (cells and cells[0].strip().startswith(".. _"))  # anchor row


def import_amd_csv(
    text: str,
    *,
    published: dt.date,
    name: str = "amd-matrix.csv",
    footnotes: dict[str, str] | None = None,
) -> list[Release]:
    """Parse the historical CSV ``text`` into one ``Release`` per ROCm version (see
    :func:`import_amd_copy`, whose releases this returns).
    """
    return import_amd_copy(text, published=published, name=name, footnotes=footnotes).releases


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
    columns = _columns(rows, name)
    _check_complete(rows, name)
    fn_text = footnotes or {}
    state = _State()
    for lineno, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        cells = row[1 : len(columns) + 1]
        if not _row_label(state, row, cells) or state.label is None:
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


def _fill(col: _Column, state: _State, cell: str, *, where: str,
          footnotes: dict[str, str]) -> None:
    """Store one non-empty cell of row ``state.label`` in its column."""
    label = state.label or ""
    fieldname = _LABELS.get(label)
    framework = FRAMEWORKS.get(label)
    component = COMPONENTS.get(label)
    if fieldname == "os":
        value, fns = split_footnotes(cell)
        ids = parse_os_cell(value, where=where)
        col.os.extend(ids)
        for fn in fns:
            col.os_fns.append((fn, ids))
            col.notes.append(_note(f"OS {', '.join(ids)}: footnote {fn}", fn, footnotes))
        _label_notes(col, state, "Operating systems", footnotes)
    elif fieldname == "targets":
        value, fns = split_footnotes(cell)
        col.targets.append(value)
        for fn in fns:
            col.os_fns.append((fn, []))
            col.notes.append(_note(f"{value}: footnote {fn}", fn, footnotes))
        _label_notes(col, state, "GPU / LLVM target", footnotes)
    elif fieldname in ("kmd", "tested"):
        values, notes = _list_cell(cell)
        (col.kmd if fieldname == "kmd" else col.tested).extend(values)
        col.notes.extend(_with_text(n, footnotes) for n in notes)
        for fn in state.section_fns:
            key = f"driver and user space: footnote {fn}"
            if not any(n.startswith(key) for n in col.notes):
                col.notes.append(_note(key, fn, footnotes))
    elif fieldname == "hip":
        value, _ = split_footnotes(cell)
        col.hip = value or None
    elif framework is not None:
        _fill_framework(col, state, framework, cell)
    elif component is not None:
        value, _ = split_footnotes(cell)
        if value and value.upper() != "N/A":
            col.components[component] = value


def _fill_framework(col: _Column, state: _State, framework: str, cell: str) -> None:
    """Store a framework cell: its versions, and the footnotes on them and on the label."""
    col.framework_label_fns[framework] = list(state.label_fns)
    for part in cell.replace("|br|", ",").split(","):
        value, fns = split_footnotes(part)
        if not value or value.upper() == "N/A":
            continue
        col.frameworks.setdefault(framework, []).append(value)
        col.framework_cell_fns.setdefault(framework, []).extend((value, fn) for fn in fns)


def _note(head: str, fn: str, footnotes: dict[str, str]) -> str:
    text_ = footnotes.get(fn, "")
    return head + (f": {text_}" if text_ else "")


def _label_notes(col: _Column, state: _State, label: str, footnotes: dict[str, str]) -> None:
    """Keep the footnotes of a row label (``os-compatibility``, ``gpu-compatibility``) in
    the column's notes, once: they limit support in words pin cannot turn into a rule.
    """
    for fn in state.label_fns:
        key = f"{label}: footnote {fn}"
        if not any(n.startswith(key) for n in col.notes):
            col.notes.append(_note(key, fn, footnotes))


def _restrictions(col: _Column, published: dt.date,
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


def _frameworks(col: _Column, version: str, state: _State, footnotes: dict[str, str]
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


def _split_by_cell_notes(fw: str, vers: list[str], col: _Column, fw_notes: list[str],
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


def _releases(col: _Column, state: _State, published: dt.date, name: str,
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


def _with_text(note: str, footnotes: dict[str, str] | None) -> str:
    if not footnotes:
        return note
    fn = note.rsplit("footnote ", 1)[-1]
    text = footnotes.get(fn)
    return f"{note}: {text}" if text else note


def date_from_filename(path: Path) -> dt.date | None:
    """The ``YYYY-MM-DD`` in a dated copy's file name, or ``None``."""
    m = _DATE_IN_NAME.search(path.name)
    try:
        return dt.date.fromisoformat(m.group(1)) if m else None
    except ValueError:  # 2026-13-45 is no date
        return None
