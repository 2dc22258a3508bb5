"""Queries people expect: a release series and a GPU filter in `pin matrix show`, target IDs
with features for `--gpu`, did-you-mean for releases and `--os`, the validated OSes and the
`==X.Y.*` hint of an exit-4 message.
"""

from __future__ import annotations

import pytest

from pinning.errors import NoValidatedCombination, UsageError
from pinning.matrix.load import Matrix, strip_target_features
from pinning.matrix.query import release_names, show_rows
from pinning.resolve.constraints import (
    Constraints,
    close_os,
    parse_framework,
    parse_os,
    parse_runtime_spec,
)
from pinning.resolve.resolver import resolve


def test_a_release_prefix_lists_the_series_and_nothing_past_it(matrix: Matrix) -> None:
    rows = show_rows(matrix, "rocm-7.1")
    releases = {r.row.version for r in rows if r.kind == "release"}  # type: ignore[attr-defined]
    assert releases == {"7.1.0", "7.1.1"}
    assert {r.kind for r in rows} == {"release", "firmware"}
    # An exact name still names one release, and a bare series works the same way.
    assert {r.ref.split(":")[1].split("/")[0] for r in show_rows(matrix, "rocm-7.1.1")} == {
        "rocm-7.1.1"}
    assert [r.ref for r in show_rows(matrix, "7.1")] == [r.ref for r in rows]
    assert not any(r.ref.endswith("rocm-7.10.0") for r in show_rows(matrix, "rocm-7.1"))


def test_a_cuda_prefix_lists_its_toolkits(matrix: Matrix) -> None:
    rows = show_rows(matrix, "cuda-13")
    assert rows and {r.kind for r in rows} == {"cuda-toolkit"}
    assert all(r.ref.split(":cuda-")[1].startswith("13.") for r in rows)
    assert "nvidia-cuda:cuda-13.4.2" in {r.ref for r in rows}


def test_the_gpu_filter_keeps_the_rows_about_that_gpu(matrix: Matrix) -> None:
    rows = show_rows(matrix, "rocm-7.1", gpu="mi300x")
    firmware = {r.ref for r in rows if r.kind == "firmware"}
    assert firmware == {"amd-rocm-2026-01-21:rocm-7.1.0/MI300X",
                        "amd-rocm-2026-01-21:rocm-7.1.1/MI300X"}
    assert all("gfx942" in (r.row.targets or ["gfx942"])  # type: ignore[attr-defined]
               for r in rows if r.kind == "release")
    assert show_rows(matrix, "rocm-7.1", gpu="h200") == []
    restrictions = show_rows(matrix, "amd-os-restrictions", gpu="mi300x")
    assert restrictions and len(restrictions) < len(show_rows(matrix, "amd-os-restrictions"))
    assert all("mi300x" in r.row.gpus or "gfx942" in r.row.targets  # type: ignore[attr-defined]
               for r in restrictions)
    with pytest.raises(UsageError, match="no GPU of that name"):
        show_rows(matrix, "rocm-7.1", gpu="mi30x")


def test_an_unknown_release_suggests_the_nearest_releases(matrix: Matrix) -> None:
    assert "rocm-7.2.0" in release_names(matrix) and "cuda-13.4.2" in release_names(matrix)
    with pytest.raises(UsageError) as info:
        show_rows(matrix, "rocm-7.1.2")
    assert "Did you mean 'rocm-7.1.1'" in str(info.value)


@pytest.mark.parametrize("text", ["gfx942:sramecc+:xnack-", "gfx942:xnack+", "GFX942:sramecc-"])
def test_a_target_id_with_features_names_its_target(matrix: Matrix, text: str) -> None:
    assert strip_target_features(text) == "gfx942"
    assert matrix.find_gpu(text) == matrix.find_gpu("gfx942")


def test_only_feature_settings_are_stripped(matrix: Matrix) -> None:
    assert strip_target_features("gfx942:sramecc") == "gfx942:sramecc"
    assert strip_target_features("mi300x:xnack-") == "mi300x:xnack-"
    with pytest.raises(UsageError):
        matrix.find_gpu("gfx942:sramecc")


def test_resolve_takes_a_target_id(matrix: Matrix) -> None:
    fw = (parse_framework("pytorch==2.13.0", matrix.framework_names()),)
    plain = resolve(matrix, Constraints(gpu="gfx942", frameworks=fw))
    featured = resolve(matrix, Constraints(gpu="gfx942:sramecc+:xnack-", frameworks=fw))
    assert (featured.target, featured.runtime_version) == (plain.target, plain.runtime_version)


def test_close_os() -> None:
    known = ["ubuntu-24.04.3", "ubuntu-22.04.5", "rhel-9.6", "debian-12"]
    assert close_os("ubunt-24.04", known, n=1) == ["ubuntu-24.04.3"]
    assert close_os("rhel-9.6", known)[0] == "rhel-9.6"
    assert close_os("windows-11", known) == []


def _fail(matrix: Matrix, framework: str, *, rocm: str | None = None,
          os: str | None = None) -> str:
    c = Constraints(gpu="mi300x",
                    frameworks=(parse_framework(framework, matrix.framework_names()),),
                    rocm=parse_runtime_spec("--rocm", rocm) if rocm else None,
                    os=parse_os(os) if os else None)
    with pytest.raises(NoValidatedCombination) as info:
        resolve(matrix, c)
    return str(info.value)


def test_an_os_failure_lists_the_validated_oses_and_a_did_you_mean(matrix: Matrix) -> None:
    text = _fail(matrix, "pytorch==2.9.1", os="ubunt-24.04")
    assert "--os ubunt-24.04 is not validated for that stack" in text
    line = next(ln for ln in text.splitlines()
                if ln.startswith("Operating systems validated for Instinct MI300X with ROCm "
                                 "7.2.0: "))
    assert "ubuntu-24.04.3" in line and "rhel-9.6" in line
    assert line.endswith("(amd-rocm-2026-01-21:rocm-7.2.0).")
    assert "Did you mean --os ubuntu-24.04.3?" in text


def test_an_unknown_os_list_is_said_not_guessed(matrix: Matrix) -> None:
    text = _fail(matrix, "pytorch==2.13.0", os="rhel-8.6")
    assert "Operating systems validated for Instinct MI300X with ROCm 10.0.0: unknown (" in text
    assert "Did you mean --os" not in text


def test_exact_two_part_version_suggests_the_series(matrix: Matrix) -> None:
    text = _fail(matrix, "pytorch==2.7", rocm="7.2.0")
    assert ("pytorch==2.7 asks for exactly 2.7 (PEP 440: 2.7.0); did you mean pytorch==2.7.*? "
            "(it resolves to pytorch 2.7.1)") in text
    # A request the series would not rescue gets no such hint.
    assert "did you mean pytorch==2.5.*" not in _fail(matrix, "pytorch==2.5", rocm="7.2.0")


def test_a_rocm_release_the_matrix_lacks_gets_a_did_you_mean(matrix: Matrix) -> None:
    text = _fail(matrix, "pytorch", rocm="7.3.0")
    assert "The matrix holds no ROCm 7.3.0 release. Did you mean 7.2.0" in text
    assert "The matrix holds no ROCm" not in _fail(matrix, "pytorch==2.13.0", rocm="7.2.0")
