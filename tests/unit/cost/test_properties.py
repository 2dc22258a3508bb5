"""Property tests (hypothesis) of the article's rules: units are consistent, cost falls as
Q rises, payback is monotone in savings, and the verdict flips exactly at the ratio-rule
boundary.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinning.cost.decide import decide
from pinning.cost.model import GpuRate, Migration, OperatingPoint, PlatformCost
from pinning.cost.payback import payback, pays_back_within
from pinning.cost.rule import cost_per_million, ratio_rule

usd = st.floats(min_value=0.01, max_value=1e4, allow_nan=False, allow_infinity=False)
tps = st.floats(min_value=0.01, max_value=1e6, allow_nan=False, allow_infinity=False)
factor = st.floats(min_value=1.0001, max_value=100.0)


@given(usd, tps)
def test_units_consistent(r: float, q: float) -> None:
    # USD/hour x hours needed for a million tokens (1e6 / (Q x 3600 s/h)) = USD per million.
    cost = cost_per_million(r, q)
    assert cost == pytest.approx(r * (1e6 / (q * 3600)), rel=1e-12)
    # Twice the rate costs twice as much; a system billed per hour scales linearly.
    assert cost_per_million(2 * r, q) == pytest.approx(2 * cost, rel=1e-12)
    # Spending `cost` buys a million tokens: cost / (R per s) seconds x Q tokens/s = 1e6.
    assert cost / (r / 3600) * q == pytest.approx(1e6, rel=1e-9)


@given(usd, tps, factor)
def test_cost_falls_as_q_rises(r: float, q: float, k: float) -> None:
    assert cost_per_million(r, q * k) < cost_per_million(r, q)


def _pay(net_savings_factor: float, one_time: float) -> float | None:
    """Payback months for a candidate whose per-token cost is cut to 1/net_savings_factor."""
    p = payback(basis="output-tokens", current=(10.0, 100.0),
                candidate=(10.0, 100.0 * net_savings_factor),
                migration=Migration(kind="given", usd=one_time),
                tokens_per_month=1e9, life_months=12)
    return p.months


@given(st.floats(min_value=1.001, max_value=50), st.floats(min_value=1.001, max_value=50),
       st.floats(min_value=0, max_value=1e7))
def test_payback_monotone_in_savings(a: float, b: float, one_time: float) -> None:
    lo, hi = sorted((a, b))
    months_lo, months_hi = _pay(lo, one_time), _pay(hi, one_time)
    assert months_lo is not None and months_hi is not None
    assert months_hi <= months_lo  # more savings never lengthen payback


@given(st.floats(min_value=0, max_value=1e6), st.floats(min_value=0, max_value=1e6),
       st.floats(min_value=0, max_value=1e6))
def test_payback_monotone_in_maintenance(m1: float, m2: float, one_time: float) -> None:
    lo, hi = sorted((m1, m2))

    def months(m: float) -> float:
        p = payback(basis="output-tokens", current=(10.0, 100.0), candidate=(5.0, 100.0),
                    migration=Migration(kind="given", usd=one_time),
                    maintenance_usd_per_month=m, tokens_per_month=1e12)
        return p.months if p.months is not None else float("inf")

    assert months(lo) <= months(hi)


def test_no_payback_when_savings_not_positive() -> None:
    p = payback(basis="output-tokens", current=(10.0, 100.0), candidate=(10.0, 100.0),
                migration=Migration(kind="given", usd=1000.0), tokens_per_month=1e9)
    assert p.months is None and p.net_savings_positive is False
    assert "never pays back" in (p.unknown or "")


def _platform(role: Literal["current", "candidate"], r: float, q: float) -> PlatformCost:
    rate = GpuRate(gpu="X", gpu_from="flag", gpu_count=1, gpu_count_from="assumed",
                   price=None, usd_per_gpu_hour=r, usd_per_hour=r)
    op = OperatingPoint(point=0, source="f", index=0, max_concurrency=1, request_rate=None,
                        tokens_per_s=q, basis="output-tokens", chosen="test")
    return PlatformCost(role=role, result=f"{role}.json", passed=True,
                        rate=rate, operating_point=op, basis="output-tokens",
                        usd_per_million_tokens=cost_per_million(r, q))


def _verdict(r_cur: float, q_cur: float, r_cand: float, q_cand: float) -> str:
    a, b = _platform("current", r_cur, q_cur), _platform("candidate", r_cand, q_cand)
    ratio = ratio_rule(r_cur, q_cur, r_cand, q_cand, "output-tokens")
    # No one-time cost and no maintenance: payback is 0 months whenever savings are positive,
    # so only the ratio rule can decide.
    pay = payback(basis="output-tokens", current=(r_cur, q_cur), candidate=(r_cand, q_cand),
                  migration=Migration(kind="given", usd=0.0), tokens_per_month=1e9,
                  life_months=1.0)
    return decide(a, b, ratio, pay, Migration(kind="given", usd=0.0)).decision


@given(usd, tps, usd, tps)
def test_verdict_flips_exactly_at_ratio_rule_boundary(r_cur: float, q_cur: float,
                                                      r_cand: float, q_cand: float) -> None:
    rule = ratio_rule(r_cur, q_cur, r_cand, q_cand, "output-tokens")
    assert rule.cost_ratio is not None
    assert _verdict(r_cur, q_cur, r_cand, q_cand) == ("port" if rule.candidate_cheaper
                                                      else "stay")


@given(st.integers(min_value=1, max_value=10_000), st.integers(min_value=1, max_value=10**6),
       st.integers(min_value=1, max_value=64))
def test_verdict_at_the_boundary_and_either_side(r: int, q: int, k: int) -> None:
    # Whole numbers, so R x k and Q x k are exact floats: exactly on the boundary (cost
    # ratio = throughput ratio = k) the costs are equal and the verdict is stay.
    rule = ratio_rule(float(r), float(q), float(r * k), float(q * k), "output-tokens")
    assert rule.candidate_cheaper is False and rule.cost_ratio == rule.throughput_ratio
    assert _verdict(r, q, float(r * k), float(q * k)) == "stay"
    # A hair cheaper per token: port; a hair dearer: stay.
    assert _verdict(r, q, r * k * 0.999, float(q * k)) == "port"
    assert _verdict(r, q, r * k * 1.001, float(q * k)) == "stay"


def test_validation_is_gpu_hours_at_the_price_per_gpu_hour() -> None:
    p = payback(basis="output-tokens", current=(10.0, 100.0), candidate=(30.0, 1000.0),
                validation_usd_per_gpu_hour=2.5, migration=Migration(kind="given", usd=0.0),
                validation_gpu_hours=8, tokens_per_month=1e9)
    assert p.validation_usd == 20.0 and p.one_time_usd == 20.0
    unpriced = payback(basis="output-tokens", current=(10.0, 100.0), candidate=(None, 1000.0),
                       validation_usd_per_gpu_hour=None,
                       migration=Migration(kind="given", usd=0.0), validation_gpu_hours=8)
    assert unpriced.validation_usd is None and unpriced.months is None
    free = payback(basis="output-tokens", current=(10.0, 100.0), candidate=(30.0, 1000.0),
                   validation_usd_per_gpu_hour=None, migration=Migration(kind="given", usd=0.0))
    assert free.validation_usd == 0.0


@given(st.integers(min_value=1, max_value=10**6), st.integers(min_value=1, max_value=1000))
def test_within_life_is_exact(one_time: int, life: int) -> None:
    # R 3600 USD/h at 1 token/s against a free candidate: savings are exactly T USD per
    # month for T tokens per month. With T = one_time / life (a rounded float) payback is
    # about the life; within-life must agree with the exact rational comparison.
    monthly = one_time / life

    def within(extra: float) -> bool | None:
        p = payback(basis="output-tokens", current=(3600.0, 1.0), candidate=(0.0, 1.0),
                    migration=Migration(kind="given", usd=one_time + extra),
                    tokens_per_month=monthly, life_months=float(life))
        return p.within_life

    assert within(0.0) is (Fraction(one_time) / Fraction(monthly) < life)
    assert within(-0.01) is True
    assert within(0.01) is False


def test_pays_back_within() -> None:
    assert pays_back_within(12.0, 12.0) is False
    assert pays_back_within(11.999, 12.0) is True
    assert pays_back_within(None, 12.0) is None
