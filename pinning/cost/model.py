"""The wire models of ``pin cost``: the prices file (schema ``prices``) and the cost report
(schema ``cost-report``).

Units are fixed and named in every field: US dollars (``usd``), hours, months, tokens per
second. A token rate always carries its :data:`TokenBasis` (``output-tokens``: output
tokens only; ``total-tokens``: input + output tokens), and figures of different bases are
never compared. Unknown is ``None`` plus a reason (``unknown``), never a guessed number.

The rule is the ROCm migration article's (tests/data/rocm-migration-article.txt): R is the
whole-system hourly compute cost, Q the measured output tokens per second, cost per
million output tokens = R x 1,000,000 / (3,600 x Q); the candidate is cheaper when its
cost ratio to the current platform is smaller than its throughput ratio, at equal quality
and latency; payback = one-time migration cost / positive recurring savings.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from pinning.audit.bill import Effort
from pinning.util.models import FormatVersion, OneLine, Reason, Strict

__all__ = ["BASIS_TEXT", "COST_FORMULA", "BlockedPriced", "BlockedWaived", "CostReport",
           "GpuRate", "Migration", "OperatingPoint", "Payback", "PlatformCost", "PointCost",
           "PriceFile", "PriceRow", "RatioRule", "TokenBasis", "Verdict", "VerdictReason"]

#: What a token rate counts: output tokens only, or input + output tokens.
TokenBasis = Literal["output-tokens", "total-tokens"]

#: The basis as people read it, for every printed figure.
BASIS_TEXT: dict[str, str] = {"output-tokens": "output tokens",
                              "total-tokens": "input + output tokens"}

#: The article's formula, printed with every report.
COST_FORMULA = "cost per million tokens = R x 1,000,000 / (3,600 x Q)"

_Usd = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class PriceRow(Strict):
    """One GPU's price: ``gpu`` as the source names it (``H100``, ``MI300X``),
    ``usd-per-gpu-hour`` (US dollars per GPU per hour; ``None`` when the source lists no
    price, with the reason in ``unknown``, e.g. "none in stock"), the cheapest ``provider``,
    ``providers-in-stock`` (how many providers had it in stock), ``checked`` (the date the
    price was read; a TOML date) and ``source`` (who listed it, and where).
    """

    gpu: OneLine = Field(min_length=1, max_length=100)
    usd_per_gpu_hour: Annotated[float | None, Field(gt=0, le=1e6, allow_inf_nan=False)] = None
    unknown: Reason | None = None
    provider: OneLine | None = None
    providers_in_stock: Annotated[int | None, Field(ge=0, le=1_000_000)] = None
    checked: dt.date = Field(description="The date the price was read.")
    source: OneLine = Field(min_length=1)

    @model_validator(mode="after")
    def _priced_or_explained(self) -> PriceRow:
        if (self.usd_per_gpu_hour is None) == (self.unknown is None):
            raise ValueError("give either usd-per-gpu-hour or unknown (why there is no "
                             "price), not both and not neither")
        return self


class PriceFile(Strict):
    """The prices file (TOML, schema ``prices``): ``[[prices]]`` rows, one per GPU."""

    schema_version: FormatVersion = 1
    description: OneLine | None = None
    prices: list[PriceRow] = Field(min_length=1)


class GpuRate(Strict):
    """R for one platform: ``usd-per-hour`` = (``usd-per-gpu-hour`` x ``gpu-count`` +
    ``other-usd-per-hour``) / ``utilisation``, in US dollars per hour of the whole system.

    ``gpu`` is the GPU as the lock (``gpu-from = "lock"``) or ``--gpu`` (``"flag"``) names
    it; ``gpu-count`` comes from the lock's ``[target] count`` (``"lock"``), ``--gpus``
    (``"flag"``) or is 1 by default (``"assumed"``). ``price`` is the prices-file row that
    names the GPU (``None`` when none does). ``usd-per-hour`` is ``None`` with the reason
    in ``unknown`` when there is no price.
    """

    gpu: str | None
    gpu_from: Literal["lock", "flag"] | None
    gpu_count: int = Field(ge=1)
    gpu_count_from: Literal["lock", "flag", "assumed"]
    price: PriceRow | None
    usd_per_gpu_hour: float | None
    other_usd_per_hour: _Usd = 0.0
    utilisation: Annotated[float, Field(gt=0, le=1)] = 1.0
    usd_per_hour: float | None
    unknown: Reason | None = None


class OperatingPoint(Strict):
    """Q for one platform: the serving point that met every SLO of the serving gate with
    the highest token rate on ``basis`` (not the peak over all points).

    ``point`` indexes the result's ``serve.points``; ``source``/``index`` name the harness
    file and run; ``tokens-per-s`` is Q in tokens per second on ``basis``; ``chosen`` says
    why this point was taken.
    """

    point: int = Field(ge=0)
    source: str
    index: int
    max_concurrency: int | None
    request_rate: float | None
    tokens_per_s: float = Field(gt=0)
    basis: TokenBasis
    chosen: str


class PointCost(Strict):
    """One point of the serving sweep with its cost (for the report's cost-across-the-sweep
    plot): its load, whether it met the SLOs, its token rate on ``basis`` and cost per
    million tokens at this platform's R (``None`` when R or the rate is unknown).
    """

    point: int = Field(ge=0)
    max_concurrency: int | None
    request_rate: float | None
    passed: bool
    tokens_per_s: float | None
    basis: TokenBasis | None
    usd_per_million_tokens: float | None


class PlatformCost(Strict):
    """One acceptance result priced: ``role`` is ``current`` (the first result: what runs
    today) or ``candidate`` (the second: where it would be ported); ``result`` the file,
    ``lock`` the lock it was priced with; ``passed``/``failed`` as the result records them
    (any sweep point that missed an SLO fails the serve gate there); ``accepted`` whether
    the result counts as passed for the decision (every gate but serve passed, the serve
    gate's quality and sustained checks passed, and at least one serving point met every
    SLO: a sweep run past the knee is not a failure; ``None`` in reports written before pin
    recorded it), ``not-accepted`` what kept it from that, and ``sweep`` how many points
    met every SLO and which is the operating point; ``rate`` (R), ``operating-point``
    (Q), ``usd-per-million-tokens`` on ``basis`` (``None`` with the reason in
    ``unknown``) and every sweep point in ``points``. ``binding-problems`` lists why the
    result cannot count as evidence for its lock (it names no lock, its binding was not
    checked, the stack it ran on differs from the lock's; [] when bound): such a result
    never supports a ``port`` verdict. ``unverified`` lists the layers of its GPU stack
    (gpu, kernel-driver, runtime) pin did not verify although nothing differs (a judged file
    records none of them), one sentence per reason: such a result never supports ``port``
    either (:func:`pinning.accept.result.unverified_stack`).
    """

    role: Literal["current", "candidate"]
    result: str
    lock: str | None = None
    lock_content_hash: str | None = None
    model: str | None = None
    passed: bool
    failed: list[str] = Field(default_factory=list)
    accepted: bool | None = None
    not_accepted: list[str] = Field(default_factory=list)
    sweep: str | None = None
    rate: GpuRate
    operating_point: OperatingPoint | None
    basis: TokenBasis | None
    usd_per_million_tokens: float | None
    unknown: Reason | None = None
    points: list[PointCost] = Field(default_factory=list)
    binding_problems: list[str] = Field(default_factory=list)
    unverified: list[str] = Field(default_factory=list)


class RatioRule(Strict):
    """The article's ratio rule, candidate over current: ``cost-ratio`` = R_candidate /
    R_current, ``throughput-ratio`` = Q_candidate / Q_current (both on ``basis``); the
    candidate's compute cost is lower exactly when ``cost-ratio < throughput-ratio``
    (``candidate-cheaper``). ``None`` with the reason in ``unknown`` when a price is missing.
    """

    basis: TokenBasis
    cost_ratio: float | None
    throughput_ratio: float
    candidate_cheaper: bool | None
    unknown: Reason | None = None
    statement: str


class BlockedPriced(Strict):
    """A blocked finding the team priced: ``finding`` its id (``rule: subject
    (path:line)``), ``usd`` what it costs (US dollars), ``hours`` the hours it was priced at
    (``None`` when priced in dollars), ``priced-by`` where the price came from (``effort``:
    the effort file's ``[hours]`` for its kind and the ``blocked`` verdict, times
    ``--labour-usd-per-hour``; ``waivers``: a ``[[price]]`` row of the waivers file),
    ``source`` that file as named, and, for a ``[[price]]`` row, its ``reason``, ``by`` and
    ``date``.
    """

    finding: str
    usd: float = Field(ge=0)
    hours: float | None = None
    priced_by: Literal["effort", "waivers"]
    source: str
    reason: str | None = None
    by: str | None = None
    date: dt.date | None = None


class BlockedWaived(Strict):
    """A blocked finding the team waived (a ``[[waiver]]`` row of the waivers file): its
    ``finding`` id, the ``reason``, who waived it (``by``), when (``date``) and the
    ``source`` file. A waived item costs nothing and is not a reason to stay.
    """

    finding: str
    reason: str
    by: str
    date: dt.date
    source: str


class Migration(Strict):
    """The one-time migration cost in US dollars: ``kind`` ``audit`` (the audit's findings
    x the effort file's hours per finding x ``labour-usd-per-hour``) or ``given``
    (``--migration-usd``). ``blocked`` lists the audit's blocked findings (``rule:
    subject``). ``usd`` is ``None`` with the reason in ``unknown`` when the effort file gives
    no hours for some kind found (its hours are unknown, not zero). ``no-data-findings``
    counts the audit's ``no-data`` findings (packages pin's data says nothing about): their
    porting effort is unknown and not priced, so an audit-priced ``usd`` is a lower bound
    when it is above 0 (``unpriced-no-data`` true).

    Of the ``blocked`` items, ``blocked-priced`` are priced (their dollars are in ``usd``),
    ``blocked-waived`` waived with a reason, and ``blocked-unpriced`` neither: each of
    those is a reason to stay (``None`` in reports written before pin recorded it: every
    blocked item was then a reason to stay). ``waivers``/``waivers-sha256`` name the
    waivers file read (``--waivers``). ``given-usd`` is the ``--migration-usd`` number
    when ``kind`` is ``given`` (``usd`` = it + the ``[[price]]`` dollars).
    """

    kind: Literal["audit", "given"]
    audit: str | None = None
    effort: Effort | None = None
    labour_usd_per_hour: _Usd | None = None
    usd: float | None
    blocked: list[str] = Field(default_factory=list)
    no_data_findings: int = Field(default=0, ge=0)
    unpriced_no_data: bool = False
    unknown: Reason | None = None
    blocked_priced: list[BlockedPriced] = Field(default_factory=list)
    blocked_waived: list[BlockedWaived] = Field(default_factory=list)
    blocked_unpriced: list[str] | None = None
    waivers: str | None = None
    waivers_sha256: str | None = None
    given_usd: float | None = None


class Payback(Strict):
    """Payback in months = ``one-time-usd`` / ``net-savings-usd-per-month``.

    ``one-time-usd`` = migration + ``validation-usd`` (``validation-gpu-hours`` x the
    candidate's US dollars per GPU-hour from the prices file: billed GPU-hours, so not
    divided by the utilisation, which describes production serving, and without the
    per-system ``other-usd-per-hour``, which is not billed per GPU-hour);
    ``savings-usd-per-month`` = (current - candidate cost per million tokens) x
    ``tokens-per-month`` / 1e6;
    ``net-savings-usd-per-month`` = that - ``maintenance-usd-per-month`` (repeat
    validation and upkeep); ``net-savings-positive`` its sign, decided exactly (``None``
    when unknown). ``months`` is ``None`` when net savings are <= 0 (no payback) or an
    input is unknown, with the reason in ``unknown``. ``within-life`` is whether payback
    is shorter than ``life-months``, decided exactly on the unrounded months (``None``
    when either is unknown).
    """

    basis: TokenBasis | None
    migration: Migration | None
    validation_gpu_hours: _Usd = 0.0
    validation_usd: float | None
    one_time_usd: float | None
    tokens_per_month: float | None
    savings_usd_per_month: float | None
    maintenance_usd_per_month: _Usd = 0.0
    net_savings_usd_per_month: float | None
    net_savings_positive: bool | None = None
    months: float | None
    life_months: float | None
    within_life: bool | None = None
    unknown: Reason | None = None


VerdictCode = Literal[
    "acceptance-failed",   # a result did not pass its gates
    "audit-blocked",       # the porting audit has blocked items neither priced nor waived
    "no-savings",          # net monthly savings <= 0 (or the ratio rule says not cheaper)
    "payback-too-long",    # payback >= remaining life
    "cost-unknown",        # a price, a rate or the migration cost is unknown
    "input-missing",       # --tokens-per-month or --life-months not given
    "unverified",          # pin did not verify a result's GPU stack (gpu, driver, runtime)
    "unbound",             # a result cannot count as evidence for its lock (binding)
    "same-measurement",    # both results were judged from the same files: one measurement
    "pays-back",           # the figures pay back: accepted, every blocked item priced or
                           # waived (or no audit given), payback < life
]


class VerdictReason(Strict):
    """One reason that decided the verdict: a stable ``code`` and one sentence."""

    code: VerdictCode
    text: str


class Verdict(Strict):
    """``port`` only when both results are accepted (see :class:`PlatformCost`) and bound
    to their locks, every blocked item of the audit (if given; a caveat says when none
    was) is priced or waived, and payback is shown to be under the remaining life;
    otherwise ``stay``, with every reason that applies (the article: "require ... a
    positive payback calculation before committing the workload"). ``inconclusive`` when
    the evidence is not about the stacks priced: a result whose GPU stack pin did not
    verify (``unverified``), one with binding problems (``unbound``), or two results that
    are one measurement (``same-measurement``), these reasons first, and either the figures
    would say port (then the ``pays-back`` they give) or every reason to stay comes from the
    measured figures (acceptance, savings, payback, a cost the measurement left unknown);
    a reason to stay that holds whatever was measured (a blocked item, a missing price or
    input) still gives ``stay``, with those reasons first.

    ``blocked-priced`` and ``blocked-waived`` repeat the migration's priced and waived
    blocked items, and ``binding-problems`` every result's binding problems (``role
    (file): problem``), so the verdict shows what it rests on.
    """

    decision: Literal["port", "stay", "inconclusive"]
    reasons: list[VerdictReason] = Field(min_length=1)
    blocked_priced: list[BlockedPriced] = Field(default_factory=list)
    blocked_waived: list[BlockedWaived] = Field(default_factory=list)
    binding_problems: list[str] = Field(default_factory=list)


class CostReport(Strict):
    """What ``pin cost`` computed (schema ``cost-report``): the platforms priced (the
    first result is ``current``, a second is ``candidate``), the ratio rule, payback and
    the verdict (``None`` for one result: nothing to compare), the prices file read,
    ``formula``, and ``caveats`` (what could not be compared and why it was allowed).
    """

    schema_version: FormatVersion = 1
    pin_version: str
    prices: str
    prices_sha256: str
    formula: str = COST_FORMULA
    platforms: list[PlatformCost] = Field(min_length=1, max_length=2)
    ratio: RatioRule | None = None
    payback: Payback | None = None
    verdict: Verdict | None = None
    caveats: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _finite(self) -> CostReport:
        for p in self.platforms:
            v = p.usd_per_million_tokens
            if v is not None and not math.isfinite(v):
                raise ValueError("usd-per-million-tokens must be finite")
        return self
