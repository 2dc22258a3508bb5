"""A damaged vendor copy is refused, not imported as rows with "unknown" fields: damage to the
source is not an unknown in the source. Truncated or one-column AMD CSVs, truncated release
notes and a truncated PyTorch matrix are exit 3 naming the file and the line (or column)."""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from pathlib import Path

import pytest

from pinning.errors import MatrixError
from pinning.matrix.importers.amd_csv import import_amd_copy
from pinning.matrix.importers.amd_table import (
    MAX_CELL_CHARS,
    clean_label,
    parse_footnote_texts,
    parse_os_cell,
    split_footnotes,
)
from pinning.matrix.importers.pytorch_md import import_pytorch_md
from pinning.matrix.importers.release_notes import expand_driver, import_release_notes
from tests.support.cli import pin
from tests.support.paths import AMD_SOURCES, DATA

CSV = AMD_SOURCES / "rocm-compat-historical-2026-01-21.csv"
NOTES = AMD_SOURCES / "rocm-7.2.0-RELEASE.md"
TORCH = DATA / "release-compatibility-matrix.md"
DAY = dt.date(2026, 1, 21)
CSV_TEXT = CSV.read_bytes().decode()  # as published: CRLF line ends


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rocm-compat-historical-2026-01-21.csv"
    path.write_bytes(text.encode())
    return path


def _import_amd(path: Path, *extra: str) -> tuple[int, str]:
    r = pin("matrix", "import-amd", str(path), *extra)
    assert "Traceback" not in r.stderr
    return r.returncode, r.stderr


@pytest.mark.parametrize("cut", [0.3, 0.5, 0.9, 0.995])
def test_csv_cut_inside_a_line_is_exit_3_naming_the_line(tmp_path: Path, cut: float) -> None:
    text = CSV_TEXT
    head = text[: int(len(text) * cut)]
    if head.endswith("\n"):
        head = head[:-3]
    code, err = _import_amd(_csv(tmp_path, head))
    assert code == 3, err
    assert "rocm-compat-historical-2026-01-21.csv, line " in err
    assert "truncated or damaged" in err


def test_csv_cut_at_a_line_end_is_exit_3_naming_what_is_missing(tmp_path: Path) -> None:
    lines = CSV_TEXT.splitlines(keepends=True)
    code, err = _import_amd(_csv(tmp_path, "".join(lines[:60])))
    assert code == 3, err
    assert "(end of file): no row for" in err and "HIP" in err


def test_one_column_csv_is_exit_3(tmp_path: Path) -> None:
    only_labels = "".join(row.split(",")[0] + "\r\n"
                          for row in CSV_TEXT.splitlines())
    code, err = _import_amd(_csv(tmp_path, only_labels))
    assert code == 3 and "line 1: the header has no ROCm version column" in err, err
    code, err = _import_amd(_csv(tmp_path, "ROCm Version\r\n"))
    assert code == 3 and "one-column" in err, err


def test_row_losing_cells_names_line_and_column(tmp_path: Path) -> None:
    # Line 22 is the GPU / LLVM target row (line 21, an anchor row that carries no data,
    # may be short: tests/unit/matrix/test_import_structural_rows.py).
    lines = CSV_TEXT.splitlines(keepends=True)
    lines[21] = ",".join(lines[21].split(",")[:5]) + "\r\n"
    code, err = _import_amd(_csv(tmp_path, "".join(lines)))
    assert code == 3, err
    assert "line 22: 5 cells where the header has 24: column 6 of 24" in err


def test_open_quote_at_the_end_is_exit_3(tmp_path: Path) -> None:
    code, err = _import_amd(_csv(tmp_path, CSV_TEXT + '"ROCm 7,\r\n'))
    assert code == 3 and "not a complete CSV row" in err, err


def test_huge_cell_is_refused_naming_line_and_column(tmp_path: Path) -> None:
    lines = CSV_TEXT.splitlines(keepends=True)
    cells = lines[3].split(",")
    cells[2] = "x" * (MAX_CELL_CHARS + 1)
    lines[3] = ",".join(cells)
    with pytest.raises(MatrixError, match=r"x\.csv, line 4, column 3: a cell of 4097"):
        import_amd_copy("".join(lines), published=DAY, name="x.csv")


def test_bad_date_in_the_file_name_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "rocm-compat-2026-13-45.csv"
    path.write_bytes(CSV_TEXT.encode())
    code, err = _import_amd(path)
    assert code == 2 and "--published" in err, err


def test_hostile_cells_take_linear_time() -> None:
    # These patterns backtracked quadratically on long runs of white space (a 20,000
    # character cell took 18 s); bounded cells and linear patterns keep each one quick.
    n = 200_000
    hostile = [":doc:`" + " " * n, "`" + " " * n + "<", " " * n + "[#", "A" + " " * n + "x"]
    start = time.process_time()
    for cell in hostile:
        clean_label(cell)
        split_footnotes(cell)
    with pytest.raises(MatrixError):
        parse_os_cell(hostile[3], where="t")
    parse_footnote_texts("\n" * n + " " * n)
    assert time.process_time() - start < 30  # generous: quadratic would take hours


def test_linear_patterns_read_what_the_old_ones_read() -> None:
    assert clean_label(":doc:`PyTorch   <../x/pytorch-compatibility>`") == "PyTorch"
    assert clean_label(":ref:`JAX `") == "JAX"
    assert clean_label("`UCC  <https://github.com/ROCm/ucc>`_ [#x]_") == "UCC"
    assert split_footnotes("a  [#one]_ b\t[#two-past-60]_") == ("a b", ["one", "two"])
    assert parse_os_cell("Oracle Linux 10, 9", where="t") == ["ol-10", "ol-9"]
    assert parse_footnote_texts(" .. [#n-past-60] The :ref:`text <x>` **here**\n") == {
        "n": "The text here"}


def _notes_cut_inside_the_table() -> str:
    text = NOTES.read_text()
    start = text.index("PLDM Bundle (Firmware)")
    end = text.index("</table>", start)
    return text[: (start + end) // 2]


def test_release_notes_cut_inside_the_firmware_table_are_exit_3(tmp_path: Path) -> None:
    notes = tmp_path / "rocm-7.2.0-RELEASE.md"
    notes.write_text(_notes_cut_inside_the_table())
    code, err = _import_amd(CSV, "--release-notes", str(notes))
    assert code == 3, err
    assert "rocm-7.2.0-RELEASE.md" in err and ("damaged" in err or "truncated" in err)


def test_release_notes_table_without_its_end_is_refused() -> None:
    text = NOTES.read_text()
    end = text.index("</table>", text.index("PLDM Bundle (Firmware)"))
    with pytest.raises(MatrixError, match="no </table>"):
        import_release_notes(text[:end], checked=DAY, name="n.md")


def test_release_notes_missing_a_column_are_refused() -> None:
    text = NOTES.read_text().replace("AMD GPU Driver (amdgpu)", "Driver", 1)
    with pytest.raises(MatrixError, match="no amd gpu driver \\(amdgpu\\) column"):
        import_release_notes(text, checked=DAY, name="n.md")


def test_release_notes_hostile_values_are_refused_not_expanded() -> None:
    with pytest.raises(MatrixError, match="stands for 1000000 releases"):
        expand_driver("6.4.z where z (0-999999)")
    assert expand_driver("6.4.z where z (0-9999999999)") == ["6.4.z where z (0-9999999999)"]
    assert expand_driver("6.4.z where z (0-3)") == ["6.4.0", "6.4.1", "6.4.2", "6.4.3"]
    text = NOTES.read_text().replace('rowspan="', 'rowspan="' + "9" * 5000, 1)
    with contextlib.suppress(MatrixError):  # a span int() refuses: 1, or damage
        import_release_notes(text, checked=DAY, name="n.md")
    footnote = '<p id="footnote1">[1]: ' + "x" * 100_000
    start = time.process_time()
    import_release_notes(NOTES.read_text() + footnote * 200, checked=DAY, name="n.md")
    assert time.process_time() - start < 30  # one pass over unclosed footnotes


@pytest.mark.parametrize("cut", [0.2, 0.5, 0.75])
def test_truncated_pytorch_matrix_is_exit_3_naming_the_line(tmp_path: Path, cut: float) -> None:
    text = TORCH.read_text()
    path = tmp_path / "release-compatibility-matrix.md"
    path.write_text(text[: int(len(text) * cut)])
    r = pin("matrix", "import-pytorch", str(path), "--checked", "2026-11-29")
    assert r.returncode == 3, r.stderr
    assert "release-compatibility-matrix.md, line " in r.stderr and "Traceback" not in r.stderr


def test_pytorch_row_with_missing_cells_names_the_line() -> None:
    lines = TORCH.read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("| 2.9 |"))
    lines[row] = "| 2.9 | >=3.10 |"
    with pytest.raises(MatrixError, match=f"m.md, line {row + 1}: 2 cells where the table "
                                          "header has 6"):
        import_pytorch_md("\n".join(lines), checked=DAY, name="m.md")


def test_pytorch_impossible_date_is_exit_3() -> None:
    text = TORCH.read_text().replace("2.11 on 18 Mar 2026", "2.11 on 31 Feb 2026")
    with pytest.raises(MatrixError, match="'2.11 on 31 Feb 2026' is not a date"):
        import_pytorch_md(text, checked=DAY, name="m.md")
