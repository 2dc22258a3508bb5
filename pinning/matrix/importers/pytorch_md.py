"""Import PyTorch's release compatibility matrix (``RELEASE.md``) into ``WheelVariant`` rows.

Source format: the markdown tables of pytorch/pytorch ``RELEASE.md`` ("Release
Compatibility Matrix" and the CUDA architecture table), as saved in
``tests/data/release-compatibility-matrix.md``. These are the accelerator builds
PyTorch publishes; for NVIDIA they are the validated pairing, for ROCm information only.
"""

from __future__ import annotations

import datetime as dt
import re

from pinning.errors import MatrixError
from pinning.matrix.models import WheelVariant

SOURCE = "pytorch/pytorch:RELEASE.md (main, copy read {checked}), Release Compatibility Matrix"
URL = "https://github.com/pytorch/pytorch/blob/main/RELEASE.md"

_MONTHS = {m: i for i, m in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)}


def _series_key(series: str) -> tuple[int, ...]:
    return tuple(int(x) for x in series.split("."))


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


DAMAGED_HINT = "Pass the saved release-compatibility-matrix.md as published, whole."


def _dates(text: str, name: str) -> dict[str, dt.date]:
    """``{"2.11": date(2026, 3, 18), ...}`` from ``2.11 on 18 Mar 2026``; ``MatrixError``
    naming the line for a date that does not exist (``31 Feb``).
    """
    dates: dict[str, dt.date] = {}
    for m in re.finditer(r"(?<!\d)(\d+\.\d+) on (\d{1,2}) ([A-Z][a-z]{2}) (\d{4})", text):
        if m.group(3) not in _MONTHS:
            continue
        try:
            dates[m.group(1)] = dt.date(int(m.group(4)), _MONTHS[m.group(3)], int(m.group(2)))
        except ValueError as exc:
            line = text.count("\n", 0, m.start()) + 1
            raise MatrixError(f"{name}, line {line}: {m.group(0)!r} is not a date ({exc}).",
                              hint=DAMAGED_HINT) from exc
    return dates


def _tables(text: str, name: str) -> tuple[list[tuple[int, list[str]]],
                                           dict[str, tuple[str, list[str], bool]]]:
    """The main table's rows (``(line, cells)``) and the CUDA architecture table (CUDA
    series -> exact version, compute capabilities, +PTX). A row with another number of
    cells than its header is damage: :class:`MatrixError` naming ``name`` and the line.
    """
    rows: list[tuple[int, list[str]]] = []
    arch: dict[str, tuple[str, list[str], bool]] = {}
    width = 0
    in_main = in_arch = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.startswith("| PyTorch |") or line.startswith("| CUDA | compute capabilities"):
            in_main = line.startswith("| PyTorch |")
            in_arch, width = not in_main, len(_cells(line))
            if width != (6 if in_main else 3):
                raise MatrixError(f"{name}, line {lineno}: a table header of {width} columns "
                                  f"where pin reads {6 if in_main else 3}.", hint=DAMAGED_HINT)
            continue
        if not line.startswith("|"):
            in_main = in_arch = False
            continue
        if set(line.replace("|", "").strip()) <= {"-", " "}:
            continue
        cells = _cells(line)
        if (in_main or in_arch) and len(cells) != width:
            raise MatrixError(f"{name}, line {lineno}: {len(cells)} cells where the table "
                              f"header has {width}; the file is truncated or damaged.",
                              hint=DAMAGED_HINT)
        if in_main:
            rows.append((lineno, cells))
        elif in_arch:
            exact = cells[0]
            ptx = "+PTX" in cells[1]
            ccs = [c.replace("+PTX", "").strip() for c in cells[1].split(",") if c.strip()]
            arch[".".join(exact.split(".")[:2])] = (exact, ccs, ptx)
    return rows, arch


# One pass over RELEASE.md's table; each branch is one cell shape.
def import_pytorch_md(text: str, *, checked: dt.date,
                      name: str = "PyTorch matrix") -> list[WheelVariant]:
    """Parse the saved PyTorch matrix ``text`` into one row per (series, accelerator build).

    ``checked`` is the date the copy was read; every row keeps it. A release whose date the
    file states ("2.11 on 18 Mar 2026") gives its rows that ``published`` date; the rows of
    a release it gives no date for carry ``published-unknown`` with the reason (``--as-of``
    keeps them at every date). ``name`` names the file in messages. Raises
    ``MatrixError`` when the main table is missing, and for a damaged copy: a table row
    with another number of cells than its header, or no CUDA architecture table (a file
    cut short), which would otherwise read as rows with unknown targets.
    """
    dates = _dates(text, name)
    arch_series: list[str] = []
    heading = re.search(r"CUDA architectures in PyTorch ([0-9., and]+) builds", text)
    if heading:
        arch_series = re.findall(r"(?<!\d)\d+\.\d+", heading.group(1))
    rows, arch = _tables(text, name)
    if not rows:
        raise MatrixError(f"{name}: no '| PyTorch | ...' table found.")
    if not arch_series or not arch:
        raise MatrixError(f"{name}, line {text.count(chr(10)) + 1} (end of file): no CUDA "
                          "architecture table ('CUDA architectures in PyTorch ... builds'); "
                          "the file is truncated or damaged.", hint=DAMAGED_HINT)

    out: list[WheelVariant] = []
    for _lineno, cells in rows:
        series, python, _cxx, stable, experimental, rocm = cells[:6]
        published = dates.get(series)
        prov: dict[str, object] = {"checked": checked, "published": published}
        if published is None:
            prov["published_unknown"] = (
                f"the copy of RELEASE.md read on {checked} gives no release date for PyTorch "
                f"{series} (it dates only {', '.join(sorted(dates, key=_series_key))})"
                if dates else f"the copy of RELEASE.md read on {checked} gives no release dates")
        for status, cell in (("stable", stable), ("experimental", experimental)):
            out += [_cuda_row(series, ver, status, python, arch if series in arch_series
                              else {}, arch_series, checked, prov)
                    for ver in re.findall(r"CUDA (\d+\.\d+)", cell)]
        rm = re.match(r"ROCm (\d+(?:\.\d+)*)", rocm)
        if rm:
            out.append(WheelVariant(
                framework="pytorch", series=series, accelerator="rocm",
                accelerator_version=rm.group(1), status="stable", python=python,
                unknown={"targets": "the source lists no gfx targets for ROCm wheels"},
                source=SOURCE.format(checked=checked), url=URL, **prov,
            ))
    return out


def _cuda_row(series: str, ver: str, status: str, python: str,
              arch: dict[str, tuple[str, list[str], bool]], arch_series: list[str],
              checked: dt.date, prov: dict[str, object]) -> WheelVariant:
    """The CUDA ``ver`` build of PyTorch ``series``: its build and compute capabilities from
    ``arch`` (the architecture table, when it covers ``series``), else targets unknown.
    """
    build: str | None = None
    targets: list[str] | None = None
    unknown: dict[str, str] = {}
    if ver in arch:
        build, targets, _ptx = arch[ver]
    else:
        unknown["targets"] = (f"the source lists compute capabilities only for PyTorch "
                              f"{', '.join(arch_series)} builds")
    return WheelVariant(
        framework="pytorch", series=series, accelerator="cuda", accelerator_version=ver,
        status=status, build=build, targets=targets, python=python, unknown=unknown,
        source=SOURCE.format(checked=checked)
        + (f", CUDA {ver} architecture table" if targets else ""),
        url=URL, **prov,
    )
