"""The verdict of ``pin cost``: port, stay or inconclusive, with every reason that decided it.

The ROCm migration article (tests/data/rocm-migration-article.txt): "Port when the
supported ROCm build passes your acceptance run and measured savings repay migration within
the workload's remaining life ... require a working pinned environment and a positive
payback calculation before committing the workload to AMD." A blocked audit item is a
reason to stay until the team prices or waives it (:mod:`pinning.cost.blocked`); a result
that is not bound to its lock, whose GPU stack pin did not verify, or that is the same
measurement as the other (:mod:`pinning.cost.binding`) never supports ``port``: a result is
evidence about one stack.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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

__all__ = ["decide", "evidence_reasons"]

_StayCode = Literal["acceptance-failed", "audit-blocked", "no-savings", "payback-too-long",
                    "cost-unknown", "input-missing"]
_Add = Callable[[_StayCode, str], None]

#: Reasons to stay that come from the measured figures: from results that are not evidence
#: about the stacks priced they decide nothing (the verdict is then inconclusive).
_MEASURED: frozenset[_StayCode] = frozenset({"acceptance-failed", "no-savings",
                                             "payback-too-long"})


def _shown(items: list[str], limit: int = 5) -> str:
    """The first ``limit`` of ``items`` joined with "; ", and how many more."""
    return "; ".join(items[:limit]) + (f"; and {len(items) - limit} more"
                                       if len(items) > limit else "")


def evidence_reasons(current: PlatformCost, candidate: PlatformCost,
                     same: Sequence[str] = ()) -> list[VerdictReason]:
    """Why the two results are not evidence about the stacks priced, unknown first:
    ``unverified`` per GPU stack pin did not verify, ``unbound`` per binding problem,
    ``same-measurement`` per sentence of ``same`` (both judged from the same files).
    Raises nothing.
    """
    out = [VerdictReason(code="unverified", text=(
        f"the {p.role} result {p.result}: {x}: not evidence about the GPU stack it is priced "
        f"for ({p.rate.gpu or 'GPU unknown'})")) for p in (current, candidate)
        for x in p.unverified]
    out += [VerdictReason(code="unbound", text=f"the {p.role} ({p.result}): {x}: the result "
                          "is not evidence about the stack it is priced for")
            for p in (current, candidate) for x in p.binding_problems]
    out += [VerdictReason(code="same-measurement", text=x) for x in same]
    return out


def decide(current: PlatformCost, candidate: PlatformCost, ratio: RatioRule | None,
           pay: Payback | None, migration: Migration | None,
           same: Sequence[str] = ()) -> Verdict:
    """``port`` when both results are accepted (``accepted``, else ``passed`` for a
    platform priced before pin recorded it; see :func:`pinning.cost.verdict.acceptance`),
    bound (no ``binding-problems``) with their GPU stack verified (no ``unverified``) and two
    measurements (``same`` empty: see :func:`pinning.cost.binding.same_measurement`), every
    blocked item of the audit is priced or waived, the ratio rule finds the candidate
    cheaper and payback is shorter than the remaining life. Otherwise the evidence
    problems (:func:`evidence_reasons`) come first, then every reason to stay (codes in
    :data:`~pinning.cost.model.VerdictCode`): ``inconclusive`` when there are evidence
    problems and the figures say port or only measured figures say stay (:data:`_MEASURED`,
    or a cost unknown because of the measurement), else ``stay``. Without an audit
    (``migration.audit`` None) the port text says blocked items were not checked. Raises
    nothing.
    """
    reasons: list[VerdictReason] = []
    measured: list[bool] = []

    def add(code: _StayCode, text: str, from_measurement: bool | None = None) -> None:
        reasons.append(VerdictReason(code=code, text=text))
        measured.append(code in _MEASURED if from_measurement is None else from_measurement)

    _acceptance_reasons(current, candidate, add)
    _blocked_reasons(migration, add)
    unknown = [p for p in (current, candidate) if p.usd_per_million_tokens is None and p.unknown]
    if unknown:
        add("cost-unknown", "cost per million tokens unknown for " + "; ".join(
            f"{p.role} ({p.result}): {p.unknown}" for p in unknown),
            from_measurement=all(p.rate.unknown is None for p in unknown))
    if ratio is not None and ratio.candidate_cheaper is False:
        add("no-savings", "the ratio rule: " + ratio.statement)
    elif pay is not None and pay.net_savings_positive is False:
        assert pay.net_savings_usd_per_month is not None
        add("no-savings", f"net savings are {pay.net_savings_usd_per_month:,.2f} USD per "
            f"month after {pay.maintenance_usd_per_month:,.2f} USD per month of maintenance "
            "and repeat validation (<= 0): the port never pays back")
    if pay is not None:
        _payback_reasons(pay, migration, add)
    evidence = evidence_reasons(current, candidate, same)
    extra = {"blocked_priced": migration.blocked_priced if migration else [],
             "blocked_waived": migration.blocked_waived if migration else [],
             "binding_problems": [f"{p.role} ({p.result}): {x}" for p in (current, candidate)
                                  for x in p.binding_problems]}
    if reasons:
        decision = "inconclusive" if evidence and all(measured) else "stay"
        return Verdict(decision=decision, reasons=evidence + reasons, **extra)
    pays = _pays_back(current, candidate, ratio, pay, migration)
    if evidence:
        pays = pays.model_copy(update={"text": "the figures alone would say port, but they "
                                       "are not evidence about these stacks: " + pays.text})
    return Verdict(decision="inconclusive" if evidence else "port", reasons=[*evidence, pays],
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
