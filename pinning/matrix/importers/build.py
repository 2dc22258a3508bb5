"""Assemble whole matrix files from vendor sources (used by ``pin matrix import-*`` and tests)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from pinning.errors import MatrixError, UsageError
from pinning.matrix.importers.amd_csv import (
    date_from_filename,
    import_amd_csv,
    parse_footnote_texts,
)
from pinning.matrix.importers.pytorch_md import import_pytorch_md
from pinning.matrix.importers.release_notes import import_release_notes
from pinning.matrix.models import FirmwareRow, MatrixFile


def _read(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc}).") from exc
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
    (footnote texts from ``page``, the matrix .rst of the same copy) and firmware rows from
    the ROCm 7.x ``release_notes``, dated like the copy they were read with.

    Raises ``UsageError`` when no date is given and none is in the CSV's file name, and
    ``MatrixError`` for a source it cannot read.
    """
    date = published or date_from_filename(Path(csv_path))
    if date is None:
        raise UsageError(
            f"{csv_path}: no date in the file name; pass --published YYYY-MM-DD "
            "(the date of the copy)."
        )
    footnotes = parse_footnote_texts(_read(page)) if page else None
    releases = import_amd_csv(
        _read(csv_path), published=date, name=Path(csv_path).name, footnotes=footnotes
    )
    firmware: list[FirmwareRow] = []
    for notes in sorted(release_notes, key=lambda p: Path(p).name):
        firmware.extend(import_release_notes(_read(notes), checked=date, name=Path(notes).name))
    return MatrixFile(
        name=f"amd-rocm-{date.isoformat()}",
        family="amd-rocm",
        description=(
            f"AMD ROCm compatibility matrix, historical table, copy dated {date.isoformat()}"
            + ("; firmware and driver tables of the ROCm 7.x release notes" if firmware else "")
            + "."
        ),
        releases=releases,
        firmware=firmware,
    )


def pytorch_wheels_file(md_path: Path, *, checked: dt.date) -> MatrixFile:
    """Build the PyTorch wheel-variant file from the saved RELEASE.md matrix."""
    return MatrixFile(
        name="pytorch-wheels",
        description="Accelerator builds PyTorch publishes per release (upstream wheels).",
        wheels=import_pytorch_md(_read(md_path), checked=checked),
    )
