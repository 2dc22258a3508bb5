"""Judge normalised serving results against ``[serve.slo]``: per SLO the measured value,
the limit, pass or fail with a one-line reason; one verdict per run and one overall.

Goodput is recomputed from the per-request arrays when the file holds them: a request is
good when its TTFT, TPOT = (latency - TTFT) / (output tokens - 1), largest inter-token gap
and end-to-end latency are each within the per-request limit. vLLM's ``--goodput`` counts
the same way for TTFT, TPOT and end-to-end latency (vllm-project/vllm@
009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1:vllm/benchmarks/serve.py, commit date not
recorded; after DistServe, arXiv 2401.09670) and has no ITL limit: the limit on a
request's largest gap is pin's own. Without per-request latencies goodput is not measured
and its check fails: a file's own ``request_goodput`` counts against the harness's
``--goodput`` flags, which the file does not record, so pin cannot tell what it measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pinning.accept.config import LatencyMetric, ServeSlo
from pinning.accept.summary import PerRequest, ReadResult, ServeSummary
from pinning.util.models import Strict

__all__ = ["Check", "PointVerdict", "failed_lines", "goodput", "judge_point", "load_text",
           "load_words", "make_check", "percentile"]

Basis = Literal["from-file", "recomputed", "missing"]


class Check(Strict):
    """One SLO on one run: ``slo`` is the gates-file key (``ttft-p99-ms``), ``measured``
    the value (``None`` when the file does not hold it), ``limit`` the bound, ``bound``
    whether the measured value must stay at or below (``max``) or reach (``min``) it,
    ``basis`` where the value came from, ``reason`` one line for people.
    """

    slo: str
    measured: float | None
    limit: float
    unit: str
    bound: Literal["max", "min"]
    basis: Basis
    passed: bool
    reason: str


class PointVerdict(Strict):
    """A run (one concurrency or rate point) with its checks; ``passed`` when all pass.
    ``requests``: the per-request arrays (seconds) of a run pin's load generator measured,
    kept so the run can be judged again (:func:`judge_point` of ``ReadResult(summary,
    requests)``); ``None`` for a judged file (the file keeps them) and for a run without
    them (``summary.detailed`` false).
    """

    summary: ServeSummary
    checks: list[Check]
    passed: bool
    requests: PerRequest | None = None


def load_words(concurrency: int | None, rate: float | None) -> str:
    """A load for people: ``concurrency 4``, ``rate 2 req/s``, both (``concurrency 4, rate
    2 req/s``) or ``unlimited rate``; the one wording of every table and message.
    """
    parts = [f"concurrency {concurrency}"] if concurrency is not None else []
    parts += [f"rate {rate:g} req/s"] if rate is not None else []
    return ", ".join(parts) or "unlimited rate"


def load_text(point: PointVerdict) -> str:
    """:func:`load_words` of a run's concurrency and request rate."""
    return load_words(point.summary.max_concurrency, point.summary.request_rate)


def failed_lines(points: Sequence[PointVerdict]) -> list[str]:
    """``<source>#<index> (<load>): <slo>: <reason>`` for every failed check of ``points``,
    in order: the serve gate's ``failed-checks`` entries for its runs.
    """
    return [f"{p.summary.source}#{p.summary.index} ({load_text(p)}): {c.slo}: {c.reason}"
            for p in points for c in p.checks if not c.passed]


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile (0-100) of ``values`` with linear interpolation between
    closest ranks (numpy's default ``linear`` method; vLLM computes its percentiles with
    ``np.percentile``, vllm-project/vllm@009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1:
    vllm/benchmarks/serve.py). ``values`` must not be empty.
    """
    data = sorted(values)
    pos = (len(data) - 1) * pct / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (pos - low)


def _tpot_s(requests: PerRequest, i: int) -> float:
    """Request ``i``'s time per output token in seconds (0 with one token or none)."""
    assert requests.latencies is not None
    n = requests.output_lens[i]
    return (requests.latencies[i] - requests.ttfts[i]) / (n - 1) if n > 1 else 0.0


def goodput(requests: PerRequest, limits_ms: dict[LatencyMetric, float],
            duration_s: float) -> tuple[int, float]:
    """``(good requests, good requests per second)``: successful requests (empty error)
    whose every limited metric is within ``limits_ms``; needs ``latencies``.
    """
    assert requests.latencies is not None
    good = 0
    for i, error in enumerate(requests.errors):
        if error:
            continue
        values = {"ttft": requests.ttfts[i], "tpot": _tpot_s(requests, i),
                  "itl": max(requests.itls[i], default=0.0),
                  "e2el": requests.latencies[i]}
        if all(values[m] * 1000.0 <= limit for m, limit in limits_ms.items()):
            good += 1
    return good, good / duration_s if duration_s > 0 else 0.0


def _recomputed(requests: PerRequest | None, metric: str, pct: str) -> float | None:
    """``metric``'s ``pct`` percentile in ms from the per-request arrays, or ``None``."""
    if requests is None:
        return None
    ok = [i for i, e in enumerate(requests.errors) if not e]
    if metric == "ttft":
        vals = [requests.ttfts[i] for i in ok]
    elif metric == "itl":
        vals = [g for i in ok for g in requests.itls[i]]
    elif requests.latencies is None:
        return None
    elif metric == "tpot":
        vals = [_tpot_s(requests, i) for i in ok if requests.output_lens[i] > 1]
    else:
        vals = [requests.latencies[i] for i in ok]
    return percentile(vals, float(pct[1:])) * 1000.0 if vals else None


_RECOMPUTED = ", recomputed from the per-request data"


def make_check(slo: str, measured: float | None, limit: float, unit: str,
               bound: Literal["max", "min"], basis: Basis, missing: str,
               note: str = "") -> Check:
    """A :class:`Check` of ``measured`` against ``limit`` (``unit`` may be empty) in the
    ``bound`` direction, with its reason sentence (``0.41 ms <= 2 ms`` then ``note``);
    failed with ``not measured: <missing>`` when ``measured`` is ``None``.
    """
    if measured is None:
        return Check(slo=slo, measured=None, limit=limit, unit=unit, bound=bound,
                     basis="missing", passed=False, reason=f"not measured: {missing}")
    passed = measured <= limit if bound == "max" else measured >= limit
    word = ("<=" if passed else ">") if bound == "max" else (">=" if passed else "<")
    u = f" {unit}" if unit else ""
    reason = f"{measured:.6g}{u} {word} {limit:.6g}{u}" + ("" if passed else " (limit)")
    return Check(slo=slo, measured=measured, limit=limit, unit=unit, bound=bound,
                 basis=basis, passed=passed, reason=reason + note)


def judge_point(read: ReadResult, slo: ServeSlo, *, keep_requests: bool = False) -> PointVerdict:
    """Judge one run against every SLO set in ``slo``, then ``completed-min`` (at least
    one request completed), which is always judged: a run that completed nothing fails
    whatever its other values say. ``keep_requests`` keeps ``read.requests`` in the
    verdict (pin's own runs).
    """
    s, reqs = read.summary, read.requests
    checks: list[Check] = []
    for key, metric, pct, limit in slo.latency_limits():
        stats = s.latency.get(metric)
        value = stats.percentiles.get(pct) if stats else None
        if value is None and pct == "p50" and stats is not None:
            value = stats.median
        basis: Basis = "recomputed" if f"{metric} {pct}" in s.computed else "from-file"
        if value is None:
            value = _recomputed(reqs, metric, pct)
            basis = "recomputed"
        checks.append(make_check(key, value, limit, "ms", "max", basis,
                                 f"the results have no {pct} {metric.upper()} and no "
                                 "per-request data to compute it from",
                                 _RECOMPUTED if basis == "recomputed" else ""))
    if slo.failed_max is not None:
        checks.append(make_check("failed-max", None if s.failed is None else float(s.failed),
                                 float(slo.failed_max), "requests", "max", "from-file",
                                 "the results do not record failed requests"))
    if slo.goodput_min_rps is not None:
        checks.append(_goodput_check(s, reqs, slo))
    rates: dict[str, float] = {t.name: t.per_s for t in s.throughput}
    for key, name, limit_rate, unit in (
            ("request-throughput-min-rps", "requests", slo.request_throughput_min_rps,
             "req/s"),
            ("output-throughput-min-tps", "output-tokens", slo.output_throughput_min_tps,
             "output tok/s")):
        if limit_rate is not None:
            checks.append(make_check(key, rates.get(name), limit_rate, unit, "min",
                                     "from-file", f"the results have no {name} throughput"))
    checks.append(_completed_check(s))
    return PointVerdict(summary=s, checks=checks, passed=all(c.passed for c in checks),
                        requests=reqs if keep_requests else None)


def _completed_check(s: ServeSummary) -> Check:
    """``completed-min``: at least one request completed. Always judged, whatever the
    SLOs: a run in which no request completed measured nothing (its latencies, if any,
    describe no successful request), so it can never pass.
    """
    check = make_check("completed-min", float(s.completed), 1.0, "requests", "min",
                       "from-file", "")
    if check.passed:
        return check
    return check.model_copy(update={"reason": "no request completed: nothing was measured"
                                    + (f" ({s.failed} failed)" if s.failed else "")})


def _goodput_check(s: ServeSummary, reqs: PerRequest | None, slo: ServeSlo) -> Check:
    """``goodput-min-rps``: recomputed with ``slo``'s per-request limits when the
    per-request arrays (with latencies) and the duration are there; else not measured
    (failed), naming the file's own goodput, whose SLOs the file does not record.
    """
    assert slo.goodput_min_rps is not None
    limits = slo.per_request_limits()
    if reqs is not None and reqs.latencies is not None and s.duration_s:
        good, rate = goodput(reqs, limits, s.duration_s)
        return make_check("goodput-min-rps", rate, slo.goodput_min_rps, "req/s", "min",
                          "recomputed", "",
                          f"{_RECOMPUTED} ({good} good of {len(reqs.errors)} requests)")
    own = next((t.per_s for t in s.throughput if t.name == "goodput"), None)
    why = "no per-request latencies to count good requests against these SLOs"
    if own is not None:
        why += (f" (the file's own goodput, {own:.6g} req/s, counts against its harness's "
                "--goodput SLOs, which the file does not record)")
    return make_check("goodput-min-rps", None, slo.goodput_min_rps, "req/s", "min",
                      "missing", why)
