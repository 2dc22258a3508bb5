"""A vLLM result's summary recomputed from its own per-request arrays: the cross-check that
refuses an edited or corrupt file (:func:`check_vllm`) and the statistics it lacks
(:func:`fill_latency`).

vLLM derives every summary field from the arrays it saves with ``--save-detailed``
(vllm-project/vllm@009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1:vllm/benchmarks/serve.py,
``calculate_metrics``; commit date not recorded): over successful requests (empty error)
TTFT, end-to-end latency, every inter-token gap, and TPOT = (latency - TTFT) / (output
tokens - 1) for requests with more than one token; mean, median, population std and
``np.percentile`` (linear); ``total_input_tokens`` the successful requests' input lengths,
``total_output_tokens`` the sum of ``output_lens``, and each throughput a total over
``duration``. Both real files in tests/data/acceptance agree with this to 1e-14. SGLang's
per-request output has no latencies (no TPOT or end-to-end latency to recompute) and is
not cross-checked here. The arithmetic is a few lines of the standard library, so no
numpy dependency is taken for it.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from pinning.accept.fields import HINT, finite_list
from pinning.accept.judge import percentile
from pinning.accept.summary import LatencyStats, PerRequest, ServeSummary
from pinning.errors import UsageError

__all__ = ["FILLED_PERCENTILES", "check_vllm", "fill_latency", "series", "stat_ms"]

#: The percentiles pin adds for a metric the file lacks (pin's own load generator's set).
FILLED_PERCENTILES = ("p50", "p90", "p95", "p99")
#: Two values agree when within 0.01 % of each other or 0.01 apart (ms, tokens/s, req/s):
#: what rounding a file to two decimals leaves, far below any edit that changes a verdict.
_REL, _ABS = 1e-4, 1e-2


def series(requests: PerRequest) -> dict[str, list[float]]:
    """Each metric's values in seconds over the successful requests, as vLLM computes
    them (``e2el`` and ``tpot`` only when ``latencies`` are saved).
    """
    ok = [i for i, e in enumerate(requests.errors) if not e]
    out = {"ttft": [requests.ttfts[i] for i in ok],
           "itl": [g for i in ok for g in requests.itls[i]]}
    lat = requests.latencies
    if lat is not None:
        out["tpot"] = [(lat[i] - requests.ttfts[i]) / (requests.output_lens[i] - 1)
                       for i in ok if requests.output_lens[i] > 1]
        out["e2el"] = [lat[i] for i in ok]
    return out


def stat_ms(values_s: list[float], stat: str) -> float:
    """``stat`` (``mean``, ``median``, ``std`` or ``pNN``) of ``values_s`` in ms."""
    ms = [v * 1000.0 for v in values_s]
    if stat == "mean":
        return statistics.fmean(ms)
    if stat == "median":
        return statistics.median(ms)
    if stat == "std":
        return statistics.pstdev(ms)
    return percentile(ms, float(stat[1:]))


def _totals(doc: dict[str, Any], s: ServeSummary, requests: PerRequest,
            where: str) -> list[tuple[str, float | None, float]]:
    """``(file key, the file's value, recomputed)`` for the counts and throughputs."""
    out: list[tuple[str, float | None, float]] = []
    total_out = sum(requests.output_lens)
    out.append(("total_output_tokens", _f(s.total_output_tokens), float(total_out)))
    ins = finite_list(doc, "input_lens", where)
    total_in: float | None = None
    if ins is not None:
        if len(ins) != len(requests.errors):
            raise UsageError(f"{where}: `input_lens` holds {len(ins)} values for "
                             f"{len(requests.errors)} requests.", hint=HINT)
        total_in = float(sum(v for v, e in zip(ins, requests.errors, strict=True) if not e))
        out.append(("total_input_tokens", _f(s.total_input_tokens), total_in))
    dur = s.duration_s
    if dur:
        rates = {t.name: t.per_s for t in s.throughput}
        out.append(("request_throughput", rates.get("requests"), s.completed / dur))
        out.append(("output_throughput", rates.get("output-tokens"), total_out / dur))
        if total_in is not None:
            out.append(("total_token_throughput", rates.get("total-tokens"),
                        (total_in + total_out) / dur))
    return out


def _f(value: int | None) -> float | None:
    """``value`` as a float, ``None`` kept."""
    return None if value is None else float(value)


def _close(a: float, b: float) -> bool:
    """Whether ``a`` and ``b`` agree beyond rounding (see ``_REL``, ``_ABS``)."""
    return math.isclose(a, b, rel_tol=_REL, abs_tol=_ABS)


def _bounds(doc: dict[str, Any], s: ServeSummary, requests: PerRequest,
            where: str) -> list[str]:
    """What no run can record: a goodput above the request throughput, a request (or,
    with ``start_times``, the span of all) longer than the run's ``duration``.
    """
    out: list[str] = []
    rates = {t.name: t.per_s for t in s.throughput}
    good, done = rates.get("goodput"), rates.get("requests")
    if good is not None and done is not None and good > done and not _close(good, done):
        out.append(f"`request_goodput` is {good:.6g} but `request_throughput` is "
                   f"{done:.6g}; good requests cannot outnumber completed ones")
    lat, dur = requests.latencies, s.duration_s
    if lat and dur is not None:
        starts = finite_list(doc, "start_times", where)
        span = max(lat)
        if starts is not None and len(starts) == len(lat):
            span = max(a + b for a, b in zip(starts, lat, strict=True)) - min(starts)
        if span > dur and not _close(span, dur):
            out.append(f"`duration` is {dur:.6g} s but the per-request data span "
                       f"{span:.6g} s")
    return out


def check_vllm(doc: dict[str, Any], s: ServeSummary, requests: PerRequest | None,
               where: str) -> None:
    """Refuse a vLLM run whose summary fields disagree with its per-request arrays.

    Every latency statistic the file holds (``<stat>_<metric>_ms``), the token totals and
    the throughputs are recomputed (see the module) and compared; so are the bounds of
    ``_bounds``. Nothing is checked without per-request data. Raises ``UsageError``
    (exit 2) naming ``where``, each disagreeing field (at most five) and both values.
    """
    if requests is None:
        return
    bad = [f"`{key}` is {said:.6g} but the per-request data give {got:.6g}"
           for key, said, got in _totals(doc, s, requests, where)
           if said is not None and not _close(said, got)]
    for metric, values in series(requests).items():
        stats = s.latency.get(metric)
        if stats is None or not values:
            continue
        said_all = {"mean": stats.mean, "median": stats.median, "std": stats.std,
                    **stats.percentiles}
        for stat, said in said_all.items():
            got = stat_ms(values, stat) if said is not None else None
            if said is not None and got is not None and not _close(said, got):
                bad.append(f"`{stat}_{metric}_ms` is {said:.6g} but the per-request data "
                           f"give {got:.6g}")
    bad += _bounds(doc, s, requests, where)
    if bad:
        more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise UsageError(
            f"{where}: the summary disagrees with the file's own per-request data: "
            + "; ".join(bad[:5]) + more + ". The file is inconsistent (edited or corrupt); "
            "pin judges neither version.",
            hint="Judge the file the harness wrote, unedited; rerun the benchmark if it "
                 "was damaged.")


def fill_latency(s: ServeSummary, requests: PerRequest | None) -> ServeSummary:
    """``s`` with the latency statistics it lacks computed from ``requests``: a metric
    the file has no statistic for gets mean, median, std and :data:`FILLED_PERCENTILES`;
    a metric it has gets the missing ones of :data:`FILLED_PERCENTILES`. Each added value
    is named in ``computed`` (``"e2el p99"``, ``"e2el mean"``). ``s`` unchanged without
    per-request data.
    """
    if requests is None:
        return s
    latency = dict(s.latency)
    computed = list(s.computed)
    for metric, values in series(requests).items():
        if not values:
            continue
        stats = latency.get(metric)
        if stats is None:
            stats = LatencyStats(mean=stat_ms(values, "mean"), median=stat_ms(values, "median"),
                                 std=stat_ms(values, "std"))
            computed += [f"{metric} {x}" for x in ("mean", "median", "std")]
        pcts = dict(stats.percentiles)
        for pct in FILLED_PERCENTILES:
            if pct not in pcts:
                pcts[pct] = stat_ms(values, pct)
                computed.append(f"{metric} {pct}")
        latency[metric] = stats.model_copy(update={"percentiles": pcts})
    return s.model_copy(update={"latency": latency, "computed": computed})
