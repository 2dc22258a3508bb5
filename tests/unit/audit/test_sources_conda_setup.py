"""pin audit sources: conda environment files, setup.py (ast, never run) and setup.cfg."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.audit.indexes import RULE_INDEX
from pinning.audit.model import Context, FileScan, Kind, Skip, Verdict
from pinning.audit.sources.conda import RULE_CHANNEL, RULE_PACKAGE, scan_environment_yml
from pinning.audit.sources.setup import scan_setup_cfg, scan_setup_py

CTX = Context()

ENVIRONMENT = """\
name: train
channels:
  - pytorch
  - nvidia
  - conda-forge
dependencies:
  - python=3.11
  - pytorch==2.3.1
  - pytorch-cuda=12.1
  - nvidia::cuda-nvcc
  - numpy >=1.26
  - "!!bad spec"
  - pip
  - pip:
    - --extra-index-url https://download.pytorch.org/whl/cu121
    - flash-attn==2.5.8
    - -r requirements-extra.txt
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_environment_packages_pip_section_and_cuda_findings(tmp_path: Path) -> None:
    scan = scan_environment_yml(_write(tmp_path, "environment.yml", ENVIRONMENT),
                                "environment.yml", CTX)
    assert [(p.name, p.version, p.specifier, p.line, p.origin, p.index_urls)
            for p in scan.packages] == [
        ("python", None, "=3.11", 7, "conda", ()),
        ("pytorch", "2.3.1", "", 8, "conda", ()),
        ("pytorch-cuda", None, "=12.1", 9, "conda", ()),
        ("cuda-nvcc", None, "", 10, "conda", ()),
        ("numpy", None, ">=1.26", 11, "conda", ()),
        ("pip", None, "", 13, "conda", ()),
        ("flash-attn", "2.5.8", "", 16, "conda", ("https://download.pytorch.org/whl/cu121",)),
    ]
    assert [(f.kind, f.rule, f.verdict, f.subject, f.line, f.lines) for f in scan.findings] == [
        (Kind.INDEX, RULE_CHANNEL, Verdict.SWAP, "nvidia", 4, [4, 10]),
        (Kind.INDEX, RULE_PACKAGE, Verdict.SWAP, "pytorch-cuda=12.1", 9, []),
        (Kind.INDEX, RULE_INDEX, Verdict.SWAP, "https://download.pytorch.org/whl/cu121", 15, []),
    ]
    assert scan.findings[1].package == "pytorch-cuda"
    assert [s.path for s in scan.skipped] == ["environment.yml:12", "environment.yml:17"]
    assert scan.skipped[0].reason == ("dependencies: not a conda package spec (no valid "
                                      "package name)")
    assert "not followed" in scan.skipped[1].reason


def test_environment_without_cuda_has_no_findings(tmp_path: Path) -> None:
    text = "channels: [conda-forge]\ndependencies:\n  - numpy=1.26\n  - cudatoolkit-dev-free\n"
    scan = scan_environment_yml(_write(tmp_path, "environment.yaml", text),
                                "environment.yaml", CTX)
    assert scan.findings == []
    assert [p.name for p in scan.packages] == ["numpy", "cudatoolkit-dev-free"]


def test_cudatoolkit_is_a_finding(tmp_path: Path) -> None:
    text = "dependencies:\n  - cudatoolkit=11.3\n"
    [finding] = scan_environment_yml(_write(tmp_path, "environment.yml", text),
                                     "environment.yml", CTX).findings
    assert (finding.rule, finding.subject, finding.line) == (RULE_PACKAGE, "cudatoolkit=11.3", 2)


def test_environment_not_yaml_or_not_a_mapping_is_skip(tmp_path: Path) -> None:
    with pytest.raises(Skip, match="not valid YAML"):
        scan_environment_yml(_write(tmp_path, "e.yml", "a: [\n"), "e.yml", CTX)
    with pytest.raises(Skip, match="not a mapping"):
        scan_environment_yml(_write(tmp_path, "e.yml", "- a\n- b\n"), "e.yml", CTX)


SETUP_PY = """\
from setuptools import setup
import os

BASE = [
    "torch>=2.1",
    "ninja",
]
EXTRA = {"gpu": ["triton==2.3.1"]}
dynamic = [line for line in open("requirements.txt")]

setup(
    name="my_kernels",
    install_requires=BASE,
    setup_requires=["setuptools>=64", os.environ["EXTRA_PKG"]],
    extras_require={**EXTRA, "test": "pytest>=8\\nbad req !!"},
)
setup(install_requires=dynamic)
"""


def test_setup_py_literals_names_and_computed_values(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = SETUP_PY + f"open({str(marker)!r}, 'w').write('x')\n"
    scan = scan_setup_py(_write(tmp_path, "setup.py", text), "setup.py", CTX)
    assert not marker.exists()  # read, never executed
    assert [(p.name, p.specifier, p.line, p.origin) for p in scan.packages] == [
        ("torch", ">=2.1", 5, "setup.py"), ("ninja", "", 6, "setup.py"),
        ("setuptools", ">=64", 14, "setup.py"), ("pytest", ">=8", 15, "setup.py")]
    assert [(s.path, s.reason) for s in scan.skipped] == [
        ("setup.py:14", "an entry of setup_requires is computed; not read statically"),
        ("setup.py:15", "an extra of extras_require is computed; not read statically"),
        ("setup.py:15", scan.skipped[2].reason),
        ("setup.py:17", "install_requires is computed; not read statically"),
    ]
    assert scan.skipped[2].reason.startswith("extras_require['test']: not a requirement (")


def test_setup_py_kwargs_and_no_setup_call(tmp_path: Path) -> None:
    scan = scan_setup_py(_write(tmp_path, "setup.py", "import setuptools\nkw = {}\n"
                                "setuptools.setup(**kw)\n"), "setup.py", CTX)
    assert [(s.path, s.reason) for s in scan.skipped] == [(
        "setup.py:3",
        "setup() takes **kwargs: install_requires is computed; not read statically")]
    empty = scan_setup_py(_write(tmp_path, "setup.py", "print('hi')\n"), "setup.py", CTX)
    assert empty.packages == [] and empty.skipped == []


def test_setup_py_not_python_is_skip(tmp_path: Path) -> None:
    with pytest.raises(Skip, match="not valid Python"):
        scan_setup_py(_write(tmp_path, "setup.py", "setup(\n"), "setup.py", CTX)


SETUP_CFG = """\
[metadata]
name = my_kernels

[options]
install_requires =
    torch>=2.1
    # a comment
    numpy==1.26.4 ; python_version >= "3.10"
setup_requires = file: build-requirements.txt

[options.extras_require]
gpu =
    triton==2.3.1
    not valid !!
"""


def test_setup_cfg_options_and_extras(tmp_path: Path) -> None:
    scan = scan_setup_cfg(_write(tmp_path, "setup.cfg", SETUP_CFG), "setup.cfg", CTX)
    assert [(p.name, p.version, p.line, p.origin) for p in scan.packages] == [
        ("torch", None, 6, "setup.cfg"), ("numpy", "1.26.4", 8, "setup.cfg"),
        ("triton", "2.3.1", 13, "setup.cfg")]
    assert [s.path for s in scan.skipped] == ["setup.cfg", "setup.cfg:14"]
    assert "file: build-requirements.txt" in scan.skipped[0].reason
    assert scan.skipped[1].reason.startswith("[options.extras_require] gpu: not a requirement (")


def test_setup_cfg_not_ini_and_binary_are_skip(tmp_path: Path) -> None:
    with pytest.raises(Skip, match="not a valid setup.cfg"):
        scan_setup_cfg(_write(tmp_path, "setup.cfg", "no section header\n"), "setup.cfg", CTX)
    path = tmp_path / "setup.py"
    path.write_bytes(b"\x00\x00setup()")
    with pytest.raises(Skip, match="binary"):
        scan_setup_py(path, "setup.py", CTX)


SCANNERS: list[Callable[[Path, str, Context], FileScan]] = [
    scan_environment_yml, scan_setup_py, scan_setup_cfg]


@settings(max_examples=150, deadline=None)
@given(st.text(), st.sampled_from(SCANNERS))
def test_arbitrary_text_never_raises_but_skip(
        text: str, scanner: Callable[[Path, str, Context], FileScan]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "input"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            result = scanner(path, "input", CTX)
        except Skip:
            return
        assert isinstance(result, FileScan)


_YAML_LINES = st.lists(st.sampled_from([
    "dependencies:", "channels:", "  - nvidia", "  - pip:", "    - torch", "  - {a: 1}",
    "    - -r x.txt", "  - pytorch-cuda=12.1", "- x", "pip: 3", "  - [1, 2]", "  - &a b",
    "  - *a", "  - ", "    - --index-url", "dependencies: 7"]), max_size=12)


@settings(max_examples=150, deadline=None)
@given(_YAML_LINES)
def test_environment_shapes_never_raise(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "environment.yml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            result = scan_environment_yml(path, "environment.yml", CTX)
        except Skip:
            return
        assert isinstance(result, FileScan)


def test_nvidia_label_and_url_channels_are_the_nvidia_channel(tmp_path: Path) -> None:
    text = ("channels:\n  - nvidia/label/cuda-12.1.0\n  - https://conda.anaconda.org/nvidia\n"
            "  - nvidia-community\ndependencies: []\n")
    [finding] = scan_environment_yml(_write(tmp_path, "environment.yml", text),
                                     "environment.yml", CTX).findings
    assert (finding.rule, finding.line, finding.lines) == (RULE_CHANNEL, 2, [2, 3])


def test_environment_entries_that_are_not_strings_are_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path, "environment.yml", (
        "channels: [5, nvidia]\n"
        "dependencies:\n"
        "  - 5\n"
        "  - 1.5\n"
        "  - true\n"
        "  - null\n"
        "  - [numpy]\n"
        "  - '7zip'\n"
        "  - _openmp_mutex=4.5\n"
        "  - pip:\n"
        "    - 1\n"
        "    - false\n"
        "    - six==1.16.0\n"
    ))
    scan = scan_environment_yml(path, "environment.yml", CTX)
    assert [(p.name, p.line) for p in scan.packages] == [
        ("7zip", 8), ("_openmp_mutex", 9), ("six", 13)]
    assert [(s.path, s.reason) for s in scan.skipped] == [
        (f"environment.yml:{n}", "dependencies: an entry is not a string") for n in range(3, 8)
    ] + [(f"environment.yml:{n}", "pip: an entry is not a string") for n in (11, 12)]
    [channel] = scan.findings
    assert (channel.rule, channel.line) == (RULE_CHANNEL, 1)


def test_environment_spec_text_is_not_copied_into_a_reason(tmp_path: Path) -> None:
    path = _write(tmp_path, "environment.yml", (
        "dependencies:\n  - 'aws_key: hunter2SECRET'\n  - '$SECRET$'\n  - numpy\n"))
    scan = scan_environment_yml(path, "environment.yml", CTX)
    assert [p.name for p in scan.packages] == ["numpy"]
    assert [(s.path, s.reason) for s in scan.skipped] == [
        (f"environment.yml:{n}", "dependencies: not a conda package spec (no valid package "
                                 "name)") for n in (2, 3)]
    assert "SECRET" not in repr(scan)
