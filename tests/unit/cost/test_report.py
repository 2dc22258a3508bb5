"""pin report: one self-contained HTML page (and Markdown) from real inputs: the shipped
vLLM CPU results judged by pin, a shipped lockfile, the porting bill of the example CUDA
project, and a cost report made by pin cost from those results.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pinning.cli import main
from pinning.cost.report.markdown import md_escape
from pinning.cost.report.plots import LatencySeries, SloLine, latency_svg, safe_label

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data" / "acceptance"
LOCK = REPO / "lockfiles" / "h200-pytorch-2.13.0.lock"
PRICES = REPO / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml"
TEMPLATE = REPO / "pinning" / "accept" / "template.toml"
SECTIONS = ("verdict", "stack", "audit", "gates", "serving", "cost", "payback", "inputs")
HOSTILE = "<script>alert(1)</script>"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def make_inputs(tmp: Path) -> dict[str, Path]:
    """Real inputs in ``tmp``: the vLLM sweep (concurrency 1 and 4) judged with the gates
    template, the porting bill of examples/cuda-project, and pin cost's report comparing
    the sweep (priced as H100) with the concurrency-4 result (priced as H200).
    """
    sweep = tmp / "sweep.json"
    r = run("accept", "judge", TEMPLATE, "--from", DATA / "vllm-bench-serve-smollm2-c1.json",
            DATA / "vllm-bench-serve-smollm2-c4.json", "-o", sweep)
    assert r.exit_code == 0, r.output
    audit = tmp / "audit.json"
    r = run("audit", REPO / "examples" / "cuda-project", "--gpu", "mi300x", "--format", "json",
            "-o", audit)
    assert r.exit_code == 11, r.output  # inline PTX is blocked
    cost = tmp / "cost.json"
    r = run("cost", sweep, DATA / "judged-c4.json", "--prices", PRICES, "--gpu", "H100",
            "--gpu", "H200", "--migration-usd", "20000", "--validation-gpu-hours", "8",
            "--maintenance-usd-per-month", "200", "--tokens-per-month", "5e9",
            "--life-months", "24", "--unbound-ok", "-o", cost)
    assert r.exit_code == 0, r.output
    return {"sweep": sweep, "c4": DATA / "judged-c4.json", "audit": audit, "cost": cost,
            "lock": LOCK}


def full_args(inp: dict[str, Path]) -> list[str | Path]:
    return ["report", "--lock", inp["lock"], "--audit", inp["audit"], "--accept", inp["sweep"],
            "--accept", inp["c4"], "--cost", inp["cost"]]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_inputs(tmp_path_factory.mktemp("report-inputs"))


def fetched_urls(html: str) -> list[str]:
    """Every URL the page could fetch or navigate to: src/href/action attributes, CSS
    url(...) and @import (SVG namespace URIs are identifiers, not fetched).
    """
    urls = re.findall(r"""\b(?:src|href|action|poster|data)\s*=\s*["']?([^"'\s>]*)""", html)
    urls += re.findall(r"url\(\s*['\"]?([^)'\"]*)", html)
    urls += re.findall(r"@import\s+['\"]?([^'\";]*)", html)
    return urls


def test_full_report_is_one_self_contained_page(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    r = run(*full_args(inputs), "-o", out)
    assert r.exit_code == 0, r.output
    assert "Wrote" in r.output and "2 acceptance result(s)" in r.output
    html = out.read_text()
    for key in SECTIONS:
        assert f'<section id="{key}" class="given">' in html
    assert "not given" not in html.split("<footer>")[0].replace("Host verification: not given", "")
    assert "<script" not in html.lower()
    assert all(u.startswith("#") for u in fetched_urls(html)), fetched_urls(html)
    # No URL at all but the SVG and XLink namespace names (matplotlib's metadata dropped).
    assert set(re.findall(r"https?://[^\"'<>\s]*", html)) <= {
        "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    assert 'content="default-src &#x27;none&#x27;;' in html  # CSP: nothing loads, nothing runs
    # Four inline plots: TTFT and TPOT curves, cost across the sweep, payback.
    ids = re.findall(r'<svg[^>]*\bid="(plot-[a-z-]+)"', html)
    assert ids == ["plot-latency-ttft", "plot-latency-tpot", "plot-cost-sweep", "plot-payback"]
    # The SLO lines and the real measurements are on the page.
    assert "SLO ttft-p99-ms &lt;= 2000 ms" in html and "SLO tpot-p99-ms &lt;= 200 ms" in html
    assert "153.8" in html and "61.83" in html  # output tokens/s at c=4 and c=1
    # Results that name no lock: the savings they measured decide nothing (inconclusive).
    assert "Decision: INCONCLUSIVE" in html and "no-savings" in html
    assert "H200 (9.0)" in html and "CUDA 13.0.2" in html  # the lock's stack
    assert "kernel.inline-ptx" in html  # the blocked item of the porting bill
    assert "USD 4.68 per million output tokens" in html  # 2.59 x 1e6 / (3600 x 153.766)
    # Numbers for people, inputs by file name only (never a local path).
    assert "5.0 billion" in html and "5e+09" not in html
    assert str(inputs["audit"].parent) not in html and str(REPO) not in html
    assert "<td class=\"nw\">audit.json</td>" in html


def test_same_inputs_give_the_same_bytes(inputs: dict[str, Path], tmp_path: Path) -> None:
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    assert run(*full_args(inputs), "-o", a).exit_code == 0
    assert run(*full_args(inputs), "-o", b).exit_code == 0
    assert a.read_bytes() == b.read_bytes()


def test_sections_without_input_say_not_given(tmp_path: Path) -> None:
    out = tmp_path / "empty.html"
    r = run("report", "-o", out)
    assert r.exit_code == 0, r.output
    html = out.read_text()
    for key in SECTIONS:
        assert f'<section id="{key}" class="not-given">' in html
    assert html.count("not given") >= 7
    assert "<svg" not in html


def test_result_alone_plots_its_curve_with_pin_costs_rule(inputs: dict[str, Path],
                                                          tmp_path: Path) -> None:
    out = tmp_path / "one.html"
    assert run("report", "--accept", inputs["sweep"], "-o", out).exit_code == 0
    html = out.read_text()
    assert '<section id="serving" class="given">' in html
    assert '<section id="cost" class="not-given">' in html
    # Both points met every SLO; the higher output-token rate (c=4) is chosen.
    assert "operating point: c=4" in html and "as pin cost chooses" in html
    assert html.count('id="plot-latency-') == 2


def _hostile_result(src: Path, dest: Path) -> None:
    doc = json.loads(src.read_text())
    doc["serve"]["model"] = HOSTILE
    doc["serve"]["points"][0]["summary"]["metadata"]["model"] = HOSTILE
    doc["serve"]["points"][0]["summary"]["model"] = "$\\frac{1}{0}$ <b>x</b>"
    dest.write_text(json.dumps(doc))


def test_hostile_strings_are_escaped(inputs: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / f"{HOSTILE.replace('/', '_')}$x$.json"
    _hostile_result(inputs["sweep"], bad)
    html_out, md_out = tmp_path / "r.html", tmp_path / "r.md"
    assert run("report", "--accept", bad, "-o", html_out).exit_code == 0
    assert run("report", "--accept", bad, "--format", "md", "-o", md_out).exit_code == 0
    html, md = html_out.read_text(), md_out.read_text()
    assert "<script" not in html.lower() and "<b>" not in html
    assert "&lt;script&gt;alert(1)" in html  # shown as text, in the subtitle and the SVG
    assert html.count("<svg") == 2  # the mathtext-looking file name did not break a plot
    # Markdown: every "<" backslash-escaped (inert in CommonMark), no HTML entity.
    assert re.search(r"(?<!\\)<", md) is None and "\\<script>alert(1)" in md
    assert "&lt;" not in md


def test_markdown_variant(inputs: dict[str, Path], tmp_path: Path) -> None:
    r = run(*full_args(inputs), "--format", "md", "-o", "-")
    assert r.exit_code == 0, r.output
    md = r.output
    assert md.startswith("# pin report\n")
    # The example's audit is for MI300X while its lock pins H200: the inputs disagree.
    assert "> **Verdict: INCONCLUSIVE**" in md
    assert ">=580 (to freeze from a host)" in md and "&gt;" not in md  # no HTML escape
    for title in ("## Verdict (inconclusive)", "## Stack", "## Porting bill (blocked)",
                  "## Acceptance gates (passed, not bound)",
                  "## Serving: throughput and latency",
                  "## Cost per million tokens", "## Payback (no payback)", "## Inputs"):
        assert title in md
    assert "| c=4 | 153.8 | 296.2 | 330.2 | 17.24 | 24.15 | yes | chosen |" in md
    assert "<svg" not in md and "Plot: in the HTML report" in md


def test_signed_result_is_read_and_verified(inputs: dict[str, Path], tmp_path: Path) -> None:
    from pinning.accept.attest import sign_result
    from pinning.accept.result import AcceptanceResult
    from pinning.sign.crypto import generate

    private, public = generate(tmp_path / "k", b"pw")
    from pinning.sign.crypto import load_private

    result = AcceptanceResult.model_validate_json(inputs["sweep"].read_text())
    signed = tmp_path / "signed.json"
    signed.write_bytes(sign_result(result, load_private(private, b"pw")))
    out = tmp_path / "s.html"
    assert run("report", "--accept", signed, "--key", public, "-o", out).exit_code == 0
    assert "signature verified" in out.read_text()
    assert run("report", "--accept", signed, "-o", out).exit_code == 0
    assert "signature not verified" in out.read_text()
    _other, other_pub = generate(tmp_path / "other", b"pw")
    assert run("report", "--accept", signed, "--key", other_pub, "-o", out).exit_code == 9


def test_envelope_inputs_are_read(inputs: dict[str, Path], tmp_path: Path) -> None:
    r = run("cost", inputs["sweep"], "--prices", PRICES, "--gpu", "H100", "--unbound-ok",
            "--format", "json")
    assert r.exit_code == 0, r.output
    env = tmp_path / "cost-envelope.json"
    env.write_text(r.output)
    out = tmp_path / "e.html"
    assert run("report", "--cost", env, "--accept", inputs["sweep"], "-o", out).exit_code == 0
    html = out.read_text()
    assert "prices one platform: nothing to compare" in html
    assert 'id="plot-cost-sweep"' in html


@pytest.mark.parametrize("which", ["lock", "audit", "cost", "sweep"])
def test_output_naming_an_input_is_refused(inputs: dict[str, Path], tmp_path: Path,
                                           which: str) -> None:
    before = inputs[which].read_bytes()
    r = run(*full_args(inputs), "-o", inputs[which])
    assert r.exit_code == 2
    assert "is one of the inputs" in r.output
    assert inputs[which].read_bytes() == before


def test_bad_inputs_exit_with_their_codes(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "x.html"
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    r = run("report", "--audit", junk, "-o", out)
    assert r.exit_code == 2 and "--audit" in r.output and "not JSON" in r.output
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"schema-version": 1}))
    r = run("report", "--cost", wrong, "-o", out)
    assert r.exit_code == 2 and "not a valid CostReport" in r.output
    failed = tmp_path / "failed.json"
    failed.write_text(json.dumps({"pin": "0.1.0", "command": "cost", "ok": False,
                                  "exit-code": 2, "result": None, "error": None}))
    r = run("report", "--cost", failed, "-o", out)
    assert r.exit_code == 2 and "no result" in r.output
    r = run("report", "--accept", inputs["audit"], "-o", out)
    assert r.exit_code == 2
    r = run("report", "--lock", inputs["audit"], "-o", out)
    assert r.exit_code == 5
    r = run("report", "--audit", "-", "--cost", "-", "-o", out)
    assert r.exit_code == 2 and "standard input" in r.output
    r = run("report", "--accept", tmp_path / "missing.json", "-o", out)
    assert r.exit_code == 2 and "cannot be read" in r.output
    assert not out.exists()


def test_safe_label_keeps_labels_inert() -> None:
    assert safe_label("$x$") == r"\$x\$"
    assert safe_label("_hidden").startswith(" _")
    assert safe_label("a\x1bb") == "a\\x1bb"
    assert safe_label("plain") == "plain"


def test_latency_svg_is_deterministic_and_escaped() -> None:
    s = LatencySeries(label=HOSTILE, xs=(1.0, 2.0), p50=(10.0, None), p99=(12.0, 30.0),
                      passed=(True, False), chosen=0, loads=("c=1", "c=2"))
    a = latency_svg(metric="TTFT", x_label="output tokens per second", series=[s],
                    slos=[SloLine("ttft-p99-ms <= 20 ms", 20.0)], svg_id="plot-x")
    b = latency_svg(metric="TTFT", x_label="output tokens per second", series=[s],
                    slos=[SloLine("ttft-p99-ms <= 20 ms", 20.0)], svg_id="plot-x")
    assert a == b
    assert a.startswith("<svg") and 'id="plot-x"' in a
    assert "<script" not in a and "&lt;script&gt;" in a


def test_md_escape() -> None:
    assert md_escape("<b>|x|</b>") == "\\<b>\\|x\\|\\</b>"
    assert md_escape(">=580", block=False) == ">=580" and md_escape("a >= 5") == "a >= 5"
    assert md_escape("> quote") == "\\> quote"
    assert md_escape("AT&T &amp; a & b") == "AT\\&T \\&amp; a & b"
    assert md_escape("# title") == "\\# title"
    assert md_escape("1. item") == "1\\. item"
    assert md_escape("0.1.0") == "0.1.0"
    assert md_escape("v1.2 (a-b)") == "v1.2 (a-b)"
    assert md_escape("[a](javascript:x)") == "\\[a\\](javascript:x)"


def test_verify_report_shows_whether_the_host_matched(tmp_path: Path) -> None:
    host_dir = REPO / "tests" / "data" / "hosts" / "mi300x-rocm7.1"
    host = tmp_path / "host.json"
    assert run("probe", "--root", host_dir / "root", "--replay", host_dir / "commands.toml",
               "-o", host).exit_code == 0
    lock = REPO / "lockfiles" / "mi300x-pytorch-2.13.0.lock"
    r = run("verify", lock, "--host", host, "--format", "json")
    assert r.exit_code == 6  # the recorded host runs ROCm 7.1.1 and PyTorch 2.7
    envelope = tmp_path / "verify.json"
    envelope.write_text(r.stdout)
    out = tmp_path / "v.html"
    assert run("report", "--lock", lock, "--verify", envelope, "-o", out).exit_code == 0
    html = out.read_text()
    assert '<span class="badge bad">drift</span>' in html
    assert "frameworks.pytorch.version: mismatch (error)" in html
    other = REPO / "lockfiles" / "h200-pytorch-2.13.0.lock"
    assert run("report", "--lock", other, "--verify", envelope, "-o", out).exit_code == 0
    assert "the verify report is of lock" in out.read_text()  # another lock's report
