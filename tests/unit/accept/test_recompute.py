"""A vLLM result's summary is recomputed from its own per-request arrays: a hand-edited
summary is refused (exit 2, the field and both values named), rounding is not, and the
statistics a file lacks (E2EL percentiles without ``--percentile-metrics ...,e2el``) are
computed from its saved latencies. Every case edits a copy of a real ``vllm bench serve``
file (tests/data/acceptance)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pinning.accept.config import ServeSlo
from pinning.accept.judge import judge_point
from pinning.accept.results import read_results
from pinning.errors import UsageError
from tests.support.cli import pin
from tests.support.paths import DATA, ROOT

ACC = DATA / "acceptance"
C1 = ACC / "vllm-bench-serve-smollm2-c1.json"
C4 = ACC / "vllm-bench-serve-smollm2-c4.json"
TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"
_SUMMARY_KEY = re.compile(r"^(mean|median|std|p[0-9]+)_(ttft|tpot|itl|e2el)_ms$|_throughput$"
                          r"|^request_goodput$")


def _edited(tmp_path: Path, src: Path = C4, **edits: Any) -> Path:
    """A copy of the real file ``src`` with ``edits`` applied."""
    doc = json.loads(src.read_text())
    doc.update(edits)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


def test_hand_edited_p99_and_throughput_are_refused_by_judge(tmp_path: Path) -> None:
    # The reproduction: an E2EL p99 of 100 ms and 9,999 tok/s passed `judge` and was priced
    # at 1/50 of the real cost. Now the file is refused, each field named with both values.
    path = _edited(tmp_path, p99_e2el_ms=100.0, output_throughput=9999.0)
    done = pin("accept", "judge", str(TEMPLATE), "--from", str(path))
    assert done.returncode == 2, done.stdout + done.stderr
    err = " ".join(done.stderr.split())
    assert "`p99_e2el_ms` is 100 but the per-request data give 870.398" in err
    assert "`output_throughput` is 9999 but the per-request data give 153.766" in err
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("key", [
    "mean_ttft_ms", "median_tpot_ms", "std_itl_ms", "p90_e2el_ms", "p99_ttft_ms",
    "total_output_tokens", "total_input_tokens", "request_throughput",
    "total_token_throughput"])
def test_each_summary_field_is_checked(tmp_path: Path, key: str) -> None:
    doc = json.loads(C1.read_text())
    value = doc[key]
    edit = value // 2 if isinstance(value, int) else value * 0.9
    with pytest.raises(UsageError) as err:
        read_results(_edited(tmp_path, C1, **{key: edit}))
    assert f"`{key}` is {edit:.6g}" in err.value.message
    assert err.value.exit_code == 2


def test_rounding_is_not_a_disagreement(tmp_path: Path) -> None:
    doc = json.loads(C4.read_text())
    rounded = {k: round(v, 2) for k, v in doc.items() if _SUMMARY_KEY.search(k)}
    assert len(rounded) > 20
    (read,) = read_results(_edited(tmp_path, **rounded))
    assert read.summary.latency["e2el"].percentiles["p99"] == 870.4


def test_impossible_goodput_and_duration_are_refused(tmp_path: Path) -> None:
    doc = json.loads(C4.read_text())
    with pytest.raises(UsageError, match="`request_goodput` is 9 but `request_throughput`"):
        read_results(_edited(tmp_path, request_goodput=9.0))
    # A shorter duration with every rate scaled to match: the requests still span 4.99 s.
    f = 4.0
    scaled = {k: doc[k] * f for k in ("request_throughput", "request_goodput",
                                       "output_throughput", "total_token_throughput")}
    with pytest.raises(UsageError, match=r"`duration` is 1.24865 s but the per-request data "
                                         r"span 4.99418 s"):
        read_results(_edited(tmp_path, duration=doc["duration"] / f, **scaled))


def test_real_files_read_as_written() -> None:
    for path in (C1, C4):
        (read,) = read_results(path)
        doc = json.loads(path.read_text())
        assert read.summary.latency["e2el"].percentiles["p99"] == doc["p99_e2el_ms"]
        # The file has p50/p90/p99; pin adds p95 from the per-request data and says so.
        assert read.summary.computed == ["ttft p95", "itl p95", "tpot p95", "e2el p95"]


def test_missing_e2el_percentiles_are_computed_from_latencies(tmp_path: Path) -> None:
    doc = json.loads(C4.read_text())
    kept = {k: v for k, v in doc.items() if not k.endswith("_e2el_ms")}
    path = tmp_path / "no-e2el.json"
    path.write_text(json.dumps(kept))
    (read,) = read_results(path)
    e2el = read.summary.latency["e2el"]
    for pct in ("p50", "p90", "p99"):
        assert e2el.percentiles[pct] == pytest.approx(doc[f"{pct}_e2el_ms"], rel=1e-12)
    assert e2el.mean == pytest.approx(doc["mean_e2el_ms"], rel=1e-12)
    assert {"e2el mean", "e2el p99"} <= set(read.summary.computed)
    check = judge_point(read, ServeSlo.model_validate({"e2el-p99-ms": 900.0})).checks[0]
    assert check.passed and check.basis == "recomputed"
    assert check.reason.endswith("recomputed from the per-request data")
    # Without per-request data the same file has no E2EL to judge: not measured.
    bare = {k: v for k, v in kept.items() if not isinstance(v, list)}
    path.write_text(json.dumps(bare))
    (read,) = read_results(path)
    check = judge_point(read, ServeSlo.model_validate({"e2el-p99-ms": 900.0})).checks[0]
    assert not check.passed and check.basis == "missing"
