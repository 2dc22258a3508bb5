"""The normalised serving run every reader and pin's load generator produce, and the judge
reads: :class:`ServeSummary` (totals, throughputs, latency statistics in milliseconds),
the per-request arrays (:class:`PerRequest`, seconds) and the pair (:class:`ReadResult`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from pinning.util.models import Strict

__all__ = ["MAX_COUNT", "Harness", "LatencyStats", "PerRequest", "ReadResult", "ServeSummary",
           "Throughput"]

Harness = Literal["vllm-bench-serve", "sglang-bench-serving", "guidellm", "pin-loadgen"]
#: The largest count (requests, tokens, concurrency) pin accepts from a results file: a
#: sanity bound (10^12), far above any benchmark run, that rejects hand-edited or corrupt
#: values such as 1e30.
MAX_COUNT = 10**12


class LatencyStats(Strict):
    """One latency metric of a run, in milliseconds: mean, median, standard deviation and
    percentiles (``{"p99": 89.8}``) as present in the file.
    """

    mean: float | None = None
    median: float | None = None
    std: float | None = None
    percentiles: dict[str, float] = Field(default_factory=dict)


class Throughput(Strict):
    """A rate and what it counts: ``requests`` per second, or tokens per second with the
    token basis named (``output tokens`` only, or ``input + output tokens``).
    """

    name: Literal["requests", "output-tokens", "total-tokens", "goodput"]
    per_s: float
    basis: str


class ServeSummary(Strict):
    """One run (one concurrency or rate point) of a serving benchmark, normalised.

    ``source`` is the file, ``index`` the run's place in it (JSONL line or GuideLLM
    benchmark, from 0). ``request-rate`` ``None`` means unlimited (``inf``). ``failed``
    ``None`` when the file does not say. Latencies in milliseconds, durations in seconds.
    ``detailed``: the run has per-request data; ``computed`` names each latency statistic
    pin computed from it because the file lacks it (``"e2el p99"``), the rest are the file's.
    ``source-sha256`` is ``sha256:<hex>`` of the results file's bytes as pin read them
    (judged files; ``None`` for pin's own runs and in results of an older pin): two results
    judged from the same file are one measurement, not two.
    """

    source: str
    source_sha256: str | None = None
    index: int = 0
    harness: Harness
    harness_version: str | None = None
    backend: str | None = None
    endpoint: str | None = None
    model: str | None = None
    max_concurrency: int | None = None
    request_rate: float | None = None
    completed: int
    failed: int | None = None
    duration_s: float | None = None
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    throughput: list[Throughput] = Field(default_factory=list)
    latency: dict[str, LatencyStats] = Field(default_factory=dict)
    metadata: dict[str, str] = Field(default_factory=dict)
    detailed: bool = False
    computed: list[str] = Field(default_factory=list)


class PerRequest(Strict):
    """Per-request arrays saved with ``--save-detailed`` (seconds): ``ttfts``,
    end-to-end ``latencies`` (``None`` where the harness saves none), ``itls`` (each
    request's gaps), ``output_lens`` (tokens) and ``errors`` (empty string = success).
    """

    ttfts: list[float]
    latencies: list[float] | None
    itls: list[list[float]]
    output_lens: list[int]
    errors: list[str]


@dataclass(frozen=True)
class ReadResult:
    """A run's :class:`ServeSummary` and its :class:`PerRequest` arrays when saved."""

    summary: ServeSummary
    requests: PerRequest | None
