"""AMD's historical CSV is not rectangular in every copy (issue 32, section 1): rows that carry
no data cells (section, anchor and empty rows) may be short, as in AMD's September 2024
copies (a 4-cell ``KFD & USER SPACE`` anchor row in an 8-column file); a data row short of
cells is still damage, refused naming the file, line and column. Every public copy is
imported in ``tests/integration/test_amd_csv_copies.py``; these run on the shipped copy."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pinning.errors import MatrixError
from pinning.matrix.importers.amd_csv import import_amd_copy
from pinning.matrix.importers.amd_table import carries_no_data, parse_os_cell, read_rows
from tests.support.cli import pin
from tests.support.paths import AMD_SOURCES

CSV = AMD_SOURCES / "rocm-compat-historical-2026-01-21.csv"
DAY = dt.date(2026, 1, 21)
TEXT = CSV.read_bytes().decode()
LINES = TEXT.splitlines(keepends=True)


def _line(prefix: str) -> int:
    """The index of the first line whose text, stripped, starts with ``prefix``."""
    return next(i for i, line in enumerate(LINES) if line.strip().startswith(prefix))


def _cut(index: int, cells: int) -> str:
    lines = list(LINES)
    lines[index] = ",".join(lines[index].rstrip("\r\n").split(",")[:cells]) + "\r\n"
    return "".join(lines)


def test_short_section_anchor_row_is_read_like_the_full_one(tmp_path: Path) -> None:
    index = _line("DRIVER & USER SPACE")
    text = _cut(index, 4)
    assert len(read_rows(text, "x.csv")[index]) == len(read_rows(TEXT, "x.csv")[0])
    assert (import_amd_copy(text, published=DAY).releases
            == import_amd_copy(TEXT, published=DAY).releases)
    path = tmp_path / "rocm-compat-historical-2026-01-21.csv"
    path.write_bytes(text.encode())
    done = pin("matrix", "import-amd", str(path))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("prefix", ["FRAMEWORK SUPPORT", ",.. _architecture-support"])
def test_short_section_or_anchor_rows_are_accepted(prefix: str) -> None:
    text = _cut(_line(prefix), 2)
    assert (import_amd_copy(text, published=DAY).releases
            == import_amd_copy(TEXT, published=DAY).releases)


def test_short_empty_row_is_accepted() -> None:
    index = next(i for i, line in enumerate(LINES) if i and not line.strip(" ,\r\n"))
    assert import_amd_copy(_cut(index, 3), published=DAY).releases


def test_short_data_row_is_still_refused_naming_line_and_column() -> None:
    index = _line(":doc:`JAX")
    with pytest.raises(MatrixError, match=rf"x\.csv, line {index + 1}: 4 cells where the "
                       r"header has 24: column 5 of 24 .* truncated or damaged") as exc:
        import_amd_copy(_cut(index, 4), published=DAY, name="x.csv")
    assert exc.value.hint and "whole" in exc.value.hint


def test_data_label_alone_is_a_row_cut_short() -> None:
    index = _line(":doc:`JAX")
    with pytest.raises(MatrixError, match=rf"line {index + 1}: 1 cells where the header"):
        import_amd_copy(_cut(index, 1), published=DAY, name="x.csv")


def test_which_rows_carry_no_data() -> None:
    assert carries_no_data(["KFD & USER SPACE [#kfd_support-past-60]_",
                            ".. _kfd-userspace-support-compatibility-matrix-past-60:", "", ""])
    assert carries_no_data(["      ", "", ""])
    assert carries_no_data(["", ".. _gpu-support-compatibility-matrix-past-60:"])
    assert not carries_no_data(["PyTorch", ""])
    assert not carries_no_data(["", "gfx942"])
    assert not carries_no_data(["FRAMEWORK SUPPORT", "2.9"])


def test_os_cells_as_older_copies_write_them() -> None:
    # September 2024 (ROCm/ROCm@b1fc48c) and August 2025 (alanina/ROCm@ff7d9eb) copies.
    assert parse_os_cell("Ubuntu 24.04.1, Ubuntu 24.04", where="x") == [
        "ubuntu-24.04.1", "ubuntu-24.04"]
    assert parse_os_cell("Rocky 9", where="x") == ["rocky-9"]
