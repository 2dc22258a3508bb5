"""Cell-exact: every library row pin imports from AMD's CSV holds the cell as written, for
every column of every shipped copy (tests/data/amd-sources); the MI350 alias names the series.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from pinning.matrix.importers.amd_csv import (
    COMPONENTS,
    date_from_filename,
    import_amd_csv,
    parse_footnote_texts,
)
from pinning.matrix.load import Matrix, shipped_paths
from pinning.matrix.names import GPU_SERIES

SRC = Path(__file__).resolve().parents[2] / "data" / "amd-sources"
COPIES = sorted(SRC.glob("rocm-compat-historical-*.csv"))
LABEL = re.compile(r"^\s*(?::doc:)?`?([^`<]+?)\s*(?:<[^>]*>`_?)?\s*$")


@pytest.mark.parametrize("path", COPIES, ids=lambda p: p.name)
def test_every_imported_library_cell_is_exact(path: Path) -> None:
    day = date_from_filename(path)
    assert day is not None
    page = SRC / path.name.replace("historical", "matrix").replace(".csv", ".rst")
    releases = {r.version: r for r in import_amd_csv(
        path.read_text(), published=day, footnotes=parse_footnote_texts(page.read_text()))}
    rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    headers = [h.strip() for h in rows[0]]
    seen = 0
    for row in rows[1:]:
        m = LABEL.match(row[0])
        name = COMPONENTS.get(m.group(1).lower()) if m else None
        if name is None:
            continue
        for header, cell in zip(headers[1:], row[1:], strict=True):
            for version in header.split("/"):
                got = releases[version].components.get(name)
                want = None if cell.strip().upper() in ("", "N/A") else cell.strip()
                assert got == want, (path.name, version, name, cell)
                seen += 1
    assert seen >= len(COMPONENTS) * (len(headers) - 1)


def test_mi350_alias_names_the_series_not_mi350x_alone() -> None:
    import tomllib

    gpus = tomllib.loads(next(p for p in shipped_paths() if p.name == "gpus.toml").read_text())
    for g in gpus["gpus"]:
        assert "MI350" not in g.get("aliases", []), g["id"]
    assert set(GPU_SERIES["mi350"]) == {"mi350x", "mi355x"}


def test_gpu_mi350_resolves_to_the_whole_series(matrix: Matrix) -> None:
    found = matrix.find_gpu("MI350")
    assert isinstance(found, list)
    assert sorted(g.id for g in found) == ["mi350x", "mi355x"]
    single = matrix.find_gpu("MI350X")
    assert not isinstance(single, list) and single.id == "mi350x"
