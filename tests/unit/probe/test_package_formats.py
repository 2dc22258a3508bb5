"""Package listings users paste, read from real outputs (tests/data/dumps/README.md says how
each was produced): pip / uv pip list and freeze, pip inspect, uv tree, pipdeptree, conda
list (text and --json), and the ROCm 1.x indented rocm-smi table."""

from __future__ import annotations

import pytest

from pinning.probe.formats.packages import PackageListing, build_tag, parse_conda_list
from pinning.probe.formats.split import parse_section, split_dump
from tests.support.paths import DUMPS


def _sections(name: str) -> list[tuple[str, object]]:
    text = (DUMPS / name).read_text()
    return [(s.kind, parse_section(s)) for s in split_dump(text, source=name)]


@pytest.mark.parametrize(("name", "kind", "count"), [
    ("pip-list-venv.txt", "pip_list", 56),
    ("pip-freeze-venv.txt", "pip_list", 53),
    ("uv-pip-list.txt", "pip_list", 56),
    ("uv-pip-freeze.txt", "pip_list", 55),
])
def test_pip_and_uv_listings_are_one_section(name: str, kind: str, count: int) -> None:
    sections = _sections(name)
    assert [k for k, _ in sections] == [kind]
    packages = sections[0][1]
    assert isinstance(packages, dict) and len(packages) == count
    assert packages["pydantic"] == "2.14.4" and packages["typing-extensions"] == "4.16.0"


def test_uv_tree_lists_every_node_once() -> None:
    [(kind, listing)] = _sections("uv-tree.txt")
    assert kind == "dep_tree" and isinstance(listing, PackageListing)
    assert listing.tool == "uv tree"
    assert {p.name: p.version for p in listing.packages} == {
        "demo": "0.1.0", "click": "8.5.1", "packaging": "26.4", "pydantic": "2.14.4",
        "annotated-types": "0.8.0", "pydantic-core": "2.50.5", "typing-extensions": "4.16.0",
        "typing-inspection": "0.4.5"}


def test_pipdeptree_reads_installed_versions() -> None:
    [(kind, listing)] = _sections("pipdeptree.txt")
    assert kind == "dep_tree" and isinstance(listing, PackageListing)
    assert listing.tool == "pipdeptree"
    versions = {p.name: p.version for p in listing.packages}
    assert versions["click"] == "8.5.1" and versions["pydantic-core"] == "2.50.5"
    assert versions["typing-extensions"] == "4.16.0" and len(versions) == 7


def test_pip_inspect_json() -> None:
    [(kind, listing)] = _sections("pip-inspect-output.txt")
    assert kind == "pip_inspect" and isinstance(listing, PackageListing)
    by_name = {p.name: p for p in listing.packages}
    assert by_name["pydantic"].version == "2.14.4" and by_name["pydantic"].installer == "uv"
    assert len(by_name) == 7


def test_conda_list_text_and_json_agree() -> None:
    [(k1, text)] = _sections("conda-list-conda-8708.txt")
    [(k2, js)] = _sections("conda-list-json-conda-8708.txt")
    assert (k1, k2) == ("conda_list", "conda_list_json")
    assert isinstance(text, PackageListing) and isinstance(js, PackageListing)
    assert [(p.name, p.version, p.build, p.channel) for p in text.packages] == [
        ("testhash", "1.0.0", "haw3s0m3ha5h", "local")]
    assert [(p.name, p.version, p.build, p.channel) for p in js.packages] == [
        ("testhash", "1.0.0", "haw3s0m3ha5h", "local")]


def test_conda_list_without_channel_column() -> None:
    [(kind, listing)] = _sections("conda-list-pytorch-32369.txt")
    assert kind == "conda_list" and isinstance(listing, PackageListing)
    names = [p.name for p in listing.packages]
    assert names[0] == "_libgcc_mutex" and "cudatoolkit" in names and len(names) == 14
    cuda = next(p for p in listing.packages if p.name == "cudatoolkit")
    assert (cuda.version, cuda.build, cuda.channel) == ("10.1.243", "h6bb024c_0", None)


def test_conda_pip_markers() -> None:
    listing = parse_conda_list(
        "# Name                    Version                   Build  Channel\n"
        "torch                     1.6.0                     <pip>\n"
        "numpy                     1.18.2                   pypi_0    pypi\n"
        "pytorch                   1.3.0           py3.7_cuda10.1.243_cudnn7.6.3_0    pytorch\n")
    assert [(p.name, p.pip_copy) for p in listing.packages] == [
        ("torch", True), ("numpy", True), ("pytorch", False)]


def test_build_tag() -> None:
    assert build_tag("2.4.0+rocm6.1") == "rocm6.1"
    assert build_tag("2.9.1+rocm7.2.0.lw.git7e1940d4") == "rocm7.2.0.lw.git7e1940d4"
    assert build_tag("2.4.0") is None


def test_rocm_19_indented_table() -> None:
    [(kind, report)] = _sections("rocm-smi-legacy-rocm-build-558.txt")
    assert kind == "rocm_smi"
    [gpu] = report.gpus  # type: ignore[attr-defined]
    assert gpu.index == 0
    assert gpu.telemetry == {"temp": "37c", "avg_power": "29.225W", "sclk": "300Mhz",
                             "mclk": "300Mhz", "fan": "42.75%", "perf": "auto",
                             "sclk_od": "0%", "mclk_od": "0%"}


def test_rocm_1x_table_with_device_ids_and_warnings() -> None:
    [(kind, report)] = _sections("rocm-smi-ROC-smi-10.txt")
    assert kind == "rocm_smi"
    gpus = report.gpus  # type: ignore[attr-defined]
    assert [g.index for g in gpus] == list(range(7))
    assert [g.device_id for g in gpus[1:]] == ["0x67df"] * 6
    assert gpus[2].telemetry["temp"] == "74.0c" and gpus[2].telemetry["sclk"] == "600Mhz"
