"""pin audit sources: pyproject.toml (PEP 621, PEP 735, Poetry, uv indexes)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.audit.indexes import RULE_INDEX
from pinning.audit.model import Context, FileScan, Kind, Skip, Verdict
from pinning.audit.sources.pyproject import scan_pyproject

CTX = Context()

UV_PROJECT = """\
[project]
name = "trainer"
version = "0.1.0"
dependencies = [
    "torch==2.5.1+cu124",
    "transformers>=4.44",
    'bitsandbytes==0.43.1; sys_platform == "linux"',
]

[project.optional-dependencies]
fast = ["flash-attn==2.6.3", "transformers>=4.44"]

[dependency-groups]
dev = ["pytest>=8", {include-group = "lint"}]
lint = ["ruff==0.6.0"]
broken = [{include-group = "nope"}, "not a requirement !!"]

[tool.uv.sources]
torch = [{ index = "pytorch-cu124", marker = "sys_platform == 'linux'" }]
flash-attn = { index = "missing-index" }

[[tool.uv.index]]
name = "pytorch-cu124"
url = "https://download.pytorch.org/whl/cu124"
explicit = true

[tool.uv]
extra-index-url = ["https://mirror.example.org/simple"]
"""


def _scan(tmp_path: Path, text: str) -> FileScan:
    path = tmp_path / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    return scan_pyproject(path, "pyproject.toml", CTX)


def test_pep621_groups_and_uv_indexes(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(UV_PROJECT, encoding="utf-8")
    scan = scan_pyproject(path, "pyproject.toml", CTX)
    got = [(p.name, p.version, p.local, p.specifier, p.line, p.index_urls)
           for p in scan.packages]
    mirror = ("https://mirror.example.org/simple",)
    assert got == [
        ("torch", "2.5.1+cu124", "cu124", "", 5, ("https://download.pytorch.org/whl/cu124",)),
        ("transformers", None, None, ">=4.44", 6, mirror),
        ("bitsandbytes", "0.43.1", None, "", 7, mirror),
        ("flash-attn", "2.6.3", None, "", 11, mirror),
        ("transformers", None, None, ">=4.44", 11, mirror),
        ("pytest", None, None, ">=8", 14, mirror),
        ("ruff", "0.6.0", None, "", 15, mirror),
    ]
    assert all(p.origin == "pyproject" and p.path == "pyproject.toml" for p in scan.packages)
    assert scan.packages[2].raw == 'bitsandbytes==0.43.1; sys_platform == "linux"'
    reasons = {s.path: s.reason for s in scan.skipped}
    assert reasons == {
        "pyproject.toml": "[dependency-groups] broken: include-group 'nope' names no group",
        "pyproject.toml:16": reasons["pyproject.toml:16"],
        "pyproject.toml:20": ("[tool.uv.sources] flash-attn: index 'missing-index' is not "
                              "declared in [[tool.uv.index]]"),
    }
    assert reasons["pyproject.toml:16"].startswith("[dependency-groups] broken: not a requirement (")
    [finding] = scan.findings
    assert (finding.kind, finding.rule, finding.verdict, finding.subject, finding.line) == (
        Kind.INDEX, RULE_INDEX, Verdict.SWAP, "https://download.pytorch.org/whl/cu124", 24)


def test_poetry_dependencies_sources_and_groups(tmp_path: Path) -> None:
    text = """\
[tool.poetry]
name = "svc"

[tool.poetry.dependencies]
python = "^3.11"
torch = { version = "2.3.1+cu121", source = "pytorch" }
numpy = "^1.26"
accelerate = { version = "~0.30", extras = ["deepspeed"] }

[tool.poetry.group.dev.dependencies]
pytest = "8.2.0"

[[tool.poetry.source]]
name = "pytorch"
url = "https://download.pytorch.org/whl/cu121"
priority = "explicit"
"""
    scan = _scan(tmp_path, text)
    got = [(p.name, p.version, p.local, p.specifier, p.line, p.index_urls, p.extras)
           for p in scan.packages]
    assert got == [
        ("torch", "2.3.1+cu121", "cu121", "", 6, ("https://download.pytorch.org/whl/cu121",),
         ()),
        ("numpy", None, None, "^1.26", 7, (), ()),
        ("accelerate", None, None, "~0.30", 8, (), ("deepspeed",)),
        ("pytest", "8.2.0", None, "", 11, (), ()),
    ]
    assert [(f.subject, f.line) for f in scan.findings] == [
        ("https://download.pytorch.org/whl/cu121", 15)]


def test_plain_project_has_no_findings(tmp_path: Path) -> None:
    scan = _scan(tmp_path, '[project]\nname = "x"\ndependencies = ["requests"]\n')
    assert scan.findings == [] and scan.skipped == []
    assert [p.name for p in scan.packages] == ["requests"]


def test_wrong_shapes_are_skipped_not_raised(tmp_path: Path) -> None:
    scan = _scan(tmp_path, '[project]\ndependencies = "torch"\n'
                           '[project.optional-dependencies]\ngpu = 3\n')
    assert [s.reason for s in scan.skipped] == [
        "[project] dependencies is not a list",
        "[project.optional-dependencies] gpu is not a list"]


def test_invalid_toml_and_binary_are_skip(tmp_path: Path) -> None:
    with pytest.raises(Skip, match="not valid TOML"):
        _scan(tmp_path, "[project\n")
    path = tmp_path / "pyproject.toml"
    path.write_bytes(b"\x00\x01[project]")
    with pytest.raises(Skip, match="binary"):
        scan_pyproject(path, "pyproject.toml", CTX)


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises_but_skip(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pyproject.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            result = scan_pyproject(path, "pyproject.toml", CTX)
        except Skip:
            return
        assert isinstance(result, FileScan)


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["dependencies", "index", "url", "name", "version", "source",
                         "include-group", "extras", "explicit", "dev", "torch"]),
        inner, max_size=3),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(_VALUES)
def test_arbitrary_toml_shapes_never_raise(value: object) -> None:
    import tomlkit

    doc = {"project": {"dependencies": value, "optional-dependencies": value},
           "dependency-groups": value, "tool": {"uv": {"sources": value, "index": value},
                                                "poetry": {"dependencies": value,
                                                           "source": value, "group": value}}}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pyproject.toml"
        try:
            dumped = _drop_none(doc)
            assert isinstance(dumped, dict)
            path.write_text(tomlkit.dumps(dumped), encoding="utf-8")
        except (ValueError, TypeError):
            return
        try:
            result = scan_pyproject(path, "pyproject.toml", CTX)
        except Skip:
            return
        assert isinstance(result, FileScan)


def _drop_none(value: object) -> object:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value if v is not None]
    return value


def test_poetry_raw_is_written_as_toml(tmp_path: Path) -> None:
    scan = _scan(tmp_path, '[tool.poetry.dependencies]\n'
                           'torch = { version = "^2.1", optional = true }\n')
    assert [(p.raw, p.line) for p in scan.packages] == [
        ('torch = { version = "^2.1", optional = true }', 2)]


def test_poetry_keys_that_are_not_distribution_names_are_skipped(tmp_path: Path) -> None:
    scan = _scan(tmp_path, (
        "[tool.poetry.dependencies]\n"
        'python = "^3.11"\n'
        '"ghp token!" = "1.0"\n'
        'numpy = "==1.26.4"\n'
        "[[tool.poetry.source]]\n"
        'name = "x"\n'
        'url = "https://example.org/simple"\n'
    ))
    assert [(p.name, p.version, p.line) for p in scan.packages] == [("numpy", "1.26.4", 4)]
    assert [(s.path, s.reason) for s in scan.skipped] == [
        ("pyproject.toml:3", "[tool.poetry.dependencies]: a key is not a valid distribution "
                             "name")]
