"""Issue 32 section 2: random requests (Instinct GPU x OS x framework x ROCm 7.x release,
seeded) resolved by pin and checked against a second, independent reading of AMD's tables.

The reading here uses neither pin's importer nor its models: the historical CSV copy and the
release notes (``tests/data/amd-sources``, byte-identical to ``../shared/data``) are read with ``csv`` and ``re``, and the per-GPU OS
footnotes of ROCm 7.0.x / 7.1.x are quoted below from AMD's compatibility-matrix page as of
the ROCm 7.1.0 release (https://rocm.docs.amd.com/en/docs-7.1.0/compatibility/compatibility-
matrix.html; copy read: alanina/ROCm@c56d5b74956d3a28c57e1408d7dfab6337628d48, a fork of
ROCm/ROCm), whose later copies no longer carry them. A list whose source stops before a
release is not applied to it (pin warns there); the 7.2.0 notes' "extends ... to MI355X and
MI350X" keeps the 7.1.x list of those GPUs, plus the OS named.
"""

from __future__ import annotations

import csv
import random
import re
from pathlib import Path

import pytest

from pinning.errors import NoValidatedCombination
from pinning.matrix.load import Matrix
from pinning.resolve.constraints import Constraints, parse_framework, parse_os, parse_runtime_spec
from pinning.resolve.resolver import resolve

# The repository's byte-identical copies of ../shared/data's AMD files (so CI has them).
SRC = Path(__file__).resolve().parents[2] / "data" / "amd-sources"
CSV_2026 = SRC / "rocm-compat-historical-2026-01-21.csv"
PAGE_2026 = SRC / "rocm-compat-matrix-2026-01-21.rst"
NOTES = SRC
RELEASES = ["7.0.0", "7.0.1", "7.0.2", "7.1.0", "7.1.1", "7.2.0"]
TARGET = {"mi355x": "gfx950", "mi350x": "gfx950", "mi325x": "gfx942", "mi300x": "gfx942",
          "mi300a": "gfx942", "mi250x": "gfx90a", "mi250": "gfx90a", "mi210": "gfx90a",
          "mi100": "gfx908"}
N_REQUESTS = 300

# (releases the footnote speaks for, its text), as AMD's page states them (bold prefix, or
# the -700 / -710 anchor pairing where the text has none).
S70, S71, S7X = ("7.0.0", "7.0.1", "7.0.2"), ("7.1.0", "7.1.1"), tuple(RELEASES[:5])
FOOTNOTES = [
    (S7X, "RHEL 8.10 is supported only on AMD Instinct MI300X, MI300A, MI250X, MI250, MI210, "
          "and MI100 GPUs."),
    (S71, "SLES 15 SP7 is supported only on AMD Instinct MI325X, MI300X, MI300A, MI250X, "
          "MI250, MI210, and MI100 GPUs."),
    (S70, "SLES 15 SP7 and Debian 12 are supported only on AMD Instinct MI300X, MI300A, "
          "MI250X, MI250, and MI210 GPUs."),
    (S71, "Oracle Linux 10 and 9 are supported only on AMD Instinct MI355X, MI350X, MI325X, "
          "and MI300X GPUs. Oracle Linux 8 is supported only on AMD Instinct MI300X GPU."),
    (S70, "Oracle Linux 10 and 9 are supported only on AMD Instinct MI355X, MI350X, and MI300X "
          "GPUs. Oracle Linux 8 is supported only on AMD Instinct MI300X GPU."),
    (S71, "Debian 13 is supported only on AMD Instinct MI355X, MI350X, MI325X, and MI300X "
          "GPUs."),
    (S71, "Debian 12 is supported only on AMD Instinct MI325X, MI300X, MI300A, MI250X, MI250, "
          "and MI210 GPUs."),
    (("7.0.2",), "Debian 13 is supported only on AMD Instinct MI300X GPUs."),
    (S7X, "Azure Linux 3.0 is supported only on AMD Instinct MI300X and AMD Radeon PRO V710 "
          "GPUs."),
    (S7X, "Rocky Linux 9 is supported only on AMD Instinct MI300X and MI300A GPUs."),
    (S71, "AMD Instinct MI355X (gfx950) and MI350X (gfx950) GPUs supports all listed "
          "supported_distributions except RHEL 8.10, SLES 15 SP7, Debian 12, Rocky 9, Azure "
          "Linux 3.0, and Oracle Linux 8."),
    (S70, "AMD Instinct MI355X (gfx950) and MI350X (gfx950) GPUs only supports Ubuntu 24.04.3, "
          "Ubuntu 22.04.5, RHEL 10.0, RHEL 9.6, RHEL 9.4, Oracle Linux 10, and Oracle Linux 9."),
    (S71, "AMD Instinct MI325X GPUs (gfx942) supports all listed supported_distributions except "
          "RHEL 8.10, Rocky 9, Azure Linux 3.0, and Oracle Linux 8."),
    (S70, "AMD Instinct MI325X GPUs (gfx942) only supports Ubuntu 24.04.3, Ubuntu 22.04.5, "
          "RHEL 9.6, and RHEL 9.4."),
    (S7X, "AMD Instinct MI300A GPUs (gfx942) supports all listed supported_distributions except "
          "on Debian 13, Azure Linux 3.0, Oracle Linux 10, Oracle Linux 9, and Oracle Linux 8."),
    (S70, "AMD Instinct MI200 Series GPUs (gfx90a) only supports Ubuntu 24.04.3, Ubuntu 22.04.5, "
          "RHEL 10.0, RHEL 9.6, RHEL 9.4, RHEL 8.10, SLES 15 SP7, and Debian 12."),
    (S71, "AMD Instinct MI100 GPUs (gfx908) only supports Ubuntu 24.04.3, Ubuntu 22.04.5, RHEL "
          "10.0, RHEL 9.6, RHEL 9.4, RHEL 8.10, and SLES 15 SP7."),
    (S70, "AMD Instinct MI100 GPUs (gfx908) only supports Ubuntu 24.04.3, Ubuntu 22.04.5, RHEL "
          "10.0, RHEL 9.6, RHEL 9.4, and RHEL 8.10."),
]
_DISTRO = {"ubuntu": "ubuntu", "rhel": "rhel", "sles": "sles", "debian": "debian",
           "rocky": "rocky", "rocky linux": "rocky", "oracle linux": "ol",
           "azure linux": "azurelinux"}


def os_ids(text: str) -> list[str]:
    """``Oracle Linux 10 and 9`` -> ``ol-10, ol-9``; ``SLES 15 SP7`` -> ``sles-15.7``."""
    out: list[str] = []
    distro = ""
    for item in re.split(r",\s*(?:and\s+)?|\s+and\s+", text.strip().rstrip(".")):
        item = re.sub(r"^on\s+", "", item.strip())
        m = re.match(r"([A-Za-z][A-Za-z ]*?)\s+([\d.]+(?:\s+SP\d+)?)$", item)
        if m:
            distro, ver = _DISTRO.get(m.group(1).lower(), m.group(1).lower()), m.group(2)
        elif re.fullmatch(r"[\d.]+", item):
            ver = item
        else:
            continue
        ver = re.sub(r"\s+SP(\d+)", r".\1", ver)
        out.append(f"{distro}-{ver}")
    return out


def gpus_in(text: str) -> set[str]:
    """The Instinct products a footnote names (``MI200 Series`` is MI250X, MI250, MI210)."""
    found = {g.lower() for g in re.findall(r"MI\d{3}[AX]?\b", text)}
    if "mi200" in found:
        found = (found - {"mi200"}) | {"mi250x", "mi250", "mi210"}
    return found


def statements() -> list[tuple[tuple[str, ...], str, set[str], list[str]]]:
    """(releases, mode, GPUs, OS) for each sentence of the footnotes above."""
    out = []
    for rels, text in FOOTNOTES:
        for sent in re.split(r"\.\s+(?=[A-Z])", text.rstrip(".")):
            sent = sent.strip()
            m = re.match(r"(.+?) (?:is|are) supported only on AMD Instinct (.+)", sent)
            if m:
                out.append((rels, "os-only", gpus_in(m.group(2)), os_ids(m.group(1))))
                continue
            m = re.match(r"AMD Instinct (.+?) supports all listed \S+ except (.+)", sent)
            if m:
                out.append((rels, "not-these", gpus_in(m.group(1)), os_ids(m.group(2))))
                continue
            m = re.match(r"AMD Instinct (.+?) only supports (.+)", sent)
            if m:
                out.append((rels, "only-these", gpus_in(m.group(1)), os_ids(m.group(2))))
    return out


def extensions_720() -> list[tuple[set[str], list[str]]]:
    """``ROCm 7.2.0 extends the X operating system support to AMD Instinct ... GPUs``."""
    text = (NOTES / "rocm-7.2.0-RELEASE.md").read_text()
    return [(gpus_in(g), os_ids(o)) for o, g in re.findall(
        r"ROCm 7\.2\.0 extends the (.+?) (?:operating system )?support to AMD Instinct (.+?)"
        r" GPUs", text)]


def csv_tables() -> tuple[dict[str, list[str]], dict[str, set[str]], dict[str, dict[str, str]]]:
    """Per release: OS ids, gfx targets, and {framework: cell} from the 2026-01-21 CSV."""
    rows = list(csv.reader(CSV_2026.read_text().splitlines()))
    cols: dict[int, list[str]] = {}
    for i, head in enumerate(rows[0][1:], start=1):
        rels = [v.strip() for v in head.split("/")]
        if set(rels) <= set(RELEASES):
            cols[i] = rels
    oses: dict[str, list[str]] = {r: [] for c in cols.values() for r in c}
    targets: dict[str, set[str]] = {r: set() for r in oses}
    fws: dict[str, dict[str, str]] = {r: {} for r in oses}
    section = ""
    for row in rows[1:]:
        label = row[0]
        if label.strip():
            section = ("os" if "Operating systems" in label else "gpu" if "LLVM target" in label
                       else "pytorch" if "PyTorch" in label else "tensorflow"
                       if "TensorFlow" in label else "other")
        for i, rels in cols.items():
            cell = row[i].strip() if i < len(row) else ""
            if not cell or cell.startswith(".."):
                continue
            for r in rels:
                if section == "os":
                    oses[r] += os_ids(cell.replace(",", " and"))
                elif section == "gpu":
                    targets[r].add(cell.split()[0])
                elif section in ("pytorch", "tensorflow"):
                    fws[r][section] = cell
    return oses, targets, fws


def expected(rel: str, gpu: str, os: str, fw: str, version: str,
             tables: tuple[dict[str, list[str]], dict[str, set[str]], dict[str, dict[str, str]]]
             ) -> bool:
    """True when AMD's tables, read here, validate the request (a lock), else False."""
    oses, targets, fws = tables
    if os not in oses[rel] or TARGET[gpu] not in targets[rel]:
        return False
    cell = fws[rel].get(fw, "")
    entries = [v.strip() for v in re.sub(r"\[#[^\]]*\]_?", "", cell).split(",")]
    # A series request (2.9) takes any build of the series; an exact one (2.7.1) a build
    # listed, or listed as its series (2.7).
    if not any(e == version or e.startswith(version + ".") or version.startswith(e + ".")
               for e in entries if e):
        return False
    if fw == "tensorflow" and version == "2.17.1" and "tf-mi350" in cell and \
            TARGET[gpu] == "gfx950" and "TensorFlow 2.17.1 is not supported on AMD Instinct " \
            "MI350 Series" in PAGE_2026.read_text():
        return False
    if rel == "7.2.0":
        said = [(m, g, o) for rels, m, g, o in statements()
                if "7.1.1" in rels and m == "not-these" and gpu in g]
        for gs, add in extensions_720():
            said = [(m, g, [x for x in o if x not in add]) for m, g, o in said if gs & g]
        return not any(os in o for _, _, o in said)
    for rels, mode, gs, os_list in statements():
        if rel not in rels:
            continue
        if (mode == "os-only" and os in os_list and gpu not in gs) or (
                mode == "not-these" and gpu in gs and os in os_list) or (
                mode == "only-these" and gpu in gs and os not in os_list):
            return False
    return True


def test_the_independent_reading_reads_what_the_issue_quotes() -> None:
    oses, targets, fws = csv_tables()
    assert "debian-12" in oses["7.2.0"] and "rocky-9" in oses["7.2.0"]
    assert "gfx950" in targets["7.2.0"] and fws["7.2.0"]["pytorch"].startswith("2.9.1")
    assert extensions_720() == [({"mi355x", "mi350x"}, ["sles-15.7"])]
    assert os_ids("Oracle Linux 10 and 9") == ["ol-10", "ol-9"]
    assert len(statements()) == 20


def test_random_requests_agree_with_an_independent_reading(matrix: Matrix) -> None:
    tables = csv_tables()
    oses = sorted({o for r in RELEASES for o in tables[0][r]})
    rng = random.Random(32)
    names = matrix.framework_names()
    drawn = agreed = locks = 0
    wrong: list[str] = []
    for _ in range(N_REQUESTS):
        rel, gpu, os = rng.choice(RELEASES), rng.choice(sorted(TARGET)), rng.choice(oses)
        fw = rng.choice(["pytorch", "tensorflow"])
        cells = [v.strip() for r in RELEASES for v in re.sub(
            r"\[#[^\]]*\]_?", "", tables[2][r].get(fw, "")).split(",") if v.strip()]
        version = rng.choice(sorted(set(cells)))
        spec = f"{fw}=={version}" + (".*" if version.count(".") == 1 else "")
        want = expected(rel, gpu, os, fw, version, tables)
        c = Constraints(gpu=gpu, frameworks=(parse_framework(spec, names),),
                        rocm=parse_runtime_spec("--rocm", f"=={rel}"), os=parse_os(os))
        try:
            res = resolve(matrix, c, diagnose=False)
            got = res.runtime_version == rel
        except NoValidatedCombination:
            got = False
        drawn += 1
        locks += got
        if got == want:
            agreed += 1
        else:
            wrong.append(f"{gpu} {os} {spec} ROCm {rel}: pin {'lock' if got else 'refusal'}, "
                         f"AMD's tables {'lock' if want else 'refusal'}")
    print(f"random requests: {drawn} drawn, {agreed} agree, {locks} locks")
    assert not wrong, "\n".join(wrong)
    assert 0 < locks < drawn  # the draw exercises both outcomes


@pytest.mark.parametrize("os", ["ol-9", "ol-10"])
@pytest.mark.parametrize("rel", ["7.1.0", "7.1.1"])
def test_mi325x_on_oracle_linux_locks_on_rocm_7_1(matrix: Matrix, os: str, rel: str) -> None:
    # Issue 32 section 2: the 7.1.0 notes and the 7.1.x footnote add Oracle Linux 9/10 for
    # MI325X; the 7.0.x footnote ("only on MI355X, MI350X and MI300X") does not cover 7.1.x.
    names = matrix.framework_names()
    res = resolve(matrix, Constraints(
        gpu="mi325x", frameworks=(parse_framework("pytorch", names),),
        rocm=parse_runtime_spec("--rocm", f"=={rel}"), os=parse_os(os)))
    assert res.runtime_version == rel and res.os_chosen == os
