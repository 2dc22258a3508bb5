"""Vendored CUTLASS / CuTe, CUB and Thrust trees (issue 31, section 2): each is one item of
the bill, its version read from its own version header, its files kept out of the counts
unless ``--include-vendored``; a header of the same name without NVIDIA's license header is
the project's own code.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from pinning.audit.model import Verdict
from pinning.audit.run import AuditRequest, audit
from pinning.audit.vendored import _version, find_vendored
from tests.support.cli import pin

NV = "/* Copyright (c) 2017 - 2024 NVIDIA CORPORATION & AFFILIATES. All rights reserved.\n" \
     " * SPDX-License-Identifier: BSD-3-Clause */\n"
PTX = 'void f(void** p) { cudaMalloc(p, 4); }\n'  # a CUDA API call: one finding

TREE = {
    "csrc/kernel.cu": PTX,
    "third_party/cutlass/include/cutlass/cutlass.h": NV + "#pragma once\n" + PTX,
    "third_party/cutlass/include/cutlass/version.h":
        NV + "#define CUTLASS_MAJOR 3\n#define CUTLASS_MINOR 5\n#define CUTLASS_PATCH 1\n",
    "third_party/cutlass/include/cute/tensor.hpp": NV + PTX,
    "third_party/cutlass/examples/x.cu": PTX,
    "csrc/cub/cub/cub.cuh": NV + PTX,
    "external/thrust/thrust/version.h": NV + "#define THRUST_VERSION 101500\n",
    "external/thrust/thrust/detail/x.h": PTX,
    "mine/cutlass/cutlass.h": "// our own helpers\n" + PTX,
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_each_vendored_tree_is_one_item_with_its_version(tmp_path: Path) -> None:
    root = _write(tmp_path / "proj", TREE)
    report = audit(AuditRequest(paths=[str(root)], hipify_perl=False))
    items = {f.path: (f.rule, f.subject, f.verdict, f.replacement)
             for f in report.findings if f.rule.startswith("vendored.")}
    assert items == {
        f"{root}/third_party/cutlass": ("vendored.cutlass", "vendored CUTLASS 3.5.1",
                                        Verdict.BLOCKED, "Composable Kernel"),
        f"{root}/csrc/cub": ("vendored.cub", "vendored CUB (version unknown)", Verdict.SWAP,
                             "hipCUB / rocPRIM"),
        f"{root}/external/thrust": ("vendored.thrust", "vendored Thrust 1.15.0",
                                    Verdict.SWAP, "rocThrust"),
    }
    others = sorted(f.path or "" for f in report.findings if not f.rule.startswith("vendored."))
    assert others == [f"{root}/csrc/kernel.cu", f"{root}/mine/cutlass/cutlass.h"]
    assert report.files_scanned == 2
    cutlass = next(f for f in report.findings if f.rule == "vendored.cutlass")
    assert "its 4 files are not read" in cutlass.why
    assert cutlass.citation.source.startswith("https://rocm.docs.amd.com/projects/"
                                              "composable_kernel/")


def test_include_vendored_lists_their_findings(tmp_path: Path) -> None:
    root = _write(tmp_path / "proj", TREE)
    report = audit(AuditRequest(paths=[str(root)], hipify_perl=False, include_vendored=True))
    paths = {f.path for f in report.findings}
    assert f"{root}/third_party/cutlass/examples/x.cu" in paths
    assert f"{root}/third_party/cutlass" in paths  # the item stays, saying they are listed
    assert report.files_scanned == len(TREE)
    r = pin("audit", "--include-vendored", "--format", "json", str(root))
    assert r.returncode == 11 and "third_party/cutlass/examples/x.cu" in r.stdout


def test_vendored_tree_inside_an_sdist(tmp_path: Path) -> None:
    sdist = tmp_path / "p-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for rel, text in TREE.items():
            info = tarfile.TarInfo(f"p-1.0/{rel}")
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    report = audit(AuditRequest(paths=[str(sdist)], hipify_perl=False))
    items = sorted(f.path or "" for f in report.findings if f.rule.startswith("vendored."))
    assert items == [f"{sdist}!p-1.0/csrc/cub", f"{sdist}!p-1.0/external/thrust",
                     f"{sdist}!p-1.0/third_party/cutlass"]
    assert not any("third_party/cutlass/" in (f.path or "") for f in report.findings)


def test_a_header_without_nvidias_license_is_not_vendored() -> None:
    heads = {"src/cutlass/cutlass.h": "// mine\n", "third_party/cub/cub/cub.cuh": NV}
    trees = find_vendored(heads, heads.get)
    assert [(t.root, t.library.name, t.files) for t in trees] == [
        ("third_party/cub", "CUB", 1)]


@pytest.mark.parametrize(("text", "version"), [
    ("#define CUB_VERSION 200200\n", "2.2.0"),
    ("#define THRUST_VERSION 101500\n", "1.15.0"),
    ("#define CUTLASS_MAJOR 1\n#define CUTLASS_MINOR 3\n#define CUTLASS_PATCH 2\n", "1.3.2"),
    ("#define CUTLASS_MAJOR 3\n", None),
    ("// nothing\n", None),
])
def test_version_headers(text: str, version: str | None) -> None:
    assert _version(text) == version
