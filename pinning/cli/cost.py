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
from pinning.cli.render_cost import render_text
from pinning.cli.results import json_bytes, write_output
from pinning.cli.service import artefact_target, post_artefact, report_options
from pinning.errors import UsageError

if TYPE_CHECKING:
    from pinning.cost.model import Migration
    from pinning.cost.verdict import Platform

__all__ = ["cost"]

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
@click.option("--target", "targets", multiple=True, metavar="NAME",
              help="The target of each --lock, in the order of the --lock flags, for a "
                   "multi-target lock (pin lock's pin.lock; 'none' for a lock without one); "
                   "the result must name that target's content hash.")
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
                   "--effort hours x --labour-usd-per-hour are the migration labour; a "
                   "blocked item neither priced nor waived (--waivers) is a reason to stay.")
@click.option("--effort", "effort_file", metavar="EFFORT.toml", callback=path_given,
              help="Your team's hours per finding kind (the pin audit --effort file); "
                   "hours for a kind's blocked verdict (package = { blocked = 40 }) price "
                   "its blocked findings.")
@click.option("--waivers", "waivers_file", metavar="WAIVERS.toml", callback=path_given,
              help="Blocked findings of the --migration audit your team waived ([[waiver]]: "
                   "finding, reason, by, date) or priced ([[price]]: finding, usd or hours, "
                   "reason, by, date); each appears in the verdict.")
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
@click.option("--unbound-ok", is_flag=True,
              help="Price a result that names no lock (or without the lock it names) "
                   "anyway: a caveat, and never a port verdict.")
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
         targets: tuple[str, ...], gpu_names: tuple[str, ...], gpus: int | None,
         other_usd_per_hour: float, utilisation: float, audit_file: str | None,
         effort_file: str | None, waivers_file: str | None, unbound_ok: bool,
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

    A result is priced only against the lock it names (else --unbound-ok), and one not
    bound to its lock never gives port (inconclusive). A blocked audit item is a reason to
    stay until priced (--effort, --waivers [[price]]) or waived (--waivers [[waiver]]).

    Exit 0 with a verdict (port, stay or inconclusive), 2 for bad flags or files, or results
    that cannot be compared, 5 for an invalid lock, 9 for a bad signature with --key. -o may
    not name an input; standard input ('-') can be read once. --report-to URL posts the
    report after it is written (a token with the publish scope); exit 13 when that fails.
    """
    from pinning import __version__
    from pinning.cost.prices import read_prices
    from pinning.cost.verdict import CostInputs, cost_report

    _check_inputs(results, locks, gpu_names, [
        ("--prices", prices_file), ("--migration", audit_file), ("--effort", effort_file),
        ("--waivers", waivers_file), ("--key", pub_path)], targets)
    refuse_stdout_twice(output, fmt, what="report")
    client, lock_hash = artefact_target(report_to, token_file, ca_cert, report_lock,
                                        "cost verdict", _paired(report_lock, locks, targets))
    migration = _migration(audit_file, effort_file, labour_usd_per_hour, migration_usd,
                           waivers_file)
    prices, sha = read_prices(cli_path(prices_file))
    platforms = _platforms(results, locks, gpu_names, pub_path, targets)
    inputs = CostInputs(gpus, other_usd_per_hour, utilisation, migration,
                        validation_gpu_hours, maintenance_usd_per_month, tokens_per_month,
                        life_months, unbound_ok=unbound_ok)
    report = cost_report(platforms, prices, prices_name=prices_file, prices_sha256=sha,
                         inputs=inputs, pin_version=__version__)
    if output is not None:
        write_output(output, json_bytes(report))
    if fmt == "json":
        emit(report.model_dump(mode="json", by_alias=True))
    else:
        # With -o - standard output holds the JSON document only; the text goes to stderr.
        click.echo(render_text(report), nl=False, err=output == "-")
    lock_hash = lock_hash or next((p.lock.content_hash for p in reversed(platforms)
                                   if p.lock is not None), None)
    post_artefact(client, lambda c: c.post_cost(json_bytes(report), lock=lock_hash),
                  "cost verdict")


def _check_inputs(results: tuple[str, ...], locks: tuple[str, ...],
                  gpu_names: tuple[str, ...], others: list[tuple[str, str | None]],
                  targets: tuple[str, ...] = ()) -> None:
    """Raise ``UsageError`` (exit 2) when ``--lock`` or ``--gpu`` is not given once per
    result, ``--target`` not once per ``--lock``, or when more than one input (the
    results, the locks and ``others``, each ``(what, path)``) is ``-``: standard input can
    be read once.
    """
    for flag, values in (("--lock", locks), ("--gpu", gpu_names)):
        if values and len(values) != len(results):
            raise UsageError(f"{flag} was given {len(values)} time(s) for {len(results)} "
                             f"result(s); give it once per result, in the same order "
                             f"('{_NONE}' for a result without one).")
    if targets and len(targets) != len(locks):
        raise UsageError(f"--target was given {len(targets)} time(s) for {len(locks)} --lock "
                         f"flag(s); give it once per --lock, in the same order ('{_NONE}' for "
                         "a lock that is not multi-target).")
    sources = [("a result", r) for r in results] + others + [("--lock", x) for x in locks]
    dashes = [what for what, value in sources if value == "-"]
    if len(dashes) > 1:
        raise UsageError(f"'-' (standard input) can be read once, but {' and '.join(dashes)} "
                         "both name it.", hint="Give '-' once and a file for the others.")


def _paired(report_lock: str | None, locks: tuple[str, ...],
            targets: tuple[str, ...]) -> str | None:
    """The ``--target`` given with the ``--lock`` that ``--report-lock`` names (the first
    such), else ``None``.
    """
    if report_lock is None or not targets or report_lock not in locks:
        return None
    target = targets[locks.index(report_lock)]
    return None if target == _NONE else target


def _platforms(results: tuple[str, ...], locks: tuple[str, ...], gpu_names: tuple[str, ...],
               pub_path: str | None, targets: tuple[str, ...] = ()) -> list[Platform]:
    """One :class:`~pinning.cost.verdict.Platform` per result file, with its lock (read;
    of a multi-target lock the view of its ``--target``) and GPU from ``--lock`` /
    ``--target`` / ``--gpu`` in the same order (``none``: not given). Raises
    ``UsageError`` (exit 2) for a file that is not a result, a multi-target lock with
    several targets and none named (naming them), ``SignatureError`` (exit 9) for a bad
    signature with ``--key``, ``LockError`` (exit 5) for a bad lock.
    """
    from pinning.accept.attest import read_result_file
    from pinning.cost.verdict import Platform
    from pinning.lockfile.io import read_lock_at

    key = cli_path(pub_path) if pub_path else None
    platforms = []
    for i, name in enumerate(results):
        lock_name = locks[i] if locks and locks[i] != _NONE else None
        target = targets[i] if targets and targets[i] != _NONE else None
        if target is not None and lock_name is None:
            raise UsageError(f"--target {target} is given for result {name}, whose --lock is "
                             f"'{_NONE}'; give '{_NONE}' for it too.")
        read = read_lock_at(cli_path(lock_name), target) if lock_name is not None else None
        lock = read.lock if read is not None else None
        if read is not None and read.target is not None:
            lock_name = f"{lock_name} [targets.{read.target}]"
        gpu = gpu_names[i] if gpu_names and gpu_names[i] != _NONE else None
        result, _ = read_result_file(cli_path(name), key)
        platforms.append(Platform(name=name, result=result, lock=lock, lock_name=lock_name,
                                  gpu=gpu))
    return platforms


def _migration(audit_file: str | None, effort_file: str | None, labour: float | None,
               given: float | None, waivers_file: str | None) -> Migration | None:
    """The migration cost from the flags; ``UsageError`` (exit 2) for a combination that
    does not say one thing, or a waivers file without an audit.
    """
    from pinning.cost.blocked import read_waivers
    from pinning.cost.payback import migration_from_audit, migration_given, read_audit

    if given is not None and (effort_file is not None or labour is not None):
        raise UsageError("--migration-usd gives the migration cost as one number; do not "
                         "combine it with --effort or --labour-usd-per-hour.")
    if (effort_file is not None or labour is not None) and audit_file is None:
        raise UsageError("--effort and --labour-usd-per-hour price the findings of an audit; "
                         "give the audit with --migration AUDIT.json.")
    if waivers_file is not None and audit_file is None:
        raise UsageError("--waivers waives or prices blocked findings of an audit; give the "
                         "audit with --migration AUDIT.json.")
    report = read_audit(cli_path(audit_file)) if audit_file is not None else None
    waivers, sha = (read_waivers(cli_path(waivers_file)) if waivers_file is not None
                    else (None, None))
    if given is not None:
        return migration_given(given, report, audit_file, waivers, waivers_file, sha)
    if audit_file is None or report is None:
        return None
    if effort_file is None or labour is None:
        raise UsageError(f"--migration {audit_file} needs --effort EFFORT.toml (hours per "
                         "finding kind, as pin audit --effort reads) and "
                         "--labour-usd-per-hour X, or --migration-usd X.")
    from pinning.audit.bill import read_effort

    hours = read_effort(cli_path(effort_file))
    return migration_from_audit(report, audit_file, hours, effort_file, labour, waivers,
                                waivers_file, sha)
