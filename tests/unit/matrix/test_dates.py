"""Rows keep `published` and `checked`; --as-of compares `published` only; an unknown
publication date is explicit; restrictions apply whatever --as-of; sources are public.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pinning.errors import MatrixError
from pinning.matrix.importers.pytorch_md import import_pytorch_md
from pinning.matrix.load import DATA_DIR, Matrix, load_matrix
from pinning.matrix.models import MatrixFile
from tests.support.paths import ROOT

RELEASE_MD = ROOT / "tests" / "data" / "release-compatibility-matrix.md"

OVERLAY = """
schema-version = 1
name = "site-dates"

[[releases]]
vendor = "amd"
runtime = "rocm"
version = "7.2.9"
source = "Example Lab validation run, ticket LAB-7"
published = 2026-01-10
checked = 2026-11-29
targets = ["gfx942"]
os = ["ubuntu-24.04.3"]
kmd = ["30.30.0"]

[[releases.frameworks]]
name = "pytorch"
versions = ["2.9.1"]

[[releases]]
vendor = "amd"
runtime = "rocm"
version = "7.2.8"
source = "Example Lab validation run, ticket LAB-8"
published-unknown = "the lab ticket carries no date"
checked = 2026-11-29
targets = ["gfx942"]
os = ["ubuntu-24.04.3"]
kmd = ["30.30.0"]
"""


def _overlay(tmp_path: Path, text: str = OVERLAY) -> Matrix:
    path = tmp_path / "site.toml"
    path.write_text(text)
    return load_matrix([path])


def test_as_of_compares_published_not_checked(tmp_path: Path) -> None:
    m = _overlay(tmp_path)
    seen = {rr.release.version for rr in m.releases(as_of=dt.date(2026, 2, 1))}
    assert "7.2.9" in seen  # published 2026-01-10, read 2026-11-29
    assert "7.2.9" not in {rr.release.version for rr in m.releases(as_of=dt.date(2026, 1, 9))}


def test_unknown_publication_date_is_kept_at_every_date_and_says_why(tmp_path: Path) -> None:
    m = _overlay(tmp_path)
    for day in (dt.date(2020, 1, 1), dt.date(2026, 6, 1), None):
        rows = [rr.release for rr in m.releases(as_of=day) if rr.release.version == "7.2.8"]
        assert len(rows) == 1
        assert rows[0].undated == "the lab ticket carries no date"


def test_published_and_published_unknown_exclude_each_other(tmp_path: Path) -> None:
    bad = OVERLAY.replace('published = 2026-01-10',
                          'published = 2026-01-10\npublished-unknown = "no date"')
    with pytest.raises(MatrixError, match="exclude each other"):
        _overlay(tmp_path, bad)


def test_empty_published_unknown_reason_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MatrixError):
        _overlay(tmp_path, OVERLAY.replace('"the lab ticket carries no date"', '""'))


def test_restrictions_and_firmware_apply_whatever_as_of(matrix: Matrix) -> None:
    assert matrix.os_restrictions(as_of=dt.date(2000, 1, 1)) == matrix.os_restrictions()
    assert matrix.os_restrictions()
    for rr in matrix.releases():
        for family in ("MI300X", "MI355X"):
            assert matrix.firmware(rr.release.version, family, as_of=dt.date(2000, 1, 1)) \
                == matrix.firmware(rr.release.version, family)


def test_pytorch_rows_carry_the_release_date_the_file_states() -> None:
    rows = import_pytorch_md(RELEASE_MD.read_text(), checked=dt.date(2026, 11, 29))
    by = {(w.series, w.tag): w for w in rows}
    assert by[("2.11", "cu130")].published == dt.date(2026, 3, 18)
    assert by[("2.12", "cu126")].published == dt.date(2026, 5, 13)
    assert by[("2.14", "cu132")].published == dt.date(2026, 9, 2)
    for w in rows:
        assert w.checked == dt.date(2026, 11, 29)
        assert (w.published is None) == (w.published_unknown is not None)
    old = by[("2.6", "cu124")]
    assert old.published is None and old.published_unknown is not None
    assert "no release date for PyTorch 2.6" in old.published_unknown


def test_shipped_pytorch_wheels_equal_the_importer_output() -> None:
    from pinning.matrix.load import load_file

    shipped = load_file(DATA_DIR / "pytorch-wheels.toml").data.wheels
    assert shipped == import_pytorch_md(RELEASE_MD.read_text(), checked=dt.date(2026, 11, 29))


@pytest.mark.parametrize("name", ["nvidia-cuda", "pytorch-wheels"])
def test_every_row_dates_its_publication_or_says_why_not(name: str) -> None:
    import tomllib

    data = MatrixFile.model_validate(
        tomllib.loads((DATA_DIR / f"{name}.toml").read_text()), strict=True)
    rows = [*data.driver_rules, *data.cuda_toolkits, *data.wheels]
    assert rows
    for row in rows:
        assert row.published is not None or row.published_unknown, row
        assert row.url and row.url.startswith("https://")
        for text in (row.source, row.url, row.published_unknown or ""):
            assert "FACTS" not in text and "shared/" not in text


def test_pre_11_driver_minimums_are_only_those_a_source_supports(matrix: Matrix) -> None:
    pre = {r.key: r.min_driver for r, _ in matrix.driver_rules() if r.cuda_minor is not None}
    assert pre == {"cuda-10.2.x": "440.33", "cuda-10.1.x": "418.39", "cuda-10.0.x": "410.48"}
    for r, _ in matrix.driver_rules():
        if r.cuda_minor is not None:
            assert r.url == "https://docs.nvidia.com/cuda/archive/11.0/cuda-toolkit-release-notes/index.html"
            assert "Release Notes" in r.source


def test_no_shipped_source_names_facts_or_shared() -> None:
    """Nothing pin ships (code, docstrings, data, rules, schemas, example locks, image files)
    cites the engineers' facts guide or a shared/ path: users cannot open either."""
    shipped = [p for top in ("pinning", "schemas", "lockfiles", "images")
               for p in sorted((ROOT / top).rglob("*"))
               if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts]
    assert len(shipped) > 50
    found = [f"{p.relative_to(ROOT)}:{n}" for p in shipped
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "FACTS.md" in line or "shared/" in line]
    assert found == []
