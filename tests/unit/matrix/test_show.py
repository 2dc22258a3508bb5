"""`pin matrix show`: every data file prints its rows, the stored copy in effect is marked,
--as-of is taken, JSON is available, and every wheel row carries its own source and date.
"""

from __future__ import annotations

import datetime as dt

import pytest

from pinning.matrix.load import Matrix, shipped_paths
from pinning.matrix.query import file_rows, show_rows
from tests.support.cli import json_result, pin

SHIPPED = sorted(p.stem for p in shipped_paths())


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_file_shows_all_its_rows(matrix: Matrix, name: str) -> None:
    f = next(f for f in matrix.files if f.name == name)
    expected = list(file_rows(f))
    assert expected, name
    shown = show_rows(matrix, name)
    assert [r.ref for r in shown] == [ref for ref, _, _ in expected]
    r = pin("matrix", "show", name)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("\n[") + r.stdout.startswith("[") == len(expected)


@pytest.mark.parametrize("name", ["pytorch-wheels", "nvidia-cuda", "amd-os-restrictions",
                                  "amd-kmd-modules"])
def test_files_that_printed_nothing_print_sources_in_json(name: str) -> None:
    r = pin("matrix", "show", name, "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = json_result(r)
    assert rows
    for row in rows:
        assert row["ref"].startswith(f"{name}:")
        assert row["source"] and ("published" in row or "checked" in row)
        assert isinstance(row["in-effect"], bool) and row["effect"]


def test_every_wheel_row_carries_its_own_source_and_date() -> None:
    rows = json_result(pin("matrix", "show", "pytorch-wheels", "--format", "json"))
    assert len(rows) == 47
    for row in rows:
        assert row["kind"] == "wheel"
        assert row["source"].startswith("pytorch/pytorch:RELEASE.md")
        assert row["url"] == "https://github.com/pytorch/pytorch/blob/main/RELEASE.md"
        assert row["checked"] == "2026-11-29"
        assert ("published" in row) != ("published-unknown" in row)
    dated = {(r["series"], r["published"]) for r in rows if "published" in r}
    assert ("2.11", "2026-03-18") in dated and ("2.14", "2026-09-02") in dated


def test_the_copy_in_effect_is_marked_and_follows_as_of(matrix: Matrix) -> None:
    now = {r.ref: r for r in show_rows(matrix, "rocm-6.2.4")}
    old, new = "amd-rocm-2025-03-21:rocm-6.2.4", "amd-rocm-2026-01-21:rocm-6.2.4"
    assert now[new].in_effect and not now[old].in_effect
    assert f"superseded by {new}" in now[old].effect
    then = {r.ref: r for r in show_rows(matrix, "rocm-6.2.4", as_of=dt.date(2025, 6, 1))}
    assert then[old].in_effect and not then[new].in_effect
    assert "after --as-of 2025-06-01" in then[new].effect


def test_cli_show_takes_as_of() -> None:
    r = pin("matrix", "show", "rocm-6.2.4", "--as-of", "2025-06-01")
    assert r.returncode == 0, r.stderr
    assert "[amd-rocm-2025-03-21:rocm-6.2.4] release; in effect on 2025-06-01" in r.stdout
    assert "[amd-rocm-2026-01-21:rocm-6.2.4] release; not in effect" in r.stdout
    bad = pin("matrix", "show", "rocm-6.2.4", "--as-of", "yesterday")
    assert bad.returncode == 2


def test_wheels_published_after_as_of_are_marked_and_undated_ones_say_so(
        matrix: Matrix) -> None:
    rows = {r.ref: r for r in show_rows(matrix, "pytorch-wheels", as_of=dt.date(2026, 6, 1))}
    assert not rows["pytorch-wheels:pytorch-2.14-cu130"].in_effect
    assert rows["pytorch-wheels:pytorch-2.12-cu130"].in_effect
    undated = rows["pytorch-wheels:pytorch-2.6-cu124"]
    assert undated.in_effect and "publication date unknown" in undated.effect


def test_restrictions_are_in_effect_at_every_date(matrix: Matrix) -> None:
    for r in show_rows(matrix, "amd-os-restrictions", as_of=dt.date(2000, 1, 1)):
        assert r.kind == "os-restriction" and r.in_effect
        assert "applies at every date" in r.effect


def test_an_unknown_name_is_a_usage_error_with_a_suggestion() -> None:
    r = pin("matrix", "show", "pytorch-wheel")
    assert r.returncode == 2
    assert "no data file, release" in r.stderr and "Did you mean 'pytorch-wheels'?" in r.stderr
    assert "--gpu" not in r.stderr  # not the resolver's flag: the user typed no --gpu
