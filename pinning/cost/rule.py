"""Q, cost per million tokens and the ratio rule, as the ROCm migration article states them
(tests/data/rocm-migration-article.txt): "let R be whole-system hourly compute cost and Q be
measured output tokens per second. The derived compute cost per million output tokens is
R x 1,000,000 / (3,600 x Q)" and "AMD's compute cost is lower when its AMD-to-NVIDIA cost
ratio is smaller than its AMD-to-NVIDIA throughput ratio, at equal quality and latency".

Q is taken at the serving point that met the serving gate's SLOs, not at peak throughput:
rankings can flip along the throughput-latency curve, so only a point that met the latency
targets is a fair operating point.
"""

from __future__ import annotations

import math
from fractions import Fraction

from pinning.accept.judge import PointVerdict, load_text
from pinning.accept.result import AcceptanceResult
from pinning.cost.model import BASIS_TEXT, OperatingPoint, PointCost, RatioRule, TokenBasis
from pinning.errors import UsageError

__all__ = ["cost_per_million", "operating_point", "point_costs", "point_rate",
           "ratio_rule"]

#: Preferred token basis first: the article's Q counts output tokens.
_BASES: tuple[TokenBasis, ...] = ("output-tokens", "total-tokens")


def cost_per_million(usd_per_hour: float, tokens_per_s: float) -> float:
    """US dollars per million tokens: ``usd_per_hour`` x 1e6 / (3600 x ``tokens_per_s``).

    ``usd_per_hour`` >= 0 and ``tokens_per_s`` > 0, both finite; ``ValueError`` otherwise
    (a programming error: callers check measured values first).
    """
    if not (math.isfinite(usd_per_hour) and usd_per_hour >= 0):
        raise ValueError(f"usd_per_hour must be finite and >= 0, not {usd_per_hour!r}")
    if not (math.isfinite(tokens_per_s) and tokens_per_s > 0):
        raise ValueError(f"tokens_per_s must be finite and > 0, not {tokens_per_s!r}")
    return usd_per_hour * 1_000_000 / (3600 * tokens_per_s)


def point_rate(point: PointVerdict, basis: TokenBasis) -> float | None:
    """The point's token rate on ``basis`` in tokens per second, or ``None`` when the
    result does not record one (or records one that is not a positive finite number).
    """
    for t in point.summary.throughput:
        if t.name == basis and math.isfinite(t.per_s) and t.per_s > 0:
            return t.per_s
    return None


def result_basis(result: AcceptanceResult) -> TokenBasis | None:
    """The token basis Q is read on for ``result``: ``output-tokens`` when every serving
    point records it (the article's basis), else ``total-tokens`` when every point records
    that, else ``None``.
    """
    points = result.serve.points if result.serve is not None else []
    for basis in _BASES:
        if points and all(point_rate(p, basis) is not None for p in points):
            return basis
    return None


def operating_point(result: AcceptanceResult, basis: TokenBasis, *, label: str,
                    only: set[tuple[int | None, float | None]] | None = None
                    ) -> OperatingPoint | None:
    """The passing serving point with the highest token rate on ``basis`` (goodput at the
    SLOs, not the peak over all points), or ``None`` when no point passed.

    ``only`` restricts the choice to points whose ``(max_concurrency, request_rate)`` is in
    it (the loads both platforms passed). Raises :class:`UsageError` (exit 2) naming
    ``label`` when the result has no serving gate.
    """
    if result.serve is None:
        raise UsageError(f"{label}: the result has no serving gate (serve); pin cost needs "
                         "the measured token rate of a serving run.",
                         hint="Run pin accept run with a [serve] gate, or pin accept judge "
                              "on your serving benchmark's results.")
    best: tuple[float, int, PointVerdict] | None = None
    for i, p in enumerate(result.serve.points):
        rate = point_rate(p, basis)
        key = (p.summary.max_concurrency, p.summary.request_rate)
        if not p.passed or rate is None or (only is not None and key not in only):
            continue
        if best is None or rate > best[0]:
            best = (rate, i, p)
    if best is None:
        return None
    rate, i, p = best
    passed = sum(1 for q in result.serve.points if q.passed)
    peak = max((r for q in result.serve.points if (r := point_rate(q, basis)) is not None),
               default=rate)
    why = (f"the highest {BASIS_TEXT[basis]}/s of the {passed} point(s) that met every SLO "
           f"({load_text(p)})")
    if only is not None:
        why += ", among the loads both platforms passed"
    if peak > rate:
        why += f"; the peak over all points, {peak:.6g}/s, missed an SLO and is not used"
    return OperatingPoint(point=i, source=p.summary.source, index=p.summary.index,
                          max_concurrency=p.summary.max_concurrency,
                          request_rate=p.summary.request_rate, tokens_per_s=rate,
                          basis=basis, chosen=why)


def point_costs(result: AcceptanceResult, basis: TokenBasis | None,
                usd_per_hour: float | None) -> list[PointCost]:
    """Every serving point with its token rate on ``basis`` and its cost per million tokens
    at ``usd_per_hour`` (``None`` where either is unknown), for the cost-across-the-sweep
    plot; failed points are listed with ``passed`` false.
    """
    out: list[PointCost] = []
    for i, p in enumerate(result.serve.points if result.serve is not None else []):
        rate = point_rate(p, basis) if basis is not None else None
        cost = (cost_per_million(usd_per_hour, rate)
                if rate is not None and usd_per_hour is not None else None)
        out.append(PointCost(point=i, max_concurrency=p.summary.max_concurrency,
                             request_rate=p.summary.request_rate, passed=p.passed,
                             tokens_per_s=rate, basis=basis if rate is not None else None,
                             usd_per_million_tokens=cost))
    return out


def ratio_rule(r_current: float | None, q_current: float, r_candidate: float | None,
               q_candidate: float, basis: TokenBasis, *, unknown: str | None = None
               ) -> RatioRule:
    """The ratio rule, candidate over current: cost ratio R_c / R_cur and throughput ratio
    Q_c / Q_cur; the candidate is cheaper per token exactly when cost ratio < throughput
    ratio, decided exactly on the given numbers. Q values must be > 0. When either R is
    unknown the cost ratio and verdict are ``None`` with ``unknown`` (or a default reason);
    an R of 0 on the current platform leaves the cost ratio undefined the same way.
    """
    q_ratio = q_candidate / q_current
    what = BASIS_TEXT[basis]
    if r_current is None or r_candidate is None or r_current <= 0:
        why = unknown or ("a price is unknown" if r_current is None or r_candidate is None
                          else "the current platform's R is 0")
        return RatioRule(basis=basis, cost_ratio=None, throughput_ratio=q_ratio,
                         candidate_cheaper=None, unknown=why,
                         statement=f"throughput ratio {q_ratio:.4g} ({what}/s, candidate / "
                                   f"current); cost ratio unknown: {why}")
    c_ratio = r_candidate / r_current
    # Decided exactly (R_c x Q_cur < R_cur x Q_c), not on the rounded ratios, so the rule
    # agrees with the sign of the savings everywhere, the boundary included.
    exact_c = Fraction(r_candidate) * Fraction(q_current)
    exact_q = Fraction(r_current) * Fraction(q_candidate)
    cheaper = exact_c < exact_q
    word = "smaller" if cheaper else ("equal to" if exact_c == exact_q else "not smaller")
    return RatioRule(
        basis=basis, cost_ratio=c_ratio, throughput_ratio=q_ratio, candidate_cheaper=cheaper,
        statement=(f"cost ratio {c_ratio:.4g} is {word}"
                   f"{' than' if word != 'equal to' else ''} the throughput ratio "
                   f"{q_ratio:.4g} ({what}/s, candidate / current): the candidate's compute "
                   f"cost per {what[:-1] if what.endswith('s') else what} is "
                   + ("lower" if cheaper else "not lower")))
