"""The bill: totals, per file and package, effort from the team's file, --fail-on, SARIF."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pinning.audit.bill import AuditReport, build_report, effort_units, estimate, read_effort
from pinning.audit.model import Citation, Finding, Kind, Skipped, Verdict
from pinning.audit.render import render_sarif, render_text
from pinning.errors import UsageError

CITE = Citation(source="https://example.org/doc", published=dt.date(2026, 1, 2))


def _f(kind: Kind, verdict: Verdict, subject: str, path: str | None = None,
       line: int | None = None, package: str | None = None,
       lines: list[int] | None = None) -> Finding:
    return Finding(kind=kind, rule=f"{kind.value}.x", verdict=verdict, subject=subject,
                   path=path, line=line, lines=lines or [], package=package, why="why.",
                   todo="todo.", citation=CITE)


FINDINGS = [
    _f(Kind.PACKAGE, Verdict.SWAP, "torch==2.5.1+cu121", "requirements.txt", 1, "torch"),
    _f(Kind.PACKAGE, Verdict.SWAP, "torch==2.5.1+cu121", "uv.lock", 10, "torch"),
    _f(Kind.PACKAGE, Verdict.READY, "numpy", "requirements.txt", 2, "numpy"),
    _f(Kind.INLINE_PTX, Verdict.BLOCKED, "asm volatile", "csrc/k.cu", 7, lines=[7, 9]),
    _f(Kind.WARP_SIZE, Verdict.PORT, "0xffffffff", "csrc/k.cu", 3),
    _f(Kind.CUDA_API, Verdict.SWAP, "cudaMalloc", "csrc/k.cu", 2),
    _f(Kind.PACKAGE, Verdict.NO_DATA, "obscure-pkg", "requirements.txt", 3, "obscure-pkg"),
]


def _report(fail_on: Verdict = Verdict.BLOCKED,
            findings: list[Finding] = FINDINGS) -> AuditReport:
    return build_report(inputs=["."], requirements=[], gpu=None, gfx_targets=[],
                        findings=findings, skipped=[Skipped(path="blob.cu", reason="binary")],
                        files_scanned=4, kernel_lines={"csrc/k.cu": 12}, fail_on=fail_on)


def test_totals_order_and_groups() -> None:
    r = _report()
    assert r.totals == {Verdict.READY: 1, Verdict.SWAP: 3, Verdict.PORT: 1,
                        Verdict.BLOCKED: 1, Verdict.NO_DATA: 1}
    assert r.findings[0].kind is Kind.INLINE_PTX  # most expensive first
    assert r.findings[-1].verdict in (Verdict.NO_DATA, Verdict.READY)
    assert r.kernel_lines == 12
    files = {f.path: f for f in r.files}
    assert set(files) == {"csrc/k.cu"}  # package declarations count per package, not file
    assert files["csrc/k.cu"].counts == {Verdict.BLOCKED: 1, Verdict.PORT: 1, Verdict.SWAP: 1}
    torch = next(p for p in r.packages if p.name == "torch")
    assert torch.verdict is Verdict.SWAP
    assert torch.origins == ["requirements.txt:1", "uv.lock:10"]
    assert r.failed is True


@pytest.mark.parametrize(("fail_on", "failed"), [
    (Verdict.BLOCKED, False), (Verdict.PORT, False), (Verdict.SWAP, True)])
def test_fail_on_threshold(fail_on: Verdict, failed: bool) -> None:
    findings = [f for f in FINDINGS if f.verdict not in (Verdict.BLOCKED, Verdict.PORT)]
    assert _report(fail_on, findings).failed is failed


def test_no_data_never_fails() -> None:
    only = [f for f in FINDINGS if f.verdict is Verdict.NO_DATA]
    assert _report(Verdict.SWAP, only).failed is False


def test_effort_counts_a_package_once(tmp_path: Path) -> None:
    units = effort_units(FINDINGS)
    assert units[(Kind.PACKAGE, Verdict.SWAP)] == 1  # torch in two files: one unit
    effort_file = tmp_path / "effort.toml"
    effort_file.write_text("[hours]\ninline-ptx = 16\npackage = { swap = 0.5 }\n")
    e = estimate(FINDINGS, read_effort(effort_file), str(effort_file))
    by = {(x.kind, x.verdict): x for x in e.lines}
    assert by[(Kind.INLINE_PTX, Verdict.BLOCKED)].hours == 16.0
    assert by[(Kind.PACKAGE, Verdict.SWAP)].hours == 0.5
    assert e.total_hours == 16.5
    assert e.unpriced == ["cuda-api (swap)", "warp-size (port)"]


@pytest.mark.parametrize(("text", "words"), [
    ("[hours]\nwarp = 1\n", "'warp' is not a finding kind"),
    ("[hours]\npackage = { maybe = 1 }\n", "'maybe' is not a verdict"),
    ("[hours]\ninline-ptx = -1\n", "hours must be a number from 0 to 1,000,000"),
    ("[hours]\ninline-ptx = nan\n", "hours must be a number from 0 to 1,000,000"),
    ("[hours]\ninline-ptx = true\n", "hours must be a number from 0 to 1,000,000"),
    ("[hours]\ninline-ptx = 1e308\n", "hours must be a number from 0 to 1,000,000"),
    ("hours = 3\n", "expected one [hours] table"),
    ("[hours\n", "not valid TOML"),
    ("[hours]\n[other]\n", "unknown key(s) other"),
])
def test_bad_effort_file_names_the_key(tmp_path: Path, text: str, words: str) -> None:
    p = tmp_path / "e.toml"
    p.write_text(text)
    with pytest.raises(UsageError) as err:
        read_effort(p)
    assert words in err.value.message and str(p) in err.value.message


def test_text_bill_escapes_and_names_sources() -> None:
    hostile = _f(Kind.CUDA_API, Verdict.PORT, "cuda\x1b[31mX", "a\x1b]0;t\x07.cu", 1)
    text = render_text(_report(findings=[hostile, *FINDINGS]))
    assert "\x1b" not in text and "\x07" not in text
    assert "BLOCKED (1)" in text and "csrc/k.cu:7 (+1 more)" in text
    assert "https://example.org/doc, 2026-01-02" in text
    assert "SKIPPED (1)" in text and "blob.cu: binary" in text
    assert text.rstrip().endswith("Result: fails: something is at or above --fail-on "
                                  "blocked.")


def test_sarif_one_result_per_line_and_levels() -> None:
    log = render_sarif(_report(), version="0.0")
    run = log["runs"][0]
    results = run["results"]
    assert log["version"] == "2.1.0"
    ptx = [r for r in results if r["ruleId"] == "inline-ptx.x"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in ptx] == [7, 9]
    assert {r["level"] for r in ptx} == {"error"}
    assert all(r["properties"]["verdict"] != "ready" for r in results)
    ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert all(ids[r["ruleIndex"]] == r["ruleId"] for r in results)
    assert run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"] == \
        "skipped blob.cu: binary"
