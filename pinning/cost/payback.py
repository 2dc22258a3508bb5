"""The one-time migration cost and payback.

The ROCm migration article (tests/data/rocm-migration-article.txt): "For payback, estimate
migration labor, validation compute and ongoing maintenance. Divide the one-time migration
cost by positive recurring savings to estimate the recovery period. Choose the time unit
consistently. Reject a port whose payback extends beyond the workload's expected life, and
include repeat validation in the maintenance budget."

pin's time unit is the month. Migration labour comes from the porting audit's findings at
the team's hours per finding (the ``pin audit --effort`` file, read by
:func:`pinning.audit.bill.read_effort`) times a labour rate, or is given as a number; blocked
findings are priced or waived as :mod:`pinning.cost.blocked` settles them.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

from pinning.audit.bill import AuditReport, estimate
from pinning.audit.model import Kind, Verdict
from pinning.cost.blocked import WaiverFile, finding_id, settle_blocked
from pinning.cost.model import Migration, Payback, TokenBasis
from pinning.errors import UsageError

__all__ = ["migration_from_audit", "migration_given", "payback", "pays_back_within",
           "read_audit"]

_AUDIT_HINT = ("Pass the bill `pin audit --format json -o audit.json` wrote (or the envelope "
               "`pin audit --format json` printed).")


def read_audit(path: Path) -> AuditReport:
    """Read a porting audit: the report ``pin audit -o FILE --format json`` writes, or the
    ``--format json`` envelope around it (its ``result``).

    Raises :class:`UsageError` (exit 2) naming the file when it cannot be read, is not
    JSON, or is not an audit report (naming the first field that does not fit).
    """
    from pydantic import ValidationError

    from pinning.util.files import decode_utf8, read_regular_bytes
    from pinning.util.jsonread import load_json
    from pinning.util.models import error_location
    from pinning.util.text import printable

    label = f"Audit {path}"
    raw = read_regular_bytes(Path(path), UsageError, label=label, hint=_AUDIT_HINT,
                             limit=256 * 1024 * 1024)
    doc = load_json(decode_utf8(raw, UsageError, label=label, hint=_AUDIT_HINT), UsageError,
                    label=label, hint=_AUDIT_HINT)
    if isinstance(doc, dict) and "result" in doc and "command" in doc:
        command = doc.get("command")
        if command != "audit":
            raise UsageError(f"{label}: the output of pin {printable(str(command))}, not of "
                             "pin audit (its envelope's command is "
                             f"{printable(repr(command))}).", hint=_AUDIT_HINT)
        if not isinstance(doc["result"], dict):
            raise UsageError(f"{label}: a pin audit envelope whose result is not an audit "
                             f"report (it is {_json_kind(doc['result'])}, not an object).",
                             hint=_AUDIT_HINT)
        doc = doc["result"]
    try:
        return AuditReport.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = error_location(err["loc"], doc) or "the document"
        raise UsageError(f"{label}: not a pin audit report: {where}: {err['msg']}.",
                         hint=_AUDIT_HINT) from exc


def _json_kind(value: object) -> str:
    """``null``, ``a list``, ``a string``... for messages about a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), "not an object")


def _no_data(report: AuditReport) -> int:
    """How many findings are ``no-data`` (pin's data says nothing about them)."""
    return sum(1 for f in report.findings if f.verdict is Verdict.NO_DATA)


def _blocked(report: AuditReport) -> list[str]:
    """The id (:func:`~pinning.cost.blocked.finding_id`) of every blocked finding."""
    return [finding_id(f) for f in report.findings if f.verdict is Verdict.BLOCKED]


def migration_from_audit(report: AuditReport, audit_name: str,
                         hours: dict[Kind, dict[Verdict, float]], effort_name: str,
                         labour_usd_per_hour: float, waivers: WaiverFile | None = None,
                         waivers_name: str | None = None,
                         waivers_sha256: str | None = None) -> Migration:
    """Migration labour in US dollars: the audit's findings x ``hours`` (hours per finding
    by kind and verdict, :func:`pinning.audit.bill.read_effort`) x ``labour_usd_per_hour``,
    plus the dollars of the blocked findings ``waivers`` prices; blocked findings it waives
    cost nothing (:func:`~pinning.cost.blocked.settle_blocked`).

    A kind found that ``hours`` gives no number for makes the cost unknown (``usd`` ``None``
    with the reason), never zero; a blocked finding neither priced nor waived is listed in
    ``blocked-unpriced``. ``no-data`` findings have no hours (pin knows nothing of
    them): they are counted in ``no_data_findings`` and flagged ``unpriced_no_data``, so the
    cost is a lower bound. Raises :class:`UsageError` (exit 2) for a labour rate that
    is not a finite number >= 0, or a waivers row naming no blocked finding.
    """
    if not (math.isfinite(labour_usd_per_hour) and labour_usd_per_hour >= 0):
        raise UsageError(f"--labour-usd-per-hour {labour_usd_per_hour!r}: must be a finite "
                         "number of US dollars per hour, 0 or more.")
    settled = settle_blocked(report, waivers, waivers_name, hours=hours,
                             effort_name=effort_name, labour=labour_usd_per_hour)
    effort = estimate(settled.findings, hours, effort_name)
    unknown = None
    usd: float | None = effort.total_hours * labour_usd_per_hour + settled.usd
    if effort.unpriced:
        usd = None
        unknown = (f"the effort file {effort_name} gives no hours for "
                   f"{', '.join(effort.unpriced)} found by the audit")
    no_data = _no_data(report)
    return Migration(kind="audit", audit=audit_name, effort=effort,
                     labour_usd_per_hour=labour_usd_per_hour, usd=usd,
                     blocked=_blocked(report), no_data_findings=no_data,
                     unpriced_no_data=no_data > 0, unknown=unknown,
                     blocked_priced=settled.priced, blocked_waived=settled.waived,
                     blocked_unpriced=settled.unpriced, waivers=waivers_name,
                     waivers_sha256=waivers_sha256)


def migration_given(usd: float, report: AuditReport | None = None,
                    audit_name: str | None = None, waivers: WaiverFile | None = None,
                    waivers_name: str | None = None,
                    waivers_sha256: str | None = None) -> Migration:
    """A migration cost given as a number of US dollars (``--migration-usd``), with the
    blocked items of ``report`` when an audit is given too: those ``waivers`` waives cost
    nothing, those it prices in dollars are added to ``usd`` (``given-usd`` keeps the
    number given), the rest are ``blocked-unpriced``. Raises :class:`UsageError` (exit 2)
    for a number that is not finite and >= 0, a waivers row naming no blocked finding, or
    one priced in hours (no labour rate here).
    """
    if not (math.isfinite(usd) and usd >= 0):
        raise UsageError(f"--migration-usd {usd!r}: must be a finite number of US dollars, "
                         "0 or more.")
    settled = (settle_blocked(report, waivers, waivers_name, hours=None, effort_name=None,
                              labour=None) if report is not None else None)
    return Migration(kind="given", audit=audit_name,
                     usd=usd + (settled.usd if settled else 0.0), given_usd=usd,
                     blocked=_blocked(report) if report is not None else [],
                     no_data_findings=_no_data(report) if report is not None else 0,
                     blocked_priced=settled.priced if settled else [],
                     blocked_waived=settled.waived if settled else [],
                     blocked_unpriced=settled.unpriced if settled else [],
                     waivers=waivers_name, waivers_sha256=waivers_sha256)


def payback(*, basis: TokenBasis | None, current: tuple[float | None, float | None],
            candidate: tuple[float | None, float | None],
            validation_usd_per_gpu_hour: float | None = None,
            migration: Migration | None, validation_gpu_hours: float = 0.0,
            maintenance_usd_per_month: float = 0.0, tokens_per_month: float | None = None,
            life_months: float | None = None) -> Payback:
    """Payback in months = one-time cost / (monthly savings - maintenance per month).

    ``current`` and ``candidate`` are ``(R, Q)``: US dollars per hour of the whole system
    and tokens per second on ``basis`` (``None`` where unknown). One-time = migration +
    ``validation_gpu_hours`` x ``validation_usd_per_gpu_hour`` (the candidate's price per
    GPU-hour: the acceptance run's GPU-hours are billed as they are, so neither divided by
    the utilisation, which is the share of production time serving load, nor charged the
    per-system other resources; ``None``: no price, so the validation cost is unknown when
    ``validation_gpu_hours`` > 0); savings = (current - candidate cost per million
    tokens) x ``tokens_per_month`` / 1e6.
    A missing migration (``None``) makes payback unknown; it is never taken as 0.

    Arithmetic is exact (rationals of the given floats), so the sign of the savings agrees
    with the ratio rule exactly, and ``months < life`` (``within-life``) is decided on the
    exact months, before they are rounded to a float.
    ``months`` is ``None`` with the reason when net savings are <= 0 or an input is
    unknown. Non-negative finite inputs are assumed (the CLI checks flags); ``Q`` > 0.
    """
    reasons: list[str] = []
    validation, one_time = _one_time(migration, validation_gpu_hours,
                                     validation_usd_per_gpu_hour, reasons)
    savings = _savings(current, candidate, tokens_per_month, reasons)
    net = savings - Fraction(maintenance_usd_per_month) if savings is not None else None
    months: Fraction | None = None
    if net is not None and net <= 0:
        reasons.append(f"net savings are {float(net):,.2f} USD per month (<= 0): the port "
                       "never pays back")
    elif net is not None and one_time is not None:
        months = one_time / net
    return Payback(basis=basis, migration=migration,
                   validation_gpu_hours=validation_gpu_hours,
                   validation_usd=_float(validation), one_time_usd=_float(one_time),
                   tokens_per_month=tokens_per_month, savings_usd_per_month=_float(savings),
                   maintenance_usd_per_month=maintenance_usd_per_month,
                   net_savings_usd_per_month=_float(net),
                   net_savings_positive=None if net is None else net > 0,
                   months=_float(months),
                   life_months=life_months,
                   within_life=(None if months is None or life_months is None
                                else months < Fraction(life_months)),
                   unknown="; ".join(reasons) if months is None else None)


def _one_time(migration: Migration | None, gpu_hours: float, usd_per_gpu_hour: float | None,
              reasons: list[str]) -> tuple[Fraction | None, Fraction | None]:
    """``(validation cost, one-time cost)`` in USD, exact; ``None`` where unknown, with the
    reason appended to ``reasons``.
    """
    validation: Fraction | None = Fraction(0)
    if gpu_hours:
        validation = (Fraction(gpu_hours) * Fraction(usd_per_gpu_hour)
                      if usd_per_gpu_hour is not None else None)
    if validation is None:
        reasons.append("the validation compute cost is unknown (the candidate has no price)")
    mig: Fraction | None = None
    if migration is None:
        reasons.append("no migration cost is given (--migration AUDIT --effort FILE "
                       "--labour-usd-per-hour X, or --migration-usd X; 0 if there is none)")
    elif migration.usd is None:
        reasons.append(f"the migration cost is unknown ({migration.unknown})")
    else:
        mig = Fraction(migration.usd)
    return validation, (validation + mig if validation is not None and mig is not None
                        else None)


def _savings(current: tuple[float | None, float | None],
             candidate: tuple[float | None, float | None], tokens_per_month: float | None,
             reasons: list[str]) -> Fraction | None:
    """Savings in USD per month, exact: the difference in cost per token x the monthly
    volume; ``None`` when an input is unknown, with the reason appended to ``reasons``.
    """
    (r_cur, q_cur), (r_cand, q_cand) = current, candidate
    if r_cur is None or r_cand is None or q_cur is None or q_cand is None:
        reasons.append("a cost per million tokens is unknown")
        return None
    if tokens_per_month is None:
        reasons.append("--tokens-per-month is not given: savings per month need the "
                       "monthly token volume")
        return None
    per_token = Fraction(r_cur) / Fraction(q_cur) - Fraction(r_cand) / Fraction(q_cand)
    return per_token / 3600 * Fraction(tokens_per_month)


def pays_back_within(months: float | None, life_months: float | None) -> bool | None:
    """Whether payback is shorter than the remaining life (``None`` when either is
    unknown); a payback equal to the life does not count (the article: reject a port
    whose payback extends beyond the workload's life; pin rejects it at equality too),
    compared exactly on the two floats (:class:`~fractions.Fraction`). :func:`payback`
    records the same test on the unrounded months in ``within-life``.
    """
    if months is None or life_months is None:
        return None
    return Fraction(months) < Fraction(life_months)


def _float(x: Fraction | None) -> float | None:
    return None if x is None else float(x)
