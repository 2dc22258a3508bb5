"""Integrity of serving results and of pin's acceptance results: a run that completed
nothing never passes, impossible or self-contradicting values in a harness's file are
refused, non-finite numbers in a result are refused, and a stored verdict that disagrees
with its own checks is refused (``check_consistent``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pinning.accept.attest import open_signed_result
from pinning.accept.config import ServeSlo
from pinning.accept.consistency import check_consistent
from pinning.accept.judge import judge_point
from pinning.accept.result import AcceptanceResult
from pinning.accept.results import read_results
from pinning.errors import UsageError
from tests.support.cli import pin
from tests.support.paths import DATA, ROOT
from tests.unit.accept.vllm_edit import consistent

ACC = DATA / "acceptance"
C1 = ACC / "vllm-bench-serve-smollm2-c1.json"
SGLANG = ACC / "sglang-bench-serving.jsonl"
JUDGED = ACC / "judged-c1.json"
TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"
PER_REQUEST = ("ttfts", "itls", "latencies", "output_lens", "errors", "input_lens",
               "start_times", "generated_texts")


def _vllm(tmp_path: Path, *, detailed: bool = True, **edits: Any) -> Path:
    """The real c1 vLLM file with ``edits`` applied (per-request arrays dropped unless
    ``detailed``), written to ``tmp_path``.
    """
    doc = json.loads(C1.read_text())
    if not detailed:
        for key in PER_REQUEST:
            doc.pop(key, None)
    doc.update(edits)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


# --- nothing completed never passes ---------------------------------------------------------


def test_every_run_has_a_completed_check_that_passes_when_requests_completed() -> None:
    (read,) = read_results(C1)
    verdict = judge_point(read, ServeSlo.model_validate({"ttft-p99-ms": 2000.0}))
    check = verdict.checks[-1]
    assert verdict.passed and check.slo == "completed-min"
    assert (check.measured, check.limit, check.bound, check.passed) == (24.0, 1.0, "min", True)


@pytest.mark.parametrize("slo", [{"ttft-p99-ms": 2000.0}, {"failed-max": 100},
                                 {"ttft-p99-ms": 2000.0, "failed-max": 100}])
def test_zero_completed_fails_without_per_request_data(tmp_path: Path,
                                                       slo: dict[str, Any]) -> None:
    (read,) = read_results(_vllm(tmp_path, detailed=False, completed=0, failed=24))
    verdict = judge_point(read, ServeSlo.model_validate(slo))
    assert not verdict.passed
    check = next(c for c in verdict.checks if c.slo == "completed-min")
    assert not check.passed and check.measured == 0.0
    assert check.reason.startswith("no request completed: nothing was measured")


def test_zero_completed_fails_with_consistent_per_request_data(tmp_path: Path) -> None:
    doc = json.loads(C1.read_text())
    doc["errors"] = ["HTTP 500 Internal Server Error"] * len(doc["errors"])
    path = _vllm(tmp_path, **consistent(doc))  # counts and totals as vLLM writes them
    (read,) = read_results(path)
    verdict = judge_point(read, ServeSlo.model_validate({"failed-max": 100}))
    assert not verdict.passed
    assert [c.slo for c in verdict.checks if not c.passed] == ["completed-min"]


def test_cli_judge_of_zero_completed_exits_12(tmp_path: Path) -> None:
    path = _vllm(tmp_path, detailed=False, completed=0, failed=24)
    r = pin("accept", "judge", str(TEMPLATE), "--from", str(path))
    assert r.returncode == 12, r.stdout + r.stderr
    assert "no request completed: nothing was measured" in r.stdout  # the table's reason
    assert "completed-min" in r.stderr  # the error paragraph names the failed check


def test_not_measured_reason_is_neutral(tmp_path: Path) -> None:
    doc = {k: v for k, v in json.loads(C1.read_text()).items() if not k.endswith("_ttft_ms")}
    for key in PER_REQUEST:
        doc.pop(key, None)
    doc["mean_ttft_ms"] = 1.0
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    (read,) = read_results(path)
    check = judge_point(read, ServeSlo.model_validate({"ttft-p99-ms": 2000.0})).checks[0]
    assert not check.passed and check.basis == "missing"
    assert check.reason == ("not measured: the results have no p99 TTFT and no per-request "
                            "data to compute it from")


# --- impossible values in a harness's file --------------------------------------------------


@pytest.mark.parametrize(("edits", "key"), [
    ({"p99_ttft_ms": -5}, "p99_ttft_ms"),
    ({"mean_tpot_ms": -0.1}, "mean_tpot_ms"),
    ({"duration": -1.0}, "duration"),
    ({"output_throughput": -3.0}, "output_throughput"),
    ({"request_rate": -3}, "request_rate"),
    ({"request_rate": "-3"}, "request_rate"),
    ({"request_rate": 0}, "request_rate"),
    ({"request_rate": "-inf"}, "request_rate"),
    ({"completed": 1e30}, "completed"),
    ({"total_output_tokens": 10**13}, "total_output_tokens"),
    ({"max_concurrency": 1e15}, "max_concurrency"),
])
def test_impossible_values_are_refused(tmp_path: Path, edits: dict[str, Any],
                                       key: str) -> None:
    path = _vllm(tmp_path, detailed=False, **edits)
    with pytest.raises(UsageError) as err:
        read_results(path)
    assert str(path) in err.value.message and f"`{key}`" in err.value.message
    assert err.value.exit_code == 2


def test_negative_per_request_time_is_refused(tmp_path: Path) -> None:
    doc = json.loads(C1.read_text())
    ttfts = list(doc["ttfts"])
    ttfts[3] = -0.5
    path = _vllm(tmp_path, ttfts=ttfts)
    with pytest.raises(UsageError, match="`ttfts` holds a negative value"):
        read_results(path)


@pytest.mark.parametrize(("value", "expected"), [("inf", None), (float("inf"), None),
                                                 (2.5, 2.5), ("4", 4.0)])
def test_request_rate_inf_means_unlimited_and_positive_rates_read(
        tmp_path: Path, value: Any, expected: float | None) -> None:
    (read,) = read_results(_vllm(tmp_path, detailed=False, request_rate=value))
    assert read.summary.request_rate == expected


def test_counts_that_disagree_with_the_per_request_errors_are_refused(tmp_path: Path) -> None:
    doc = json.loads(C1.read_text())
    errors = ["boom"] * 3 + [""] * (len(doc["errors"]) - 3)
    # Three requests carry an error, but the counts say none failed.
    path = _vllm(tmp_path, errors=errors)
    with pytest.raises(UsageError, match=r"`completed` 24 and `failed` 0 disagree .* 3 with "
                                         "an error"):
        read_results(path)
    # completed + failed is not the number of requests.
    with pytest.raises(UsageError, match="disagree with the per-request data"):
        read_results(_vllm(tmp_path, completed=20, failed=0))
    # The same errors with matching counts (and totals) are read, and the failures judged.
    (read,) = read_results(_vllm(tmp_path, **consistent({**doc, "errors": errors})))
    assert (read.summary.completed, read.summary.failed) == (21, 3)
    verdict = judge_point(read, ServeSlo.model_validate({"failed-max": 0}))
    assert not verdict.passed and verdict.checks[0].measured == 3.0


def test_sglang_completed_must_match_its_errors(tmp_path: Path) -> None:
    lines = SGLANG.read_text().splitlines()
    second = json.loads(lines[1])
    assert second["completed"] == 2  # the sample: 3 requests, 1 errored
    second["completed"] = 3
    path = tmp_path / "s.jsonl"
    path.write_text(lines[0] + "\n" + json.dumps(second) + "\n")
    with pytest.raises(UsageError, match=r"line 2: `completed` 3 disagree"):
        read_results(path)
    assert len(read_results(SGLANG)) == 2


# --- non-finite numbers in a result -----------------------------------------------------------


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_in_a_result_are_refused(number: str) -> None:
    text = JUDGED.read_text()
    doc = json.loads(text)
    measured = doc["serve"]["points"][0]["checks"][0]["measured"]
    data = text.replace(json.dumps(measured), number, 1).encode()
    assert number.encode() in data
    with pytest.raises(UsageError) as err:
        open_signed_result(data, None, label="Result r.json")
    assert err.value.message.startswith("Result r.json: ")


def test_cli_show_and_compare_refuse_nan(tmp_path: Path) -> None:
    doc = json.loads(JUDGED.read_text())
    doc["serve"]["points"][0]["summary"]["duration-s"] = float("nan")
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(doc))  # json.dumps writes NaN
    for args in (("show", str(path)), ("compare", str(JUDGED), str(path),
                                       "--format", "json")):
        r = pin("accept", *args)
        assert r.returncode == 2 and str(path) in r.stderr, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and "Infinity" not in r.stdout


# --- check_consistent -------------------------------------------------------------------------


def _judged() -> dict[str, Any]:
    return dict(json.loads(JUDGED.read_text()))


def _tamper(change: Callable[[dict[str, Any]], None]) -> AcceptanceResult:
    doc = _judged()
    change(doc)
    return AcceptanceResult.model_validate(doc)


def test_results_pin_writes_are_consistent(tmp_path: Path) -> None:
    for name in ("judged-c1.json", "judged-c4.json"):
        check_consistent(AcceptanceResult.model_validate_json((ACC / name).read_bytes()))
    out = tmp_path / "failing.json"
    cfg = tmp_path / "gates.toml"
    cfg.write_text("[serve.slo]\nttft-p99-ms = 1\nfailed-max = 0\ngoodput-min-rps = 100\n")
    r = pin("accept", "judge", str(cfg), "--from", str(C1), "--from", str(SGLANG), "-o",
            str(out))
    assert r.returncode == 12, r.stderr
    failing = AcceptanceResult.model_validate_json(out.read_bytes())
    assert not failing.passed and failing.failed
    check_consistent(failing)
    shown = pin("accept", "show", str(out))
    assert shown.returncode != 2 and "FAIL" in shown.stdout, shown.stderr


def _set_check(point: int, check: int, **values: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["serve"]["points"][point]["checks"][check].update(values)
    return change


def _no_checks(doc: dict[str, Any]) -> None:
    doc["serve"]["points"][0]["checks"] = []


def _no_gates(doc: dict[str, Any]) -> None:
    doc.update(serve=None, gates={}, passed=True, failed=[])


def _failed_without_reason(doc: dict[str, Any]) -> None:
    point = doc["serve"]["points"][0]
    point["checks"][0].update(measured=3000.0, passed=False)
    point["passed"] = False
    doc["serve"]["passed"] = False
    doc["gates"] = {"serve": False}
    doc["passed"] = False


def _gate_and_top_disagree(doc: dict[str, Any]) -> None:
    doc["gates"] = {"serve": False}


def _passed_without_gate_verdict(doc: dict[str, Any]) -> None:
    doc["passed"] = False


def _extra_gate(doc: dict[str, Any]) -> None:
    doc["gates"] = {"serve": True, "train": True}


def _extra_failed(doc: dict[str, Any]) -> None:
    doc["failed"] = ["serve: made up"]


@pytest.mark.parametrize(("change", "words"), [
    (_set_check(0, 0, passed=False), "check 'ttft-p99-ms' failed although measured"),
    (_set_check(0, 0, measured=5000.0), "check 'ttft-p99-ms' passed although measured 5000"),
    (_set_check(0, 3, measured=None), "passed without a measured value"),
    (_set_check(0, 4, measured=0.0), "check 'completed-min' passed although measured 0 is "
                                     "beyond its min limit 1"),
    (_set_check(0, 2, bound="min", measured=-1.0), "beyond its min limit 0"),
    (_no_checks, "marked passed with no check"),
    (_no_gates, "passed is true but gates are {}"),
    (_failed_without_reason, "failed-checks lists 0 entries for 1 failed checks"),
    (_gate_and_top_disagree, "is not the verdict of the gates present"),
    (_passed_without_gate_verdict, "passed is false but gates are {serve: true}"),
    (_extra_gate, "is not the verdict of the gates present {serve: true}"),
    (_extra_failed, "failed lists 1 entries, not the 0 failed checks"),
])
def test_contradicting_results_are_refused(change: Callable[[dict[str, Any]], None],
                                           words: str) -> None:
    result = _tamper(change)
    with pytest.raises(UsageError) as err:
        check_consistent(result, label="Result r.json")
    message = err.value.message
    assert message.startswith("Result r.json: the result contradicts itself") and \
        words in message, message
    data = json.dumps(result.model_dump(mode="json", by_alias=True)).encode()
    with pytest.raises(UsageError, match="contradicts itself"):
        open_signed_result(data, None, label="Result r.json")


def _train(passed: bool, checks: list[bool]) -> dict[str, Any]:
    return {"trainer": "tiny-lm", "steps": 10, "runs": [], "passed": passed,
            "checks": [{"name": f"c{i}", "measured": None, "limit": None, "passed": ok,
                        "reason": "ok" if ok else "bad"} for i, ok in enumerate(checks)]}


def _train_result(train: dict[str, Any], gate: bool, failed: list[str]) -> AcceptanceResult:
    return AcceptanceResult.model_validate({
        "pin-version": "0.1.0", "mode": "host", "config-sha256": "c" * 64, "train": train,
        "gates": {"train": gate}, "passed": gate, "failed": failed})


def test_train_and_import_checks_aggregate() -> None:
    check_consistent(_train_result(_train(True, [True, True]), True, []))
    check_consistent(_train_result(_train(False, [True, False]), False, ["train: c1: bad"]))
    with pytest.raises(UsageError, match="the train gate is marked passed but its checks do "
                                         "not all pass"):
        check_consistent(_train_result(_train(True, [True, False]), True, []))
    with pytest.raises(UsageError, match="the train gate is marked passed with no check"):
        check_consistent(_train_result(_train(True, []), True, []))
    with pytest.raises(UsageError, match="failed lists 0 entries, not the 1 failed"):
        check_consistent(_train_result(_train(False, [False]), False, []))


def test_cli_show_refuses_a_tampered_verdict(tmp_path: Path) -> None:
    doc = _judged()
    _set_check(0, 0, measured=5000.0)(doc)
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(doc))
    r = pin("accept", "show", str(path))
    assert r.returncode == 2 and str(path) in r.stderr and "contradicts itself" in r.stderr
    assert "PASS" not in r.stdout
