"""The verdict of ``pin cost``: port, stay or inconclusive, with every reason that decided it.

The ROCm migration article (tests/data/rocm-migration-article.txt): "Port when the
supported ROCm build passes your acceptance run and measured savings repay migration within
the workload's remaining life ... require a working pinned environment and a positive
payback calculation before committing the workload to AMD." A blocked audit item is a
reason to stay until the team prices or waives it (:mod:`pinning.cost.blocked`); a result
that is not bound to its lock (:mod:`pinning.cost.binding`) never supports ``port``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pinning.cost.model import (
    BASIS_TEXT,
    Migration,
    Payback,
    PlatformCost,
    RatioRule,
    Verdict,
    VerdictReason,
)
from pinning.cost.payback import pays_back_within

__all__ = ["decide"]

_StayCode = Literal["acceptance-failed", "audit-blocked", "no-savings", "payback-too-long",
                    "cost-unknown", "input-missing"]
_Add = Callable[[_StayCode, str], None]


def _shown(items: list[str], limit: int = 5) -> str:
    """The first ``limit`` of ``items`` joined with "; ", and how many more."""
    return "; ".join(items[:limit]) + (f"; and {len(items) - limit} more"
                                       if len(items) > limit else "")


def decide(current: PlatformCost, candidate: PlatformCost, ratio: RatioRule | None,
           pay: Payback | None, migration: Migration | None) -> Verdict:
    """``port`` when both results are accepted (``accepted``, else ``passed`` for a
    platform priced before pin recorded it; see :func:`pinning.cost.verdict.acceptance`)
    and bound (no ``binding-problems``), every blocked item of the audit is priced or
    waived, the ratio rule finds the candidate cheaper and payback is shorter than the
    remaining life. ``stay`` with every reason that applies when a condition other than
    binding fails (codes in :data:`~pinning.cost.model.VerdictCode`; binding problems are
    then reasons too); ``inconclusive`` when only binding keeps it from ``port``. Without
    an audit (``migration.audit`` None) the port text says blocked items were not checked.
    Raises nothing.
    """
    reasons: list[VerdictReason] = []

    def add(code: _StayCode, text: str) -> None:
        reasons.append(VerdictReason(code=code, text=text))

    _acceptance_reasons(current, candidate, add)
    _blocked_reasons(migration, add)
    unknown_costs = [f"{p.role} ({p.result}): {p.unknown}" for p in (current, candidate)
                     if p.usd_per_million_tokens is None and p.unknown]
    if unknown_costs:
        add("cost-unknown", "cost per million tokens unknown for " + "; ".join(unknown_costs))
    if ratio is not None and ratio.candidate_cheaper is False:
        add("no-savings", "the ratio rule: " + ratio.statement)
    elif pay is not None and pay.net_savings_positive is False:
        assert pay.net_savings_usd_per_month is not None
        add("no-savings", f"net savings are {pay.net_savings_usd_per_month:,.2f} USD per "
            f"month after {pay.maintenance_usd_per_month:,.2f} USD per month of maintenance "
            "and repeat validation (<= 0): the port never pays back")
    if pay is not None:
        _payback_reasons(pay, migration, add)
    problems = [f"{p.role} ({p.result}): {x}" for p in (current, candidate)
                for x in p.binding_problems]
    unbound = [VerdictReason(code="unbound", text=f"the {x}: the result is not evidence about "
                             "the stack it is priced for") for x in problems]
    extra = {"blocked_priced": migration.blocked_priced if migration else [],
             "blocked_waived": migration.blocked_waived if migration else [],
             "binding_problems": problems}
    if reasons:
        return Verdict(decision="stay", reasons=reasons + unbound, **extra)
    pays = _pays_back(current, candidate, ratio, pay, migration)
    return Verdict(decision="inconclusive" if unbound else "port", reasons=[*unbound, pays],
                   **extra)


def _acceptance_reasons(current: PlatformCost, candidate: PlatformCost, add: _Add) -> None:
    """``acceptance-failed`` for each result not accepted."""
    for p in (current, candidate):
        accepted = p.passed if p.accepted is None else p.accepted
        if not accepted:
            why = p.failed if p.accepted is None else p.not_accepted
            shown = _shown(why)
            add("acceptance-failed", f"the {p.role} result {p.result} failed acceptance"
                + (f": {shown}" if shown else ""))


def _blocked_reasons(migration: Migration | None, add: _Add) -> None:
    """``audit-blocked`` for the blocked items neither priced nor waived (every blocked
    item for a migration recorded before pin settled them).
    """
    if migration is None:
        return
    open_items = (migration.blocked if migration.blocked_unpriced is None
                  else migration.blocked_unpriced)
    if open_items:
        add("audit-blocked", f"the audit has {len(open_items)} blocked item(s) with no ROCm "
            f"equivalent, neither priced nor waived: {_shown(open_items)} (price each in "
            "the effort file or a [[price]] row of --waivers, or waive it with a reason)")


def _pays_back(current: PlatformCost, candidate: PlatformCost, ratio: RatioRule | None,
               pay: Payback | None, migration: Migration | None) -> VerdictReason:
    """The ``pays-back`` reason: what the figures show, blocked items included."""
    assert pay is not None and pay.months is not None and pay.life_months is not None
    assert ratio is not None and ratio.cost_ratio is not None
    what = BASIS_TEXT[ratio.basis]
    if migration is None or migration.audit is None:
        blocked = ("no porting bill given (--migration AUDIT.json): blocked items were not "
                   "checked")
    elif not migration.blocked:
        blocked = "no blocked item"
    else:
        blocked = (f"every blocked item priced ({len(migration.blocked_priced)}, "
                   f"{sum(b.usd for b in migration.blocked_priced):,.2f} USD in the migration "
                   f"cost) or waived ({len(migration.blocked_waived)})")
    sweeps = [f"{p.role}: {p.sweep}" for p in (current, candidate)
              if p.sweep is not None and not all(pt.passed for pt in p.points)]
    return VerdictReason(
        code="pays-back",
        text=("both results passed acceptance"
              + (f" ({'; '.join(sweeps)})" if sweeps else "")
              + f"; {blocked}; the ratio rule: cost ratio "
              f"{ratio.cost_ratio:.4g} < throughput ratio {ratio.throughput_ratio:.4g} "
              f"({what}/s); payback {pay.months:.3g} months < remaining life "
              f"{pay.life_months:g} months"))


def _payback_reasons(pay: Payback, migration: Migration | None, add: _Add) -> None:
    """The payback-related reasons to stay: unknown inputs, payback >= life."""
    if migration is None:
        add("input-missing", "no migration cost is given (--migration AUDIT --effort FILE "
            "--labour-usd-per-hour X, or --migration-usd X); payback cannot be computed")
    elif migration.usd is None:
        add("cost-unknown", f"the migration cost is unknown: {migration.unknown}")
    if pay.tokens_per_month is None:
        add("input-missing", "--tokens-per-month is not given: monthly savings and payback "
            "cannot be computed")
    if pay.life_months is None:
        add("input-missing", "--life-months is not given: payback cannot be checked against "
            "the workload's remaining life")
    within = (pay.within_life if pay.within_life is not None
              else pays_back_within(pay.months, pay.life_months))
    if within is False:
        assert pay.months is not None
        add("payback-too-long", f"payback {pay.months:.3g} months is not shorter than the "
            f"remaining life {pay.life_months:g} months")
