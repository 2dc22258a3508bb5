"""One finished load-generator run: the requests it measured (:class:`RequestRecord`), the
run with its settings (:class:`LoadRun`), its normalised summary for the judge
(:meth:`LoadRun.to_read_result`) and the sustained-throughput thirds (:func:`thirds`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Literal

from pinning.accept.judge import percentile
from pinning.accept.summary import LatencyStats, PerRequest, ReadResult, ServeSummary, Throughput

__all__ = ["Api", "LoadRun", "RequestRecord", "TokenBasis", "thirds"]

Api = Literal["completions", "chat"]
#: Where a request's output-token count came from (:mod:`pinning.accept.loadgen`).
TokenBasis = Literal["usage", "tokenizer", "chunks"]


@dataclass
class RequestRecord:
    """One measured request. ``start_s`` is when it was sent, seconds after the run's
    start; ``ttft_s``, ``itls_s`` (gaps between events with text) and ``latency_s`` are
    seconds from sending (0 when it failed before them); ``output_tokens`` counted on
    ``token_basis``; ``input_tokens`` the server's ``usage.prompt_tokens``, else the
    prompt's counted tokens, else ``None``; ``text`` the generated text; ``error`` ``""``
    when it succeeded.
    """

    start_s: float
    ttft_s: float = 0.0
    itls_s: list[float] = field(default_factory=list)
    latency_s: float = 0.0
    output_tokens: int = 0
    token_basis: TokenBasis = "chunks"
    input_tokens: int | None = None
    text: str = ""
    error: str = ""


@dataclass
class LoadRun:
    """One finished run: its ``records`` in the order requests were sent (warm-up ones
    excluded), ``endpoint`` with any credentials redacted (:func:`redact_endpoint`),
    ``duration_s`` from the first measured send to the last completion, and
    the settings it ran with.
    """

    endpoint: str
    model: str
    api: Api
    records: list[RequestRecord]
    duration_s: float
    concurrency: int | None
    request_rate: float | None
    warmup: int
    seed: int

    def texts(self) -> list[tuple[str, str]]:
        """``(generated text, error)`` of each record, in the order sent (the prompts'
        order when no ``min_duration_s`` repeated them).
        """
        return [(r.text, r.error) for r in self.records]

    def to_read_result(self, source: str, index: int = 0,
                       harness_version: str | None = None) -> ReadResult:
        """The run as a :class:`ReadResult` (harness ``pin-loadgen``) that
        ``pinning.accept.judge.judge_point`` judges as it judges a vLLM result: totals,
        throughputs (per second of ``duration_s``; ``output tokens`` counted as each
        record's basis says, named in ``metadata["output-token-count"]``), latency stats in
        ms over successful requests (TPOT over those with more than one token, ITL over
        every gap; std is the population standard deviation, as numpy's default) and the
        per-request arrays in seconds (a failed request: zeros and its error).
        """
        ok = [r for r in self.records if not r.error]
        dur = self.duration_s
        out_tokens = sum(r.output_tokens for r in ok)
        in_known = all(r.input_tokens is not None for r in ok)
        in_tokens = sum(r.input_tokens or 0 for r in ok) if in_known else None
        rates = [("requests", len(ok), "requests"),
                 ("output-tokens", out_tokens, "output tokens")]
        if in_tokens is not None:
            rates.append(("total-tokens", in_tokens + out_tokens, "input + output tokens"))
        bases = _tally(r.token_basis for r in ok)
        summary = ServeSummary(
            source=source, index=index, harness="pin-loadgen", harness_version=harness_version,
            backend="openai-" + self.api, endpoint=self.endpoint, model=self.model,
            max_concurrency=self.concurrency, request_rate=self.request_rate,
            completed=len(ok), failed=len(self.records) - len(ok), duration_s=dur,
            total_input_tokens=in_tokens, total_output_tokens=out_tokens,
            throughput=[Throughput(name=n, per_s=v / dur if dur > 0 else 0.0, basis=b)
                        for n, v, b in rates],
            latency=_latency(ok),
            metadata={"api": self.api, "output-token-count": bases or "none",
                      "input-token-count": "known" if in_known and ok else "not known",
                      "warmup-requests": str(self.warmup), "seed": str(self.seed)},
            detailed=True)
        requests = PerRequest(
            ttfts=[r.ttft_s for r in self.records],
            latencies=[r.latency_s for r in self.records],
            itls=[list(r.itls_s) for r in self.records],
            output_lens=[r.output_tokens for r in self.records],
            errors=[r.error for r in self.records])
        return ReadResult(summary, requests)


def _tally(bases: Any) -> str:
    """``"usage"`` when every basis is the same, else ``"usage 10, chunks 2"``."""
    counts: dict[str, int] = {}
    for b in bases:
        counts[b] = counts.get(b, 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{b} {n}" for b, n in sorted(counts.items()))


def _stats(values_s: list[float]) -> LatencyStats:
    """Mean, median, population std and p50/p90/p95/p99 of ``values_s``, in ms."""
    ms = [v * 1000.0 for v in values_s]
    return LatencyStats(mean=statistics.fmean(ms), median=statistics.median(ms),
                        std=statistics.pstdev(ms),
                        percentiles={p: percentile(ms, float(p[1:]))
                                     for p in ("p50", "p90", "p95", "p99")})


def _latency(ok: list[RequestRecord]) -> dict[str, LatencyStats]:
    """The four metrics' stats over the successful records (a metric with no value is
    left out).
    """
    series = {
        "ttft": [r.ttft_s for r in ok],
        "tpot": [(r.latency_s - r.ttft_s) / (r.output_tokens - 1)
                 for r in ok if r.output_tokens > 1],
        "itl": [g for r in ok for g in r.itls_s],
        "e2el": [r.latency_s for r in ok]}
    return {m: _stats(v) for m, v in series.items() if v}


def thirds(run: LoadRun) -> tuple[float, float]:
    """``(first-third, last-third)`` output-token throughput of ``run`` (tokens/s).

    The rule: the run's wall time ``duration_s`` is cut in three equal parts; each
    successful request's ``output_tokens`` are spread evenly over its events with text,
    each credited at the time it arrived (``start_s + ttft_s`` plus the gaps); a part's
    throughput is the tokens credited inside it over a third of the duration. ``(0, 0)``
    for a run of no duration.
    """
    third = run.duration_s / 3.0
    if third <= 0:
        return 0.0, 0.0
    first = last = 0.0
    for r in run.records:
        if r.error or not r.output_tokens:
            continue
        each = r.output_tokens / (len(r.itls_s) + 1)
        t = r.start_s + r.ttft_s
        for gap in (0.0, *r.itls_s):
            t += gap
            if t < third:
                first += each
            elif t >= 2 * third:
                last += each
    return first / third, last / third

