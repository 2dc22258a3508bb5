"""A real engine: vLLM's CPU build serving SmolLM2-135M-Instruct on 127.0.0.1.

Greedy completions are compared with a reference made by the same engine and model, and
vLLM's own serving benchmark writes a result that ``pin accept judge`` reads and judges.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import json_result, pin
from tests.support.vllmenv import require_vllm
from tests.support.vllmserver import Server, complete, run_vllm_bench, start_vllm

pytestmark = pytest.mark.engine

REFERENCE = Path(__file__).parent / "data" / "greedy-reference.jsonl"


def _reference() -> list[dict[str, object]]:
    return [json.loads(line) for line in REFERENCE.read_text().splitlines() if line.strip()]


def test_greedy_completions_are_repeatable_and_tokenized_as_the_reference(
        vllm_server: Server) -> None:
    """Same prompts as the reference: the same prompt token counts (same tokenizer), the full
    24 tokens, the same text when asked twice, and a model that knows where Paris is.
    """
    reference = _reference()
    assert len(reference) == 4
    for ref in reference:
        assert ref["temperature"] == 0
        first, again = (complete(vllm_server, str(ref["prompt"]), max_tokens=24)
                        for _ in range(2))
        assert first["model"] == "smollm2"
        assert first["usage"]["prompt_tokens"] == ref["usage"]["prompt_tokens"]  # type: ignore[index]
        assert first["usage"]["completion_tokens"] == ref["max_tokens"] == 24
        assert first["choices"][0]["text"] == again["choices"][0]["text"]
    paris = complete(vllm_server, "The capital of France is", max_tokens=24)
    assert paris["choices"][0]["text"].startswith(" Paris")


@pytest.mark.xfail(strict=False, reason=(
    "greedy texts depend on the CPU kernels used: on a 2-core AVX-512/AMX machine "
    "(2026-12-01) 3 of 4 matched with --enforce-eager and 2 of 4 with torch.compile, "
    "each repeatable"))
def test_greedy_completions_equal_the_reference_texts(vllm_server: Server) -> None:
    for ref in _reference():
        answer = complete(vllm_server, str(ref["prompt"]), max_tokens=24)
        assert answer["choices"][0]["text"] == ref["text"], ref["prompt"]


def _gates(tmp_path: Path, name: str, slo: str) -> Path:
    path = tmp_path / name
    path.write_text(f"[serve.slo]\n{slo}\n")
    return path


@pytest.fixture(scope="module")
def bench_result(vllm_server: Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "vllm-bench-c2.json"
    return run_vllm_bench(vllm_server, out, concurrency=2, num_prompts=16, input_len=64,
                          output_len=16, seed=7, goodput={"ttft": 600000, "tpot": 600000})


def test_bench_result_is_vllms_own_format(bench_result: Path) -> None:
    data = json.loads(bench_result.read_text())
    assert data["completed"] == 16 and data["max_concurrency"] == 2
    assert len(data["ttfts"]) == 16 and len(data["output_lens"]) == 16
    assert data["model_id"] == "smollm2"


def test_judge_passes_generous_slos(bench_result: Path, tmp_path: Path) -> None:
    gates = _gates(tmp_path, "ok.toml", "ttft-p99-ms = 600000\nfailed-max = 0")
    done = pin("accept", "judge", str(gates), "--from", str(bench_result), "--format", "json")
    result = json_result(done)
    assert done.returncode == 0, done.stderr
    assert result["passed"] is True
    [point] = result["serve"]["points"]
    assert point["summary"]["max-concurrency"] == 2
    assert (point["summary"]["completed"], point["summary"]["failed"]) == (16, 0)


def test_judge_fails_an_impossible_slo_with_exit_12(bench_result: Path, tmp_path: Path) -> None:
    gates = _gates(tmp_path, "tight.toml", "ttft-p99-ms = 0.001\nfailed-max = 0")
    done = pin("accept", "judge", str(gates), "--from", str(bench_result))
    assert done.returncode == 12, done.stderr
    assert f"{bench_result.name}#0: ttft-p99-ms" in done.stderr
    assert "failed-max" not in done.stderr
    assert "Traceback" not in done.stderr


def test_server_that_cannot_load_its_model_reports_the_log(tmp_path: Path) -> None:
    python, _ = require_vllm()
    empty = tmp_path / "no-model"
    empty.mkdir()
    with pytest.raises(RuntimeError) as err, start_vllm(empty, python=python, log_dir=tmp_path):
        pass
    message = str(err.value)
    assert "exited" in message and str(tmp_path) in message
    assert "config.json" in message  # vLLM's own complaint, from the log tail
