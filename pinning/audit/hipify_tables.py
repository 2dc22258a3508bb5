"""The importer of HIPIFY's published CUDA->HIP API tables (Markdown) into the JSON that
:mod:`pinning.audit.hipify` ships and looks identifiers up in; only ``make audit-data`` runs it
(through :func:`pinning.audit.hipify.write_data`).

Source: the Markdown tables HIPIFY generates (``hipify-clang --md``) under
``docs/reference/tables/`` of https://github.com/ROCm/HIPIFY (MIT licence), one file per API
(CUDA Runtime, Driver, Device, RTC, cuComplex, cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE,
cuSPARSELt, cuTENSOR, cuFile, CUB, cuDNN->MIOpen). Each row reads
``|CUDA|A|D|C|R|HIP|A|D|C|R|(U)|E|``: the CUDA name and the CUDA (or library) versions it was
Added / Deprecated / Changed / Removed in, the HIP name and the HIP versions likewise, the
CUDA versions the mapping is not valid for (U, newer tables only) and the HIP version in which
the HIP name is still experimental (E). An empty HIP cell means HIP has no equivalent. Every
table is cited by repository, commit and path (ROCm/HIPIFY, also for tables staged from a fork
that carries its commits), with the date the file carries at that commit or what a user can
check when none is known.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from pinning.audit.model import Citation
from pinning.errors import MatrixError

__all__ = ["FORMAT", "PRIORITY", "REGENERATE", "ROW_FIELDS", "citation_for", "dump_data",
           "import_tables", "table_files"]

FORMAT = 1
"""Version of the JSON layout below; a file of another version is refused."""

REPO_PATH = "docs/reference/tables"
"""Where the tables sit in HIPIFY's repository."""

PRIORITY = (
    "CUDA_Runtime_API_functions_supported_by_HIP.md",
    "CUDA_Driver_API_functions_supported_by_HIP.md",
    "CUDA_Device_API_supported_by_HIP.md",
    "CUDA_RTC_API_supported_by_HIP.md",
    "cuComplex_API_supported_by_HIP.md",
)
"""Tables listed first, in this order; the others follow by file name. When an identifier is
listed by several tables (the ``CU*_st`` structs in both the Runtime and Driver tables,
``libraryPropertyType`` in the Runtime and cuDNN tables), every row is kept in this order and
:func:`lookup` answers with the first."""

REGENERATE = ("pinning.audit.hipify.write_data(<folder of HIPIFY's tables>, "
               "pinning/audit/data/hipify.json), as the Makefile does")
"""How to regenerate the shipped file, named in the hints of its errors."""

_EMPTY = ""
ROW_FIELDS = 13
"""Fields of a row in the compact JSON string, joined by ``|`` (no cell can hold one): table
index, section index, hip, cuda A D C R, hip A D C R, U, E."""

_SECTION = re.compile(r"## \*\*(\d{1,4})\. ([^*]+)\*\*")
_CUDA_NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]{0,199})`")
_TARGET_NAME = re.compile(r"`([^`|]{1,200})`")
_VERSION = re.compile(r"[0-9]{1,6}(?:\.[0-9]{1,6}){0,4}")
_DATE = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}) \(")
_COMMIT = re.compile(r"[0-9a-f]{40}")


def _fail(path: Path, line: int, what: str) -> MatrixError:
    return MatrixError(
        f"{path}:{line}: {what}.",
        hint=f"Fix the table row (or re-copy the file), then regenerate with {REGENERATE}.")


def table_files(folder: Path) -> list[Path]:
    """The table files of ``folder`` pin imports, in :data:`PRIORITY` order:
    ``*_supported_by_HIP.md`` and ``*_supported_by_MIOPEN.md``.

    Left out by design: ``CUDNN_API_supported_by_HIP_and_MIOPEN.md`` (17 columns, HIP and
    MIOpen side by side; withdrawn upstream when cuDNN->hipDNN hipification was disabled, and
    its MIOpen columns are superseded by ``CUDNN_API_supported_by_MIOPEN.md``) and the
    ``*_by_ROC.md`` / ``*_by_HIP_and_ROC.md`` variants (rocBLAS etc. instead of hipBLAS).
    """
    names = {p.name: p for p in folder.iterdir()
             if p.name.endswith(("_supported_by_HIP.md", "_supported_by_MIOPEN.md"))
             and not p.name.endswith("_HIP_and_MIOPEN.md")}
    first = [names[n] for n in PRIORITY if n in names]
    return first + sorted((p for n, p in names.items() if n not in PRIORITY),
                          key=lambda p: p.name)


def _cells(line: str) -> list[str]:
    # "|a|b|c|" -> ["a", "b", "c"]; the caller checked the leading and trailing "|".
    return line[1:-1].split("|")


def _header_layout(path: Path, number: int, line: str) -> tuple[int, str]:
    """``(cell count, target)`` of a table header row, or MatrixError."""
    cells = [c.strip().strip("*") for c in _cells(line)]
    for target in ("HIP", "MIOPEN"):
        for with_u in (True, False):
            want = ["CUDA", "A", "D", "C", "R", target, "A", "D", "C", "R"]
            want += ["U", "E"] if with_u else ["E"]
            if cells == want:
                return len(want), target
    raise _fail(path, number, f"unknown table header {line!r} (expected "
                "|CUDA|A|D|C|R|HIP|A|D|C|R|(U)|E| or MIOPEN in place of HIP)")


def _version(path: Path, number: int, column: str, cell: str, *, many: str = "") -> str:
    """The cell's version text ('' when empty); ``many`` is the separator of a list cell."""
    text = cell.strip()
    if not text:
        return _EMPTY
    parts = text.split(many) if many else [text]
    for part in parts:
        if not _VERSION.fullmatch(part.strip() if many == "," else part):
            raise _fail(path, number, f"column {column}: {cell!r} is not a version"
                        + (" list" if many else ""))
    return text


def _row(path: Path, number: int, line: str, width: int) -> tuple[str, list[str]]:
    """The CUDA name and compact fields (without table/section) of one data row, or
    MatrixError.
    """
    cells = _cells(line)
    if len(cells) != width:
        raise _fail(path, number, f"{len(cells)} cells where the table header has {width}")
    cuda = _CUDA_NAME.fullmatch(cells[0])
    if cuda is None:
        raise _fail(path, number, f"CUDA cell {cells[0]!r} is not a `name`")
    hip_cell = cells[5].strip()
    hip = _TARGET_NAME.fullmatch(hip_cell) if hip_cell else None
    if hip_cell and hip is None:
        raise _fail(path, number, f"HIP cell {cells[5]!r} is neither empty nor a `name`")
    names = ("CUDA A", "CUDA D", "CUDA C", "CUDA R", "HIP A", "HIP D", "HIP C", "HIP R")
    versions = []
    for column, cell in zip(names, cells[1:5] + cells[6:10], strict=True):
        versions.append(_version(path, number, column, cell,
                                 many="," if column.endswith(" C") else ""))
    unsupported = _version(path, number, "U", cells[10], many=" ") if width == 12 else _EMPTY
    experimental = _version(path, number, "E", cells[-1])
    if not hip and (any(versions[4:]) or experimental):
        raise _fail(path, number, "HIP version cells are set but the HIP cell is empty")
    return cuda.group(1), [hip.group(1) if hip else _EMPTY, *versions, unsupported, experimental]


class _TableReader:
    """The line-by-line reader of one table file (state: the current table's width and what
    the next table line must be).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.title = ""
        self.target = ""
        self.sections: list[str] = []
        self.rows: list[tuple[str, int, list[str]]] = []
        self.seen: set[str] = set()
        self.width = 0       # cells of the current table (0: not inside a table)
        self.expect = ""     # "header" / "align" / "": what the next table line must be

    def read(self, number: int, line: str) -> None:
        if not line:
            if self.expect == "align":
                raise _fail(self.path, number, "a table header without its alignment row")
            self.width = 0
            return
        section = _SECTION.fullmatch(line)
        if section is not None:
            if self.expect or self.width:
                raise _fail(self.path, number, "a section heading inside a table")
            self.sections.append(section.group(2).strip())
            self.expect = "header"
        elif line.startswith("|"):
            self._table_line(number, line)
        elif self.expect or self.width:
            raise _fail(self.path, number, f"unexpected text inside a table: {line[:80]!r}")
        elif self.sections:
            raise _fail(self.path, number, f"unexpected text between tables: {line[:80]!r}")
        elif line.startswith("# ") and not self.title:
            self.title = line[2:].strip()

    def _table_line(self, number: int, line: str) -> None:
        if not line.endswith("|") or len(line) < 2:
            raise _fail(self.path, number, "a table row that does not end with '|'")
        if self.expect == "header":
            self.width, layout = _header_layout(self.path, number, line)
            if self.target and layout != self.target:
                raise _fail(self.path, number, f"a {layout} table in a {self.target} file")
            self.target = layout
            self.expect = "align"
        elif self.expect == "align":
            cells = _cells(line)
            if len(cells) != self.width or any(c.strip(":-") for c in cells):
                raise _fail(self.path, number, "the alignment row does not match the header")
            self.expect = ""
        elif self.width:
            name, fields = _row(self.path, number, line, self.width)
            if name in self.seen:
                raise _fail(self.path, number, f"{name} is listed twice in this table")
            self.seen.add(name)
            self.rows.append((name, len(self.sections) - 1, fields))
        else:
            raise _fail(self.path, number, "a table row outside a numbered section's table")


def _import_table(path: Path) -> _TableReader:
    """The title, target, sections and ``(cuda, section index, fields)`` rows of one file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MatrixError(f"{path}: cannot read the HIPIFY table ({exc}).") from None
    reader = _TableReader(path)
    lines = text.splitlines()
    for number, raw in enumerate(lines, 1):
        reader.read(number, raw.rstrip())
    if reader.expect:
        raise _fail(path, len(lines), "a table header without its rows")
    if not reader.rows:
        raise MatrixError(f"{path}: no table rows found (is this a HIPIFY table?).")
    return reader


def _source_rows(folder: Path) -> dict[str, tuple[str, str, str]]:
    """``file -> (repository, commit, date cell)`` from the folder's SOURCE.md files table."""
    path = folder / "SOURCE.md"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MatrixError(f"{path}: cannot read the provenance table ({exc}).",
                          hint="Each table needs its repository, commit and date in SOURCE.md.") \
            from None
    out: dict[str, tuple[str, str, str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("| `") or not line.endswith("|"):
            continue
        cells = [c.strip() for c in line[1:-1].split("|")]
        if len(cells) < 6:
            raise _fail(path, number, "a files-table row with fewer than 6 cells")
        name = cells[0].strip("`")
        repo = cells[3].split(" ")[0]
        commit = cells[4].strip("`").split(" ")[0]
        if not _COMMIT.fullmatch(commit) or repo.count("/") != 1:
            raise _fail(path, number, f"no repository/commit for {name}")
        out[name] = (repo, commit, cells[5])
    return out


_FORK = "vjelic/HIPIFY-glog-fork"
_UPSTREAM = "ROCm/HIPIFY"
"""The staged fork carries ROCm/HIPIFY's branches; its commits up to the one cited are
upstream commits (authored in ROCm/HIPIFY), so they are cited in ROCm/HIPIFY, where a user
can open them."""
_LAST_CHANGE = " (last change)"
_NOT_USER_FACING = ("not in any git snapshot; ", "commit date unknown; ", "content dates it to ",
                    "content: ", "content ")


def citation_for(file: str, repo: str, commit: str, date_cell: str) -> Citation:
    """The citation of one table: ``owner/repo@commit:docs/reference/tables/<file>`` and the
    date that file carries at that commit.

    ``date_cell`` is the provenance note for the file. A fork commit of ``vjelic/HIPIFY-glog-fork``
    is cited as the ROCm/HIPIFY commit it is. The date is the file's last change when the note
    names one (``2025-04-28 (last change) / 2025-08-04 (snapshot commit)``: the file at the
    cited commit is the one changed on 2025-04-28, the date GitHub shows for it), else the
    date the note starts with (``2025-08-04 (commit date; ...)``). A range or an estimate gives
    ``published_unknown``: the table carries no date, and the reason says what its content
    points to, which a user can check against the table and the commit on GitHub.
    """
    if repo == _FORK:
        repo = _UPSTREAM
    source = f"{repo}@{commit}:{REPO_PATH}/{file}"
    last = date_cell.find(_LAST_CHANGE)
    if last >= 10:
        day = date_cell[last - 10:last]
    else:
        start = _DATE.match(date_cell)
        day = start.group(1) if start else ""
    if day:
        try:
            return Citation(source=source, published=dt.date.fromisoformat(day))
        except ValueError:
            pass
    return Citation(source=source, published_unknown=_undated_reason(date_cell))


def _undated_reason(date_cell: str) -> str:
    """Why a table has no date, in terms a user can check: the table carries none, and what
    its content (CUDA / HIP versions, columns, pull requests) points to.
    """
    rest = date_cell.strip()
    changed = True
    while changed:
        changed = False
        for prefix in _NOT_USER_FACING:
            if rest.startswith(prefix):
                rest = rest[len(prefix):].lstrip()
                changed = True
    rest = rest.replace("U column", "\"U\" (unsupported CUDA versions) column")
    return ("the table carries no date (GitHub shows the cited commit's date); its content "
            f"points to: {rest}")


def import_tables(folder: Path) -> dict[str, Any]:
    """Import every table of ``folder`` (laid out like HIPIFY's ``docs/reference/tables/``,
    plus a ``SOURCE.md`` whose files table gives each file's repository, commit and date).

    Returns the JSON-ready data: ``{"format": 1, "tables": [{"file", "title", "target",
    "source", "published" | "published-unknown", "sections": [...]}], "rows": {cuda: row |
    [row, ...]}}`` where a row is the string ``"t|s|hip|cA|cD|cC|cR|hA|hD|hC|hR|U|E"`` (table
    and section indexes, then the cells; empty cells empty). Raises
    :class:`~pinning.errors.MatrixError` (exit 3) naming the file and line of a malformed row,
    an unknown header, a duplicate identifier, or a table without provenance.
    """
    sources = _source_rows(folder)
    tables: list[dict[str, Any]] = []
    rows: dict[str, list[str]] = {}
    for index, path in enumerate(table_files(folder)):
        if path.name not in sources:
            raise MatrixError(f"{folder / 'SOURCE.md'}: no repository/commit for {path.name}.")
        table = _import_table(path)
        citation = citation_for(path.name, *sources[path.name])
        entry: dict[str, Any] = {"file": path.name, "title": table.title,
                                 "target": table.target, "source": citation.source}
        if citation.published is not None:
            entry["published"] = citation.published.isoformat()
        else:
            entry["published-unknown"] = citation.published_unknown
        entry["sections"] = table.sections
        tables.append(entry)
        for name, section, fields in table.rows:
            rows.setdefault(name, []).append("|".join([str(index), str(section), *fields]))
    if not tables:
        raise MatrixError(f"{folder}: no HIPIFY tables (*_supported_by_HIP.md) found.")
    compact: dict[str, str | list[str]] = {
        name: found[0] if len(found) == 1 else found for name, found in sorted(rows.items())}
    return {"format": FORMAT, "tables": tables, "rows": compact}


def dump_data(data: dict[str, Any]) -> str:
    """The JSON text of :func:`import_tables`' result as shipped: one table per line, one
    identifier per line (diff-friendly, small), a final newline.
    """
    lines = ["{", f'"format": {json.dumps(data["format"])},', '"tables": [']
    tables = data["tables"]
    for i, table in enumerate(tables):
        lines.append(json.dumps(table, separators=(",", ":"))
                     + ("," if i < len(tables) - 1 else ""))
    lines.append('],\n"rows": {')
    rows = list(data["rows"].items())
    for i, (name, row) in enumerate(rows):
        lines.append(f"{json.dumps(name)}:{json.dumps(row, separators=(',', ':'))}"
                     + ("," if i < len(rows) - 1 else ""))
    lines.append("}}")
    return "\n".join(lines) + "\n"
