"""Import PyTorch's release compatibility matrix (``RELEASE.md``) into ``WheelVariant`` rows.

Source format: the markdown tables of pytorch/pytorch ``RELEASE.md`` ("Release
Compatibility Matrix" and the CUDA architecture table), as saved in
``shared/data/pytorch/release-compatibility-matrix.md``. These are the accelerator builds
PyTorch publishes; for NVIDIA they are the validated pairing, for ROCm information only.
"""

from __future__ import annotations

import datetime as dt
import re

from pinning.errors import MatrixError
from pinning.matrix.models import WheelVariant

SOURCE = "PyTorch RELEASE.md, Release Compatibility Matrix (pytorch/pytorch)"
URL = "https://github.com/pytorch/pytorch/blob/main/RELEASE.md"

_MONTHS = {m: i for i, m in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


# One pass over RELEASE.md's table; each branch is one cell shape.
def import_pytorch_md(text: str, *, checked: dt.date) -> list[WheelVariant]:  # noqa: C901
    """Parse the saved PyTorch matrix ``text`` into one row per (series, accelerator build).

    ``checked`` is the date the copy was read (rows of releases with a known release date
    carry that as ``published`` instead). Raises ``MatrixError`` when the main table is
    missing.
    """
    dates: dict[str, dt.date] = {}
    for m in re.finditer(r"(\d+\.\d+) on (\d{1,2}) ([A-Z][a-z]{2}) (\d{4})", text):
        dates[m.group(1)] = dt.date(int(m.group(4)), _MONTHS[m.group(3)], int(m.group(2)))

    arch: dict[str, tuple[str, list[str], bool]] = {}
    arch_series: list[str] = []
    heading = re.search(r"CUDA architectures in PyTorch ([0-9., and]+) builds", text)
    if heading:
        arch_series = re.findall(r"\d+\.\d+", heading.group(1))
    rows: list[list[str]] = []
    in_main = in_arch = False
    for line in text.splitlines():
        if line.startswith("| PyTorch |"):
            in_main, in_arch = True, False
            continue
        if line.startswith("| CUDA | compute capabilities"):
            in_arch, in_main = True, False
            continue
        if not line.startswith("|"):
            in_main = in_arch = False
            continue
        if set(line.replace("|", "").strip()) <= {"-", " "}:
            continue
        cells = _cells(line)
        if in_main:
            rows.append(cells)
        elif in_arch and len(cells) >= 2:
            exact = cells[0]
            ptx = "+PTX" in cells[1]
            ccs = [c.replace("+PTX", "").strip() for c in cells[1].split(",") if c.strip()]
            arch[".".join(exact.split(".")[:2])] = (exact, ccs, ptx)
    if not rows:
        raise MatrixError("PyTorch matrix: no '| PyTorch | ...' table found.")

    out: list[WheelVariant] = []
    for cells in rows:
        series, python, _cxx, stable, experimental, rocm = cells[:6]
        published = dates.get(series)
        prov: dict[str, object] = (
            {"published": published} if published else {"checked": checked}
        )
        for status, cell in (("stable", stable), ("experimental", experimental)):
            for ver in re.findall(r"CUDA (\d+\.\d+)", cell):
                build: str | None = None
                targets: list[str] | None = None
                unknown: dict[str, str] = {}
                if series in arch_series and ver in arch:
                    build, targets, _ptx = arch[ver]
                else:
                    unknown["targets"] = (
                        f"the source lists compute capabilities only for PyTorch "
                        f"{', '.join(arch_series)} builds"
                    )
                out.append(WheelVariant(
                    framework="pytorch", series=series, accelerator="cuda",
                    accelerator_version=ver, status=status,
                    build=build, targets=targets, python=python, unknown=unknown,
                    source=SOURCE + (f", CUDA {ver} architecture table" if targets else ""),
                    url=URL, **prov,
                ))
        rm = re.match(r"ROCm (\d+(?:\.\d+)*)", rocm)
        if rm:
            out.append(WheelVariant(
                framework="pytorch", series=series, accelerator="rocm",
                accelerator_version=rm.group(1), status="stable", python=python,
                unknown={"targets": "the source lists no gfx targets for ROCm wheels"},
                source=SOURCE, url=URL, **prov,
            ))
    return out
