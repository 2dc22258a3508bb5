"""pin's load generator against a real streaming endpoint (tests/support/sse_server.py)
on 127.0.0.1: request bodies, timing records, limits, failures, and the ReadResult that
the serving judge reads."""

from __future__ import annotations

import itertools
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinning.accept.config import ServeSlo
from pinning.accept.judge import judge_point
from pinning.accept.loadgen import poisson_schedule, run_point
from pinning.accept.loadrun import LoadRun, RequestRecord, thirds
from pinning.accept.sse import Stream
from pinning.accept.workload import Prompt, load_tokenizer
from pinning.errors import UsageError
from tests.support.hfcache import gt_model_dir
from tests.support.sse_server import SseConfig, SseServer


def _prompts(n: int, max_tokens: int = 4) -> list[Prompt]:
    return [Prompt(f"prompt number {i}", 3, max_tokens) for i in range(n)]


@pytest.fixture
def server() -> Iterator[SseServer]:
    with SseServer() as s:
        yield s


def test_completions_stream_is_timed_and_counted(server: SseServer) -> None:
    run = run_point(server.url, "m1", "completions", _prompts(5, 6), concurrency=2)
    assert len(run.records) == 5
    for rec in run.records:
        assert rec.error == ""
        assert rec.text == " the" * 6
        assert (rec.output_tokens, rec.token_basis) == (6, "usage")
        assert rec.input_tokens == 3  # the server's usage.prompt_tokens ("prompt number i")
        assert len(rec.itls_s) == 5
        assert 0 < rec.ttft_s <= rec.latency_s
    assert run.texts() == [(" the" * 6, "")] * 5
    bodies = server.stats()["bodies"]
    assert sorted(b["prompt"] for b in bodies) == [f"prompt number {i}" for i in range(5)]
    body = bodies[0]
    assert body["stream"] is True and body["temperature"] == 0
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == "m1" and body["max_tokens"] == 6
    assert "ignore_eos" not in body and "messages" not in body


def test_chat_stream_skips_the_empty_role_delta() -> None:
    with SseServer(SseConfig(tokens=3)) as server:
        run = run_point(server.url, "m", "chat", _prompts(2), ignore_eos=True)
        body = server.stats()["bodies"][0]
    assert body["messages"] == [{"role": "user", "content": "prompt number 0"}]
    assert body["ignore_eos"] is True and "prompt" not in body
    for rec in run.records:
        assert rec.error == "" and rec.text == " the the the"
        assert len(rec.itls_s) == 2  # three content events; the role event is no token


def test_concurrency_caps_requests_in_flight() -> None:
    with SseServer(SseConfig(tokens=4, delay_s=0.01)) as server:
        run = run_point(server.url, "m", "completions", _prompts(12), concurrency=3)
        stats = server.stats()
    assert stats["requests"] == 12
    assert stats["max_in_flight"] == 3
    assert all(not r.error for r in run.records)
    assert run.concurrency == 3


def test_poisson_schedule_is_seeded() -> None:
    first = poisson_schedule(4.0, 7, 50)
    assert first == poisson_schedule(4.0, 7, 50)
    assert first != poisson_schedule(4.0, 8, 50)
    assert first[0] == 0.0
    assert all(b > a for a, b in itertools.pairwise(first))
    # mean gap 1/rate: 50 exponential gaps of mean 0.25 s average near it
    assert 0.1 < first[-1] / 49 < 0.5


def test_requests_are_not_sent_before_their_poisson_time(server: SseServer) -> None:
    rate, seed = 400.0, 5
    run = run_point(server.url, "m", "completions", _prompts(10), request_rate=rate,
                    seed=seed)
    planned = poisson_schedule(rate, seed, 10)
    starts = [r.start_s for r in run.records]
    # asyncio may wake a timer up to its clock resolution early; 1 ms covers it
    assert all(s >= p - 0.001 for s, p in zip(starts, planned, strict=True))
    assert starts == sorted(starts)
    assert run.request_rate == rate


def test_warmup_requests_are_sent_and_excluded(server: SseServer) -> None:
    run = run_point(server.url, "m", "completions", _prompts(5), warmup=3, concurrency=2)
    assert server.stats()["requests"] == 8
    assert len(run.records) == 5
    assert run.to_read_result("x").summary.metadata["warmup-requests"] == "3"


def test_min_duration_repeats_the_prompts() -> None:
    with SseServer(SseConfig(tokens=2, delay_s=0.01)) as server:
        run = run_point(server.url, "m", "completions", _prompts(2), concurrency=2,
                        min_duration_s=0.3)
        sent = server.stats()["requests"]
    assert len(run.records) > 2
    assert run.duration_s >= 0.3
    assert [r.error for r in run.records] == [""] * len(run.records)
    assert sent == len(run.records)


def test_failures_are_counted_with_their_reason() -> None:
    with SseServer(SseConfig(fail_every=3)) as server:
        run = run_point(server.url, "m", "completions", _prompts(9), concurrency=1)
    errors = [r.error for r in run.records]
    assert errors.count("") == 6
    failed = [e for e in errors if e]
    assert len(failed) == 3
    assert all(e.startswith("HTTP 500: ") and "injected failure" in e for e in failed)
    result = run.to_read_result("run.json")
    assert (result.summary.completed, result.summary.failed) == (6, 3)
    assert result.requests is not None and result.requests.errors == errors
    assert [t for t, e in run.texts() if e] == ["", "", ""]


def test_error_event_in_the_stream_fails_the_request() -> None:
    with SseServer(SseConfig(tokens=5, error_after=2)) as server:
        run = run_point(server.url, "m", "completions", _prompts(2))
    assert all(r.error == "error event: injected stream error" for r in run.records)
    assert run.records[0].text == " the the"


def test_wrong_path_is_a_failure_with_status_and_body(server: SseServer) -> None:
    base = server.url.removesuffix("/v1")
    run = run_point(base, "m", "completions", _prompts(2))
    assert all(r.error.startswith("HTTP 404: ") for r in run.records)


def test_timeout_per_request() -> None:
    with SseServer(SseConfig(tokens=5, delay_s=0.2)) as server:
        run = run_point(server.url, "m", "completions", _prompts(1), timeout_s=0.1)
    assert run.records[0].error == "timeout after 0.1 s"


def test_output_token_basis_usage_tokenizer_chunks(tmp_path: Path) -> None:
    count = load_tokenizer(str(gt_model_dir()), tmp_path).count
    words = SseConfig(tokens=4, token_text=" hello world")
    with SseServer(words) as server:
        usage = run_point(server.url, "m", "completions", _prompts(1), count_tokens=count)
    with SseServer(SseConfig(tokens=4, token_text=" hello world", usage=False)) as server:
        counted = run_point(server.url, "m", "completions", _prompts(1), count_tokens=count)
        chunks = run_point(server.url, "m", "completions", _prompts(1))
    assert (usage.records[0].output_tokens, usage.records[0].token_basis) == (4, "usage")
    assert (counted.records[0].output_tokens, counted.records[0].token_basis) == (
        8, "tokenizer")
    assert (chunks.records[0].output_tokens, chunks.records[0].token_basis) == (4, "chunks")
    # without usage the input tokens are the prompt's own count
    assert chunks.records[0].input_tokens == 3
    assert counted.to_read_result("x").summary.metadata["output-token-count"] == "tokenizer"


def test_events_split_across_reads_with_crlf_and_no_done() -> None:
    config = SseConfig(tokens=5, split_bytes=7, crlf=True, send_done=False)
    with SseServer(config) as server:
        run = run_point(server.url, "m", "chat", _prompts(2), concurrency=2)
    for rec in run.records:
        assert rec.error == "" and rec.text == " the" * 5 and rec.output_tokens == 5


def test_stream_parser_byte_by_byte() -> None:
    raw = (b": ping\n\nevent: x\ndata:{\"choices\": [{\"text\": \"a\"}]}\n\n"
           b'data: {"choices": [{"text": ""}]}\n\n'
           b'data: {"choices":\ndata: [{"text": "b"}]}\n\n'
           b'data: {"choices": [], "usage": {"completion_tokens": 2, "prompt_tokens": 1}}'
           b"\n\ndata: [DONE]\n\n")
    stream = Stream(chat=False)
    for i in range(len(raw)):
        stream.feed(raw[i:i + 1], float(i))
    stream.finish(float(len(raw)))
    assert stream.error == "" and stream.done
    assert stream.parts == ["a", "b"] and stream.chunks == 2 and len(stream.itls) == 1
    assert (stream.usage_tokens, stream.prompt_tokens) == (2, 1)


@pytest.mark.parametrize(("raw", "error"), [
    (b"data: {not json}\n\n", "unexpected event: b'{not json}'"),
    (b'data: {"choices": [5]}\n\n', "unexpected event"),
    (b'data: {"object": "error", "message": "model not found"}\n\n',
     "error event: model not found"),
    (b'error: {"message": "boom"}\n\n', 'error event: {"message": "boom"}'),
])
def test_stream_parser_errors(raw: bytes, error: str) -> None:
    stream = Stream(chat=False)
    stream.feed(raw, 1.0)
    stream.finish(2.0)
    assert stream.error.startswith(error)


def test_last_event_without_blank_line_is_handled() -> None:
    stream = Stream(chat=True)
    stream.feed(b'data: {"choices": [{"delta": {"content": "x"}}]}', 1.0)
    stream.finish(2.0)
    assert stream.parts == ["x"] and stream.first == 2.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_is_a_usage_error() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(UsageError) as info:
        run_point(url, "m", "completions", _prompts(20), concurrency=8)
    assert url in str(info.value)
    assert "[serve] endpoint" in info.value.render() and "Start the server" in (
        info.value.render())
    with pytest.raises(UsageError, match="cannot connect"):
        run_point(url, "m", "completions", _prompts(2), warmup=1)


def test_unknown_host_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no-such-host.invalid"):
        run_point("http://no-such-host.invalid:8000/v1", "m", "completions", _prompts(2),
                  timeout_s=30)


def test_bad_arguments() -> None:
    with pytest.raises(UsageError, match="no prompts"):
        run_point("http://127.0.0.1:1/v1", "m", "completions", [])
    with pytest.raises(UsageError, match="concurrency"):
        run_point("http://127.0.0.1:1/v1", "m", "completions", _prompts(1), concurrency=0)
    with pytest.raises(UsageError, match="request rate"):
        run_point("http://127.0.0.1:1/v1", "m", "completions", _prompts(1),
                  request_rate=0.0)


def test_progress_reports_each_finished_request(server: SseServer) -> None:
    seen: list[tuple[int, int]] = []
    run_point(server.url, "m", "completions", _prompts(4), concurrency=2,
              progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_read_result_summary(server: SseServer) -> None:
    run = run_point(server.url, "served", "completions", _prompts(6, 5), concurrency=3)
    result = run.to_read_result("loadgen.json", 2, "0.1.0")
    s = result.summary
    assert (s.source, s.index, s.harness, s.harness_version) == (
        "loadgen.json", 2, "pin-loadgen", "0.1.0")
    assert (s.endpoint, s.model, s.max_concurrency, s.request_rate) == (
        server.url, "served", 3, None)
    assert (s.completed, s.failed, s.total_output_tokens, s.total_input_tokens) == (
        6, 0, 30, 18)
    assert s.detailed and s.duration_s == run.duration_s
    rates = {t.name: (t.per_s, t.basis) for t in s.throughput}
    assert rates["requests"] == (6 / run.duration_s, "requests")
    assert rates["output-tokens"] == (30 / run.duration_s, "output tokens")
    assert rates["total-tokens"] == (48 / run.duration_s, "input + output tokens")
    assert set(s.latency) == {"ttft", "tpot", "itl", "e2el"}
    ttft = s.latency["ttft"]
    assert set(ttft.percentiles) == {"p50", "p90", "p95", "p99"}
    assert ttft.median == ttft.percentiles["p50"]
    assert ttft.mean == pytest.approx(
        1000 * sum(r.ttft_s for r in run.records) / 6)
    req = result.requests
    assert req is not None and req.latencies is not None
    assert req.output_lens == [5] * 6 and all(len(g) == 4 for g in req.itls)


def test_judge_point_passes_and_fails_on_a_loadgen_result(server: SseServer) -> None:
    run = run_point(server.url, "m", "completions", _prompts(6), concurrency=2)
    result = run.to_read_result("r.json")
    loose = ServeSlo.model_validate({"ttft-p99-ms": 60_000.0, "e2el-p50-ms": 60_000.0,
                                     "failed-max": 0, "goodput-min-rps": 0.001})
    verdict = judge_point(result, loose)
    assert verdict.passed, [c.reason for c in verdict.checks]
    assert {c.basis for c in verdict.checks} == {"from-file", "recomputed"}
    tight = ServeSlo.model_validate({"ttft-p99-ms": 0.000001,
                                     "output-throughput-min-tps": 1e9})
    verdict = judge_point(result, tight)
    assert not verdict.passed
    assert [(c.slo, c.passed) for c in verdict.checks] == [
        ("ttft-p99-ms", False), ("output-throughput-min-tps", False), ("completed-min", True)]


def test_judge_counts_failures_of_a_loadgen_result() -> None:
    with SseServer(SseConfig(fail_every=2)) as server:
        run = run_point(server.url, "m", "completions", _prompts(4))
    verdict = judge_point(run.to_read_result("r.json"),
                          ServeSlo.model_validate({"failed-max": 0}))
    assert not verdict.passed
    assert verdict.checks[0].measured == 2.0


def _record(start: float, ttft: float, itls: list[float], tokens: int,
            error: str = "") -> RequestRecord:
    return RequestRecord(start_s=start, ttft_s=ttft, itls_s=itls,
                         latency_s=ttft + sum(itls), output_tokens=tokens, error=error)


def _run(records: list[RequestRecord], duration: float) -> LoadRun:
    return LoadRun(endpoint="http://x/v1", model="m", api="completions", records=records,
                   duration_s=duration, concurrency=1, request_rate=None, warmup=0, seed=0)


def test_thirds_credits_tokens_at_their_arrival() -> None:
    records = [
        # 4 tokens over 2 events at 1.0 and 2.0: 2 tokens each, both in the first third
        _record(0.0, 1.0, [1.0], 4),
        # 3 events at 4.0, 7.0, 8.0 of 1 token each: one in the middle, two in the last
        _record(3.0, 1.0, [3.0, 1.0], 3),
        _record(0.0, 8.5, [], 10, error="HTTP 500: x"),  # failed: not counted
    ]
    first, last = thirds(_run(records, 9.0))
    assert first == pytest.approx(4 / 3.0)
    assert last == pytest.approx(2 / 3.0)


def test_thirds_of_an_empty_run() -> None:
    assert thirds(_run([], 0.0)) == (0.0, 0.0)
    assert thirds(_run([_record(0, 0.5, [], 0)], 3.0)) == (0.0, 0.0)


def test_thirds_of_a_real_run() -> None:
    with SseServer(SseConfig(tokens=3, delay_s=0.005)) as server:
        run = run_point(server.url, "m", "completions", _prompts(2), concurrency=1,
                        min_duration_s=0.2)
    first, last = thirds(run)
    assert first > 0 and last > 0
    total = sum(r.output_tokens for r in run.records)
    # the middle third holds the rest: no token is credited twice
    assert (first + last) * run.duration_s / 3 <= total
