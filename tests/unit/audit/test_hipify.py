"""HIPIFY's API tables as pin's data: the importer, the shipped JSON and the lookup.

The expected values below were read by hand from HIPIFY's Markdown tables
(``docs/reference/tables/<file>`` of ROCm/HIPIFY; the copies beside this checkout, see each
table's citation for its commit).
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from pinning.audit import hipify
from pinning.audit.hipify import DATA_FILE, load_data, lookup, lookup_all
from pinning.audit.hipify_tables import PRIORITY, citation_for, dump_data, import_tables
from pinning.errors import MatrixError
from tests.support.paths import ROOT

TABLES = ROOT / ".." / "shared" / "data" / "hipify"
needs_tables = pytest.mark.skipif(
    not (TABLES / "SOURCE.md").is_file(),
    reason=f"HIPIFY's tables are not beside the checkout ({TABLES})")

RUNTIME = "CUDA_Runtime_API_functions_supported_by_HIP.md"
RUNTIME_SOURCE = f"ROCm/HIPIFY@007ca740fc9cd2511a252aa0ae9a8f05bce8c9b7:docs/reference/tables/{RUNTIME}"


# -- the shipped file is exactly the importer's output ------------------------------------------

@needs_tables
def test_shipped_json_equals_importer_output_of_the_tables() -> None:
    assert DATA_FILE.read_text(encoding="utf-8") == dump_data(import_tables(TABLES))


@needs_tables
def test_cudnn_miopen_table_is_imported_and_the_legacy_17_column_one_is_not() -> None:
    files = [t["file"] for t in import_tables(TABLES)["tables"]]
    assert "CUDNN_API_supported_by_MIOPEN.md" in files
    assert "CUDNN_API_supported_by_HIP_and_MIOPEN.md" not in files
    assert files[:5] == list(PRIORITY)
    assert len(files) == 15


def test_shipped_file_is_small_and_lists_every_table_once() -> None:
    assert DATA_FILE.stat().st_size < 1_000_000
    data = load_data(DATA_FILE)
    assert len({t.file for t in data.tables}) == len(data.tables) == 15
    assert len(hipify.identifiers()) == len(data.rows) > 10_000


# -- cell-exact rows ---------------------------------------------------------------------------

def test_runtime_row_with_a_hip_equivalent() -> None:
    # |`cudaMalloc`| | | | |`hipMalloc`|1.5.0| | | | | |
    e = lookup("cudaMalloc")
    assert e is not None
    assert (e.hip, e.hip_added, e.hip_deprecated, e.hip_removed) == ("hipMalloc", "1.5.0",
                                                                     None, None)
    assert (e.cuda_added, e.cuda_deprecated, e.cuda_removed, e.experimental) == (
        None, None, None, False)
    assert (e.table, e.section, e.target) == (RUNTIME, "Memory Management", "HIP")
    assert e.citation.source == RUNTIME_SOURCE
    assert e.citation.published is None
    assert e.citation.published_unknown is not None
    assert e.citation.published_unknown.startswith("the table carries no date")
    assert "CUDA 13.2" in e.citation.published_unknown
    assert "snapshot" not in e.citation.published_unknown


def test_runtime_row_without_hip_equivalent() -> None:
    # |`cudaDeviceFlushGPUDirectRDMAWrites`|11.3| | | | | | | | | | |
    e = lookup("cudaDeviceFlushGPUDirectRDMAWrites")
    assert e is not None
    assert e.hip is None and e.hip_added is None
    assert e.cuda_added == "11.3"
    assert e.section == "Device Management"


def test_deprecated_and_removed_cuda_row() -> None:
    # |`cudaThreadSynchronize`| |10.0| |13.0|`hipDeviceSynchronize`|1.6.0| | | | | |
    e = lookup("cudaThreadSynchronize")
    assert e is not None
    assert (e.cuda_deprecated, e.cuda_removed) == ("10.0", "13.0")
    assert (e.hip, e.hip_added) == ("hipDeviceSynchronize", "1.6.0")
    assert e.section == "Thread Management [REMOVED]"


def test_hip_deprecated_and_cuda_removed_row() -> None:
    # |`cudaBindTexture`| |11.0| |12.0|`hipBindTexture`|1.6.0|3.8.0| | | | |
    e = lookup("cudaBindTexture")
    assert e is not None
    assert (e.cuda_deprecated, e.cuda_removed) == ("11.0", "12.0")
    assert (e.hip, e.hip_added, e.hip_deprecated) == ("hipBindTexture", "1.6.0", "3.8.0")


def test_hip_removed_row() -> None:
    # CUTENSOR: |`cutensorContraction`|1.0.1.0| | |2.0.0.0|`hiptensorContraction`|6.1.0| | |7.0.0| | |
    e = lookup("cutensorContraction")
    assert e is not None
    assert (e.cuda_added, e.cuda_removed) == ("1.0.1.0", "2.0.0.0")
    assert (e.hip, e.hip_added, e.hip_removed) == ("hiptensorContraction", "6.1.0", "7.0.0")
    assert e.table == "CUTENSOR_API_supported_by_HIP.md"


def test_experimental_row() -> None:
    # |`cudaOccupancyMaxPotentialClusterSize`|11.8| | | |`hipOccupancyMaxPotentialClusterSize`|7.13.0| | | | |7.14.0|
    e = lookup("cudaOccupancyMaxPotentialClusterSize")
    assert e is not None
    assert e.experimental is True and e.experimental_in == "7.14.0"
    assert e.hip_added == "7.13.0"
    assert lookup("cudaMalloc").experimental is False  # type: ignore[union-attr]


def test_changed_list_and_unsupported_cuda_versions() -> None:
    # |`cudaLaunchAttributeValue`|11.8| |13.0, 13.2| |`hipLaunchAttributeValue`|6.2.0| |7.1.0| | | |
    e = lookup("cudaLaunchAttributeValue")
    assert e is not None
    assert (e.cuda_changed, e.hip_changed) == ("13.0, 13.2", "7.1.0")
    # |`cudaGetDriverEntryPoint`|11.3|13.0|12.0| |`hipGetDriverEntryPoint`|7.1.0| | | |11.3 11.4 11.5 11.6 11.7 11.8| |
    g = lookup("cudaGetDriverEntryPoint")
    assert g is not None
    assert g.unsupported_cuda == ("11.3", "11.4", "11.5", "11.6", "11.7", "11.8")
    assert (g.cuda_added, g.cuda_deprecated, g.cuda_changed) == ("11.3", "13.0", "12.0")
    assert lookup("cudaMalloc").unsupported_cuda == ()  # type: ignore[union-attr]


def test_cublas_row() -> None:
    # |`cublasSgemm_v2`| | | | |`hipblasSgemm`|1.8.2| | | | | |
    e = lookup("cublasSgemm_v2")
    assert e is not None
    assert (e.hip, e.hip_added, e.table) == ("hipblasSgemm", "1.8.2",
                                             "CUBLAS_API_supported_by_HIP.md")
    assert e.citation.source.startswith("ROCm/HIPIFY@08c0d96006c10a247b1a85b7915a8b94213afe8e:")


def test_cudnn_to_miopen_row() -> None:
    # |`cudnnConvolutionForward`|1.0.0|9.0.0| | |`miopenConvolutionForward`|2.1.0| | | | |
    e = lookup("cudnnConvolutionForward")
    assert e is not None
    assert (e.hip, e.hip_added, e.target) == ("miopenConvolutionForward", "2.1.0", "MIOPEN")
    assert (e.cuda_added, e.cuda_deprecated) == ("1.0.0", "9.0.0")
    assert (e.table, e.section) == ("CUDNN_API_supported_by_MIOPEN.md", "CUDNN Functions")


def test_fork_sourced_table_cites_the_upstream_commit_and_its_date() -> None:
    # |`CUDA_ARRAY3D_CUBEMAP`| | | | |`hipArrayCubemap`|1.7.0| | | | |
    e = lookup("CUDA_ARRAY3D_CUBEMAP")
    assert e is not None
    assert (e.hip, e.hip_added) == ("hipArrayCubemap", "1.7.0")
    assert e.citation.source == (
        "ROCm/HIPIFY@c62f16a4dc051be4532c3d41aaf08d43ddff3a01:"
        "docs/reference/tables/CUDA_Driver_API_functions_supported_by_HIP.md")
    assert e.citation.published == dt.date(2025, 8, 4)


def test_unchanged_fork_blob_is_dated_by_its_last_change() -> None:
    # |`cuComplex`| | | | |`hipComplex`|1.6.0| | | | |
    e = lookup("cuComplex")
    assert e is not None and e.hip == "hipComplex"
    assert e.citation.source == (
        "ROCm/HIPIFY@c62f16a4dc051be4532c3d41aaf08d43ddff3a01:"
        "docs/reference/tables/cuComplex_API_supported_by_HIP.md")
    assert e.citation.published == dt.date(2025, 4, 28)


def test_identifier_in_two_tables_answers_with_the_runtime_row_first() -> None:
    # Runtime: |`libraryPropertyType`|8.0| | | |`hipLibraryPropertyType`|3.0.0| | | | | |
    # cuDNN:   |`libraryPropertyType`|6.0.0| | | | | | | | | |
    rows = lookup_all("libraryPropertyType")
    assert [(r.table, r.hip) for r in rows] == [
        (RUNTIME, "hipLibraryPropertyType"), ("CUDNN_API_supported_by_MIOPEN.md", None)]
    assert lookup("libraryPropertyType") == rows[0]


def test_unknown_identifier_and_hip_names_are_not_listed() -> None:
    assert lookup("hipMalloc") is None
    assert lookup("cudamalloc") is None  # exact, case-sensitive
    assert lookup_all("notACudaName") == ()
    assert "cudaMalloc" in hipify.identifiers()
    assert "hipMalloc" not in hipify.identifiers()


# -- citations ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("cell", "published"), [
    ("2025-08-04 (commit date; last upstream commit before the fork's own commits)",
     dt.date(2025, 8, 4)),
    ("2025-04-28 (last change) / 2025-08-04 (snapshot commit)", dt.date(2025, 4, 28)),
])
def test_citation_takes_the_date_of_the_cited_commit(cell: str, published: dt.date) -> None:
    c = citation_for("X_supported_by_HIP.md", "o/r", "a" * 40, cell)
    assert c.published == published and c.published_unknown is None
    assert c.source == f"o/r@{'a' * 40}:docs/reference/tables/X_supported_by_HIP.md"


_NO_DATE = "the table carries no date (GitHub shows the cited commit's date); "


@pytest.mark.parametrize(("cell", "reason"), [
    ("not in any git snapshot; content: cuDNN up to 9.14.0",
     "its content points to: cuDNN up to 9.14.0"),
    ("~2025-10-06..2025-10-20 (has CUDA 13.0 nvRTC sync)",
     "its content points to: ~2025-10-06..2025-10-20 (has CUDA 13.0 nvRTC sync)"),
    ("2026-07-31..2026-08-05 (has cuSPARSELt 0.3.0 support)",
     "its content points to: 2026-07-31..2026-08-05 (has cuSPARSELt 0.3.0 support)"),
    ("not in any git snapshot; commit date unknown; content (CUDA 13.2) dates it to 2026",
     "its content points to: (CUDA 13.2) dates it to 2026"),
    ("~Aug-Oct 2025 (CUDA 13.0, no U column)",
     'its content points to: ~Aug-Oct 2025 (CUDA 13.0, no "U" (unsupported CUDA versions) '
     "column)"),
])
def test_citation_without_a_date_says_what_a_user_can_check(cell: str, reason: str) -> None:
    c = citation_for("X_supported_by_HIP.md", "o/r", "a" * 40, cell)
    assert c.published is None
    assert c.published_unknown == _NO_DATE + reason


def test_fork_commit_is_cited_in_rocm_hipify() -> None:
    c = citation_for("X_supported_by_HIP.md", "vjelic/HIPIFY-glog-fork", "c" * 40,
                     "2025-08-04 (commit date)")
    assert c.source == f"ROCm/HIPIFY@{'c' * 40}:docs/reference/tables/X_supported_by_HIP.md"
    assert c.published == dt.date(2025, 8, 4)


# -- malformed input is refused, naming file and line ----------------------------------------

SOURCE = """# tables

| file | bytes | sha256 (first 16) | source repository | commit | date | highest | U |
|:--|--:|:--|:--|:--|:--|:-:|:-:|
| `T_API_supported_by_HIP.md` | 1 | `00` | ROCm/HIPIFY | `{commit}` | not in any git snapshot; made up for a test | 1.0.0 | no |
""".format(commit="b" * 40)

GOOD = """<head>
    <meta charset="UTF-8">
</head>

# T API supported by HIP


**Note\\:** In the tables that follow the columns marked `A`, `D`, `C`, `R`, and `E` mean the following:

## **1. Things**

|**CUDA**|**A**|**D**|**C**|**R**|**HIP**|**A**|**D**|**C**|**R**|**E**|
|:--|:-:|:-:|:-:|:-:|:--|:-:|:-:|:-:|:-:|:-:|
|`tAlpha`| | | | |`hAlpha`|1.0.0| | | | |
|`tBeta`|2.0| | | | | | | | | |
"""
ROW_LINE = 14  # 1-based line of |`tAlpha`|... in GOOD


def _folder(tmp_path: Path, table: str) -> Path:
    (tmp_path / "SOURCE.md").write_text(SOURCE)
    (tmp_path / "T_API_supported_by_HIP.md").write_text(table)
    return tmp_path


def test_synthetic_table_imports(tmp_path: Path) -> None:
    data = import_tables(_folder(tmp_path, GOOD))
    assert data["rows"] == {"tAlpha": "0|0|hAlpha|||||1.0.0|||||",
                            "tBeta": "0|0||2.0|||||||||"}
    assert data["tables"][0]["sections"] == ["Things"]
    assert data["tables"][0]["published-unknown"].endswith("made up for a test")


@pytest.mark.parametrize(("bad_row", "message"), [
    ("|`tAlpha`| | | | |`hAlpha`|1.0.0| | | |", "10 cells where the table header has 11"),
    ("|tAlpha| | | | |`hAlpha`|1.0.0| | | | |", "CUDA cell 'tAlpha' is not a `name`"),
    ("|`tAlpha`| | | | |`hAlpha`|one| | | | |", "column HIP A: 'one' is not a version"),
    ("|`tAlpha`| | | | |hAlpha|1.0.0| | | | |", "HIP cell 'hAlpha' is neither empty"),
    ("|`tAlpha`| | | | | |1.0.0| | | | |", "HIP version cells are set but the HIP cell is empty"),
    ("|`tBeta`| | | | |`hAlpha`|1.0.0| | | | |", "tBeta is listed twice in this table"),
    ("|`tAlpha`| | | | |`hAlpha`|1.0.0| | | | |x", "does not end with '|'"),
])
def test_malformed_row_is_refused_with_file_and_line(tmp_path: Path, bad_row: str,
                                                     message: str) -> None:
    lines = GOOD.splitlines()
    assert lines[ROW_LINE - 1].startswith("|`tAlpha`|")
    lines[ROW_LINE - 1] = bad_row
    if "listed twice" in message:  # the duplicate comes after the original
        lines.insert(ROW_LINE, "|`tBeta`|2.0| | | | | | | | | |")
        lines[ROW_LINE - 1] = "|`tAlpha`| | | | |`hAlpha`|1.0.0| | | | |"
        line = ROW_LINE + 2
    else:
        line = ROW_LINE
    folder = _folder(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(MatrixError) as err:
        import_tables(folder)
    assert f"T_API_supported_by_HIP.md:{line}: " in err.value.message
    assert message in err.value.message
    assert err.value.exit_code == 3


def test_unknown_header_is_refused(tmp_path: Path) -> None:
    table = GOOD.replace("|**HIP**|", "|**ROC**|")
    with pytest.raises(MatrixError, match=r"T_API_supported_by_HIP.md:12: unknown table header"):
        import_tables(_folder(tmp_path, table))


def test_row_outside_a_section_is_refused(tmp_path: Path) -> None:
    table = GOOD.replace("# T API supported by HIP\n", "# T API\n|`tZeta`| | | | | | | | | | |\n")
    with pytest.raises(MatrixError, match=r":6: a table row outside a numbered section"):
        import_tables(_folder(tmp_path, table))


def test_table_without_provenance_is_refused(tmp_path: Path) -> None:
    folder = _folder(tmp_path, GOOD)
    shutil.copy(folder / "T_API_supported_by_HIP.md", folder / "U_API_supported_by_HIP.md")
    with pytest.raises(MatrixError, match="no repository/commit for U_API_supported_by_HIP.md"):
        import_tables(folder)


@needs_tables
def test_a_slip_in_a_copy_of_the_real_runtime_table_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "tables"
    shutil.copytree(TABLES, folder)
    path = folder / RUNTIME
    path.chmod(0o644)
    text = path.read_text()
    good = "|`cudaMalloc`| | | | |`hipMalloc`|1.5.0| | | | | |"
    assert good in text
    line = text[:text.index(good)].count("\n") + 1
    path.write_text(text.replace(good, "|`cudaMalloc`| | | | |`hipMalloc`|1.5.0| | | | |"))
    with pytest.raises(MatrixError, match=rf"{RUNTIME}:{line}: 11 cells where the table header"):
        import_tables(folder)


# -- the data file loader ----------------------------------------------------------------------

@pytest.mark.parametrize("text", ["not json", '{"format": 2, "tables": [], "rows": {}}',
                                  '{"format": 1, "tables": {}, "rows": {}}',
                                  '{"format": 1, "tables": [{"file": "x"}], "rows": {}}'])
def test_invalid_data_file_is_a_matrix_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "hipify.json"
    path.write_text(text)
    with pytest.raises(MatrixError) as err:
        load_data(path)
    assert str(path) in err.value.message and err.value.exit_code == 3


def test_write_data_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "out" / "hipify.json"
    hipify.write_data(_folder(tmp_path, GOOD), out)
    data = load_data(out)
    assert [t.file for t in data.tables] == ["T_API_supported_by_HIP.md"]
    assert data.rows == {"tAlpha": "0|0|hAlpha|||||1.0.0|||||", "tBeta": "0|0||2.0|||||||||"}
