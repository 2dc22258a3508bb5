"""pin accept run's serving gate against the real vLLM CPU server: random prompts of exact
token length made with the model's own tokenizer, a concurrency sweep, SLOs that pass and a
tightened one that fails for its stated reason, and greedy outputs compared with a reference.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import json_result, pin
from tests.support.vllmserver import Server, complete

pytestmark = pytest.mark.engine

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Water boils at"]


def _gates(tmp_path: Path, server: Server, slo: str, extra: str = "",
           api: str = "completions") -> Path:
    path = tmp_path / "accept.toml"
    path.write_text(
        f'[serve]\nendpoint = "{server.url}"\nmodel = "{server.served_name}"\n'
        f'[serve.workload]\ntokenizer = "{server.model_dir}"\ninput-tokens = 64\n'
        f'output-tokens = 8\nrequests = 6\nconcurrency = [1, 2]\nseed = 7\n'
        f'warmup-requests = 1\nignore-eos = true\napi = "{api}"\n'
        f"[serve.slo]\n{slo}\n{extra}")
    return path


def test_serving_gate_passes_on_real_vllm_with_quality(vllm_server: Server,
                                                       tmp_path: Path) -> None:
    reference = tmp_path / "reference.jsonl"
    lines = []
    for prompt in PROMPTS:
        answer = complete(vllm_server, prompt, max_tokens=12)
        lines.append(json.dumps({"prompt": prompt, "max_tokens": 12,
                                 "text": answer["choices"][0]["text"]}))
    reference.write_text("\n".join(lines) + "\n")
    extra = (f'[serve.quality]\nreference = "{reference}"\nexact-match-min = 1.0\n'
             "token-agreement-min = 1.0\n")
    done = pin("accept", "run", str(_gates(tmp_path, vllm_server,
                                           "ttft-p99-ms = 600000\nfailed-max = 0\n"
                                           "goodput-min-rps = 0.001", extra)),
               "--format", "json")
    assert done.returncode == 0, done.stderr
    serve = json_result(done)["serve"]
    assert [p["summary"]["max-concurrency"] for p in serve["points"]] == [1, 2]
    for point in serve["points"]:
        s = point["summary"]
        assert (s["completed"], s["failed"]) == (6, 0)
        # ignore-eos: every request generates exactly output-tokens, counted by the server
        assert s["total-output-tokens"] == 6 * 8
        assert s["total-input-tokens"] == 6 * 64
        assert s["metadata"]["output-token-count"].startswith("usage")
    quality = serve["quality"]
    assert quality["exact-match-rate"] == 1.0 and quality["token-agreement"] == 1.0
    assert "tokenizer" in quality["token-basis"]


def test_tightened_slo_fails_for_its_reason(vllm_server: Server, tmp_path: Path) -> None:
    done = pin("accept", "run", str(_gates(tmp_path, vllm_server,
                                           "ttft-p99-ms = 0.001\nfailed-max = 0")))
    assert done.returncode == 12
    assert "ttft-p99-ms" in done.stderr and "failed-max" not in done.stderr
    assert "(limit)" in done.stdout and "Traceback" not in done.stderr


def test_chat_api_streams_from_real_vllm(vllm_server: Server, tmp_path: Path) -> None:
    done = pin("accept", "run", str(_gates(tmp_path, vllm_server, "failed-max = 0",
                                           api="chat")), "--format", "json")
    assert done.returncode == 0, done.stderr
    point = json_result(done)["serve"]["points"][0]
    assert point["summary"]["completed"] == 6
    assert point["summary"]["latency"]["ttft"]["median"] > 0
