"""Issue 31's DeepSpeed reproductions on the real sdist (deepspeed 0.19.8 from PyPI, pinned
by sha256 in :mod:`tests.support.sdists`, downloaded at test time, never committed):

* ``pin audit deepspeed-0.19.8.tar.gz`` read it as "0 files scanned ... passes"; it reads the
  archive in memory and gives the same bill as the unpacked tree;
* the sdist ships its kernel sources twice, byte-identical (``csrc/`` and
  ``deepspeed/ops/csrc/``): each file is counted once, its copy listed;
* the inline PTX under ``#ifdef PTX_AVAILABLE`` is a CUDA-only branch, already ported
  (``ds_kernel_utils.h`` defines the macro only when ``!__HIP_PLATFORM_AMD__``);
* the text bill opens with a summary that fits a screen.

Without network these skip, unless ``CI=true`` or ``PIN_REQUIRE_NETWORK=1``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pinning.audit.summary import SUMMARY_MAX
from tests.support.cli import json_result, pin
from tests.support.sdists import SDIST_CACHE, SDISTS, SdistUnavailable

DS = SDISTS["deepspeed"]
ARCHIVE = SDIST_CACHE / DS.url.rsplit("/", 1)[-1]
TOP = f"deepspeed-{DS.version}"


@pytest.fixture(scope="module")
def tree() -> Path:
    try:
        return DS.fetch()
    except SdistUnavailable as exc:
        if (os.environ.get("CI", "").lower() in {"true", "1"}
                or os.environ.get("PIN_REQUIRE_NETWORK") == "1"):
            pytest.fail(f"CI=true or PIN_REQUIRE_NETWORK=1, but {DS.name}=={DS.version} "
                        f"cannot be downloaded: {exc}")
        pytest.skip(f"{DS.name}=={DS.version} not downloadable ({exc})")


def _audit(*args: str, cwd: Path) -> tuple[int, dict[str, Any]]:
    done = pin("audit", *args, "--format", "json", cwd=cwd)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json_result(done)


@pytest.fixture(scope="module")
def from_archive(tree: Path) -> tuple[int, dict[str, Any]]:
    return _audit(ARCHIVE.name, cwd=ARCHIVE.parent)


@pytest.fixture(scope="module")
def from_tree(tree: Path) -> tuple[int, dict[str, Any]]:
    return _audit(".", cwd=tree)


def test_the_sdist_is_read_in_memory_and_billed_like_its_tree(
        from_archive: tuple[int, dict[str, Any]], from_tree: tuple[int, dict[str, Any]]) -> None:
    code, archive = from_archive
    tree_code, unpacked = from_tree
    assert code == tree_code == 11  # blocked items: exit 11, never "passes"
    assert archive["files-scanned"] == unpacked["files-scanned"] > 1000
    assert archive["totals"] == unpacked["totals"]
    assert archive["totals"]["blocked"] > 0


def test_byte_identical_kernel_sources_are_counted_once(
        from_tree: tuple[int, dict[str, Any]], from_archive: tuple[int, dict[str, Any]]) -> None:
    _code, result = from_tree
    paths = {f["path"] for f in result["findings"]}
    copied = [f for f in result["findings"]
              if f["path"] == "csrc/includes/memory_access_utils.h" and f["copies"]]
    assert copied and "deepspeed/ops/csrc/includes/memory_access_utils.h" in copied[0]["copies"]
    assert "deepspeed/ops/csrc/includes/memory_access_utils.h" not in paths
    _code, archived = from_archive
    inner = {f["path"] for f in archived["findings"]}
    assert f"{ARCHIVE.name}!{TOP}/deepspeed/ops/csrc/includes/memory_access_utils.h" not in inner


def test_ptx_under_a_macro_another_header_defines_for_cuda_only_is_ready(
        from_tree: tuple[int, dict[str, Any]]) -> None:
    _code, result = from_tree
    ptx = [f for f in result["findings"] if f["path"] == "csrc/includes/memory_access_utils.h"
           and f["kind"] in ("inline-ptx", "tensor-core")]
    assert ptx and {f["verdict"] for f in ptx} == {"ready"}
    assert any("PTX_AVAILABLE is defined only for CUDA builds, by "
               "csrc/includes/ds_kernel_utils.h:44" in f["why"] for f in ptx)


def test_the_text_bill_opens_with_a_summary_that_fits_a_screen(tree: Path) -> None:
    done = pin("audit", ARCHIVE.name, cwd=ARCHIVE.parent)
    lines = done.stdout.splitlines()
    first_group = next(n for n, line in enumerate(lines) if line.startswith("BLOCKED ("))
    assert lines[2].startswith("SUMMARY") and first_group <= SUMMARY_MAX
    assert len(lines) > 4 * first_group  # the bill itself is longer: the summary is a summary
