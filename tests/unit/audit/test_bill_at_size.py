"""The bill at real size: the summary the text bill opens with, findings grouped one line
per rule x file, --limit, --exclude / --only narrowing, and identical files counted once."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pinning.audit.bill import AuditReport, build_report, estimate
from pinning.audit.model import Citation, Finding, Kind, Skipped, Verdict
from pinning.audit.narrow import digests_on_disk, excluded, merge_copies, narrow, relative
from pinning.audit.render import render_sarif, render_text
from pinning.audit.run import AuditRequest, audit
from pinning.audit.summary import SUMMARY_MAX, groups, summary_lines, top_folder
from tests.support.sdists import SDIST_CACHE, SDISTS

CITE = Citation(source="https://example.org/doc", published=dt.date(2026, 1, 2))
ROOT = "proj"


def _f(kind: Kind, verdict: Verdict, subject: str, path: str | None, line: int | None,
       rule: str | None = None, todo: str = "todo.") -> Finding:
    return Finding(kind=kind, rule=rule or f"{kind.value}.x", verdict=verdict,
                   subject=subject, path=path, line=line,
                   package=subject if kind is Kind.PACKAGE else None, why="why.",
                   todo=todo, citation=CITE)


def _many() -> list[Finding]:
    """300 lane-mask findings in one kernel, 40 API renames in each of 5 vendored headers,
    one inline PTX block and two packages."""
    out = [_f(Kind.WARP_SIZE, Verdict.PORT, f"mask {n}", f"{ROOT}/csrc/k.cu", n + 1)
           for n in range(300)]
    out += [_f(Kind.CUDA_API, Verdict.SWAP, f"cudaX{n}", f"{ROOT}/third_party/cub/h{h}.cuh",
               n + 1, todo=f"rename {n}.") for h in range(5) for n in range(40)]
    out.append(_f(Kind.INLINE_PTX, Verdict.BLOCKED, "asm", f"{ROOT}/csrc/k.cu", 500))
    out.append(_f(Kind.PACKAGE, Verdict.SWAP, "torch", f"{ROOT}/requirements.txt", 1))
    out.append(_f(Kind.PACKAGE, Verdict.NO_DATA, "obscure", None, None))
    return out


def _report(findings: list[Finding], effort: bool = False) -> AuditReport:
    e = None
    if effort:
        e = estimate(findings, {Kind.WARP_SIZE: {Verdict.PORT: 2.0},
                                Kind.CUDA_API: {Verdict.SWAP: 0.5}}, "effort.toml")
    return build_report(inputs=[ROOT], requirements=[], gpu=None, gfx_targets=[],
                        findings=findings, skipped=[Skipped(path="x", reason="binary")],
                        files_scanned=9, kernel_lines={f"{ROOT}/csrc/k.cu": 600,
                                                       f"{ROOT}/third_party/cub/h0.cuh": 50},
                        fail_on=Verdict.BLOCKED, effort=e)


def test_the_text_bill_opens_with_a_summary_by_verdict_kind_and_folder() -> None:
    text = render_text(_report(_many(), effort=True))
    lines = text.splitlines()
    head = lines[:lines.index("BLOCKED (1)")]
    assert len(head) <= SUMMARY_MAX
    assert head[0].startswith("pin audit: 1 blocked, 300 port, 201 swap, 1 no data")
    rows = {line.split()[1]: line.split()[2:] for line in head if line.startswith("  kind")}
    assert rows["warp-size"] == ["0", "300", "0", "0", "0"]
    assert rows["cuda-api"] == ["0", "0", "200", "0", "0"]
    folders = [line[2:].split("  ")[0] for line in head if line.startswith("  folder")]
    assert folders == ["folder csrc", "folder third_party", "folder (no file)",
                       "folder (top level)"]  # most findings first
    assert "  effort: 700 h of your hours; no hours given for 2 kind(s)" in head


def test_findings_are_grouped_one_line_per_rule_and_file() -> None:
    text = render_text(_report(_many()))
    assert "PORT (300, in 1 group)" in text
    assert "  proj/csrc/k.cu:1,2,3 (+297 more)  [warp-size] 300 x warp-size.x: mask 0; " \
           "mask 1; mask 2; +297 more: why." in text
    assert "SWAP (201, in 6 groups)" in text
    # different advice per item: the first's is shown, and where the rest are
    assert "do: rename 0.  [https://example.org/doc, 2026-01-02] (the first's advice" in text
    assert len(text.splitlines()) < 60  # 502 findings


def test_groups_keep_packages_and_fileless_findings_apart() -> None:
    got = groups([_f(Kind.PACKAGE, Verdict.SWAP, p, "requirements.txt", n)
                  for n, p in enumerate(["a", "b"], 1)]
                 + [_f(Kind.PACKAGE, Verdict.SWAP, "c", None, None)] * 2)
    assert [len(g.findings) for g in got] == [1, 1, 1, 1]


def test_limit_caps_the_groups_per_verdict_and_says_how_many_more() -> None:
    text = render_text(_report(_many()), limit=2)
    assert "  ... 4 more groups (--limit 2; --format json lists all)" in text
    assert text.count("third_party/cub/h") == 2  # one SWAP group (after torch), one file
    assert "  ... 4 more files (--limit 2; --format json lists all)" in text


def test_exclude_and_only_narrow_every_count() -> None:
    full = _report(_many(), effort=True)
    cut = narrow(full, exclude=["third_party"])
    assert cut.totals[Verdict.SWAP] == 1 and cut.totals[Verdict.PORT] == 300
    assert {ft.path for ft in cut.files} == {f"{ROOT}/csrc/k.cu"}
    assert cut.kernel_lines == 600  # the excluded header's 50 lines leave the total
    assert cut.effort is not None and cut.effort.total_hours == 600.0
    only = narrow(full, only=[Kind.CUDA_API])
    assert set(only.totals_by_kind) == {Kind.CUDA_API} and only.failed is False
    assert only.effort is not None and only.effort.total_hours == 100.0
    sarif = render_sarif(only, version="0")["runs"][0]["results"]
    assert len(sarif) == 200  # SARIF is narrowed too, and never grouped
    assert narrow(full) is full


@pytest.mark.parametrize(("rel", "glob", "hit"), [
    ("third_party/cub/h.cuh", "third_party", True),
    ("third_party/cub/h.cuh", "third_party/", True),
    ("csrc/a.cuh", "*.cuh", True),
    ("csrc/a.cu", "*.cuh", False),
    ("csrc/x/y.cu", "csrc/x", True),
    ("csrcx/y.cu", "csrc", False),
])
def test_exclude_globs_match_paths_and_leading_folders(rel: str, glob: str, hit: bool) -> None:
    assert excluded(rel, [glob]) is hit


def test_paths_are_relative_to_the_audited_root() -> None:
    assert relative("proj/csrc/k.cu", ["proj"]) == "csrc/k.cu"
    assert relative("csrc/k.cu", ["."]) == "csrc/k.cu"
    assert relative("proj/setup.py", ["proj/setup.py"]) == "setup.py"
    assert relative("/site/x.so", ["proj"]) == "/site/x.so"
    assert top_folder("proj/pkg-1.0/csrc/k.cu", ["proj"], "pkg-1.0") == "csrc"
    assert top_folder(None, ["proj"]) == "(no file)"


def _twice(tmp_path: Path) -> Path:
    """A tree that ships its kernel twice, byte-identical (as DeepSpeed's sdist does)."""
    kernel = ("#define FULL 0xffffffff\n__global__ void k(float* x) {\n"
              "  asm volatile(\"membar.gl;\");\n  x[0] = __shfl_down_sync(FULL, x[0], 16);\n"
              "}\nvoid h(float** p) { cudaMalloc(p, 4); cudaFree(*p); }\n")
    for folder in ("csrc", "pkg/ops/csrc"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "k.cu").write_text(kernel)
    (tmp_path / "csrc" / "other.cu").write_text(kernel + "// changed\n")
    return tmp_path


def test_identical_files_are_counted_once_with_their_copies(tmp_path: Path) -> None:
    root = _twice(tmp_path)
    report = audit(AuditRequest(paths=[str(root)], hipify_perl=False))
    merged = merge_copies(report, digests_on_disk(f.path for f in report.findings if f.path))
    per_file = {p: sum(ft.counts.values()) for ft in report.files for p in [ft.path]}
    one = per_file[f"{root}/csrc/k.cu"]
    assert sum(merged.totals.values()) == sum(report.totals.values()) - one
    kept = [f for f in merged.findings if f.path == f"{root}/csrc/k.cu"]
    assert kept and all(f.copies == [f"{root}/pkg/ops/csrc/k.cu"] for f in kept)
    assert not any(f.path == f"{root}/pkg/ops/csrc/k.cu" for f in merged.findings)
    assert any(f.path == f"{root}/csrc/other.cu" for f in merged.findings)  # not identical
    assert merged.kernel_lines == report.kernel_lines - 6
    assert f"(also at {root}/pkg/ops/csrc/k.cu)" in render_text(merged)
    json_text = merged.model_dump_json(by_alias=True)
    assert f'"copies":["{root}/pkg/ops/csrc/k.cu"]' in json_text
    assert merge_copies(merged, {}) is merged


def test_digests_skip_what_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x")
    got = digests_on_disk([str(tmp_path / "a"), str(tmp_path / "gone"), str(tmp_path)])
    assert list(got) == [str(tmp_path / "a")]


def test_summary_of_a_tree_under_one_folder_goes_one_level_down() -> None:
    findings = [_f(Kind.CUDA_API, Verdict.SWAP, "cudaFree", f"{ROOT}/pkg-1.0/{d}/k.cu", 1)
                for d in ("csrc", "ops")]
    lines = summary_lines(_report(findings))
    assert any(line.startswith("  folder csrc") for line in lines)
    assert "  folders below pkg-1.0/" in lines


_LARGEST = max(SDISTS.values(), key=lambda s: s.size)
_TREE = SDIST_CACHE / f"{_LARGEST.name}-{_LARGEST.version}"


@pytest.mark.skipif(not _TREE.is_dir(), reason="the pinned sdists are not fetched "
                                                "(make sdists)")
def test_the_largest_real_sdist_bill_starts_with_a_summary_that_fits_a_screen() -> None:
    report = audit(AuditRequest(paths=[str(_TREE)], hipify_perl=False))
    lines = render_text(report).splitlines()
    first_group = next(n for n, line in enumerate(lines) if line.startswith(
        ("BLOCKED (", "PORT (", "SWAP (", "NO DATA (", "READY, WITH A NOTE (")))
    assert lines[2].startswith("SUMMARY")
    assert first_group <= SUMMARY_MAX
    assert sum(report.totals.values()) > first_group  # the summary is shorter than the bill
