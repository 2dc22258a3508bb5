"""``pin cost``: cost per million tokens, the ratio rule, payback and a port-or-stay verdict
from acceptance results (:mod:`pinning.cost`).

Registered on the main group by :func:`register`; the cost package is imported inside the
command so ``pin --help`` stays fast.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import click

from pinning.cli.envelope import emit
from pinning.cli.options import (
    cli_path,
    format_option,
    output_path,
    path_given,
    refuse_stdout_twice,
)
from pinning.cli.results import json_bytes, write_output
from pinning.cli.service import artefact_target, post_artefact, report_options
from pinning.errors import UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.cost.model import CostReport, Migration, PlatformCost
    from pinning.cost.verdict import Platform

__all__ = ["cost", "render_text"]

#: ``--lock none`` / ``--gpu none``: this result has no lock (or no GPU named).
_NONE = "none"


def _number(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Click callback: a finite number >= 0 (or not given)."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise click.BadParameter(f"{value!r}: must be a finite number, 0 or more.",
                                 ctx=ctx, param=param)
    return value


def _positive(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Click callback: a finite number > 0 (or not given)."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"{value!r}: must be a finite number above 0.",
                                 ctx=ctx, param=param)
    return value


@click.command(short_help="Cost per million tokens, the ratio rule, payback: port or stay.")
@click.argument("results", metavar="RESULT...", nargs=-1, required=True, callback=path_given)
@click.option("--prices", "prices_file", metavar="PRICES.toml", required=True,
              callback=path_given,
              help="GPU prices (TOML, schemas/prices.schema.json); pin ships the ROCm "
                   "migration article's table as a dated example: "
                   "pinning/cost/data/article-prices-2026-09-28.toml.")
@click.option("--lock", "locks", multiple=True, metavar="LOCK", callback=path_given,
              help="The lock each result ran on, in the order of the results ('none' for a "
                   "result without one): its GPU and GPU count are priced.")
@click.option("--gpu", "gpu_names", multiple=True, metavar="GPU",
              help="The GPU of each result that has no lock, in the order of the results "
                   "('none' to skip one), as the prices file names it (H100, MI300X).")
@click.option("--gpus", type=click.IntRange(1, 100_000), metavar="N",
              help="GPUs per system when a lock records no count (default 1, reported as "
                   "assumed).")
@click.option("--other-usd-per-hour", type=float, default=0.0, show_default=True,
              callback=_number, metavar="X",
              help="Other billed resources per system and hour (CPU, memory, storage), USD.")
@click.option("--utilisation", type=click.FloatRange(0, 1, min_open=True), default=1.0,
              show_default=True, metavar="U",
              help="Share of billed time that serves load at the measured rate (0-1]; R is "
                   "divided by it.")
@click.option("--migration", "audit_file", metavar="AUDIT.json", callback=path_given,
              help="The porting bill (pin audit --format json -o FILE): its findings x the "
                   "--effort hours x --labour-usd-per-hour are the migration labour; its "
                   "blocked items are reasons to stay.")
@click.option("--effort", "effort_file", metavar="EFFORT.toml", callback=path_given,
              help="Your team's hours per finding kind (the pin audit --effort file).")
@click.option("--labour-usd-per-hour", type=float, callback=_number, metavar="X",
              help="What an hour of migration work costs, USD (with --migration).")
@click.option("--migration-usd", type=float, callback=_number, metavar="X",
              help="The one-time migration cost as one number, USD (instead of --effort).")
@click.option("--validation-gpu-hours", type=float, default=0.0, show_default=True,
              callback=_number, metavar="H",
              help="GPU-hours of the acceptance run on the candidate; costed at its USD "
                   "per GPU-hour from the prices file (billed hours: not divided by "
                   "--utilisation, no --other-usd-per-hour).")
@click.option("--maintenance-usd-per-month", type=float, default=0.0, show_default=True,
              callback=_number, metavar="M",
              help="Recurring maintenance including repeat validation, USD per month.")
@click.option("--tokens-per-month", type=float, callback=_positive, metavar="T",
              help="Tokens served per month, on the results' token basis.")
@click.option("--life-months", type=float, callback=_positive, metavar="L",
              help="The workload's remaining life in months.")
@click.option("--key", "pub_path", metavar="PUB", callback=path_given,
              help="Verify signed results with this public key (exit 9 when one does not).")
@click.option("-o", "--output", callback=output_path, metavar="FILE",
              help="Also write the report as JSON (schemas/cost-report.schema.json) here "
                   "('-': standard output, then the text goes to standard error; not with "
                   "--format json). It may not name an input.")
@report_options("Also post the report JSON (the document -o writes) to this pin service; "
                "the id it stores it under goes to stderr.")
@click.option("--report-lock", "report_lock", metavar="LOCK", callback=path_given,
              help="With --report-to: the lock the verdict is for (a lock file, or its "
                   "content hash; default: the last --lock given, the candidate's).")
@format_option
def cost(results: tuple[str, ...], prices_file: str, locks: tuple[str, ...],
         gpu_names: tuple[str, ...], gpus: int | None, other_usd_per_hour: float,
         utilisation: float, audit_file: str | None, effort_file: str | None,
         labour_usd_per_hour: float | None, migration_usd: float | None,
         validation_gpu_hours: float, maintenance_usd_per_month: float,
         tokens_per_month: float | None, life_months: float | None, pub_path: str | None,
         output: str | None, report_to: str | None, token_file: str | None,
         ca_cert: str | None, report_lock: str | None, fmt: str) -> None:
    """Cost per million tokens from acceptance results, and for two results (the platform
    in use first, the candidate second) the ratio rule, payback and a verdict: port or
    stay, with every reason that decided it.

    R = (USD per GPU-hour x GPU count + --other-usd-per-hour) / --utilisation; Q = the
    token rate of the serving point that met every SLO (the highest such, not the peak);
    cost per million tokens = R x 1,000,000 / (3,600 x Q), the token basis named. A GPU
    with no price gives "cost unknown", never a guess. Two results are compared only when
    they share model, precision, input and output lengths, a load (concurrency or rate)
    both passed, SLOs and quality gate; otherwise exit 2 lists what differs.

    Exit 0 with a verdict (port or stay), 2 for bad flags or files, or results that cannot
    be compared, 5 for an invalid lock, 9 for a bad signature with --key. -o may not name
    an input, and standard input ('-') can be read once. With --report-to URL (a token with
    the publish scope) the report is posted after it is written; exit 13 when that fails.
    """
    from pinning import __version__
    from pinning.cost.prices import read_prices
    from pinning.cost.verdict import CostInputs, cost_report

    _check_inputs(results, locks, gpu_names, [
        ("--prices", prices_file), ("--migration", audit_file), ("--effort", effort_file),
        ("--key", pub_path)])
    refuse_stdout_twice(output, fmt, what="report")
    client, lock_hash = artefact_target(report_to, token_file, ca_cert, report_lock,
                                        "cost verdict")
    migration = _migration(audit_file, effort_file, labour_usd_per_hour, migration_usd)
    prices, sha = read_prices(cli_path(prices_file))
    platforms = _platforms(results, locks, gpu_names, pub_path)
    inputs = CostInputs(gpus=gpus, other_usd_per_hour=other_usd_per_hour,
                        utilisation=utilisation, migration=migration,
                        validation_gpu_hours=validation_gpu_hours,
                        maintenance_usd_per_month=maintenance_usd_per_month,
                        tokens_per_month=tokens_per_month, life_months=life_months)
    report = cost_report(platforms, prices, prices_name=prices_file, prices_sha256=sha,
                         inputs=inputs, pin_version=__version__)
    if output is not None:
        write_output(output, json_bytes(report))
    if fmt == "json":
        emit(report.model_dump(mode="json", by_alias=True))
    else:
        # With -o - standard output holds the JSON document only; the text goes to stderr.
        click.echo(render_text(report), nl=False, err=output == "-")
    if lock_hash is None:
        lock_hash = next((p.lock.content_hash for p in reversed(platforms)
                          if p.lock is not None), None)
    post_artefact(client, lambda c: c.post_cost(json_bytes(report), lock=lock_hash),
                  "cost verdict")


def _check_inputs(results: tuple[str, ...], locks: tuple[str, ...],
                  gpu_names: tuple[str, ...], others: list[tuple[str, str | None]]) -> None:
    """Raise ``UsageError`` (exit 2) when ``--lock`` or ``--gpu`` is not given once per
    result, or when more than one input (the results, the locks and ``others``, each
    ``(what, path)``) is ``-``: standard input can be read once.
    """
    for flag, values in (("--lock", locks), ("--gpu", gpu_names)):
        if values and len(values) != len(results):
            raise UsageError(f"{flag} was given {len(values)} time(s) for {len(results)} "
                             f"result(s); give it once per result, in the same order "
                             f"('{_NONE}' for a result without one).")
    sources = [("a result", r) for r in results] + others + [("--lock", x) for x in locks]
    dashes = [what for what, value in sources if value == "-"]
    if len(dashes) > 1:
        raise UsageError(f"'-' (standard input) can be read once, but {' and '.join(dashes)} "
                         "both name it.", hint="Give '-' once and a file for the others.")


def _platforms(results: tuple[str, ...], locks: tuple[str, ...], gpu_names: tuple[str, ...],
               pub_path: str | None) -> list[Platform]:
    """One :class:`~pinning.cost.verdict.Platform` per result file, with its lock (read)
    and GPU from ``--lock`` / ``--gpu`` in the same order (``none``: not given). Raises
    ``UsageError`` (exit 2) for a file that is not a result, ``SignatureError`` (exit 9)
    for a bad signature with ``--key``, ``LockError`` (exit 5) for a bad lock.
    """
    from pinning.accept.attest import read_result_file
    from pinning.cost.verdict import Platform
    from pinning.lockfile.io import read_lock

    key = cli_path(pub_path) if pub_path else None
    platforms = []
    for i, name in enumerate(results):
        lock_name = locks[i] if locks and locks[i] != _NONE else None
        lock = read_lock(cli_path(lock_name)) if lock_name is not None else None
        gpu = gpu_names[i] if gpu_names and gpu_names[i] != _NONE else None
        result, _ = read_result_file(cli_path(name), key)
        platforms.append(Platform(name=name, result=result, lock=lock, lock_name=lock_name,
                                  gpu=gpu))
    return platforms


def _migration(audit_file: str | None, effort_file: str | None,
               labour: float | None, given: float | None) -> Migration | None:
    """The migration cost from the flags; ``UsageError`` for a combination that does not
    say one thing.
    """
    from pinning.cost.payback import migration_from_audit, migration_given, read_audit

    if given is not None and (effort_file is not None or labour is not None):
        raise UsageError("--migration-usd gives the migration cost as one number; do not "
                         "combine it with --effort or --labour-usd-per-hour.")
    if (effort_file is not None or labour is not None) and audit_file is None:
        raise UsageError("--effort and --labour-usd-per-hour price the findings of an audit; "
                         "give the audit with --migration AUDIT.json.")
    report = read_audit(cli_path(audit_file)) if audit_file is not None else None
    if given is not None:
        return migration_given(given, report, audit_file)
    if audit_file is None or report is None:
        return None
    if effort_file is None or labour is None:
        raise UsageError(f"--migration {audit_file} needs --effort EFFORT.toml (hours per "
                         "finding kind, as pin audit --effort reads) and "
                         "--labour-usd-per-hour X, or --migration-usd X.")
    from pinning.audit.bill import read_effort

    hours = read_effort(cli_path(effort_file))
    return migration_from_audit(report, audit_file, hours, effort_file, labour)


def _usd(value: float | None, unit: str = "") -> str:
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
             + ("" if accepted else "  (acceptance FAILED: "
                + printable("; ".join(p.not_accepted or p.failed), newlines=False) + ")")]
    if p.sweep is not None:
        lines.append(f"  sweep: {printable(p.sweep, newlines=False)}")
    gpu = printable(r.gpu, newlines=False) if r.gpu else "GPU unknown"
    count = {"lock": "from the lock", "flag": "--gpus", "assumed": "assumed; --gpus N"}[
        r.gpu_count_from]
    price = (f"{_usd(r.usd_per_gpu_hour)}/GPU-hour ({printable(r.price.provider or '?')}, "
             f"checked {r.price.checked})" if r.price and r.usd_per_gpu_hour else "no price")
    lines.append(f"  R = {_usd(r.usd_per_hour, '/hour')}: {r.gpu_count} x {gpu} ({count}) at "
                 f"{price} + {_usd(r.other_usd_per_hour)}/hour other, / utilisation "
                 f"{r.utilisation:g}")
    if r.unknown:
        lines.append(f"    cost unknown: {printable(r.unknown, newlines=False)}")
    op = p.operating_point
    if op is not None:
        lines.append(f"  Q = {op.tokens_per_s:.6g} {BASIS_TEXT[op.basis]}/s: "
                     f"{printable(op.chosen, newlines=False)}")
    basis = BASIS_TEXT[p.basis] if p.basis else "tokens"
    lines.append(f"  cost per million {basis}: {_usd(p.usd_per_million_tokens)}"
                 + (f" ({printable(p.unknown, newlines=False)})" if p.unknown else ""))
    return lines


def _migration_text(mig: Migration) -> str:
    """The migration cost and where it came from, for the payback lines."""
    if mig.effort is None:
        return _usd(mig.usd) + " (given)"
    audit = printable(mig.audit or "", newlines=False)
    rate = _usd(mig.labour_usd_per_hour)
    if mig.effort.unpriced:
        return (f"unknown ({mig.effort.total_hours:g} h priced so far at {rate}/h; no hours "
                f"given for: {printable(', '.join(mig.effort.unpriced), newlines=False)}; "
                f"from {audit})")
    return f"{_usd(mig.usd)} ({mig.effort.total_hours:g} h x {rate}/h from {audit})"


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
                  f"  one-time: {_usd(pay.one_time_usd)} = migration {mig_text} + validation "
                  f"{_usd(pay.validation_usd)} ({pay.validation_gpu_hours:g} GPU-hours)",
                  f"  savings per month: {_usd(pay.savings_usd_per_month)} at "
                  + (f"{pay.tokens_per_month:,.0f} {basis}/month" if pay.tokens_per_month
                     else "an unknown volume")
                  + f" - maintenance {_usd(pay.maintenance_usd_per_month)} = "
                  f"{_usd(pay.net_savings_usd_per_month)}",
                  "  payback: " + (f"{pay.months:.3g} months" if pay.months is not None
                                   else f"none ({printable(pay.unknown or '', newlines=False)})")
                  + (f"; remaining life {pay.life_months:g} months"
                     if pay.life_months is not None else "")]
    if report.verdict is not None:
        lines += ["", f"Verdict: {report.verdict.decision.upper()}"]
        lines += [f"  - {r.code}: {printable(r.text, newlines=False)}"
                  for r in report.verdict.reasons]
    if report.caveats:
        lines += ["", "Caveats:"] + [f"  - {printable(c, newlines=False)}"
                                     for c in report.caveats]
    return "\n".join(lines) + "\n"

