"""AMD's footnotes enforced by the resolver: every wrong lock of issue "Truth" section 2 is
refused, and the per-GPU OS rows for ROCm 6.0-6.1 follow the page's own footnote text.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import pytest

from pinning.errors import NoValidatedCombination
from pinning.matrix.load import Matrix
from pinning.resolve.constraints import (
    Constraints,
    parse_framework,
    parse_os,
    parse_runtime_spec,
)
from pinning.resolve.resolver import resolve
from pinning.resolve.result import Resolution

SRC = Path(__file__).resolve().parents[2] / "data" / "amd-sources"
PAGE_2025 = SRC / "rocm-compat-matrix-2025-03-21.rst"
CSV_2025 = SRC / "rocm-compat-historical-2025-03-21.csv"


def run(matrix: Matrix, gpu: str, *fws: str, rocm: str | None = None, os: str | None = None,
        **kw: Any) -> Resolution:
    names = matrix.framework_names()
    return resolve(matrix, Constraints(
        gpu=gpu, frameworks=tuple(parse_framework(f, names) for f in fws),
        rocm=parse_runtime_spec("--rocm", rocm) if rocm else None,
        os=parse_os(os) if os else None, **kw))


@pytest.mark.parametrize(("gpu", "rocm", "os", "footnote"), [
    ("mi300x", "==6.0.2", "ubuntu-22.04.4", "mi300_602"),   # 6.0.x MI300X only on 22.04.3
    ("mi300x", "==6.1.0", "ubuntu-22.04.3", "mi300_610"),   # 6.1.0 only 22.04.4
    ("mi300a", "==6.1.2", "ubuntu-20.04.6", "mi300_612"),   # MI300A only the listed set
    ("mi300x", "==6.2.4", "ubuntu-22.04.5", "mi300_624"),   # except 22.04.5 / 22.04.4
])
def test_wrong_mi300_locks_are_refused(matrix: Matrix, gpu: str, rocm: str, os: str,
                                       footnote: str) -> None:
    with pytest.raises(NoValidatedCombination) as info:
        run(matrix, gpu, "pytorch", rocm=rocm, os=os)
    assert info.value.exit_code == 4
    # The message names the footnote that excludes the OS, for the release asked.
    lines = [ln for ln in info.value.message.splitlines() if "is restricted for this GPU" in ln]
    assert lines and all(ln.startswith(f"ROCm {rocm[2:]}: {os} ") for ln in lines)
    assert f"footnote {footnote}" in lines[0]


def test_mi300x_on_oracle_linux_with_rocm_6_1_2_is_locked(matrix: Matrix) -> None:
    res = run(matrix, "mi300x", "pytorch", rocm="==6.1.2", os="ol-8.9")
    assert (res.runtime_version, res.os_chosen) == ("6.1.2", "ol-8.9")


def _human(os_id: str) -> str:
    """``ubuntu-22.04.3`` as AMD writes it in a footnote (``Ubuntu 22.04.3``)."""
    family, ver = os_id.split("-", 1)
    if family == "sles":
        major, sp = ver.split(".")
        return f"SLES {major} SP{sp}"
    if family == "ol":
        return "Oracle Linux"
    return {"ubuntu": "Ubuntu", "rhel": "RHEL", "centos": "CentOS"}[family] + f" {ver}"


def _footnote_sentences() -> dict[tuple[str, str], str]:
    """(ROCm version, GPU) -> the page's sentence for that GPU, read from the page text."""
    out: dict[tuple[str, str], str] = {}
    for m in re.finditer(r"\.\. \[#mi300_6[01]\d-past-60\] \*\*For ROCm ([0-9.]+)\*\* - (.+)$",
                         PAGE_2025.read_text(), flags=re.M):
        for sentence in m.group(2).split(". "):
            gpu = sentence.split(" ", 1)[0]
            out[(m.group(1), gpu.lower())] = sentence
    return out


def _column_os(version: str) -> list[str]:
    """The OS ids of one column of the 2025-03-21 CSV (cells read by hand, not the importer)."""
    rows = list(csv.reader(CSV_2025.read_text(encoding="utf-8").splitlines()))
    col = [h.strip() for h in rows[0]].index(version)
    out: list[str] = []
    for row in rows[1:12]:
        cell = re.sub(r"\s*\[#[^\]]*\]_", "", row[col]).strip()
        if not cell:
            continue
        fam, first = re.match(r"^(\D+?)\s+(\d.*)$", cell.split(",")[0]).groups()  # type: ignore[union-attr]
        ident = {"Ubuntu": "ubuntu", "RHEL": "rhel", "SLES": "sles", "CentOS": "centos",
                 "Oracle Linux": "ol"}[fam]
        major = first.split()[0]
        for item in [first, *cell.split(",")[1:]]:
            v = item.strip()
            if ident == "sles":
                sp = v.rsplit("SP", 1)[1]
                out.append(f"sles-{major}.{sp}")
            else:
                out.append(f"{ident}-{v}")
    return out


def test_mi300_rows_for_rocm_6_0_and_6_1_follow_the_page(matrix: Matrix) -> None:
    sentences = _footnote_sentences()
    assert {v for v, _ in sentences} == {"6.0.0", "6.0.2", "6.1.0", "6.1.1", "6.1.2"}
    checked = 0
    for (version, gpu), sentence in sorted(sentences.items()):
        for os_id in _column_os(version):
            allowed = _human(os_id) in sentence
            try:
                res = run(matrix, gpu, "pytorch", rocm=f"=={version}", os=os_id)
                locked = res.runtime_version == version
            except NoValidatedCombination:
                locked = False
            assert locked == allowed, (version, gpu, os_id, sentence)
            checked += 1
    assert checked > 40


def test_tensorflow_2_17_1_is_not_locked_on_mi350_series(matrix: Matrix) -> None:
    for gpu in ("mi355x", "mi350x"):
        with pytest.raises(NoValidatedCombination) as info:
            run(matrix, gpu, "tensorflow==2.17.1")
        why = [ln for ln in info.value.message.splitlines() if ln.startswith("Not on gfx950:")]
        assert len(why) == 1 and "footnote tf-mi350" in why[0]  # said once, with the footnote
    res = run(matrix, "mi300x", "tensorflow==2.17.1", rocm="==7.0.2")
    assert any("tf-mi350" in n for fw in res.frameworks for n in fw.notes)


def test_dgl_is_not_validated_on_rocm_7_0_1_from_the_combined_column(matrix: Matrix) -> None:
    with pytest.raises(NoValidatedCombination):
        run(matrix, "mi300x", "dgl", rocm="==7.0.1")
    res = run(matrix, "mi300x", "dgl", rocm="==7.0.0")
    assert any("dgl_compat" in n for n in res.frameworks[0].notes)


def test_dgl_refusal_names_its_footnote_text_and_source(matrix: Matrix) -> None:
    """Issue 32 section 4: the refusal of DGL on ROCm 7.0.1 quotes footnote dgl_compat and
    cites the row's source, the copy read and its publication date (not only "no runtime in
    --rocm validates it").
    """
    with pytest.raises(NoValidatedCombination) as err:
        run(matrix, "mi300x", "dgl==2.4.0", rocm="==7.0.1")
    line = next(x for x in str(err.value).splitlines() if x.startswith("ROCm 7.0.1: "))
    assert "footnote dgl_compat says: DGL is supported only on ROCm 7.0.0, ROCm 6.4.3 and " \
        "ROCm 6.4.0." in line
    assert "Source: AMD ROCm compatibility matrix, historical table" in line
    assert "alanina/ROCm@c6bf8d2" in line and "published 2026-01-21" in line


def test_verl_footnote_limits_it_to_rocm_6_2_0(matrix: Matrix) -> None:
    with pytest.raises(NoValidatedCombination):
        run(matrix, "mi300x", "verl", rocm=">=7")
    assert run(matrix, "mi300x", "verl").runtime_version == "6.2.0"


def test_label_footnotes_are_printed_on_every_lock(matrix: Matrix) -> None:
    res = run(matrix, "mi300x", "pytorch", rocm="==7.1.1")
    text = " ".join(res.notes)
    for fn in ("os-compatibility", "gpu-compatibility", "kfd_support"):
        assert f"footnote {fn}" in text


def test_rocm_10_pytorch_lock_warns_the_targets_are_unstated(matrix: Matrix) -> None:
    res = run(matrix, "mi300x", "pytorch==2.13.0")
    assert res.runtime_version == "10.0.0"
    assert any("does not state the GPU targets" in w for w in res.warnings)
    vllm = run(matrix, "mi300x", "vllm==0.27.0")
    assert not any("does not state the GPU targets" in w for w in vllm.warnings)


def test_restriction_past_its_source_is_unknown_not_extended(matrix: Matrix) -> None:
    res = run(matrix, "mi300a", "pytorch", rocm="==7.2.0")
    assert any("7.1.1 (" in w and "covers ROCm 7.2.0" in w and "unknown" in w
               for w in res.warnings)
    # Debian 13 is not in MI300A's 7.1.x footnote list; that list is not extended to 7.2.0.
    assert run(matrix, "mi300a", "pytorch", rocm="==7.2.0", os="debian-13").os_chosen
    with pytest.raises(NoValidatedCombination):
        run(matrix, "mi300a", "pytorch", rocm="==7.1.1", os="debian-13")


def test_tested_user_space_rows_are_not_the_allowed_drivers(matrix: Matrix) -> None:
    import datetime as dt

    res = run(matrix, "mi300x", "pytorch", rocm="==6.3.3", as_of=dt.date(2025, 6, 1))
    assert res.kmd_allowed is None and res.kmd_unknown and "tested" in res.kmd_unknown
    assert any("kernel driver (KFD)" in n for n in res.notes)


# -- review: gfx942 products, carried notes, unknown past the source, 7.x rows, llama.cpp ----

@pytest.mark.parametrize(("gpu", "rocm", "os", "footnote"), [
    ("mi325x", "==6.0.0", "rhel-9.2", "mi300_600"),
    ("mi308x", "==6.0.0", "rhel-9.2", "mi300_600"),
    ("mi325x", "==6.1.2", "ubuntu-20.04.6", "mi300_612"),
])
def test_other_gfx942_products_get_no_os_where_the_footnote_names_mi300a_and_x(
        matrix: Matrix, gpu: str, rocm: str, os: str, footnote: str) -> None:
    # "For ROCm 6.0.0 - MI300A (gfx942) is supported on ... MI300X (gfx942) is only supported
    # on ...": gfx942 is supported only as those two products on that release.
    with pytest.raises(NoValidatedCombination, match=f"only-these-gpus.*footnote {footnote}"):
        run(matrix, gpu, "pytorch", rocm=rocm, os=os)
    assert run(matrix, "mi300a", "pytorch", rocm=rocm, os="ubuntu-22.04.3"
               if rocm == "==6.0.0" else "ubuntu-22.04.4").os_chosen


def test_footnote_notes_reach_the_lock_from_the_older_copy(matrix: Matrix) -> None:
    res = run(matrix, "mi300x", "pytorch", rocm="==6.3.3", os="debian-12")
    assert res.release is not None and res.release.file.name == "amd-rocm-2026-01-21"
    assert any("single-node" in n for n in res.notes)
    res = run(matrix, "mi300x", "pytorch", rocm="==6.2.4")
    assert any("footnote mi300_624" in n and "[6.8 HWE]" in n for n in res.notes)
    with pytest.raises(NoValidatedCombination, match=r"\[6\.8 HWE\]"):
        run(matrix, "mi300x", "pytorch", rocm="==6.2.4", os="ubuntu-22.04.5")


@pytest.mark.parametrize(("gpu", "rocm", "os", "what"), [
    ("mi300x", "==6.1.5", "ubuntu-20.04.6", "only-these-os: mi300x"),
    ("mi250", "==6.1.5", "ol-8.9", "os-only-on-gpus: mi300x"),
    ("mi300a", "==6.4.1", "azurelinux-3.0", "os-only-on-gpus: mi300x"),
    ("mi210", "==6.4.0", "debian-12", "os-only-on-gpus: mi300x"),
])
def test_restriction_unknown_on_releases_its_source_does_not_cover(
        matrix: Matrix, gpu: str, rocm: str, os: str, what: str) -> None:
    res = run(matrix, gpu, "pytorch", rocm=rocm, os=os)
    assert any(what in w and "unknown" in w for w in res.warnings), res.warnings


def test_no_unknown_warning_where_a_later_source_speaks(matrix: Matrix) -> None:
    # The 7.0.x-7.1.x footnotes cover ROCm 7.0.0: the 6.x MI300X rows are not warned about.
    res = run(matrix, "mi300x", "pytorch", rocm="==7.0.0")
    assert not any("mi300_6" in w for w in res.warnings)


def test_release_notes_additions_and_no_carried_forward_refusal(matrix: Matrix) -> None:
    # rocm-7.1.0-RELEASE.md: "AMD Instinct MI100 adds support for SLES 15 SP7."
    assert run(matrix, "mi100", "pytorch", rocm="==7.1.0", os="sles-15.7").os_chosen
    # 7.2.0 notes extend the 7.1.x MI355X list ("all listed except RHEL 8.10, SLES 15 SP7,
    # Debian 12, Rocky 9, Azure Linux 3.0, Oracle Linux 8") by SLES 15 SP7: RHEL 10.1 and
    # SLES 15 SP7 are allowed, Debian 12 stays refused (issue 32 section 2).
    for os in ("rhel-10.1", "sles-15.7"):
        assert run(matrix, "mi355x", "pytorch", rocm="==7.2.0", os=os).os_chosen
    with pytest.raises(NoValidatedCombination, match="mi350x-os-710"):
        run(matrix, "mi355x", "pytorch", rocm="==7.2.0", os="debian-12")


def test_llama_cpp_and_stanford_megatron_resolve_with_their_builds(matrix: Matrix) -> None:
    res = run(matrix, "mi300x", "llama.cpp")
    assert res.runtime_version == "7.0.0"
    fw = res.frameworks[0]
    assert fw.version is None and fw.unknown and "b6652" in fw.unknown
    assert any("llama-cpp_compat" in n for n in fw.notes)
    res = run(matrix, "mi300x", "stanford-megatron-lm")
    assert res.runtime_version == "6.3.0"
    assert "85f95ae" in (res.frameworks[0].unknown or "")


def test_tf_2_17_1_on_mi350_cites_its_footnote(matrix: Matrix) -> None:
    from pinning.resolve.candidates import framework_in_release

    rr = next(x for x in matrix.releases() if x.release.version == "7.0.2")
    fw, why = framework_in_release(parse_framework("tensorflow==2.17.1",
                                                   matrix.framework_names()), rr, "gfx950")
    assert fw is None and why and "tf-mi350" in why


def test_a_framework_note_is_printed_only_for_that_framework(matrix: Matrix) -> None:
    res = run(matrix, "mi300x", "dgl")
    assert not any("verl" in n for n in res.notes)
