"""Assemble whole matrix files from vendor sources (used by ``pin matrix import-*`` and tests)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pinning.errors import MatrixError, UsageError
from pinning.matrix.importers.amd_csv import date_from_filename, import_amd_copy
from pinning.matrix.importers.amd_table import parse_footnote_texts
from pinning.matrix.importers.pytorch_md import import_pytorch_md
from pinning.matrix.importers.release_notes import import_release_notes
from pinning.matrix.models import FirmwareRow, MatrixFile
from pinning.util.files import read_regular_bytes

MAX_SOURCE_BYTES = 4 * 1024 * 1024
"""The largest vendor copy read (AMD's release notes, the largest, are under 200 KiB)."""


def _read(path: Path) -> str:
    """The UTF-8 text of the vendor copy ``path``: a regular file of at most 4 MiB, opened
    without blocking. Raises ``UsageError`` (exit 2) for a file that is absent, unreadable,
    not a regular file (a FIFO, a device, a directory) or larger, ``MatrixError`` (exit 3)
    for one that is not UTF-8.
    """
    raw = read_regular_bytes(Path(path), UsageError, label=str(path),
                             hint="Pass the saved vendor copy (a regular file).",
                             limit=MAX_SOURCE_BYTES)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MatrixError(f"{path}: not UTF-8 text ({exc}).") from exc


def amd_matrix_file(
    csv_path: Path,
    *,
    page: Path | None = None,
    release_notes: Sequence[Path] = (),
    published: dt.date | None = None,
) -> MatrixFile:
    """Build the AMD matrix file of one dated copy: releases from the historical CSV
    (footnote texts from ``page``, the matrix .rst of the same copy), the OS restrictions
    the page's footnotes state, and firmware rows from
    the ROCm 7.x ``release_notes``, dated like the copy they were read with.

    Raises ``UsageError`` when no date is given and none is in the CSV's file name or a
    source is not a readable regular file of at most 4 MiB, and ``MatrixError`` for a
    source it cannot import (damaged or truncated: named with the line and column).
    """
    date = published or date_from_filename(Path(csv_path))
    if date is None:
        raise UsageError(
            f"{csv_path}: no date in the file name; pass --published YYYY-MM-DD "
            "(the date of the copy)."
        )
    footnotes = parse_footnote_texts(_read(page)) if page else None
    with _rows_of(csv_path):
        copy = import_amd_copy(
            _read(csv_path), published=date, name=Path(csv_path).name, footnotes=footnotes
        )
    firmware: list[FirmwareRow] = []
    for notes in sorted(release_notes, key=lambda p: Path(p).name):
        with _rows_of(notes):
            firmware.extend(import_release_notes(_read(notes), checked=date,
                                                 name=Path(notes).name))
    return MatrixFile(
        name=f"amd-rocm-{date.isoformat()}",
        family="amd-rocm",
        description=(
            f"AMD ROCm compatibility matrix, historical table, copy dated {date.isoformat()}"
            + ("; firmware and driver tables of the ROCm 7.x release notes" if firmware else "")
            + "."
        ),
        releases=copy.releases,
        firmware=firmware,
        os_restrictions=copy.restrictions,
    )


def pytorch_wheels_file(md_path: Path, *, checked: dt.date) -> MatrixFile:
    """Build the PyTorch wheel-variant file from the saved RELEASE.md matrix. Raises
    ``UsageError`` for a file it cannot read, ``MatrixError`` for one it cannot import.
    """
    with _rows_of(md_path):
        wheels = import_pytorch_md(_read(md_path), checked=checked, name=Path(md_path).name)
    return MatrixFile(
        name="pytorch-wheels",
        description="Accelerator builds PyTorch publishes per release (upstream wheels).",
        wheels=wheels,
    )


@contextmanager
def _rows_of(path: Path) -> Iterator[None]:
    """Turn a row the matrix models refuse (pydantic ``ValidationError``) while importing
    ``path`` into a ``MatrixError`` (exit 3) naming the file and the field.
    """
    from pydantic import ValidationError

    try:
        yield
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'row'}: {e['msg']}"
                          for e in exc.errors()[:2])
        raise MatrixError(f"{path}: a row pin cannot accept ({where}).",
                          hint="Pass the vendor copy as published, whole.") from exc
