"""The text of ``pin cost``: each platform's R, Q and cost per million tokens, the ratio
rule, payback with the migration (blocked items priced and waived), the verdict with its
reasons (a result's unverified GPU stack and binding problems first) and the caveats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.cost.model import CostReport, Migration, PlatformCost

__all__ = ["render_text", "usd"]


def usd(value: float | None, unit: str = "") -> str:
    """``$1,234.50``; under a dollar with 4 significant digits (``$0.1234``); negative
    amounts with the sign first (``-$7,587.29``).
    """
    if value is None:
        return "unknown"
    sign, value = ("-", -value) if value < 0 else ("", value)
    return f"{sign}${value:,.4g}{unit}" if 0 < value < 1 else f"{sign}${value:,.2f}{unit}"


def _platform_lines(p: PlatformCost) -> list[str]:
    from pinning.cost.model import BASIS_TEXT

    r = p.rate
    accepted = p.passed if p.accepted is None else p.accepted
    lines = [f"{p.role.capitalize()}: {printable(p.result, newlines=False)}"
             + ("  (NOT EVIDENCE about its stack: see below)" if p.unverified
                or p.binding_problems else "")
             + ("" if accepted else "  (acceptance FAILED: "
                + printable("; ".join(p.not_accepted or p.failed), newlines=False) + ")")]
    if p.sweep is not None:
        lines.append(f"  sweep: {printable(p.sweep, newlines=False)}")
    gpu = printable(r.gpu, newlines=False) if r.gpu else "GPU unknown"
    count = {"lock": "from the lock", "flag": "--gpus", "assumed": "assumed; --gpus N"}[
        r.gpu_count_from]
    price = (f"{usd(r.usd_per_gpu_hour)}/GPU-hour ({printable(r.price.provider or '?')}, "
             f"checked {r.price.checked})" if r.price and r.usd_per_gpu_hour else "no price")
    lines.append(f"  R = {usd(r.usd_per_hour, '/hour')}: {r.gpu_count} x {gpu} ({count}) at "
                 f"{price} + {usd(r.other_usd_per_hour)}/hour other, / utilisation "
                 f"{r.utilisation:g}")
    if r.unknown:
        lines.append(f"    cost unknown: {printable(r.unknown, newlines=False)}")
    op = p.operating_point
    if op is not None:
        lines.append(f"  Q = {op.tokens_per_s:.6g} {BASIS_TEXT[op.basis]}/s: "
                     f"{printable(op.chosen, newlines=False)}")
    basis = BASIS_TEXT[p.basis] if p.basis else "tokens"
    lines.append(f"  cost per million {basis}: {usd(p.usd_per_million_tokens)}"
                 + (f" ({printable(p.unknown, newlines=False)})" if p.unknown else ""))
    lines += [f"  GPU stack not verified: {printable(x, newlines=False)}"
              for x in p.unverified]
    lines += [f"  not bound to its lock: {printable(x, newlines=False)}"
              for x in p.binding_problems]
    return lines


def _migration_text(mig: Migration) -> str:
    """The migration cost and where it came from, for the payback lines."""
    priced = sum(b.usd for b in mig.blocked_priced if b.priced_by == "waivers")
    if mig.effort is None:
        if mig.given_usd is not None and priced:
            return (f"{usd(mig.usd)} ({usd(mig.given_usd)} given + {usd(priced)} for blocked "
                    "items priced in the waivers file)")
        return usd(mig.usd) + " (given)"
    audit = printable(mig.audit or "", newlines=False)
    rate = usd(mig.labour_usd_per_hour)
    if mig.effort.unpriced:
        return (f"unknown ({mig.effort.total_hours:g} h priced so far at {rate}/h; no hours "
                f"given for: {printable(', '.join(mig.effort.unpriced), newlines=False)}; "
                f"from {audit})")
    return (f"{usd(mig.usd)} ({mig.effort.total_hours:g} h x {rate}/h from {audit}"
            + (f" + {usd(priced)} for blocked items priced in the waivers file" if priced
               else "") + ")")


def _settled_lines(report: CostReport) -> list[str]:
    """The verdict's blocked items priced and waived, and its binding problems."""
    v = report.verdict
    if v is None:
        return []
    lines = []
    for b in v.blocked_priced:
        how = (f"{b.hours:g} h" if b.hours is not None else "") + (
            f" = {usd(b.usd)}" if b.hours is not None else usd(b.usd))
        who = (f"; {b.reason} ({b.by}, {b.date})" if b.reason else "")
        lines.append(printable(f"  blocked, priced: {b.finding}: {how} ({b.priced_by} "
                               f"{b.source}){who}", newlines=False))
    lines += [printable(f"  blocked, waived: {w.finding}: {w.reason} ({w.by}, {w.date}; "
                        f"{w.source})", newlines=False) for w in v.blocked_waived]
    return lines


def render_text(report: CostReport) -> str:
    """The report for people: each platform's R, Q and cost per million tokens (basis
    named), the ratio rule, payback, the verdict with its reasons, and caveats.
    """
    from pinning.cost.model import BASIS_TEXT

    lines = [report.formula + " (the ROCm migration article)", ""]
    for p in report.platforms:
        lines += _platform_lines(p)
    if report.ratio is not None:
        lines += ["", f"Ratio rule: {printable(report.ratio.statement, newlines=False)}."]
    pay = report.payback
    if pay is not None:
        basis = BASIS_TEXT[pay.basis] if pay.basis else "tokens"
        mig = pay.migration
        mig_text = "not given" if mig is None else _migration_text(mig)
        lines += ["", "Payback:",
                  f"  one-time: {usd(pay.one_time_usd)} = migration {mig_text} + validation "
                  f"{usd(pay.validation_usd)} ({pay.validation_gpu_hours:g} GPU-hours)",
                  f"  savings per month: {usd(pay.savings_usd_per_month)} at "
                  + (f"{pay.tokens_per_month:,.0f} {basis}/month" if pay.tokens_per_month
                     else "an unknown volume")
                  + f" - maintenance {usd(pay.maintenance_usd_per_month)} = "
                  f"{usd(pay.net_savings_usd_per_month)}",
                  "  payback: " + (f"{pay.months:.3g} months" if pay.months is not None
                                   else f"none ({printable(pay.unknown or '', newlines=False)})")
                  + (f"; remaining life {pay.life_months:g} months"
                     if pay.life_months is not None else "")]
    if report.verdict is not None:
        lines += ["", f"Verdict: {report.verdict.decision.upper()}"]
        lines += [f"  - {r.code}: {printable(r.text, newlines=False)}"
                  for r in report.verdict.reasons]
        lines += _settled_lines(report)
    if report.caveats:
        lines += ["", "Caveats:"] + [f"  - {printable(c, newlines=False)}"
                                     for c in report.caveats]
    return "\n".join(lines) + "\n"

