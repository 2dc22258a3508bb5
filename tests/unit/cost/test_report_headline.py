"""pin report never contradicts itself (issue 30 §5), on real files: the page opens with a
headline box (verdict, the stack it is for, every caveat and binding problem), and when the
inputs disagree the verdict is "inconclusive" with the reason. Reproductions: a port verdict
above a porting bill with a blocked item it never weighed; ``--lock mi300x.lock --accept`` a
result measured on the H200 lock; an audit for MI300X beside an H200 lock; a cost report that
priced the candidate as another GPU than the lock's.

Results are ``pin accept judge`` of vLLM's own benchmark file (tests/data/acceptance); the
audit is ``pin audit examples/cuda-project --gpu mi300x`` (one blocked item: inline PTX). A
"port" cost report is pin cost's of two results judged with the H200 lock (which pins no
model files, so they are bound): the run and the same run 25 % faster.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pinning.cost.report.plots import LatencySeries, SloLine, latency_svg
from pinning.cost.report.view import num, usd
from tests.support.judged_evidence import as_verified
from tests.unit.cost.test_report import DATA, LOCK, PRICES, REPO, TEMPLATE, run

MI300X_LOCK = REPO / "lockfiles" / "mi300x-pytorch-2.13.0.lock"
RAW = DATA / "vllm-bench-serve-smollm2-c1.json"


def headline(html: str) -> str:
    """The text of the headline box (tags dropped)."""
    m = re.search(r'<section id="headline".*?</section>', html, re.S)
    assert m is not None, "no headline box"
    return re.sub(r"<[^>]+>", "", m.group(0))


def report(tmp: Path, *args: str | Path, name: str = "r.html") -> str:
    out = tmp / name
    r = run("report", *args, "-o", out)
    assert r.exit_code == 0, r.output
    return out.read_text()


def bound_result(tmp: Path) -> Path:
    """The vLLM run judged with --lock of the H200 lock (it names that lock's hash)."""
    out = tmp / "h200-result.json"
    r = run("accept", "judge", TEMPLATE, "--from", RAW, "--lock", LOCK, "--unbound-ok",
            "-o", out)
    assert r.exit_code == 0, r.output
    return out


def blocked_audit(tmp: Path) -> Path:
    out = tmp / "audit.json"
    r = run("audit", REPO / "examples" / "cuda-project", "--gpu", "mi300x", "--no-hipify-perl",
            "--format", "json", "-o", out)
    assert r.exit_code == 11, r.output  # inline PTX is blocked
    return out


def port_cost(tmp: Path, *extra: str | Path) -> Path:
    """A pin cost report that says port: the H200-bound result against itself 25 % faster
    (both judged with the H200 lock), ``extra`` flags added.
    """
    from tests.unit.cost.test_cost_cli import faster

    cur = bound_result(tmp)
    faster(RAW, tmp / "fast.json", 0.8)
    cand = tmp / "fast-result.json"
    r = run("accept", "judge", TEMPLATE, "--from", tmp / "fast.json", "--lock", LOCK,
            "--unbound-ok", "-o", cand)
    assert r.exit_code == 0, r.output
    as_verified(cur), as_verified(cand)  # judged CPU runs: as if pin had verified them
    out = tmp / "port-cost.json"
    r = run("cost", cur, cand, "--prices", PRICES, "--lock", LOCK, "--lock", LOCK,
            "--tokens-per-month", "1e9", "--life-months", "12", *extra, "-o", out)
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["verdict"]["decision"] == "port"
    return out


def test_port_above_a_blocked_bill_is_inconclusive(tmp_path: Path) -> None:
    cost = port_cost(tmp_path, "--migration-usd", "100")
    html = report(tmp_path, "--audit", blocked_audit(tmp_path), "--cost", cost)
    box = headline(html)
    assert "Verdict: INCONCLUSIVE" in box
    assert ("the cost verdict is port, but the porting bill has 1 blocked item(s) it neither "
            "priced nor waived: kernel.inline-ptx: asm volatile (csrc/reduce.cu:15)") in box
    assert '<span class="badge warn">inconclusive</span>' in html  # the verdict section
    assert 'badge good">port<' not in html  # no green port anywhere on the page
    assert '<span class="badge bad">blocked</span>' in html


def test_waived_blocked_item_is_a_caveat_not_a_contradiction(tmp_path: Path) -> None:
    audit = blocked_audit(tmp_path)
    [f] = [f for f in json.loads(audit.read_text())["findings"] if f["verdict"] == "blocked"]
    waivers = tmp_path / "waivers.toml"
    waivers.write_text(f'[[waiver]]\nfinding = "{f["rule"]}: {f["subject"]} ({f["path"]}:'
                       f'{f["line"]})"\nreason = "only the CUDA build uses this kernel"\n'
                       'by = "A. Maintainer"\ndate = 2026-12-01\n')
    cost = port_cost(tmp_path, "--migration", audit, "--migration-usd", "100",
                     "--waivers", waivers)
    html = report(tmp_path, "--audit", audit, "--cost", cost)
    box = headline(html)
    assert "Verdict: PORT" in box and "the inputs disagree" not in box
    assert ("blocked item waived: kernel.inline-ptx: asm volatile (csrc/reduce.cu:15); only "
            "the CUDA build uses this kernel, by A. Maintainer, 2026-12-01") in box
    assert "blocked items priced or waived</span>" in html  # not a red "blocked"
    assert str(tmp_path) not in html and str(REPO) not in html


def test_lock_of_another_gpu_than_the_result_is_inconclusive(tmp_path: Path) -> None:
    result = bound_result(tmp_path)
    h200 = json.loads(result.read_text())["subject"]["lock-content-hash"]
    html = report(tmp_path, "--lock", MI300X_LOCK, "--accept", result)
    box = headline(html)
    assert "Verdict: INCONCLUSIVE" in box and "For: Instinct MI300X" in box
    assert (f"the acceptance result h200-result.json was measured on the lock with content "
            f"hash {h200}, not on the lock shown, mi300x-pytorch-2.13.0.lock") in box
    assert "passed, not bound</span>" in html  # never a plain green "passed" for it
    # The same result with its own lock: no disagreement (its binding is still a caveat).
    box = headline(report(tmp_path, "--lock", LOCK, "--accept", result, name="own.html"))
    assert "the inputs disagree" not in box and "NO VERDICT" in box


def test_audit_gpu_other_than_the_lock_gpu_is_inconclusive(tmp_path: Path) -> None:
    box = headline(report(tmp_path, "--lock", LOCK, "--audit", blocked_audit(tmp_path)))
    assert "Verdict: INCONCLUSIVE" in box
    assert ("the porting bill audit.json is for GPU Instinct MI300X, but the lock "
            "h200-pytorch-2.13.0.lock pins H200") in box
    box = headline(report(tmp_path, "--lock", MI300X_LOCK, "--audit", tmp_path / "audit.json",
                          name="same.html"))
    assert "the inputs disagree" not in box


def test_cost_platform_of_another_gpu_than_the_lock_is_inconclusive(tmp_path: Path) -> None:
    cost = port_cost(tmp_path, "--migration-usd", "100")
    box = headline(report(tmp_path, "--lock", MI300X_LOCK, "--cost", cost))
    assert "Verdict: INCONCLUSIVE" in box
    assert ("the cost report prices the candidate as H200, but the lock "
            "mi300x-pytorch-2.13.0.lock pins Instinct MI300X") in box
    assert "the cost report priced the candidate on the lock with content hash" in box


def test_port_on_unbound_results_is_inconclusive(tmp_path: Path) -> None:
    cost = port_cost(tmp_path, "--migration-usd", "100")
    # The candidate as an older pin wrote it: no binding recorded.
    old = tmp_path / "old"
    old.mkdir()
    doc = json.loads((tmp_path / "fast-result.json").read_text())
    del doc["binding"]
    (old / "fast-result.json").write_text(json.dumps(doc))
    html = report(tmp_path, "--lock", LOCK, "--accept", tmp_path / "h200-result.json",
                  "--accept", old / "fast-result.json", "--cost", cost)
    box = headline(html)
    assert "Verdict: INCONCLUSIVE" in box
    assert ("it rests on acceptance results not bound to their stack (fast-result.json)"
            in box)
    assert ("fast-result.json: not bound to its stack: binding not checked (result written "
            "by an older pin)") in box
    bound = headline(report(tmp_path, "--lock", LOCK, "--accept", tmp_path / "h200-result.json",
                            "--accept", tmp_path / "fast-result.json", "--cost", cost,
                            name="bound.html"))
    assert "Verdict: PORT" in bound and "Caveats and binding problems" in bound


def test_numbers_for_people() -> None:
    assert num(5e9) == "5.0 billion" and num(1.5e6) == "1.5 million"
    assert num(123456.0) == "123,456" and num(153.766) == "153.8" and num(0.00001234) \
        == "0.00001234"
    assert num(None) == "-" and num(float("inf")) == "unknown" and num(1234.5, 3) == "1,234"
    assert usd(4.6789) == "USD 4.68" and usd(2.5e7) == "USD 25.0 million"


def _series(p99: tuple[float, float]) -> LatencySeries:
    return LatencySeries(label="H200", xs=(60.0, 150.0), p50=(p99[0] * 0.8, p99[1] * 0.8),
                         p99=p99, passed=(True, True), chosen=1, loads=("c=1", "c=4"))


def test_latency_plot_is_scaled_to_the_data_with_the_slo_shown() -> None:
    near = latency_svg(metric="TTFT", x_label="output tokens per second",
                       series=[_series((250.0, 330.0))],
                       slos=[SloLine("ttft-p99-ms <= 500 ms", 500.0)], svg_id="near")
    assert "SLO ttft-p99-ms &lt;= 500 ms" in near and "log scale" not in near
    # An SLO 6x above the data: a log axis shows both the points' spread and the SLO line.
    far = latency_svg(metric="TTFT", x_label="output tokens per second",
                      series=[_series((250.0, 330.0))],
                      slos=[SloLine("ttft-p99-ms <= 2000 ms", 2000.0)], svg_id="far")
    assert "SLO ttft-p99-ms &lt;= 2000 ms" in far and "log scale" in far


def test_unconfirmed_lock_is_a_caveat_of_the_headline(tmp_path: Path) -> None:
    """Issue 32 §3: the headline box lists the lock's status as a caveat: each reason an
    unconfirmed lock gives, with the source that would settle it; a validated lock none.
    """
    from pinning.lockfile.io import read_lock

    status = read_lock(MI300X_LOCK).status
    assert status is not None and status.value == "unconfirmed"
    box = headline(report(tmp_path, "--lock", MI300X_LOCK))
    assert "the lock mi300x-pytorch-2.13.0.lock is unconfirmed: ROCm 10.0.0" in box
    assert "settled by" in box
    validated = headline(report(tmp_path, "--lock", LOCK, name="v.html"))
    assert "unconfirmed" not in validated and "status is not recorded" not in validated
