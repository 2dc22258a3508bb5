"""Price acceptance results and decide: port or stay, with every reason that decided it.

The ROCm migration article (tests/data/rocm-migration-article.txt): "Port when the
supported ROCm build passes your acceptance run and measured savings repay migration within
the workload's remaining life ... require a working pinned environment and a positive
payback calculation before committing the workload to AMD." So pin says ``port`` only when
every condition is shown; anything failed or unknown is a reason to ``stay``.

:func:`cost_report` is the whole computation behind ``pin cost``: one result is priced on
its own; two are compared (the first is the platform in use, ``current``; the second the
``candidate``), refused with :class:`UsageError` (exit 2) listing what differs unless they
measured the same thing (:func:`pinning.cost.compare.differences`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pinning.accept.judge import load_text
from pinning.accept.result import AcceptanceResult
from pinning.cost.binding import binding_problems, check_lock, same_measurement, unverified
from pinning.cost.compare import Load, common_loads, differences
from pinning.cost.decide import decide
from pinning.cost.model import (
    CostReport,
    GpuRate,
    Migration,
    OperatingPoint,
    PlatformCost,
    PriceFile,
    RatioRule,
)
from pinning.cost.payback import payback
from pinning.cost.prices import gpu_key, system_rate
from pinning.cost.rule import (
    cost_per_million,
    operating_point,
    point_costs,
    ratio_rule,
    result_basis,
)
from pinning.errors import UsageError
from pinning.lockfile.models import Lockfile

__all__ = ["CostInputs", "Platform", "acceptance", "cost_report"]


@dataclass(frozen=True)
class Platform:
    """One acceptance result to price: ``name`` the file as given, ``result`` its content,
    ``lock``/``lock_name`` the lock it ran on (``--lock``), ``gpu`` a GPU named with
    ``--gpu`` when there is no lock.
    """

    name: str
    result: AcceptanceResult
    lock: Lockfile | None = None
    lock_name: str | None = None
    gpu: str | None = None


@dataclass(frozen=True)
class CostInputs:
    """The flags of ``pin cost`` as numbers: ``gpus`` (GPU count when a lock records
    none), ``other_usd_per_hour``, ``utilisation`` (0-1], the ``migration`` cost (``None``:
    not given), ``validation_gpu_hours``, ``maintenance_usd_per_month``,
    ``tokens_per_month`` and ``life_months`` (``None``: not given), ``caveats`` to print,
    and ``unbound_ok`` (``--unbound-ok``: price a result that names no lock, or without
    the lock it names, as a caveat).
    """

    gpus: int | None = None
    other_usd_per_hour: float = 0.0
    utilisation: float = 1.0
    migration: Migration | None = None
    validation_gpu_hours: float = 0.0
    maintenance_usd_per_month: float = 0.0
    tokens_per_month: float | None = None
    life_months: float | None = None
    caveats: list[str] = field(default_factory=list)
    unbound_ok: bool = False


def _gpu(p: Platform) -> tuple[str | None, Literal["lock", "flag"] | None]:
    """The GPU of ``p`` and where it came from; ``UsageError`` when lock and flag differ."""
    from_lock = None
    if p.lock is not None:
        from_lock = p.lock.target.gpu.value or p.lock.request.gpu
    if from_lock is not None and p.gpu is not None and gpu_key(from_lock) != gpu_key(p.gpu):
        raise UsageError(f"{p.name}: --gpu {p.gpu} differs from the GPU its lock {p.lock_name} "
                         f"records ({from_lock}).",
                         hint="Give --gpu only for a result without a lock, or drop it.")
    if from_lock is not None:
        return from_lock, "lock"
    return (p.gpu, "flag") if p.gpu is not None else (None, None)


def _count(p: Platform, gpus: int | None
           ) -> tuple[int, Literal["lock", "flag", "assumed"]]:
    """The GPU count: the lock's ``[target] count``, else ``--gpus``, else 1 (assumed)."""
    pinned = p.lock.target.count if p.lock is not None else None
    text = pinned.value if pinned is not None else None
    if text is not None and text.isdigit() and int(text) >= 1:
        if gpus is not None and gpus != int(text):
            raise UsageError(f"--gpus {gpus} differs from the GPU count {text} that the lock "
                             f"{p.lock_name} records for {p.name}.",
                             hint="The lock's count is what the host had; drop --gpus, or "
                                  "price the result without that lock.")
        return int(text), "lock"
    return (gpus, "flag") if gpus is not None else (1, "assumed")


def acceptance(result: AcceptanceResult, point: OperatingPoint | None
               ) -> tuple[bool, list[str], str | None]:
    """Whether ``result`` counts as passed for the decision: ``(accepted, not_accepted,
    sweep)``.

    Accepted when every gate other than serve passed (import, train when present), the
    serve gate's quality and sustained checks (when present) passed, and at least one
    serving point met every SLO. Points that missed an SLO do not fail it: Q is the best
    point that met every SLO, and a sweep is meant to run past the knee. ``not_accepted``
    names each real failure (``train: ...``, ``serve quality: ...``); ``sweep`` says how
    many points met every SLO and which is the operating point ``point`` (``None`` without
    a serving gate).
    """
    failures: list[str] = []
    for gate, ok in result.gates.items():
        if gate != "serve" and not ok:
            lines = [f for f in result.failed if f.startswith(f"{gate}:")]
            failures += lines or [f"{gate}: the gate failed"]
    serve = result.serve
    if serve is None:
        return not failures, failures, None
    if serve.quality is not None and not serve.quality.passed:
        failures += [f"serve quality: {c.slo}: {c.reason}" for c in serve.quality.checks
                     if not c.passed] or ["serve quality: failed"]
    if serve.sustained is not None and not serve.sustained.passed:
        c = serve.sustained.check
        failures.append(f"serve sustained: {c.slo}: {c.reason}")
    met = [p for p in serve.points if p.passed]
    if not met:
        failures.append(f"serve: none of the {len(serve.points)} serving point(s) met "
                        "every SLO")
    sweep = f"{len(met)} of {len(serve.points)} point(s) met every SLO"
    if point is not None:
        sweep += f"; the operating point is {load_text(serve.points[point.point])}"
    missed = [load_text(p) for p in serve.points if not p.passed]
    if missed and met:
        sweep += ("; missed an SLO (not a failure: the sweep ran past what the SLOs allow): "
                  + ", ".join(missed[:10]) + (f" and {len(missed) - 10} more"
                                              if len(missed) > 10 else ""))
    return not failures, failures, sweep


def _platform(p: Platform, role: Literal["current", "candidate"], prices: PriceFile,
              inputs: CostInputs, only: set[Load] | None) -> PlatformCost:
    """Price one result: R, Q at its operating point, cost per million tokens."""
    gpu, gpu_from = _gpu(p)
    count, count_from = _count(p, inputs.gpus)
    rate: GpuRate = system_rate(prices, gpu, gpu_from, gpu_count=count,
                                gpu_count_from=count_from,
                                other_usd_per_hour=inputs.other_usd_per_hour,
                                utilisation=inputs.utilisation)
    basis = result_basis(p.result)
    point: OperatingPoint | None = None
    if basis is not None:
        point = operating_point(p.result, basis, label=p.name, only=only)
    elif p.result.serve is None:
        operating_point(p.result, "output-tokens", label=p.name)  # raises: no serving gate
    unknown = rate.unknown
    cost = None
    if basis is None:
        unknown = "the serving runs record no token throughput (output or total tokens/s)"
    elif point is None:
        unknown = "no serving point met every SLO" + (
            " at a load the other result passed too" if only is not None else "")
    elif rate.usd_per_hour is not None:
        cost = cost_per_million(rate.usd_per_hour, point.tokens_per_s)
    s = p.result.subject
    accepted, not_accepted, sweep = acceptance(p.result, point)
    return PlatformCost(role=role, result=p.name, lock=p.lock_name,
                        lock_content_hash=p.lock.content_hash if p.lock else s.lock_content_hash,
                        model=s.model_content_hash, passed=p.result.passed,
                        failed=list(p.result.failed), accepted=accepted,
                        not_accepted=not_accepted, sweep=sweep, rate=rate,
                        operating_point=point,
                        basis=basis, usd_per_million_tokens=cost,
                        unknown=unknown if cost is None else None,
                        points=point_costs(p.result, basis, rate.usd_per_hour),
                        binding_problems=binding_problems(p.result),
                        unverified=unverified(p.result))


def cost_report(platforms: Sequence[Platform], prices: PriceFile, *, prices_name: str,
                prices_sha256: str, inputs: CostInputs, pin_version: str) -> CostReport:
    """Price one or two results and, for two, apply the ratio rule, payback and the verdict.

    Raises :class:`UsageError` (exit 2) for no result or more than two, a result without a
    serving gate, a lock that is not the one the result names (or a result that names none,
    without ``inputs.unbound_ok``: :func:`~pinning.cost.binding.check_lock`), a GPU count
    or name given two ways that disagree, and, for two results, when they differ in anything
    :func:`~pinning.cost.compare.differences` checks (the message lists every difference).
    """
    if not 1 <= len(platforms) <= 2:
        raise UsageError(f"pin cost takes one or two results, not {len(platforms)}: the "
                         "platform in use first, then the candidate.")
    caveats = list(inputs.caveats)
    for p in platforms:
        caveats += check_lock(p.name, p.result, p.lock, p.lock_name, p.gpu,
                              unbound_ok=inputs.unbound_ok)
    if len(platforms) == 1:
        only = platforms[0]
        priced = _platform(only, "current", prices, inputs, None)
        return CostReport(pin_version=pin_version, prices=prices_name,
                          prices_sha256=prices_sha256, platforms=[priced], caveats=caveats)
    cur, cand = platforms
    loads = common_loads(cur.result, cand.result)
    diffs, notes = differences(cur.result, cand.result, loads=loads if (
        cur.result.serve is not None and cand.result.serve is not None) else None)
    if diffs:
        raise UsageError(
            f"pin cost refuses to compare {cur.name} with {cand.name}: they did not measure "
            f"the same thing ({len(diffs)} difference(s)): " + "; ".join(diffs) + ".",
            hint="Keep model revision, precision, input and output lengths, concurrency or "
                 "rate, SLOs and the quality gate fixed across platforms (the ROCm migration "
                 "article), and run the same gates file on both.")
    caveats += notes + _migration_caveats(inputs.migration)
    a = _platform(cur, "current", prices, inputs, loads)
    b = _platform(cand, "candidate", prices, inputs, loads)
    ratio = _ratio(a, b)
    pay = None
    if a.basis is not None:
        pay = payback(
            basis=a.basis,
            current=(a.rate.usd_per_hour, _q(a)),
            candidate=(b.rate.usd_per_hour, _q(b)),
            validation_usd_per_gpu_hour=b.rate.usd_per_gpu_hour,
            migration=inputs.migration, validation_gpu_hours=inputs.validation_gpu_hours,
            maintenance_usd_per_month=inputs.maintenance_usd_per_month,
            tokens_per_month=inputs.tokens_per_month if a.operating_point and
            b.operating_point else None,
            life_months=inputs.life_months)
    return CostReport(pin_version=pin_version, prices=prices_name,
                      prices_sha256=prices_sha256, platforms=[a, b], ratio=ratio,
                      payback=pay, verdict=decide(a, b, ratio, pay, inputs.migration,
                                                  same_measurement(cur.result, cand.result)),
                      caveats=caveats)


def _migration_caveats(migration: Migration | None) -> list[str]:
    """What the decision could not check about the migration: no audit given (blocked items
    unchecked), and no-data findings that are not priced.
    """
    out = []
    if migration is not None and migration.audit is None:
        out.append("no porting bill given (--migration AUDIT.json): blocked items were not "
                   "checked; a port verdict says nothing about extensions without a ROCm "
                   "equivalent")
    if migration is not None and migration.unpriced_no_data:
        n = migration.no_data_findings
        out.append(f"{n} no-data finding{'s are' if n != 1 else ' is'} not priced: "
                   f"{'their' if n != 1 else 'its'} porting effort is unknown; the migration "
                   "cost is a lower bound")
    return out


def _q(p: PlatformCost) -> float | None:
    return p.operating_point.tokens_per_s if p.operating_point is not None else None


def _ratio(a: PlatformCost, b: PlatformCost) -> RatioRule | None:
    """The ratio rule between the operating points, when both have one."""
    if a.operating_point is None or b.operating_point is None or a.basis is None:
        return None
    unknown = a.rate.unknown or b.rate.unknown
    return ratio_rule(a.rate.usd_per_hour, a.operating_point.tokens_per_s,
                      b.rate.usd_per_hour, b.operating_point.tokens_per_s, a.basis,
                      unknown=unknown)
