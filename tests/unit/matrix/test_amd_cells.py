"""Cell-exact: every library row pin imports from AMD's CSV holds the cell as written, for
every column of every shipped copy (tests/data/amd-sources); the MI350 alias names the series.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from pinning.matrix.importers.amd_csv import COMPONENTS, date_from_filename, import_amd_copy
from pinning.matrix.importers.amd_table import parse_footnote_texts
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
    releases = {r.version: r for r in import_amd_copy(
        path.read_text(), published=day, footnotes=parse_footnote_texts(page.read_text())).releases}
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


def _copy(date: str) -> object:
    import datetime as dt

    csv_text = (SRC / f"rocm-compat-historical-{date}.csv").read_text()
    page = (SRC / f"rocm-compat-matrix-{date}.rst").read_text()
    return import_amd_copy(csv_text, published=dt.date.fromisoformat(date),
                           footnotes=parse_footnote_texts(page))


def test_gfx942_footnotes_become_only_these_gpus_rows() -> None:
    copy = _copy("2025-03-21")
    rows = [r for r in copy.restrictions if r.mode == "only-these-gpus"]  # type: ignore[attr-defined]
    assert {r.footnote for r in rows} == {"mi300_600", "mi300_602", "mi300_610", "mi300_611",
                                          "mi300_612"}
    assert all(r.targets == ["gfx942"] and set(r.gpus) == {"mi300a", "mi300x"} for r in rows)
    # "supported on listed operating systems except ..." names MI300X alone: no such row.
    assert not any(r.runtimes == "==6.2.4" for r in rows)


def test_copies_cite_upstream_with_the_copy_read_and_no_local_file() -> None:
    for date, copy_read in (("2025-03-21", "ROCm/ROCm@e396b48"),
                            ("2026-01-21", "alanina/ROCm@c6bf8d2")):
        copy = _copy(date)
        for r in copy.releases:  # type: ignore[attr-defined]
            assert r.source.startswith("AMD ROCm compatibility matrix, historical table: "
                                       "ROCm/ROCm:docs/compatibility/")
            assert f"copy read: {copy_read}, {date}" in r.source
            assert r.url and r.url.startswith(f"https://github.com/{copy_read.split('@')[0]}/")
            assert not any(".csv" in why for why in r.unknown.values())


def test_llama_cpp_and_megatron_builds_are_kept_as_written() -> None:
    rel = {r.version: r for r in _copy("2026-01-21").releases}  # type: ignore[attr-defined]
    llama = next(f for f in rel["7.0.0"].frameworks if f.name == "llama.cpp")
    assert llama.versions is None and llama.builds == ["b6652"]
    assert not any(f.name == "llama.cpp" for f in rel["7.0.1"].frameworks)
    assert any("llama-cpp_compat" in n for n in rel["7.0.1"].framework_notes["llama.cpp"])
    assert next(f for f in rel["6.4.0"].frameworks if f.name == "llama.cpp").builds == ["b5997"]
    meg = next(f for f in rel["6.3.0"].frameworks if f.name == "stanford-megatron-lm")
    assert meg.builds == ["85f95ae"]
    # verl's "only on 6.2.0" note is a framework note, not a note of every 7.0.0 lock.
    assert not any("verl" in n for n in rel["7.0.0"].notes)
