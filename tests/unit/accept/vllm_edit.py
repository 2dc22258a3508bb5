"""A test helper: a vLLM result document whose summary is rewritten from its own
per-request arrays the way ``vllm bench serve`` computes it, so a test can change the
per-request data (errors, lengths) and still hand pin a consistent file.
"""

from __future__ import annotations

import re
from typing import Any

from pinning.accept.recompute import series, stat_ms
from pinning.accept.summary import PerRequest

_STAT_KEY = re.compile(r"^(mean|median|std|p[0-9.]+)_(ttft|tpot|itl|e2el)_ms$")


def consistent(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with counts, totals, throughputs and every ``<stat>_<metric>_ms`` key
    recomputed from ``ttfts``, ``latencies``, ``itls``, ``output_lens``, ``input_lens`` and
    ``errors`` (0 for a metric with no successful request, as vLLM writes); the goodput
    is capped at the request throughput.
    """
    out = dict(doc)
    reqs = PerRequest(ttfts=doc["ttfts"], latencies=doc["latencies"], itls=doc["itls"],
                      output_lens=doc["output_lens"], errors=doc["errors"])
    ok = [not e for e in doc["errors"]]
    out["completed"] = sum(ok)
    out["failed"] = len(ok) - sum(ok)
    out["total_input_tokens"] = sum(n for n, good in zip(doc["input_lens"], ok, strict=True)
                                    if good)
    out["total_output_tokens"] = sum(doc["output_lens"])
    dur = doc["duration"]
    out["request_throughput"] = out["completed"] / dur
    out["output_throughput"] = out["total_output_tokens"] / dur
    out["total_token_throughput"] = (out["total_input_tokens"]
                                     + out["total_output_tokens"]) / dur
    out["request_goodput"] = min(doc["request_goodput"], out["request_throughput"])
    values = series(reqs)
    for key in doc:
        match = _STAT_KEY.match(key)
        if match:
            stat, metric = match.groups()
            out[key] = stat_ms(values[metric], stat) if values[metric] else 0.0
    return out
