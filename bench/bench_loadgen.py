"""Benchmark (printed, not asserted): pin's load generator on one core against a local
OpenAI-compatible endpoint that answers instantly.

The endpoint (tests/support/sse_server.py) runs in child processes on the other cores, so
the client has its core to itself; the client is pinned to one core with
``os.sched_setaffinity``. A point is 64 requests of 256 streamed one-token chunks at
concurrency 16 on ``/v1/completions``; median of 5 runs after one untimed run. Goal: the
client sustains >= 5,000 chunks/s (wall clock). Also printed: chunks per second of the
client's own CPU time, what it could take if the server were never the limit (on a machine
with few cores the server, not the client, sets the wall-clock figure).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pinning.accept.loadgen import run_point  # noqa: E402 - after the path tweak
from pinning.accept.workload import Prompt  # noqa: E402
from tests.support.sse_server import SseConfig, SseServer  # noqa: E402

REQUESTS = 64
CHUNKS = 256
CONCURRENCY = 16
RUNS = 5
TARGET = 5000.0


def one_run(url: str) -> tuple[float, float]:
    """``(chunks per wall second, chunks per client CPU second)`` of one point."""
    prompts = [Prompt(f"prompt {i}", None, CHUNKS) for i in range(REQUESTS)]
    wall, cpu = time.perf_counter(), time.process_time()
    run = run_point(url, "bench", "completions", prompts, concurrency=CONCURRENCY)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    failed = [r.error for r in run.records if r.error]
    if failed:
        raise SystemExit(f"bench_loadgen: {len(failed)} requests failed: {failed[0]}")
    chunks = sum(len(r.itls_s) + 1 for r in run.records)
    if chunks != REQUESTS * CHUNKS:
        raise SystemExit(f"bench_loadgen: {chunks} chunks, expected {REQUESTS * CHUNKS}")
    return chunks / wall, chunks / cpu


def main() -> None:
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    client = cpus[-1] if cpus else None
    others = set(cpus[:-1]) or None
    workers = max(1, min(4, len(cpus) - 1))
    with SseServer(SseConfig(tokens=CHUNKS), process=True, workers=workers,
                   cpus=others) as server:
        if client is not None:
            os.sched_setaffinity(0, {client})
        one_run(server.url)  # untimed: connections, imports, caches
        runs = [one_run(server.url) for _ in range(RUNS)]
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    print(f"{REQUESTS} requests x {CHUNKS} chunks, concurrency {CONCURRENCY}; client on core "
          f"{client}, {workers} server process(es) on {sorted(others or [])}")
    print(f"{'benchmark':<48} {'median':>10} {'target':>8}")
    mark = "ok" if wall >= TARGET else "UNDER"
    print(f"{'streamed chunks/s, wall clock (>= 5,000)':<48} {wall:>10,.0f} {'>=5000':>8} "
          f"{mark}")
    print(f"{'streamed chunks/s of client CPU time':<48} {cpu:>10,.0f} {'-':>8}")
    print(json.dumps({"loadgen_chunks_per_s": round(wall), "loadgen_chunks_per_cpu_s":
                      round(cpu)}))


if __name__ == "__main__":
    main()
