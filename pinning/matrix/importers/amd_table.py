"""Reading AMD's historical ROCm compatibility CSV as a table: rows (a damaged copy refused),
the ROCm version columns, the row labels and sections, and the markup of a cell.

Quirks handled here: RST markup in column 0 (link text is the label), empty column 0
continuing the previous label, section rows (``FRAMEWORK SUPPORT``) and anchor rows
(``.. _x-past-60:``), footnote markers (``[#name]_``), combined headers (``7.0.1/7.0.0``),
leading spaces in headers, and the renamed kernel-driver row (``Tested user space versions``
-> ``KMD versions`` -> ``AMD GPU Driver``). :mod:`pinning.matrix.importers.amd_csv` turns the
table into releases.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from pinning.errors import MatrixError

# Linear-time patterns (a hostile cell cannot make them backtrack quadratically): white
# space before a footnote is matched only from the start of its run, and link texts are
# matched greedily, their trailing white space stripped by _text().
_FOOTNOTE = re.compile(r"(?<!\s)\s*\[#([^\][]*)\]_")
_ROLE = re.compile(r":(?:doc|ref):`([^`<]*)(?:<[^>`]*>)?`")
_LINK = re.compile(r"`([^`<]*)<[^>`]*>`__?")
_ANCHOR = re.compile(r"^\.\. _[^:\s]+:$")
_VERSION_HEADER = re.compile(r"^[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,6}$")

#: Row labels (link text, lower-cased) and the field they fill.
LABELS: dict[str, str] = {
    "operating systems & kernels": "os",
    "gpu / llvm target": "targets",
    "amd gpu driver": "kmd",
    "amd gpu driver versions": "kmd",
    "kmd versions": "kmd",
    "tested user space versions": "tested",
    "hip": "hip",
}

#: OS family as AMD writes it -> os-release ``ID``.
OS_IDS: dict[str, str] = {
    "ubuntu": "ubuntu",
    "rhel": "rhel",
    "sles": "sles",
    "oracle linux": "ol",
    "debian": "debian",
    "azure linux": "azurelinux",
    "rocky linux": "rocky",
    "rocky": "rocky",
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
            hint="Add the family to amd_table.OS_IDS with its os-release ID.",
        )
    os_id = OS_IDS[fam]
    out: list[str] = []
    major = ""
    for ver in [m.group("ver"), *items[1:]]:
        ver = _drop_family(ver.strip(), m.group("fam").strip())
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


def _drop_family(item: str, family: str) -> str:
    """``item`` without a repeat of the cell's OS family (``'Ubuntu 24.04.1, Ubuntu 24.04'``,
    as a September 2024 copy writes it).
    """
    if item.lower().startswith(family.lower() + " "):
        return item[len(family):].strip()
    return item


def list_cell(cell: str) -> list[tuple[str, list[str]]]:
    """The values of a comma (or ``|br|``) list cell, each with the footnote names on it;
    empty and ``N/A`` values left out.
    """
    out: list[tuple[str, list[str]]] = []
    for part in cell.replace("|br|", ",").split(","):
        value, fns = split_footnotes(part)
        if value and value.upper() != "N/A":
            out.append((value, fns))
    return out


@dataclass
class Column:
    """One ROCm version column as read so far: its header and versions (``7.0.1/7.0.0``:
    two), the cells of each row kind, and the footnotes on them (by name).
    """

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
    """The rows of the CSV ``text``; a data row is as wide as the header.

    A data row of another width (a line cut short, cells lost) or a quote left open at the
    end is damage, not an unknown: :class:`MatrixError` naming ``name``, the line and the
    first column missing or extra. So is a cell over :data:`MAX_CELL_CHARS` characters. Not
    every copy AMD published is rectangular: rows that carry no data cells (a section row
    such as ``KFD & USER SPACE``, an anchor row ``.. _x-past-60:``, an empty row; see
    :func:`carries_no_data`) may be shorter (the September 2024 copies have 4 cells in an
    8-column file) and are padded with empty cells. Blank lines are kept (as empty rows).
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
        if row and len(row) < width and carries_no_data(row):
            row.extend([""] * (width - len(row)))
        if row and len(row) != width:
            where = (f"column {len(row) + 1} of {width} and those after it are missing"
                     if len(row) < width else f"column {width + 1} is beyond the header")
            raise MatrixError(f"{name}, line {lineno}: {len(row)} cells where the header has "
                              f"{width}: {where}; the file is truncated or damaged.",
                              hint=DAMAGED_HINT)
    return rows


def _is_anchor(cell: str) -> bool:
    """True for an RST anchor cell (``.. _kfd-userspace-support-compatibility-matrix:``)."""
    return bool(_ANCHOR.match(cell.strip()))


def _is_section(cell: str) -> bool:
    """True for a section header in column 0 (``FRAMEWORK SUPPORT``, ``KFD & USER SPACE
    [#kfd_support-past-60]_``): upper case, no link, footnotes aside.
    """
    raw = cell.strip()
    return "`" not in raw and _FOOTNOTE.sub("", raw).strip().isupper()


def carries_no_data(row: list[str]) -> bool:
    """True when ``row`` holds no data cell: its cells after column 0 are empty or an anchor,
    and column 0 is empty, a section header, or the row has an anchor. A short row with a
    data label and nothing after it (``PyTorch`` alone) is a data row cut short: ``False``.
    """
    rest = row[1:]
    if not all(not c.strip() or _is_anchor(c) for c in rest):
        return False
    return not row[0].strip() or _is_section(row[0]) or any(_is_anchor(c) for c in rest)


def read_columns(rows: list[list[str]], name: str) -> list[Column]:
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
    columns: list[Column] = []
    for col, header in enumerate(rows[0][1:], start=2):
        h = header.strip()
        versions = [v.strip() for v in h.split("/") if v.strip()]
        if not versions or not all(_VERSION_HEADER.match(v) for v in versions):
            raise MatrixError(f"{name}, line 1, column {col}: cannot read the ROCm version "
                              f"header {header[:80]!r}.")
        columns.append(Column(header=h, versions=versions))
    return columns


def check_complete(rows: list[list[str]], name: str) -> None:
    """:class:`MatrixError` when a row every copy has (:data:`REQUIRED_ROWS`) is missing:
    a copy cut at a line end keeps its width but loses its last rows.
    """
    found = {LABELS.get(clean_label(row[0]).lower()) for row in rows[1:] if row}
    if "tested" in found:
        found.add("kmd")
    missing = [label for field_, label in REQUIRED_ROWS.items() if field_ not in found]
    if missing:
        raise MatrixError(f"{name}, line {len(rows) + 1} (end of file): no row for "
                          f"{'; '.join(missing)}; the file is truncated or damaged.",
                          hint=DAMAGED_HINT)


@dataclass
class TableState:
    """The reader's position: the current row label and the footnotes of it and its section."""

    label: str | None = None
    label_fns: list[str] = field(default_factory=list)
    section_fns: list[str] = field(default_factory=list)
    row_labels: dict[str, str] = field(default_factory=dict)


def row_label(state: TableState, row: list[str], cells: list[str]) -> bool:
    """Update ``state`` from column 0 of ``row``; ``False`` when the row carries no values
    (a section header or an anchor row).
    """
    first = clean_label(row[0]) if row else ""
    if first:
        fns = split_footnotes(row[0].strip())[1]
        if _is_section(row[0]) or (cells and cells[0].strip().startswith(".. _")):
            state.label = None  # section header row (FRAMEWORK SUPPORT, DRIVER & USER SPACE, ...)
            state.section_fns = fns
            return False
        state.label = first.lower()
        state.label_fns = fns
        state.row_labels.setdefault(state.label, first)
    return not (cells and cells[0].strip().startswith(".. _"))  # anchor row
