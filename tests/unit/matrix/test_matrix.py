"""Loading, validation, provenance, overlays and --as-of views of the matrix."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from pinning.errors import MatrixError, UsageError
from pinning.matrix.load import Matrix, load_file, load_matrix, shipped_paths
from tests.support.matrix import OVERLAY


def test_every_shipped_row_names_source_and_date(matrix: Matrix) -> None:
    n = 0
    for f in matrix.files:
        d = f.data
        for row in [*d.gpus, *d.releases, *d.firmware, *d.os_restrictions, *d.driver_rules,
                    *d.cuda_toolkits, *d.wheels]:
            assert row.source.strip()
            assert row.published or row.checked
            n += 1
    assert n > 200


def test_unknowns_carry_a_reason(matrix: Matrix) -> None:
    r10 = next(r.release for r in matrix.releases() if r.release.version == "10.0.0")
    assert r10.os is None and "does not state" in r10.unknown["os"]
    assert r10.kmd is None and "amdgpu" in r10.unknown["kmd"]
    assert "firmware" in r10.unknown
    assert r10.targets_complete is False


def test_shipped_files_are_sorted_and_named(matrix: Matrix) -> None:
    assert [f.path for f in matrix.files] == shipped_paths()
    assert matrix.sha256.startswith("sha256:")


@pytest.mark.parametrize("query,gpu_id", [
    ("MI300X", "mi300x"), ("mi300x", "mi300x"), ("Instinct MI300X", "mi300x"),
    ("AMD Instinct MI300X", "mi300x"), ("instinct-mi300x", "mi300x"), ("0x74a1", "mi300x"),
    ("1002:74b5", "mi300x"), ("gfx950", None), ("H200", "h200"), ("NVIDIA H100", "h100"),
    ("0x2335", "h200"), ("gfx908", "mi100"), ("gfx1201", "radeon-ai-pro-r9700"),
])
def test_find_gpu_any_form(matrix: Matrix, query: str, gpu_id: str | None) -> None:
    found = matrix.find_gpu(query)
    if gpu_id is None:
        assert isinstance(found, list) and {g.id for g in found} == {"mi355x", "mi350x"}
    else:
        assert not isinstance(found, list)
        assert found.id == gpu_id


def test_find_gpu_did_you_mean(matrix: Matrix) -> None:
    with pytest.raises(UsageError, match="Did you mean .*mi300x"):
        matrix.find_gpu("mi300")


def test_as_of_uses_the_copy_published_then(matrix: Matrix) -> None:
    now = {r.release.version: r for r in matrix.releases()}
    then = {r.release.version: r for r in matrix.releases(as_of=dt.date(2025, 6, 1))}
    assert "7.2.0" in now and "7.2.0" not in then and "10.0.0" not in then
    assert then["6.3.3"].file.name == "amd-rocm-2025-03-21"
    assert then["6.3.3"].release.tested_user_space == ["6.3.x", "6.2.x", "6.1.x"]
    assert now["6.3.3"].file.name == "amd-rocm-2026-01-21"
    assert matrix.releases(as_of=dt.date(2024, 1, 1)) == []


def test_overlay_adds_rows_with_its_own_source(tmp_path: Path) -> None:
    p = tmp_path / "lab.toml"
    p.write_text(OVERLAY)
    m = load_matrix([p])
    assert m.files[-1].overlay and m.files[-1].name == "site-lab"
    refs = [r.ref for r in m.releases() if r.release.version == "7.2.1"]
    assert refs == ["site-lab:rocm-7.2.1"]


def test_overlay_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "lab.toml"
    p.write_text(OVERLAY)
    monkeypatch.setenv("PIN_MATRIX", str(p))
    assert load_matrix().files[-1].name == "site-lab"


@pytest.mark.parametrize("mutation,needle", [
    (lambda t: t.replace('source = "Example Lab validation run 2026-11-20, ticket LAB-42"\n', ""),
     "releases[0] (rocm 7.2.1).source: Field required"),
    (lambda t: t.replace("checked = 2026-11-20\n", ""), "published` or a `checked` date"),
    (lambda t: t.replace('os = ["ubuntu-24.04.3"]\n', ""), "`os` is missing"),
    (lambda t: t.replace('version = "7.2.1"', 'version = "seven"'), "version"),
    (lambda t: t + "\nbogus = 1\n", "bogus: Extra inputs are not permitted"),
    (lambda t: t.replace("[[releases]]", "[[releases]"), "not valid TOML"),
])
def test_bad_overlay_names_file_and_field(tmp_path: Path, mutation: Callable[[str], str],
                                          needle: str) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(mutation(OVERLAY))
    with pytest.raises(MatrixError) as info:
        load_file(p, overlay=True)
    assert str(p) in info.value.message
    assert needle in info.value.message
    assert info.value.exit_code == 3


def test_missing_overlay_is_a_matrix_error(tmp_path: Path) -> None:
    with pytest.raises(MatrixError, match="cannot be read"):
        load_matrix([tmp_path / "nope.toml"])


def test_duplicate_overlay_name_is_rejected(tmp_path: Path) -> None:
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text(OVERLAY)
    b.write_text(OVERLAY)
    with pytest.raises(MatrixError, match="both use the name 'site-lab'"):
        load_matrix([a, b])
