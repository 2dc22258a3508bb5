"""``pin accept compare`` of pin's own serving result with a judged vLLM file of the same
workload compares what both record (requests, tokens per request, API, model name) and
shows the goodput each side judged; pin's own result keeps its per-request data so it can
be judged again. pin's side is made from the real c4 ``vllm bench serve`` file's requests
(tests/data/acceptance) run through the load generator's own summary."""

from __future__ import annotations

import json
from pathlib import Path

from pinning.accept.compare import compare_results
from pinning.accept.config import ServeSlo, ServeWorkload, load_config
from pinning.accept.judge import judge_point
from pinning.accept.loadrun import LoadRun, RequestRecord
from pinning.accept.result import AcceptanceResult, ServeResult
from pinning.accept.runner import judge_files
from pinning.accept.serve import run_serve_gate
from pinning.accept.summary import ReadResult
from tests.support.cli import pin
from tests.support.paths import DATA, ROOT
from tests.support.sse_server import SseConfig, SseServer

C4 = DATA / "acceptance" / "vllm-bench-serve-smollm2-c4.json"
TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"


def _pin_own(judged: AcceptanceResult, input_len: int = 0) -> AcceptanceResult:
    """pin's own result of the c4 file's requests, as ``pin accept run`` records it (model
    ``smollm2``, its ``[serve.workload]``); ``input_len`` overrides each prompt's tokens.
    """
    doc = json.loads(C4.read_text())
    records = [RequestRecord(start_s=s - doc["start_times"][0], ttft_s=t, itls_s=list(i),
                             latency_s=lat, output_tokens=o, token_basis="usage",
                             input_tokens=input_len or n)
               for s, t, i, lat, o, n in zip(doc["start_times"], doc["ttfts"], doc["itls"],
                                             doc["latencies"], doc["output_lens"],
                                             doc["input_lens"], strict=True)]
    run = LoadRun(endpoint="http://127.0.0.1:8000/v1", model="smollm2", api="completions",
                  records=records, duration_s=doc["duration"], concurrency=4,
                  request_rate=None, warmup=0, seed=7)
    assert judged.serve is not None
    slo = ServeSlo.model_validate(judged.serve.slo)
    point = judge_point(run.to_read_result("http://127.0.0.1:8000/v1"), slo,
                        keep_requests=True)
    workload = ServeWorkload(input_tokens=128, output_tokens=32, requests=24,
                             concurrency=[4], seed=7)
    serve = ServeResult(harness="pin-loadgen", harness_version="0.1.0", model="smollm2",
                        workload=workload.model_dump(mode="json", by_alias=True,
                                                     exclude_none=True),
                        slo=judged.serve.slo, points=[point], passed=point.passed)
    return judged.model_copy(update={"mode": "host", "serve": serve})


def test_pin_result_and_judged_vllm_file_of_the_same_workload(tmp_path: Path) -> None:
    # The reproduction: "workloads differ" and "model names differ: smollm2 vs None".
    judged = judge_files(TEMPLATE, [C4], lock=None)
    own = _pin_own(judged)
    cmp = compare_results(own, judged, "pin.json", "vllm.json")
    assert not any("workloads differ" in n or "model names" in n for n in cmp.notes)
    assert any("harnesses differ" in n for n in cmp.notes)  # still true, still said
    rows = {r.metric: r for r in cmp.rows}
    good = rows["c4 goodput judged"]
    assert good.a == good.b == 24 / json.loads(C4.read_text())["duration"]
    assert rows["c4 e2el p99"].delta == 0.0
    # Another prompt length is a workload difference both record.
    longer = compare_results(_pin_own(judged, input_len=256), judged, "a", "b")
    assert any("input tokens per request A 256, B 128" in n for n in longer.notes)
    # Through the CLI: the judged goodput is a row of the table.
    a, b = tmp_path / "pin.json", tmp_path / "vllm.json"
    a.write_text(own.model_dump_json(by_alias=True))
    b.write_text(judged.model_dump_json(by_alias=True))
    done = pin("accept", "compare", str(a), str(b))
    assert done.returncode == 0, done.stderr
    assert "c4 goodput judged" in done.stdout and "workloads differ" not in done.stdout


def test_pin_own_result_keeps_per_request_data_to_judge_again(tmp_path: Path) -> None:
    (tmp_path / "prompts.jsonl").write_text('{"prompt": "one two"}\n{"prompt": "three"}\n')
    cfg = tmp_path / "accept.toml"
    with SseServer(SseConfig()) as server:
        cfg.write_text(f'[serve]\nendpoint = "{server.url}"\nmodel = "fake"\n'
                       '[serve.workload]\nprompts = "prompts.jsonl"\noutput-tokens = 3\n'
                       "requests = 4\n[serve.slo]\nttft-p99-ms = 60000\n")
        gate = load_config(cfg).serve
        assert gate is not None
        result = run_serve_gate(gate, tmp_path, pin_version="0.1.0")
    (point,) = result.points
    assert point.summary.detailed and point.requests is not None
    assert len(point.requests.ttfts) == 4 and point.requests.latencies is not None
    again = judge_point(ReadResult(point.summary, point.requests), gate.slo,
                        keep_requests=True)
    assert again == point  # the same checks, values and reasons from the kept data
    # A judged file's verdict does not copy its per-request data (the file keeps them).
    judged = judge_files(TEMPLATE, [C4], lock=None)
    assert judged.serve is not None and judged.serve.points[0].requests is None
    assert judged.serve.points[0].summary.detailed
