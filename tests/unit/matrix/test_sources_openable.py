"""Issue 32 section 4: every source in the shipped matrix data is one a user can open at the
version pin read: a URL at an immutable version (a commit, a tag, a versioned docs page such
as ``docs-7.1.0``, a versioned download path, an issue or pull-request thread) or
``owner/repo@<commit>:path`` (``owner/repo#N`` for a thread). A copy read from a fork names
the vendor's own path as well. The rows that cannot be cited so are listed in
``EXCEPTIONS`` with the reason; a new row that is neither fails.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinning.errors import MatrixError
from pinning.matrix.load import shipped_paths
from pinning.matrix.provenance import Provenance

_HEX = r"[0-9a-f]{7,40}"
#: URLs whose address names one version of the document.
IMMUTABLE_URL = [
    rf"^https://github\.com/[\w.-]+/[\w.-]+/blob/{_HEX}/",            # a file at a commit
    r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$",      # a thread
    r"^https://rocm\.docs\.amd\.com/(projects/[\w-]+/)?en/docs-\d+(\.\d+)+/",  # versioned docs
    r"^https://docs\.nvidia\.com/cuda/archive/\d+(\.\d+)+/",          # archived release notes
    r"^https://developer\.download\.nvidia\.com/compute/cuda/\d+(\.\d+)+/",  # a release file
]
#: ``owner/repo@<commit>:path`` or ``owner/repo#N`` inside a source text.
REPO_AT_COMMIT = rf"\b[\w.-]+/[\w.-]+@{_HEX}\b"
REPO_THREAD = r"\b[\w.-]+/[\w.-]+#\d+\b"
#: Third-party copies of AMD's repository: a row read from one names the vendor's path too.
FORKS = ("alanina/ROCm", "hanzoai/ROCm", "roboalchemist/llm-code-docs")

#: (file, regex over "url | source") -> why the row cannot cite an immutable version.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("pytorch-wheels.toml", r"github\.com/pytorch/pytorch/blob/main/RELEASE\.md"): (
        "no pytorch/pytorch commit whose RELEASE.md holds these rows could be found: the search "
        "index stores RELEASE.md only at 2022-2024 commits and the repository (4 GB) is over the "
        "fetch limit; the 2.13 and 2.14 rows were added by pytorch/pytorch#187075 and #194367 "
        "(the threads name no merge commit). The copy read was main on 2026-11-29."),
    ("nvidia-cuda.toml", r"docs\.nvidia\.com/deploy/cuda-compatibility/"): (
        "NVIDIA publishes the minor-version compatibility table only as a live page, without "
        "versioned copies; the rows keep the day it was read (`checked`)."),
    ("nvidia-cuda.toml", r"developer\.nvidia\.com/cuda-toolkit-archive"): (
        "the CUDA Toolkit Archive is a live list with no versioned copy; the row keeps the day "
        "it was read."),
    ("gpus.toml", r"developer\.nvidia\.com/cuda-gpus"): (
        "NVIDIA's compute-capability list is a live page with no versioned copy; the PCI IDs "
        "beside it cite pciutils/pciids at a commit."),
    ("amd-rocm-10.toml", r"as cited by the ROCm migration article"): (
        "the article names no URL or date for the Triton / FlashAttention pages it cites."),
    ("amd-os-restrictions.toml", r"rocm\.docs\.amd\.com/en/latest/"): (
        "per-GPU OS restriction rows: their citations are engineer M2's part of issue 32 "
        "section 4; remove this entry when they cite an immutable version."),
}


def _rows(data: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every table with a ``source`` key in a parsed TOML file, with its path."""
    if isinstance(data, dict):
        if "source" in data:
            yield where, data
        for k, v in data.items():
            yield from _rows(v, f"{where}.{k}" if where else k)
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _rows(v, f"{where}[{i}]")


def _shipped_rows() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path in shipped_paths():
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        out += [(path.name, where, row) for where, row in _rows(data)]
    return out


def openable(row: dict[str, Any]) -> str | None:
    """``None`` when the row names a version a user can open, else what is wrong."""
    url, source = row.get("url") or "", row["source"]
    at_version = (any(re.search(p, url) for p in IMMUTABLE_URL)
                  or re.search(REPO_AT_COMMIT, source) is not None
                  or re.search(REPO_THREAD, source) is not None)
    if not at_version:
        return f"no immutable version: url {url or '(none)'!r}, source {source!r}"
    for fork in FORKS:
        if fork in url + source and "ROCm/ROCm:" not in source:
            return f"read from the fork {fork} without naming the vendor's ROCm/ROCm path"
    return None


def exception_for(name: str, row: dict[str, Any]) -> str | None:
    """The listed reason this row may cite no immutable version, or ``None``."""
    text = f"{row.get('url') or ''} | {row['source']}"
    return next((why for (f, pat), why in EXCEPTIONS.items()
                 if f == name and re.search(pat, text)), None)


def test_every_shipped_source_is_openable_at_a_version() -> None:
    bad = [f"{name} {where}: {why}" for name, where, row in _shipped_rows()
           if (why := openable(row)) and not exception_for(name, row)]
    assert not bad, "\n".join(bad[:20])


def test_the_exceptions_are_few_and_each_gives_a_reason() -> None:
    rows = _shipped_rows()
    excepted = [r for name, _, r in rows if openable(r) and exception_for(name, r)]
    assert len(excepted) < len(rows) // 3    # the exception stays an exception
    assert all(len(why) > 40 for why in EXCEPTIONS.values())


@pytest.mark.parametrize(("row", "ok"), [
    ({"source": "x", "url": "https://github.com/pytorch/pytorch/blob/main/RELEASE.md"}, False),
    ({"source": "x", "url": "https://rocm.docs.amd.com/en/latest/compatibility/x.html"}, False),
    ({"source": "x", "url": "https://rocm.docs.amd.com/en/docs-7.1.0/about/release-notes.html"},
     True),
    ({"source": "pytorch/pytorch@" + "a" * 40 + ":RELEASE.md"}, True),
    ({"source": "ROCm/ROCm#5231: amd-smi output"}, True),
    ({"source": "AMD matrix (copy read: alanina/ROCm@c6bf8d2)"}, False),      # fork only
    ({"source": "ROCm/ROCm:docs/x.csv (copy read: alanina/ROCm@c6bf8d2)"}, True),
])
def test_the_check_tells_openable_from_not(row: dict[str, Any], ok: bool) -> None:
    assert (openable(row) is None) is ok


def test_rocm_10_cites_amds_versioned_page_and_names_the_copy_read() -> None:
    """ROCm 10.0.0's values were read second-hand: the row cites AMD's docs-10.0.0 page and
    names the article it was read from (``read-from``), never AMD's ``latest`` URL.
    """
    rows = [r for name, _, r in _shipped_rows() if name == "amd-rocm-10.toml" and "url" in r]
    assert [r["url"] for r in rows] == [
        "https://rocm.docs.amd.com/en/docs-10.0.0/compatibility/compatibility-matrix.html"]
    assert "migration article" in rows[0]["read-from"]


def test_read_from_is_validated() -> None:
    base = {"source": "AMD matrix", "published": "2026-08-25"}
    assert Provenance.model_validate({**base, "read-from": "an article"}).read_from
    for bad in ("", "AMD matrix"):    # empty, or the cited source itself
        with pytest.raises(ValueError, match="read"):
            Provenance.model_validate({**base, "read-from": bad})


def test_read_from_on_a_shipped_row_loads(tmp_path: Path) -> None:
    """A matrix file whose row names `read-from` loads; a misspelt key is refused (exit 3)."""
    from pinning.matrix.load import load_matrix

    text = (Path(__file__).resolve().parents[3] / "pinning" / "matrix" / "data"
            / "amd-rocm-10.toml").read_text(encoding="utf-8")
    good = tmp_path / "good.toml"
    good.write_text(text.replace('name = "amd-rocm-10"', 'name = "site-10"'), encoding="utf-8")
    assert load_matrix((str(good),))
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('name = "amd-rocm-10"', 'name = "site-10"')
                   .replace("read-from =", "read-frm ="), encoding="utf-8")
    with pytest.raises(MatrixError):
        load_matrix((str(bad),))


def test_matrix_show_and_list_print_the_copy_read() -> None:
    from tests.support.cli import pin

    shown = pin("matrix", "show", "10.0.0")
    assert shown.returncode == 0, shown.stderr
    assert ("  url: https://rocm.docs.amd.com/en/docs-10.0.0/compatibility/"
            "compatibility-matrix.html") in shown.stdout.splitlines()
    assert any(x.startswith("  read-from: second-hand: the ROCm migration article")
               for x in shown.stdout.splitlines())
    listed = pin("matrix", "list")
    assert any(x.strip().startswith("read from: second-hand: the ROCm migration article")
               for x in listed.stdout.splitlines())
