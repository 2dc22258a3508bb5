"""Import the firmware table of AMD's ROCm 7.x release notes into ``FirmwareRow`` rows.

Source format: the HTML table under "User space, driver, and firmware dependent changes"
in ``RELEASE.md``: columns ROCm Version, GPU, PLDM Bundle (Firmware),
AMD GPU Driver (amdgpu), AMD GPU Virtualization Driver (GIM); cells span rows
(``rowspan``), values are split by ``<br>``, footnote markers are ``<sup>[n]</sup>``.
The table is read with the standard library's :class:`html.parser.HTMLParser`: pin's core
dependencies hold no HTML library, and one table of rowspans does not warrant adding one.
"""

from __future__ import annotations

import datetime as dt
import re
from html.parser import HTMLParser

from pinning.errors import MatrixError
from pinning.matrix.models import FirmwareRow, FirmwareValue
from pinning.matrix.names import FIRMWARE_KIND

SOURCE_FMT = ("AMD ROCm {version} release notes, firmware and driver table: ROCm/ROCm:RELEASE.md"
              "{copy}")

#: The copy of ``RELEASE.md`` read for each release (a fork of ROCm/ROCm at the release).
COPIES: dict[str, str] = {
    "7.2.0": "alanina/ROCm@599328c", "7.1.1": "alanina/ROCm@e8fdc34",
    "7.1.0": "alanina/ROCm@702d8e4", "7.0.2": "alanina/ROCm@f21cfe1",
    "7.0.1": "alanina/ROCm@d92d926", "7.0.0": "alanina/ROCm@26f708d",
}
URL_FMT = "https://rocm.docs.amd.com/en/docs-{version}/about/release-notes.html"


class _Cell:
    def __init__(self, rowspan: int) -> None:
        self.rowspan = rowspan
        self.parts: list[str] = [""]
        self.marks: list[str] = []


class _TableParser(HTMLParser):
    """Collect the rows of every ``<table>`` as lists of cells, keeping rowspans."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[_Cell]]] = []
        self.closed: list[bool] = []  # per table: its </table> was seen (else: truncated)
        self._open: list[int] = []  # indexes of the tables open now, innermost last
        self._row: list[_Cell] | None = None
        self._cell: _Cell | None = None
        self._in_sup = False
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._depth += 1
            self._open.append(len(self.tables))
            self.tables.append([])
            self.closed.append(False)
        elif tag == "tr" and self._depth:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            span = dict(attrs).get("rowspan") or "1"
            # A rowspan past the rows any table has is damage; 1 like any unreadable span.
            self._cell = _Cell(int(span) if re.fullmatch(r"[0-9]{1,4}", span) else 1)
        elif tag == "br" and self._cell is not None:
            self._cell.parts.append("")
        elif tag == "sup":
            self._in_sup = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self._depth:
            self._depth -= 1
            self.closed[self._open.pop()] = True
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "sup":
            self._in_sup = False

    def handle_data(self, data: str) -> None:
        if self._cell is None:
            return
        if self._in_sup:
            self._cell.marks.extend(re.findall(r"\[(\d+)\]", data))
        else:
            self._cell.parts[-1] += data


def _grid(rows: list[list[_Cell]], width: int) -> list[list[_Cell | None]]:
    """Lay out cells on a grid, filling the slots that rowspans cover."""
    grid: list[list[_Cell | None]] = []
    carry: dict[int, tuple[_Cell, int]] = {}
    for row in rows:
        line: list[_Cell | None] = [None] * width
        for col, (held, left) in list(carry.items()):
            line[col] = held
            if left <= 1:
                del carry[col]
            else:
                carry[col] = (held, left - 1)
        it = iter(row)
        for col in range(width):
            if line[col] is not None:
                continue
            cell = next(it, None)
            if cell is None:
                break
            line[col] = cell
            if cell.rowspan > 1:
                carry[col] = (cell, cell.rowspan - 1)
        grid.append(line)
    return grid


def _lines(cell: _Cell | None) -> list[str]:
    if cell is None:
        return []
    return [" ".join(p.split()) for p in cell.parts if p.strip()]


MAX_EXPANSION = 100
"""The most releases one ``6.4.z where z (0-3)`` range may stand for."""


def expand_driver(text: str) -> list[str]:
    """Expand AMD's ``6.4.z where z (0-3)`` into ``['6.4.0', ..., '6.4.3']``; other text as is.

    Raises ``MatrixError`` for a range of more than :data:`MAX_EXPANSION` releases (``z
    (0-999999999)`` would be a billion rows: damage, not a table).
    """
    m = re.match(r"^([0-9]{1,6}\.[0-9]{1,6})\.([a-z]) where \2 \(([0-9]{1,6})\s*[-–]\s*"
                 r"([0-9]{1,6})\)$", text.strip())
    if not m:
        return [text.strip()]
    lo, hi = int(m.group(3)), int(m.group(4))
    if hi - lo >= MAX_EXPANSION:
        raise MatrixError(f"driver range {text.strip()!r} stands for {hi - lo + 1} releases "
                          f"(at most {MAX_EXPANSION}); the release notes are damaged.")
    return [f"{m.group(1)}.{i}" for i in range(lo, hi + 1)]


def _footnotes(text: str) -> dict[str, str]:
    """``<p id="footnote1">[1]: text</p>`` paragraphs as ``{"1": "text"}`` (white space
    squeezed), found in one pass: an unclosed paragraph ends the search.
    """
    opening = re.compile(r'<p id="footnote[0-9]*">\[([0-9]+)\]:')
    out: dict[str, str] = {}
    pos = 0
    while (m := opening.search(text, pos)) is not None:
        end = text.find("</p>", m.end())
        if end < 0:
            break
        out[m.group(1)] = " ".join(text[m.end():end].split())
        pos = end + len("</p>")
    return out


#: Columns of the firmware table, as the header writes them (lower case).
COLUMNS = ("rocm version", "gpu", "pldm bundle (firmware)", "amd gpu driver (amdgpu)",
           "amd gpu virtualization")


def _firmware(text: str) -> FirmwareValue:
    value = text.strip()
    or_later = value.endswith("(or later)")
    value = value.removesuffix("(or later)").strip()
    return FirmwareValue(value=value, or_later=or_later)


def _check_table(header: list[str], closed: bool, name: str) -> None:
    """:class:`MatrixError` naming ``name`` when the firmware table lacks a column of
    :data:`COLUMNS` or its ``</table>`` (the file was cut inside it): damage, not unknowns.
    """
    missing = [c for c in COLUMNS[:-1] if c not in header]
    if not any(h.startswith(COLUMNS[-1]) for h in header):
        missing.append(COLUMNS[-1])
    if missing:
        raise MatrixError(f"{name}: the firmware table has no {', '.join(missing)} column; "
                          "the release notes are damaged.",
                          hint="Pass the ROCm 7.x RELEASE.md as published, whole.")
    if not closed:
        raise MatrixError(f"{name}: the firmware table does not end (no </table>); the file is "
                          "truncated.", hint="Pass the ROCm 7.x RELEASE.md as published, whole.")


def _firmware_row(line: list[_Cell | None], col: dict[str, int], footnotes: dict[str, str],
                  *, name: str, checked: dt.date) -> FirmwareRow:
    """One firmware-table row (its cells laid on the grid, ``col`` the header's column
    indexes) as a ``FirmwareRow``; ``MatrixError`` naming ``name`` for a cell it cannot read.
    """
    rocm = _lines(line[col["rocm version"]])
    m = re.match(r"^ROCm (\d+\.\d+\.\d+)$", rocm[0]) if rocm else None
    if not m:
        raise MatrixError(f"{name}: cannot read the ROCm version cell {rocm!r}.")
    version = m.group(1)
    gpu_cell = line[col["gpu"]]
    gpu = re.sub(r"\[\d+\]", "", " ".join(_lines(gpu_cell))).strip()
    if gpu not in FIRMWARE_KIND:
        raise MatrixError(f"{name}: unknown GPU {gpu!r} in the firmware table.")
    fw_cell = line[col["pldm bundle (firmware)"]]
    drv_cell = line[col["amd gpu driver (amdgpu)"]]
    gim_idx = next(i for h, i in col.items() if h.startswith("amd gpu virtualization"))
    gim_cell = line[gim_idx]
    notes: list[str] = []
    for c in (gpu_cell, drv_cell):
        for mark in c.marks if c is not None else []:
            note = f"{gpu}: {footnotes[mark]}" if mark in footnotes else ""
            if note and note not in notes:
                notes.append(note)
    kmd: list[str] = []
    for item in _lines(drv_cell):
        try:
            kmd.extend(expand_driver(re.sub(r"\[\d+\]", "", item)))
        except MatrixError as exc:
            raise MatrixError(f"{name}: {exc.message}", hint=exc.hint) from exc
    gim_lines = _lines(gim_cell)
    gim = gim_lines[0] if gim_lines else None
    unknown: dict[str, str] = {}
    if gim is None or gim.lower() == "not applicable":
        unknown["gim"] = "the release notes mark the virtualization driver Not Applicable"
        gim = None
    return FirmwareRow(
        runtime_version=version,
        gpu=gpu,
        firmware_kind=FIRMWARE_KIND[gpu],
        firmware=[_firmware(x) for x in _lines(fw_cell)],
        kmd=kmd,
        gim=gim,
        notes=notes,
        unknown=unknown,
        source=SOURCE_FMT.format(
            version=version,
            copy=f" (copy read: {COPIES[version]})" if version in COPIES else ""),
        url=URL_FMT.format(version=version),
        published_unknown=("the release notes carry no publication date and the commit date "
                           "of the copy read was not recorded"),
        checked=checked,
    )


def import_release_notes(
    text: str, *, checked: dt.date, name: str = "RELEASE.md"
) -> list[FirmwareRow]:
    """Parse the first firmware table of one release-notes file into ``FirmwareRow`` rows.

    Only the file's own release is read (the 7.0.1 notes repeat the 7.0.0 table further
    down). ``checked`` dates the rows (the notes carry no date). Raises ``MatrixError`` when
    no firmware table is found, a row cannot be read, or the table is damaged (a column
    missing, no ``</table>``: the file was cut inside it).
    """
    parser = _TableParser()
    parser.feed(text)
    footnotes = _footnotes(text)
    for table, closed in zip(parser.tables, parser.closed, strict=True):
        if not table:
            continue
        header = [" ".join(" ".join(c.parts).split()).lower() for c in table[0]]
        if not header or "pldm bundle (firmware)" not in header:
            continue
        _check_table(header, closed, name)
        grid = _grid(table[1:], len(header))
        col = {h: i for i, h in enumerate(header)}
        out: list[FirmwareRow] = []
        for lineno, line in enumerate(grid, start=2):
            if any(cell is None for cell in line):
                raise MatrixError(f"{name}: firmware table row {lineno} has "
                                  f"{sum(c is not None for c in line)} of {len(header)} cells; "
                                  "the release notes are damaged.")
            out.append(_firmware_row(line, col, footnotes, name=name, checked=checked))
        return out
    raise MatrixError(
        f"{name}: no firmware table (PLDM Bundle (Firmware) column) found.",
        hint="Pass a ROCm 7.x RELEASE.md; 6.x release notes have no firmware table.",
    )
