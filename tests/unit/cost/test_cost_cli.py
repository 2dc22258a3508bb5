"""``pin cost`` end to end on real acceptance results (pin accept judge of vLLM's own
benchmark files, tests/data/acceptance/), checked against a hand computation.

The positive pair: the current platform is ``judged-c1.json``'s run judged with the shipped
H200 lock; the candidate is the same vLLM file with only its measured numbers changed as a
platform 25% faster would change them (every time x 0.8, every rate / 0.8; the model,
prompts, lengths, concurrency and counts untouched), judged by the same gates file, and
priced as an H100 (``--gpu``). Prices are the article's table shipped with pin.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from pinning.accept.runner import judge_files
from pinning.cli import main

ROOT = Path(__file__).parents[3]
DATA = ROOT / "tests" / "data" / "acceptance"
PRICES = ROOT / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml"
TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"
H200_LOCK = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
MI300X_LOCK = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"
SCHEMA = json.loads((ROOT / "schemas" / "cost-report.schema.json").read_text())

_TIME_KEYS = re.compile(r"^(mean|median|std|p[0-9]+)_(ttft|tpot|itl|e2el)_ms$")
_RATE_KEYS = ("request_throughput", "request_goodput", "output_throughput",
              "total_token_throughput", "max_output_tokens_per_s")


def faster(src: Path, dest: Path, f: float) -> dict[str, Any]:
    """The vLLM result ``src`` as a platform whose every time is x ``f`` would record it:
    times (durations, per-request arrays, latency statistics) x f, rates / f. Nothing else
    (model, lengths, concurrency, counts, texts) changes.
    """
    d: dict[str, Any] = json.loads(src.read_text())
    for k in list(d):
        if k == "duration" or _TIME_KEYS.match(k):
            d[k] = d[k] * f
        elif k in ("ttfts", "latencies", "start_times", "queue_times"):
            d[k] = [x * f for x in d[k]]
        elif k == "itls":
            d[k] = [[x * f for x in row] for row in d[k]]
        elif k in _RATE_KEYS:
            d[k] = d[k] / f
    dest.write_text(json.dumps(d))
    return d


def write_result(result: Any, dest: Path) -> Path:
    dest.write_text(result.model_dump_json(by_alias=True))
    return dest


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, float, float]:
    """(current result, candidate result, Q current, Q candidate) in output tokens/s."""
    raw = DATA / "vllm-bench-serve-smollm2-c1.json"
    current = write_result(judge_files(TEMPLATE, [raw], lock=str(H200_LOCK)),
                           tmp_path / "current.json")
    fast = faster(raw, tmp_path / "vllm-fast-c1.json", 0.8)
    candidate = write_result(judge_files(TEMPLATE, [tmp_path / "vllm-fast-c1.json"], lock=None),
                             tmp_path / "candidate.json")
    q_cur = json.loads(raw.read_text())["output_throughput"]
    return current, candidate, q_cur, fast["output_throughput"]


def run(*args: str | Path) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Price as if every result were bound to the stack it is priced for (no binding
    problems) and pin had verified its GPU stack (judged CPU files are neither): for the
    tests of the money; binding has its own tests (test_cost_blocked_binding.py,
    test_cost_unverified.py).
    """
    monkeypatch.setattr("pinning.cost.verdict.binding_problems", lambda result: [])
    monkeypatch.setattr("pinning.cost.verdict.unverified", lambda result: [])


def test_hand_computation_port(bound: None, pair: tuple[Path, Path, float, float], tmp_path: Path) -> None:
    current, candidate, q_cur, q_cand = pair
    out = tmp_path / "cost.json"
    res = run("cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--lock", H200_LOCK,
              "--lock", "none", "--gpu", "none", "--gpu", "H100", "--gpus", "1",
              "--migration-usd", "20000", "--validation-gpu-hours", "10",
              "--maintenance-usd-per-month", "500", "--tokens-per-month", "1e9",
              "--life-months", "12", "-o", out, "--format", "json")
    assert res.exit_code == 0, res.output
    envelope = json.loads(res.output)
    report = envelope["result"]
    jsonschema.validate(report, SCHEMA)
    assert json.loads(out.read_text()) == report
    # By hand: R = $/GPU-hour x 1 GPU; cost = R x 1e6 / (3600 x Q).
    cost_cur = 3.43 * 1e6 / (3600 * q_cur)
    cost_cand = 2.59 * 1e6 / (3600 * q_cand)
    a, b = report["platforms"]
    assert (a["rate"]["gpu"], a["rate"]["gpu-from"], b["rate"]["gpu"]) == ("H200", "lock", "H100")
    assert a["rate"]["gpu-count-from"] == "flag" and a["basis"] == "output-tokens"
    assert a["usd-per-million-tokens"] == pytest.approx(cost_cur, rel=1e-12)
    assert b["usd-per-million-tokens"] == pytest.approx(cost_cand, rel=1e-12)
    assert a["operating-point"]["max-concurrency"] == 1
    assert report["ratio"]["cost-ratio"] == pytest.approx(2.59 / 3.43)
    assert report["ratio"]["throughput-ratio"] == pytest.approx(1 / 0.8)
    assert report["ratio"]["candidate-cheaper"] is True
    pay = report["payback"]
    one_time = 20000 + 10 * 2.59
    net = (cost_cur - cost_cand) * 1e9 / 1e6 - 500
    assert pay["one-time-usd"] == pytest.approx(one_time)
    assert pay["net-savings-usd-per-month"] == pytest.approx(net)
    assert pay["months"] == pytest.approx(one_time / net)
    assert one_time / net < 12
    assert report["verdict"]["decision"] == "port"
    assert [r["code"] for r in report["verdict"]["reasons"]] == ["pays-back"]

    text = run("cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--lock", H200_LOCK,
               "--lock", "none", "--gpu", "none", "--gpu", "H100", "--gpus", "1",
               "--migration-usd", "20000", "--validation-gpu-hours", "10",
               "--maintenance-usd-per-month", "500", "--tokens-per-month", "1e9",
               "--life-months", "12")
    assert text.exit_code == 0
    assert f"cost per million output tokens: ${cost_cur:,.2f}" in text.output
    assert "Verdict: PORT" in text.output and "Ratio rule: cost ratio 0.7551" in text.output


def test_short_life_and_missing_inputs_stay(bound: None, pair: tuple[Path, Path, float, float]) -> None:
    current, candidate, _, _ = pair
    base: list[str | Path] = ["cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--gpu", "H200", "--gpu", "H100",
            "--format", "json"]
    short = json.loads(run(*base, "--migration-usd", "20000", "--tokens-per-month", "1e9",
                           "--life-months", "1").output)["result"]
    assert short["verdict"]["decision"] == "stay"
    assert [r["code"] for r in short["verdict"]["reasons"]] == ["payback-too-long"]
    bare = json.loads(run(*base).output)["result"]
    codes = [r["code"] for r in bare["verdict"]["reasons"]]
    assert bare["verdict"]["decision"] == "stay" and codes == ["input-missing"] * 3


def test_dearer_candidate_stays_with_the_ratio_rule(bound: None, pair: tuple[Path, Path, float, float]
                                                     ) -> None:
    current, candidate, _, _ = pair
    res = run("cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--gpu", "H100", "--gpu", "B200",
              "--migration-usd", "0", "--tokens-per-month", "1e9", "--life-months", "12",
              "--format", "json")
    report = json.loads(res.output)["result"]
    assert res.exit_code == 0
    assert report["ratio"]["candidate-cheaper"] is False  # 7.20/2.59 = 2.78 > 1.25
    assert report["payback"]["months"] is None
    assert [r["code"] for r in report["verdict"]["reasons"]] == ["no-savings"]


def test_unpriced_gpu_is_cost_unknown(pair: tuple[Path, Path, float, float]) -> None:
    current, candidate, _, _ = pair
    res = run("cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--lock", H200_LOCK, "--lock",
              MI300X_LOCK, "--migration-usd", "0", "--tokens-per-month", "1e9",
              "--life-months", "12", "--format", "json")
    # the candidate result records no lock hash, so any lock may price it
    report = json.loads(res.output)["result"]
    assert res.exit_code == 0, res.output
    b = report["platforms"][1]
    assert b["usd-per-million-tokens"] is None and "none in stock" in b["unknown"]
    assert report["ratio"]["cost-ratio"] is None
    assert report["verdict"]["decision"] == "stay"
    assert "cost-unknown" in [r["code"] for r in report["verdict"]["reasons"]]


def test_c1_against_c4_is_refused_for_concurrency() -> None:
    res = run("cost", DATA / "judged-c1.json", DATA / "judged-c4.json", "--prices", PRICES, "--unbound-ok",
              "--gpu", "H200", "--gpu", "H100")
    assert res.exit_code == 2
    assert "refuses to compare" in res.output and "concurrency" in res.output
    assert "current passed at concurrency 1; candidate at concurrency 4" in res.output


def test_different_slos_are_refused(tmp_path: Path,
                                    pair: tuple[Path, Path, float, float]) -> None:
    current, _, _, _ = pair
    gates = tmp_path / "gates.toml"
    gates.write_text(TEMPLATE.read_text().replace("tpot-p99-ms = 200", "tpot-p99-ms = 150"))
    assert gates.read_text() != TEMPLATE.read_text()
    other = write_result(judge_files(gates, [DATA / "vllm-bench-serve-smollm2-c1.json"],
                                     lock=None), tmp_path / "other.json")
    res = run("cost", current, other, "--prices", PRICES, "--unbound-ok", "--gpu", "H200", "--gpu", "H100")
    assert res.exit_code == 2 and "SLO tpot-p99-ms: 200.0 vs 150.0" in res.output


def test_sweep_uses_best_passing_point_not_peak(tmp_path: Path) -> None:
    # tpot p99 <= 20 ms: concurrency 1 (14.3 ms) passes, concurrency 4 (24.2 ms) fails.
    gates = tmp_path / "gates.toml"
    gates.write_text(TEMPLATE.read_text().replace("tpot-p99-ms = 200", "tpot-p99-ms = 20"))
    sweep = write_result(judge_files(gates, [DATA / "vllm-bench-serve-smollm2-c1.json",
                                             DATA / "vllm-bench-serve-smollm2-c4.json"],
                                     lock=None), tmp_path / "sweep.json")
    res = run("cost", sweep, "--prices", PRICES, "--unbound-ok", "--gpu", "H100", "--format", "json")
    assert res.exit_code == 0, res.output
    p = json.loads(res.output)["result"]["platforms"][0]
    assert p["passed"] is False
    assert p["operating-point"]["max-concurrency"] == 1
    assert "missed an SLO and is not used" in p["operating-point"]["chosen"]
    assert [x["passed"] for x in p["points"]] == [True, False]
    assert p["points"][1]["usd-per-million-tokens"] < p["usd-per-million-tokens"]


def _knee_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Both sweeps judged against tpot p99 <= 20 ms. The candidate is the real c1 + c4 sweep:
    c4 (24.2 ms) misses it, so its serve gate failed. The current platform is the same sweep
    25% faster (see faster()): c4 at 19.3 ms passes. Concurrency 1 passed on both.
    """
    gates = tmp_path / "gates.toml"
    gates.write_text(TEMPLATE.read_text().replace("tpot-p99-ms = 200", "tpot-p99-ms = 20"))
    raws = [DATA / "vllm-bench-serve-smollm2-c1.json", DATA / "vllm-bench-serve-smollm2-c4.json"]
    fast = [tmp_path / "fast-c1.json", tmp_path / "fast-c4.json"]
    for raw, dest in zip(raws, fast, strict=True):
        faster(raw, dest, 0.8)
    current = write_result(judge_files(gates, fast, lock=None), tmp_path / "current.json")
    candidate = write_result(judge_files(gates, raws, lock=None), tmp_path / "candidate.json")
    assert json.loads(current.read_text())["passed"] is True
    assert json.loads(candidate.read_text())["passed"] is False
    return current, candidate


def test_sweep_past_the_knee_is_not_an_acceptance_failure(bound: None, tmp_path: Path) -> None:
    current, candidate = _knee_pair(tmp_path)
    res = run("cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--gpu", "H200", "--gpu", "H100",
              "--migration-usd", "0", "--tokens-per-month", "1e9", "--life-months", "12",
              "--format", "json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)["result"]
    # Compared where both met the SLOs (concurrency 1), not at the current's best (c4).
    assert [p["operating-point"]["max-concurrency"] for p in report["platforms"]] == [1, 1]
    b = report["platforms"][1]
    assert b["passed"] is False and b["accepted"] is True and b["not-accepted"] == []
    assert b["sweep"].startswith("1 of 2 point(s) met every SLO; the operating point is "
                                 "concurrency 1; missed an SLO")
    assert "concurrency 4" in b["sweep"]
    assert report["verdict"]["decision"] == "port"
    [reason] = report["verdict"]["reasons"]
    assert reason["code"] == "pays-back" and "candidate: 1 of 2 point(s)" in reason["text"]


def _with_quality(src: Path, dest: Path, *, passed: bool) -> Path:
    """``src`` (a judged result) with an exact-match quality check, consistent as pin accept
    would record it: a failed check fails the serve gate and the result.
    """
    from pinning.accept.judge import Check
    from pinning.accept.result import AcceptanceResult, QualityResult

    r = AcceptanceResult.model_validate_json(src.read_text())
    assert r.serve is not None
    rate = 1.0 if passed else 0.5
    check = Check(slo="exact-match-min", measured=rate, limit=1.0, unit="", bound="min",
                  basis="recomputed", passed=passed,
                  reason="1.0 reaches 1.0" if passed else "0.5 is below 1.0")
    lines = [] if passed else [f"quality: {check.slo}: {check.reason}"]
    serve = r.serve.model_copy(update={
        "quality": QualityResult(prompts=2, exact_matches=int(2 * rate), exact_match_rate=rate,
                                 checks=[check], passed=passed),
        "passed": r.serve.passed and passed,
        "failed_checks": [*r.serve.failed_checks, *lines]})
    out = r.model_copy(update={"serve": serve,
                               "gates": {**r.gates, "serve": serve.passed},
                               "passed": r.passed and passed,
                               "failed": [*r.failed, *(f"serve: {x}" for x in lines)]})
    return write_result(out, dest)


def test_failed_quality_is_a_reason_to_stay(tmp_path: Path) -> None:
    current, candidate = _knee_pair(tmp_path)
    good = _with_quality(current, tmp_path / "good-quality.json", passed=True)
    bad = _with_quality(candidate, tmp_path / "bad-quality.json", passed=False)
    res = run("cost", good, bad, "--prices", PRICES, "--unbound-ok", "--gpu", "H200", "--gpu", "H100",
              "--migration-usd", "0", "--tokens-per-month", "1e9", "--life-months", "12",
              "--format", "json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)["result"]
    b = report["platforms"][1]
    assert b["accepted"] is False
    assert b["not-accepted"] == ["serve quality: exact-match-min: 0.5 is below 1.0"]
    reasons = report["verdict"]["reasons"]
    # Results that name no lock are not evidence about the stacks priced: a failure they
    # measured decides nothing (inconclusive), and why comes first.
    assert report["verdict"]["decision"] == "inconclusive"
    assert [r["code"] for r in reasons] == ["unbound", "unbound", "acceptance-failed"]
    # Names the real failure, not the sweep point that missed an SLO past the knee.
    assert "serve quality: exact-match-min" in reasons[-1]["text"]
    assert "tpot-p99-ms" not in reasons[-1]["text"]


def test_failed_gate_with_no_common_load_is_refused(tmp_path: Path) -> None:
    gates = tmp_path / "gates.toml"
    gates.write_text(TEMPLATE.read_text().replace("ttft-p99-ms = 2000", "ttft-p99-ms = 10"))
    assert gates.read_text() != TEMPLATE.read_text()
    one = write_result(judge_files(gates, [DATA / "vllm-bench-serve-smollm2-c1.json"],
                                   lock=None), tmp_path / "one.json")
    res = run("cost", one, one, "--prices", PRICES, "--unbound-ok", "--gpu", "H200", "--gpu", "H100")
    assert res.exit_code == 2 and "current passed at none; candidate at none" in res.output


def test_audit_migration_and_blocked_items(bound: None, tmp_path: Path,
                                           pair: tuple[Path, Path, float, float]) -> None:
    current, candidate, _, _ = pair
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "requirements.txt").write_text("flash-attn==2.7.4\n")
    audit = tmp_path / "audit.json"
    assert run("audit", proj, "--no-hipify-perl", "--format", "json", "-o", audit
               ).exit_code == 0
    effort = tmp_path / "effort.toml"
    effort.write_text("[hours]\npackage = { swap = 0.5, port = 8, blocked = 40 }\n")
    args: list[str | Path] = ["cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--gpu", "H200", "--gpu", "H100",
            "--migration", audit, "--effort", effort, "--labour-usd-per-hour", "150",
            "--tokens-per-month", "1e9", "--life-months", "12", "--format", "json"]
    report = json.loads(run(*args).output)["result"]
    mig = report["payback"]["migration"]
    assert mig["kind"] == "audit" and mig["effort"]["total-hours"] == 8
    assert mig["usd"] == 8 * 150 and mig["blocked"] == []
    assert report["verdict"]["decision"] == "port"

    (proj / "requirements.txt").write_text("flash-attn==2.7.4\ntensorrt==10.0.1\n")
    assert run("audit", proj, "--no-hipify-perl", "--format", "json", "-o", audit
               ).exit_code == 11
    # The effort file prices blocked packages (40 h each): priced, not a reason to stay.
    report = json.loads(run(*args).output)["result"]
    mig = report["payback"]["migration"]
    assert mig["usd"] == (8 + 40) * 150 and mig["blocked-unpriced"] == []
    [priced] = report["verdict"]["blocked-priced"]
    assert "tensorrt" in priced["finding"] and priced["priced-by"] == "effort"
    assert (priced["hours"], priced["usd"]) == (40, 40 * 150)
    assert report["verdict"]["decision"] == "port"

    effort.write_text("[hours]\npackage = { swap = 0.5, port = 8 }\n")  # blocked unpriced
    report = json.loads(run(*args).output)["result"]
    reasons = report["verdict"]["reasons"]
    assert report["verdict"]["decision"] == "stay"
    assert [r["code"] for r in reasons] == ["audit-blocked", "cost-unknown"]
    assert "tensorrt" in reasons[0]["text"] and "neither priced nor waived" in reasons[0]["text"]

    effort.write_text("[hours]\ninline-ptx = 16\n")  # no hours for packages: unknown
    report = json.loads(run(*args).output)["result"]
    assert report["payback"]["migration"]["usd"] is None
    assert "cost-unknown" in [r["code"] for r in report["verdict"]["reasons"]]


@pytest.mark.parametrize(("extra", "words"), [
    (["--lock", str(H200_LOCK)], "--lock was given 1 time(s) for 2 result(s)"),
    (["--migration-usd", "5", "--effort", "x.toml"], "do not combine"),
    (["--effort", "x.toml"], "give the audit with --migration"),
    (["--utilisation", "0"], "--utilisation"),
    (["--tokens-per-month", "-3"], "--tokens-per-month"),
    (["--migration-usd", "inf"], "finite"),
])
def test_bad_flags_exit_2(pair: tuple[Path, Path, float, float], extra: list[str],
                          words: str) -> None:
    current, candidate, _, _ = pair
    res = run("cost", current, candidate, "--prices", PRICES, "--unbound-ok", *extra)
    assert res.exit_code == 2 and words in res.output, res.output


def test_lock_of_another_run_is_refused(pair: tuple[Path, Path, float, float]) -> None:
    current, candidate, _, _ = pair  # current recorded the H200 lock's content hash
    res = run("cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--lock", MI300X_LOCK,
              "--lock", "none")
    assert res.exit_code == 2 and "was measured on the lock with content hash" in res.output


def test_gpu_flag_contradicting_the_lock_is_refused(pair: tuple[Path, Path, float, float]
                                                    ) -> None:
    current, candidate, _, _ = pair
    res = run("cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--lock", H200_LOCK,
              "--lock", "none", "--gpu", "B200", "--gpu", "H100")
    assert res.exit_code == 2 and "differs from the GPU its lock" in res.output


def test_not_a_result_and_too_many(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    res = run("cost", bad, "--prices", PRICES)
    assert res.exit_code == 2 and "bad.json" in res.output
    c1 = DATA / "judged-c1.json"
    res = run("cost", c1, c1, c1, "--prices", PRICES)
    assert res.exit_code == 2 and "one or two results" in res.output


def _port_args(current: Path, candidate: Path) -> list[str | Path]:
    return ["cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--gpu", "H200", "--gpu", "H100",
            "--migration-usd", "100", "--tokens-per-month", "1e9", "--life-months", "12"]


def test_port_without_an_audit_does_not_claim_no_blocked_item(bound: None,
        pair: tuple[Path, Path, float, float]) -> None:
    current, candidate, _, _ = pair
    report = json.loads(run(*_port_args(current, candidate), "--format", "json").output)["result"]
    [reason] = report["verdict"]["reasons"]
    assert report["verdict"]["decision"] == "port" and reason["code"] == "pays-back"
    assert "no porting bill given (--migration AUDIT.json): blocked items were not checked" \
        in reason["text"]
    assert "no blocked item" not in reason["text"]
    assert any(c.startswith("no porting bill given") for c in report["caveats"])


def _audit(tmp_path: Path, requirements: str) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    (proj / "requirements.txt").write_text(requirements)
    audit = tmp_path / "audit.json"
    assert run("audit", proj, "--no-hipify-perl", "--format", "json", "-o", audit
               ).exit_code == 0
    return audit


def test_port_with_an_audit_says_no_blocked_item_and_counts_no_data(bound: None,
        tmp_path: Path, pair: tuple[Path, Path, float, float]) -> None:
    current, candidate, _, _ = pair
    effort = tmp_path / "effort.toml"
    effort.write_text("[hours]\npackage = { swap = 0.5, port = 8, blocked = 40 }\n")
    args: list[str | Path] = [
        "cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--gpu", "H200", "--gpu", "H100",
        "--effort", effort, "--labour-usd-per-hour", "150", "--tokens-per-month", "1e9",
        "--life-months", "12", "--format", "json"]
    known = _audit(tmp_path, "flash-attn==2.7.4\n")
    report = json.loads(run(*args, "--migration", known).output)["result"]
    mig = report["payback"]["migration"]
    assert mig["no-data-findings"] == 0 and mig["unpriced-no-data"] is False
    assert not any("no-data" in c or "porting bill" in c for c in report["caveats"])
    assert "no blocked item" in report["verdict"]["reasons"][0]["text"]

    unknown = _audit(tmp_path, "flash-attn==2.7.4\nzz-pin-has-never-heard-of-this==1.0\n")
    doc = json.loads(unknown.read_text())
    n = sum(1 for f in doc["findings"] if f["verdict"] == "no-data")
    assert n >= 1
    report = json.loads(run(*args, "--migration", unknown).output)["result"]
    mig = report["payback"]["migration"]
    assert mig["no-data-findings"] == n and mig["unpriced-no-data"] is True
    assert mig["usd"] == 8 * 150  # a lower bound: the no-data finding is not priced
    noun = "findings are" if n != 1 else "finding is"
    assert any(c.startswith(f"{n} no-data {noun} not priced") and "lower bound" in c
               for c in report["caveats"])


def test_partly_priced_effort_says_what_is_missing(
        tmp_path: Path, pair: tuple[Path, Path, float, float]) -> None:
    current, candidate, _, _ = pair
    audit = _audit(tmp_path, "flash-attn==2.7.4\n")
    effort = tmp_path / "effort.toml"
    effort.write_text("[hours]\ninline-ptx = 16\n")
    base: list[str | Path] = ["cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--gpu", "H200",
                              "--gpu", "H100", "--migration", audit, "--effort", effort,
                              "--labour-usd-per-hour", "100"]
    out = run(*base).output
    assert "migration unknown (0 h priced so far at $100.00/h; no hours given for: package " \
           "(port)" in out
    effort.write_text("[hours]\npackage = { port = 16 }\n")
    out = run(*base).output
    assert "migration $1,600.00 (16 h x $100.00/h from" in out and "so far" not in out


def test_validation_is_billed_gpu_hours_at_the_candidates_price(
        pair: tuple[Path, Path, float, float]) -> None:
    current, candidate, _, _ = pair
    res = run(*_port_args(current, candidate), "--validation-gpu-hours", "10",
              "--other-usd-per-hour", "1", "--utilisation", "0.5", "--format", "json")
    pay = json.loads(res.output)["result"]["payback"]
    # 10 GPU-hours x $2.59 (H100): not / utilisation, no other resources.
    assert pay["validation-usd"] == pytest.approx(25.9)
    assert pay["one-time-usd"] == pytest.approx(125.9)
    res = run("cost", current, candidate, "--prices", PRICES, "--unbound-ok", "--gpu", "H200", "--gpu",
              "MI300X", "--migration-usd", "100", "--validation-gpu-hours", "10",
              "--format", "json")
    pay = json.loads(res.output)["result"]["payback"]
    assert pay["validation-usd"] is None and "validation compute cost is unknown" in pay["unknown"]


@pytest.mark.parametrize("what", ["prices", "result", "audit", "effort", "lock", "key",
                                  "link"])
def test_output_may_not_name_an_input(tmp_path: Path, what: str) -> None:
    c1 = tmp_path / "c1.json"
    c1.write_bytes((DATA / "judged-c1.json").read_bytes())
    prices = tmp_path / "prices.toml"
    prices.write_bytes(PRICES.read_bytes())
    audit = tmp_path / "audit.json"
    audit.write_text("{}")
    effort = tmp_path / "effort.toml"
    effort.write_text("[hours]\n")
    lock = tmp_path / "h200.lock"
    lock.write_bytes(H200_LOCK.read_bytes())
    key = tmp_path / "key.pub"
    key.write_text("not a key")
    link = tmp_path / "link.json"
    link.symlink_to(c1)
    target = {"prices": prices, "result": c1, "audit": audit, "effort": effort, "lock": lock,
              "key": key, "link": link}[what]
    before = {p: p.read_bytes() for p in (c1, prices, audit, effort, lock, key)}
    res = run("cost", c1, "--prices", prices, "--lock", lock, "--migration", audit,
              "--effort", effort, "--labour-usd-per-hour", "1", "--key", key, "-o", target)
    assert res.exit_code == 2 and "is one of the inputs of pin cost: " in res.output, res.output
    assert {p: p.read_bytes() for p in before} == before


def test_output_to_a_new_file_is_written(tmp_path: Path) -> None:
    out = tmp_path / "cost.json"
    res = run("cost", DATA / "judged-c1.json", "--prices", PRICES, "--unbound-ok", "--gpu", "H200", "-o", out)
    assert res.exit_code == 0, res.output
    jsonschema.validate(json.loads(out.read_text()), SCHEMA)


def test_output_to_stdout(tmp_path: Path) -> None:
    c1 = DATA / "judged-c1.json"
    res = run("cost", c1, "--prices", PRICES, "--unbound-ok", "--gpu", "H200", "-o", "-", "--format", "json")
    assert res.exit_code == 2 and "-o - writes the report to standard output" in res.output
    res = CliRunner().invoke(main, ["cost", str(c1), "--prices", str(PRICES), "--unbound-ok", "--gpu", "H200",
                                    "-o", "-"])
    assert res.exit_code == 0, res.output
    jsonschema.validate(json.loads(res.stdout), SCHEMA)  # the document only
    assert "cost per million output tokens" in res.stderr


def test_standard_input_is_read_once() -> None:
    c1 = DATA / "judged-c1.json"
    for args in (["-", "-", "--prices", str(PRICES)], ["-", "--prices", "-"],
                 [str(c1), "--prices", str(PRICES), "--migration", "-", "--effort", "-"]):
        res = CliRunner().invoke(main, ["cost", *args], input=c1.read_text())
        assert res.exit_code == 2, res.output
        assert "'-' (standard input) can be read once" in res.output
    res = CliRunner().invoke(main, ["cost", "-", "--prices", str(PRICES), "--unbound-ok", "--gpu", "H200"],
                             input=c1.read_text())
    assert res.exit_code == 0 and "cost per million output tokens" in res.output, res.output


def test_unknown_gpu_lists_the_known_ones() -> None:
    res = run("cost", DATA / "judged-c1.json", "--prices", PRICES, "--unbound-ok", "--gpu", "A100",
              "--format", "json")
    assert res.exit_code == 0
    unknown = json.loads(res.output)["result"]["platforms"][0]["rate"]["unknown"]
    assert "no row for A100; it knows MI300X, H100, MI325X, H200, MI355X, B200" in unknown
    res = run("cost", DATA / "judged-c1.json", "--prices", PRICES, "--unbound-ok", "--gpu", "H100",
              "--format", "json")
    assert json.loads(res.output)["result"]["platforms"][0]["rate"]["unknown"] is None


def test_help_names_the_shipped_prices_file() -> None:
    out = run("cost", "--help").output
    assert "article-prices-2026-09-28.toml" in " ".join(out.split()).replace("- ", "-")
    assert (ROOT / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml").is_file()


@pytest.mark.parametrize(("value", "text"), [(-7587.29, "-$7,587.29"), (7587.29, "$7,587.29"),
                                             (-0.1234, "-$0.1234"), (0.0, "$0.00"),
                                             (None, "unknown")])
def test_money_format(value: float | None, text: str) -> None:
    from pinning.cli.render_cost import usd as _usd

    assert _usd(value) == text


@pytest.mark.parametrize(("doc", "words"), [
    ({"command": "audit", "result": []},
     "a pin audit envelope whose result is not an audit report (it is a list"),
    ({"command": "audit", "result": None}, "whose result is not an audit report (it is null"),
    ({"command": "accept run", "result": {}}, "the output of pin accept run, not of pin audit"),
])
def test_audit_envelope_errors_say_what_is_wrong(tmp_path: Path, doc: dict[str, Any],
                                                 words: str) -> None:
    from pinning.cost.payback import read_audit
    from pinning.errors import UsageError

    bad = tmp_path / "audit.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(UsageError) as exc:
        read_audit(bad)
    assert words in str(exc.value)


def test_audit_envelope_of_pin_audit_is_read(tmp_path: Path) -> None:
    from pinning.cost.payback import read_audit

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "requirements.txt").write_text("flash-attn==2.7.4\n")
    res = run("audit", proj, "--no-hipify-perl", "--format", "json")
    envelope = tmp_path / "envelope.json"
    envelope.write_text(res.output)
    assert json.loads(res.output)["command"] == "audit"
    assert read_audit(envelope).findings
