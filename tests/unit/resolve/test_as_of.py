"""--as-of goes by publication date, restrictions never disappear because of it, and an
empty answer says when the matrix has nothing that old or the source lists no GPUs.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from pinning.errors import NoValidatedCombination
from pinning.matrix.load import Matrix, load_matrix
from pinning.matrix.models import OsRestriction
from pinning.resolve.constraints import (
    Constraints,
    parse_framework,
    parse_os,
    parse_runtime_spec,
)
from pinning.resolve.resolver import resolve
from pinning.resolve.result import Resolution
from tests.support.cli import pin

MATRIX = load_matrix()


def run(matrix: Matrix, gpu: str, *fws: str, diagnose: bool = True, **kw: Any) -> Resolution:
    names = matrix.framework_names()
    c = Constraints(gpu=gpu, frameworks=tuple(parse_framework(f, names) for f in fws), **kw)
    return resolve(matrix, c, diagnose=diagnose)


# -- the reproductions of the issue -------------------------------------------------------

@pytest.mark.parametrize("as_of", [None, dt.date(2026, 3, 1), dt.date(2026, 2, 1)])
@pytest.mark.parametrize("os", ["debian-12", "rocky-9"])
def test_mi355x_pytorch_2_9_1_on_debian_12_or_rocky_9_is_refused_at_every_date(
        matrix: Matrix, as_of: dt.date | None, os: str) -> None:
    # Issue 32 section 2: PyTorch 2.9.1 is validated only with ROCm 7.2.0, whose notes
    # "extend the SLES 15 SP7 operating system support to AMD Instinct MI355X and MI350X":
    # the 7.1.x MI355X list still applies, plus SLES 15 SP7; Debian 12 and Rocky 9 stay out.
    with pytest.raises(NoValidatedCombination) as err:
        run(matrix, "mi355x", "pytorch==2.9.1", os=parse_os(os), as_of=as_of)
    text = str(err.value)
    line = next(x for x in text.splitlines() if x.startswith("ROCm 7.2.0:"))
    assert "footnote mi350x-os-710" in line and "AMD ROCm 7.2.0 release notes" in line
    assert "add sles-15.7" in line
    assert run(matrix, "mi355x", "pytorch==2.9.1", os=parse_os("sles-15.7"),
               as_of=as_of).runtime_version == "7.2.0"


@pytest.mark.parametrize("as_of", [None, dt.date(2026, 3, 1), dt.date(2025, 6, 1)])
def test_mi300x_rocm_6_2_4_on_ubuntu_22_04_5_is_refused_at_every_date(
        matrix: Matrix, as_of: dt.date | None) -> None:
    with pytest.raises(NoValidatedCombination):
        run(matrix, "mi300x", "pytorch", rocm=parse_runtime_spec("--rocm", "==6.2.4"),
            os=parse_os("ubuntu-22.04.5"), as_of=as_of)


def test_cli_mi355x_debian_12_on_7_2_0_is_refused(tmp_path: Any) -> None:
    out = tmp_path / "pin.lock"
    r = pin("resolve", "--gpu", "mi355x", "--framework", "pytorch==2.9.1", "--os", "debian-12",
            "--as-of", "2026-03-01", "-o", str(out))
    assert r.returncode == 4, r.stdout + r.stderr
    assert "footnote mi350x-os-710" in r.stderr and "AMD ROCm 7.2.0 release notes" in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("day", [dt.date(2026, 5, 13), dt.date(2026, 6, 1),
                                 dt.date(2026, 7, 8), dt.date(2026, 9, 1),
                                 dt.date(2026, 9, 27), dt.date(2026, 10, 1), None])
def test_nvidia_resolves_for_every_date_after_its_data_was_published(
        matrix: Matrix, day: dt.date | None) -> None:
    # PyTorch 2.12 (the first release with a compute-capability list) is dated 13 May 2026.
    r = run(matrix, "h100", "pytorch", as_of=day)
    assert r.runtime == "cuda" and r.driver_rule is not None
    # A toolkit row (publication date unknown) the matrix holds is not dropped by --as-of.
    if r.runtime_version in {t.version for t, _ in matrix.cuda_toolkits()}:
        assert r.toolkit is not None and r.toolkit_driver is not None
        if day is not None:
            assert any("toolkit row has no known publication date" in n for n in r.notes)
    else:  # CUDA 13.2.1 (PyTorch 2.14): NVIDIA's runfile list in the matrix stops at 13.2.0
        assert r.toolkit is None


def test_nvidia_as_of_goes_by_the_release_date_not_the_day_the_page_was_read(
        matrix: Matrix) -> None:
    assert run(matrix, "h100", "pytorch", as_of=dt.date(2026, 6, 1)).frameworks[0].version \
        == "2.12"
    assert run(matrix, "h100", "pytorch", as_of=dt.date(2026, 7, 8)).frameworks[0].version \
        == "2.13"


# -- item 3: say why the answer is empty --------------------------------------------------

def test_as_of_before_any_amd_data_names_the_earliest_date(matrix: Matrix) -> None:
    with pytest.raises(NoValidatedCombination) as info:
        run(matrix, "mi300x", "pytorch", as_of=dt.date(2024, 1, 1))
    text = info.value.render()
    assert "no AMD ROCm data published on or before 2024-01-01" in text
    assert "2025-03-21" in text and "not validated" not in text
    assert info.value.exit_code == 4


def test_as_of_before_any_nvidia_data_names_the_earliest_date(matrix: Matrix) -> None:
    with pytest.raises(NoValidatedCombination) as info:
        run(matrix, "h100", "pytorch", as_of=dt.date(2025, 1, 1))
    text = info.value.render()
    assert "no NVIDIA CUDA data" in text and "2026-03-18" in text
    assert "unknown publication date" in text and "not validated" not in text


def test_pytorch_without_a_compute_capability_list_says_so(matrix: Matrix) -> None:
    with pytest.raises(NoValidatedCombination) as info:
        run(matrix, "h100", "pytorch==2.6")
    first = info.value.message.splitlines()[0]
    assert "the source gives no compute-capability list for pytorch 2.6" in first
    assert "not validated" not in first


def test_a_framework_with_no_nvidia_rows_says_the_matrix_holds_none(matrix: Matrix) -> None:
    with pytest.raises(NoValidatedCombination) as info:
        run(matrix, "h100", "vllm")
    first = info.value.message.splitlines()[0]
    assert "the matrix holds no NVIDIA CUDA data for vllm" in first
    assert "not validated for this GPU" not in first


def test_pytorch_2_11_on_nvidia_is_refused_for_want_of_a_list(matrix: Matrix) -> None:
    with pytest.raises(NoValidatedCombination) as info:
        run(matrix, "h200", "pytorch", as_of=dt.date(2026, 4, 1))
    first = info.value.message.splitlines()[0]
    assert "no compute-capability list for pytorch" in first and "2.11" in first


def test_cli_exit_4_with_the_earliest_date(tmp_path: Any) -> None:
    r = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch", "--as-of", "2024-01-01",
            "-o", str(tmp_path / "x.lock"))
    assert r.returncode == 4
    assert "earliest it holds was published 2025-03-21" in r.stderr


# -- item 2: restrictions, as a property --------------------------------------------------

def _os(entry: str) -> tuple[str, list[str]] | None:
    m = re.fullmatch(r"([a-z][a-z0-9]*)-([0-9][0-9.]*)", entry)
    return (m.group(1), m.group(2).split(".")) if m else None


def _same_os(a: str, b: str) -> bool:
    """``ubuntu-22.04.5`` and ``ubuntu-22.04`` name the same OS (the shorter is a prefix)."""
    pa, pb = _os(a), _os(b)
    if pa is None or pb is None or pa[0] != pb[0]:
        return False
    n = min(len(pa[1]), len(pb[1]))
    return pa[1][:n] == pb[1][:n]


def _excluded(row: OsRestriction, gpu_keys: set[str], runtime: str, os_entry: str) -> bool:
    """Whether the restriction row itself excludes ``os_entry`` for the GPU on ``runtime``."""
    if not SpecifierSet(row.runtimes).contains(Version(runtime), prereleases=True):
        return False
    gpu_in = bool(gpu_keys & set(row.gpus))
    os_in = any(_same_os(os_entry, x) for x in row.os)
    return ((row.mode == "only-these-os" and gpu_in and not os_in)
            or (row.mode == "not-these-os" and gpu_in and os_in)
            or (row.mode == "os-only-on-gpus" and os_in and not gpu_in))


# Whole-list rows: a change row ("extends ... to MI355X") edits a list rather than stating
# one; the lists it yields are checked in test_restriction_changes and the random check.
RESTRICTIONS = [row for f in MATRIX.files for row in f.data.os_restrictions
                if row.change == "replace"]
OSES = sorted({o for f in MATRIX.files for r in f.data.releases for o in (r.os or [])}
              | {o for row in RESTRICTIONS for o in row.os if _os(o)})
GPUS = sorted(g.id for g in MATRIX.gpus)
FRAMEWORKS = MATRIX.framework_names()
ROCM = sorted({r.version for f in MATRIX.files for r in f.data.releases if r.vendor == "amd"})


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    day=st.one_of(st.none(), st.dates(dt.date(2024, 6, 1), dt.date(2027, 6, 1))),
    gpu=st.sampled_from(GPUS),
    framework=st.sampled_from(FRAMEWORKS),
    os_entry=st.sampled_from(OSES),
    rocm=st.one_of(st.none(), st.sampled_from(ROCM)),
)
def test_no_lock_for_a_combination_a_restriction_excludes(
        day: dt.date | None, gpu: str, framework: str, os_entry: str, rocm: str | None) -> None:
    g = next(x for x in MATRIX.gpus if x.id == gpu)
    kw: dict[str, Any] = {"os": parse_os(os_entry), "as_of": day}
    if rocm and g.vendor == "amd":
        kw["rocm"] = parse_runtime_spec("--rocm", f"=={rocm}")
    try:
        res = run(MATRIX, gpu, framework, diagnose=False, **kw)
    except NoValidatedCombination:
        return
    keys = {g.id, g.target}
    assert res.os_chosen is not None
    for row in RESTRICTIONS:
        assert not _excluded(row, keys, res.runtime_version, res.os_chosen), (
            f"locked {res.runtime_version} on {res.os_chosen} for {gpu}: excluded by {row}")
        for allowed in res.os_allowed or []:
            assert not _excluded(row, keys, res.runtime_version, allowed), (
                f"{allowed} listed as allowed for {gpu} on {res.runtime_version}: {row}")
