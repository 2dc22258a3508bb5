"""The serving gate's defences against a lying, truncated or misaddressed endpoint, against
credential leaks and against this process's own limits (tests/support/sse_server.py on
127.0.0.1 as the server)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pinning.accept.config import load_config
from pinning.accept.endpoint import check_endpoint, redact_endpoint
from pinning.accept.loadgen import run_load, run_point
from pinning.accept.serve import run_serve_gate
from pinning.accept.sse import Stream
from pinning.accept.workload import Prompt
from pinning.errors import UsageError
from tests.support.cli import pin
from tests.support.components import free_port
from tests.support.paths import ROOT
from tests.support.sse_server import SseConfig, SseServer

ENDED = "the stream ended before [DONE] / a finish_reason (connection closed after"


def _prompts(n: int, max_tokens: int = 4) -> list[Prompt]:
    return [Prompt(f"prompt number {i}", 3, max_tokens) for i in range(n)]


def _gates(tmp_path: Path, endpoint: str, extra: str = "") -> Path:
    (tmp_path / "prompts.jsonl").write_text('{"prompt": "one two three"}\n{"prompt": "four"}\n')
    path = tmp_path / "accept.toml"
    path.write_text(f'[serve]\nendpoint = "{endpoint}"\nmodel = "fake"\n'
                    '[serve.workload]\nprompts = "prompts.jsonl"\noutput-tokens = 4\n'
                    f"requests = 6\nconcurrency = [1, 3]\n{extra}"
                    "[serve.slo]\nttft-p99-ms = 60000\nfailed-max = 0\n")
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PIN_CACHE_DIR": str(tmp_path / "cache")}


# 1. usage.completion_tokens is bounded by max_tokens


def test_usage_above_max_tokens_fails_the_request() -> None:
    with SseServer(SseConfig(tokens=1, usage_tokens=1_000_000)) as server:
        run = run_point(server.url, "m", "completions", _prompts(3, max_tokens=4))
    assert all(r.error.startswith(
        "the server reported 1000000 completion tokens for max_tokens 4") for r in run.records)
    summary = run.to_read_result("x").summary
    assert (summary.completed, summary.failed, summary.total_output_tokens) == (0, 3, 0)


def test_usage_above_the_chunk_count_within_max_tokens_is_believed() -> None:
    # vLLM may merge several tokens into one event: 2 events carrying 4 tokens is fine
    with SseServer(SseConfig(tokens=2, usage_tokens=4)) as server:
        run = run_point(server.url, "m", "completions", _prompts(2, max_tokens=4))
    for rec in run.records:
        assert rec.error == "" and (rec.output_tokens, rec.token_basis) == (4, "usage")
        assert len(rec.itls_s) == 1


# 2. success needs [DONE] or a finish_reason


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_stream_without_done_or_finish_reason_fails(api: str) -> None:
    config = SseConfig(tokens=3, send_done=False, finish_reason=False)
    with SseServer(config) as server:
        run = run_point(server.url, "m", api, _prompts(2))  # type: ignore[arg-type]
    assert [r.error for r in run.records] == [f"{ENDED} 3 chunks)"] * 2
    assert run.records[0].text == " the the the"  # what arrived is kept for the record


def test_connection_dropped_mid_stream_fails() -> None:
    with SseServer(SseConfig(tokens=5, drop_after=2)) as server:
        run = run_point(server.url, "m", "completions", _prompts(2))
    for rec in run.records:
        assert rec.error.startswith(f"{ENDED} 2 chunks"), rec.error
        assert rec.output_tokens == 0


@pytest.mark.parametrize(("send_done", "finish_reason"), [(True, False), (False, True)])
def test_done_or_finish_reason_alone_is_enough(send_done: bool, finish_reason: bool) -> None:
    config = SseConfig(tokens=3, send_done=send_done, finish_reason=finish_reason)
    with SseServer(config) as server:
        run = run_point(server.url, "m", "chat", _prompts(2))
    assert all(r.error == "" and r.output_tokens == 3 for r in run.records)


def test_stream_parser_sees_finish_reason() -> None:
    stream = Stream(chat=False)
    stream.feed(b'data: {"choices": [{"text": "a", "finish_reason": null}]}\n\n', 1.0)
    assert not stream.finished
    stream.feed(b'data: {"choices": [{"text": "b", "finish_reason": "stop"}]}\n\n', 2.0)
    stream.finish(3.0)
    assert stream.finished and not stream.done and stream.parts == ["a", "b"]


# 3. credentials are used, never recorded


def test_redact_endpoint() -> None:
    assert redact_endpoint("http://user:secret@127.0.0.1:8000/v1?key=1") == (
        "http://***@127.0.0.1:8000/v1?key=1")
    assert redact_endpoint("https://tok@host/v1") == "https://***@host/v1"
    assert redact_endpoint("http://a:b@[::1/v1") == "http://***@[::1/v1"  # not a valid URL
    assert redact_endpoint("http://127.0.0.1:8000/v1?u=a@b") == (
        "http://127.0.0.1:8000/v1?u=a@b")  # an @ outside the authority is no userinfo
    assert redact_endpoint("not a url") == "not a url"


def test_credentials_are_sent_as_basic_auth_and_redacted(tmp_path: Path) -> None:
    with SseServer(SseConfig(delay_s=0.001)) as server:
        url = server.url.replace("http://", "http://user:secret@")
        shown = server.url.replace("http://", "http://***@")
        run = run_point(url, "m", "completions", _prompts(2))
        basic = "Basic " + base64.b64encode(b"user:secret").decode()
        assert server.stats()["auth"] == [basic, basic]
        assert run.endpoint == shown and all(not r.error for r in run.records)
        said: list[str] = []
        cfg = load_config(_gates(tmp_path, url))
        assert cfg.serve is not None
        result = run_serve_gate(cfg.serve, tmp_path, pin_version="0", progress=said.append)
        bearer = run_point(url, "m", "completions", _prompts(1), api_key="k")
        assert server.stats()["auth"][-1] == "Bearer k"  # an API key wins over userinfo
    assert bearer.endpoint == shown
    assert result.passed, result.failed_checks
    assert result.endpoint == shown
    assert all(p.summary.source == shown and p.summary.endpoint == shown
               for p in result.points)
    assert said and not any("secret" in line for line in said)
    assert "secret" not in result.model_dump_json()


def test_credentials_are_not_in_connection_errors() -> None:
    url = f"http://user:secret@127.0.0.1:{free_port()}/v1"
    with pytest.raises(UsageError) as info:
        run_point(url, "m", "completions", _prompts(2))
    text = info.value.render()
    assert "secret" not in text and "http://***@127.0.0.1" in text


# 4. a bad endpoint is a usage error


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/v1", "http://[::1/v1",
                                 "http://user:secret@[::1/v1"])
def test_invalid_endpoint_is_a_usage_error_before_any_request(url: str) -> None:
    with pytest.raises(UsageError, match=r"\[serve\] endpoint") as info:
        run_point(url, "m", "completions", _prompts(2))
    assert "not a valid URL" in str(info.value) and "secret" not in info.value.render()
    with pytest.raises(UsageError, match=r"\[serve\] endpoint"):
        check_endpoint(url)
    check_endpoint("http://user:pw@127.0.0.1:8000/v1?x=1")  # valid: no error


def test_invalid_endpoint_exits_2_from_the_cli(tmp_path: Path) -> None:
    done = pin("accept", "run", str(_gates(tmp_path, "http://127.0.0.1:99999/v1")),
               env=_env(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "[serve] endpoint" in done.stderr and "not a valid URL" in done.stderr


def test_endpoint_without_v1_is_a_usage_error(tmp_path: Path) -> None:
    with SseServer() as server:
        base = server.url.removesuffix("/v1")
        with pytest.raises(UsageError, match="answered 404") as info:
            run_point(base, "m", "completions", _prompts(20), concurrency=1,
                      stop_on_404=True)
        assert server.stats()["any_requests"] == 1  # stopped at the first answer
        assert f"{base}/completions" in str(info.value) and "/v1" in info.value.render()
        done = pin("accept", "run", str(_gates(tmp_path, base)), env=_env(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "answered 404" in done.stderr and f"{base}/completions" in done.stderr


def test_other_http_errors_stay_request_failures() -> None:
    with SseServer(SseConfig(fail_every=1)) as server:
        run = run_point(server.url, "m", "completions", _prompts(3), stop_on_404=True)
    assert all(r.error.startswith("HTTP 500: ") for r in run.records)


# 5. this process's file-descriptor limit, and the connection cap


_FD_SCRIPT = textwrap.dedent("""
    import json, os, resource, sys
    from pinning.accept.loadgen import run_point
    from pinning.accept.workload import Prompt
    from pinning.errors import UsageError
    url, requests, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 40, hard))
    prompts = [Prompt("p", 1, 4) for _ in range(requests)]
    try:
        run = run_point(url, "m", "completions", prompts, concurrency=concurrency)
    except UsageError as exc:
        print(json.dumps({"error": exc.render()}))
    else:
        print(json.dumps({"errors": [r.error for r in run.records]}))
""")


def _limited(url: str, requests: int, concurrency: int) -> dict[str, list[str] | str]:
    done = subprocess.run([sys.executable, "-c", _FD_SCRIPT, url, str(requests),
                           str(concurrency)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    out: dict[str, list[str] | str] = json.loads(done.stdout)
    return out


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
def test_out_of_file_descriptors_blames_this_process() -> None:
    with SseServer(SseConfig(tokens=4, delay_s=0.05)) as server:
        out = _limited(server.url, 300, 100_000)
    error = str(out.get("error"))
    assert "ulimit -n" in error and "open-file limit" in error, out
    assert "Start the server" not in error and "concurrency" in error


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
def test_huge_concurrency_opens_no_more_connections_than_requests() -> None:
    with SseServer(SseConfig(tokens=4, delay_s=0.01)) as server:
        out = _limited(server.url, 6, 100_000)  # 100,000 sockets would pass the limit
        assert server.stats()["max_in_flight"] <= 6
    assert out == {"errors": [""] * 6}


def test_timed_run_without_concurrency_is_capped_at_the_prompts() -> None:
    with SseServer(SseConfig(tokens=2, delay_s=0.01)) as server:
        run = run_point(server.url, "m", "completions", _prompts(3), min_duration_s=0.2)
        stats = server.stats()
    assert stats["max_in_flight"] <= 3 and len(run.records) > 3
    assert all(not r.error for r in run.records)


# 7. a cancelled run reports no cancelled request as finished


def test_cancelled_requests_are_not_reported_as_done() -> None:
    seen: list[tuple[int, int]] = []

    async def main(server: SseServer) -> None:
        task = asyncio.create_task(run_load(
            server.url, "m", "completions", _prompts(3), concurrency=3,
            progress=lambda done, total: seen.append((done, total))))
        for _ in range(2000):  # until all three requests are being served
            stats = await asyncio.to_thread(server.stats)
            if stats["in_flight"] == 3:
                break
            await asyncio.sleep(0.005)
        else:
            raise AssertionError("the requests never reached the server")
        task.cancel()  # what asyncio.run does to the main task on Ctrl-C
        with pytest.raises(asyncio.CancelledError):
            await task

    with SseServer(SseConfig(tokens=3, delay_s=0.3)) as server:
        asyncio.run(main(server))
    assert seen == []


def test_finished_requests_are_reported_before_a_cancel() -> None:
    seen: list[tuple[int, int]] = []

    async def main(server: SseServer) -> None:
        prompts = [Prompt("fast", 1, 1), Prompt("slow", 1, 50)]
        task = asyncio.create_task(run_load(
            server.url, "m", "completions", prompts, concurrency=2,
            progress=lambda done, total: seen.append((done, total))))
        for _ in range(2000):  # until the one-token request has finished
            if seen:
                break
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with SseServer(SseConfig(delay_s=0.02)) as server:
        asyncio.run(main(server))
    assert seen == [(1, 2)]
