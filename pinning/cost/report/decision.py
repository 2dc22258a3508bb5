"""The report's decision sections: the verdict, the serving sweep's throughput-latency
curves, cost per million tokens across the sweep, the payback timeline, and the inputs.

Figures come from the acceptance results (latencies, token rates, SLO limits, as measured)
and the cost report (``pin cost``: R, Q, cost per million tokens, the ratio rule, payback,
the verdict); nothing is recomputed here except what a plot needs to draw.
"""

from __future__ import annotations

from pinning.accept.config import PERCENTILES
from pinning.accept.judge import PointVerdict
from pinning.cost.model import BASIS_TEXT, CostReport, PlatformCost, TokenBasis
from pinning.cost.report.inputs import Loaded, ReportInputs
from pinning.cost.report.view import (
    NOT_GIVEN,
    Headline,
    Platform,
    Plot,
    Section,
    Table,
    num,
    usd,
)

__all__ = ["cost_section", "inputs_section", "load_label", "payback_section",
           "serving_section", "slo_lines", "verdict_section"]

#: The latency metrics a serving SLO can name, in plotting order (pin's gates-file keys).
METRICS = ("ttft", "tpot", "itl", "e2el")
_METRIC_NAMES = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2el": "E2E latency"}
_COST_HINT = "pin cost ... --format json -o cost.json, then --cost cost.json"


def verdict_section(cost: Loaded[CostReport] | None, headline: Headline) -> Section:
    """Port or stay, with every reason that decided it (from the cost report); its badge
    is the ``headline``'s verdict, so an ``inconclusive`` page never shows a green port.
    """
    if cost is None:
        return Section("verdict", "Verdict", False, None,
                       (f"Cost report: {NOT_GIVEN} ({_COST_HINT}); no verdict.",))
    v = cost.value.verdict
    if v is None:
        return Section("verdict", "Verdict", True, None,
                       ("The cost report prices one platform: nothing to compare, so no "
                        "verdict.",))
    paras = [f"Decision: {v.decision.upper()}. Every reason that decided it:"]
    if headline.verdict != v.decision:
        paras.insert(0, f"This report's verdict is {headline.verdict.upper()}: the cost "
                        f"report decided {v.decision.upper()}, but the inputs disagree "
                        "(the headline says how).")
    return Section("verdict", "Verdict", True, headline.verdict, tuple(paras),
                   tuple(f"{r.code}: {r.text}" for r in v.reasons))


def load_label(concurrency: int | None, rate: float | None, index: int) -> str:
    """A serving point's load for plot labels and table cells: ``c=4`` (concurrency),
    ``2 req/s`` (rate) or ``#index``.
    """
    if concurrency is not None:
        return f"c={concurrency}"
    return f"{rate:g} req/s" if rate is not None else f"#{index}"


def _label(p: PointVerdict) -> str:
    """:func:`load_label` of a judged serving point."""
    return load_label(p.summary.max_concurrency, p.summary.request_rate, p.summary.index)


def slo_lines(plats: list[Platform]) -> dict[str, list[tuple[str, float]]]:
    """Per latency metric, the latency SLOs the results were judged against, as ``(key,
    limit in ms)`` in first-seen order (``ttft-p99-ms``, 2000.0), from the checks recorded
    (the limits the gates file set).
    """
    out: dict[str, list[tuple[str, float]]] = {}
    for p in plats:
        serve = p.accept.result.serve
        for point in serve.points if serve is not None else []:
            for c in point.checks:
                parts = c.slo.split("-")
                if (len(parts) == 3 and parts[0] in METRICS and parts[1] in PERCENTILES
                        and parts[2] == "ms" and (c.slo, c.limit) not in out.get(parts[0], [])):
                    out.setdefault(parts[0], []).append((c.slo, c.limit))
    return out


def _latency(point: PointVerdict, metric: str, pct: str) -> float | None:
    stats = point.summary.latency.get(metric)
    if stats is None:
        return None
    value = stats.percentiles.get(pct)
    return stats.median if value is None and pct == "p50" else value


def _points(p: Platform) -> list[PointVerdict]:
    """The serving points of ``p``'s result (none without a serving gate)."""
    serve = p.accept.result.serve
    return list(serve.points) if serve is not None else []


def _basis(plats: list[Platform]) -> TokenBasis:
    """Output tokens when every point of every result records them, else input + output."""
    from pinning.cost.rule import point_rate

    every = [pt for p in plats for pt in _points(p)]
    return "output-tokens" if all(point_rate(pt, "output-tokens") is not None
                                  for pt in every) else "total-tokens"


def serving_section(plats: list[Platform], *, plots: bool) -> Section:
    """Each platform's throughput-latency curve per latency metric (p50 and p99 against
    tokens per second), the SLO lines, the chosen operating point, and a table of points.
    """
    from pinning.cost.report.plots import LatencySeries, SloLine, latency_svg
    from pinning.cost.rule import point_rate

    served = [p for p in plats if _points(p)]
    if not served:
        return Section("serving", "Serving: throughput and latency", False, None,
                       (f"Serving sweep: {NOT_GIVEN} (an --accept result with a serve gate).",))
    basis = _basis(served)
    slos = slo_lines(served)
    metrics = [m for m in METRICS if m in slos] or [
        m for m in ("ttft", "tpot") if any(_latency(pt, m, "p99") is not None
                                          for p in served for pt in _points(p))]
    headers = ("Load", f"{BASIS_TEXT[basis]}/s",
               *(f"{_METRIC_NAMES[m]} {q} (ms)" for m in metrics for q in ("p50", "p99")),
               "Met every SLO", "Operating point")
    tables: list[Table] = []
    paras: list[str] = []
    series: dict[str, list[LatencySeries]] = {m: [] for m in metrics}
    for p in served:
        pts = _points(p)
        rows = [(_label(pt), num(point_rate(pt, basis)),
                 *(num(_latency(pt, m, q)) for m in metrics for q in ("p50", "p99")),
                 "yes" if pt.passed else "no", "chosen" if i == p.chosen else "")
                for i, pt in enumerate(pts)]
        tables.append(Table(f"{p.label} ({p.accept.path})", headers, tuple(rows)))
        paras.append(f"{p.label}: operating point: "
                     + (f"{_label(pts[p.chosen])}, {p.why}." if p.chosen is not None
                        else f"none ({p.why})."))
        keep = [(i, pt, x) for i, pt in enumerate(pts) if (x := point_rate(pt, basis)) is not None]
        for m in metrics:
            series[m].append(LatencySeries(
                label=p.label, xs=tuple(x for _, _, x in keep),
                p50=tuple(_latency(pt, m, "p50") for _, pt, _ in keep),
                p99=tuple(_latency(pt, m, "p99") for _, pt, _ in keep),
                passed=tuple(pt.passed for _, pt, _ in keep),
                chosen=next((k for k, (i, _, _) in enumerate(keep) if i == p.chosen), None),
                loads=tuple(_label(pt) for _, pt, _ in keep)))
    figures = tuple(Plot(
        f"plot-latency-{m}", f"{_METRIC_NAMES[m]} against throughput",
        latency_svg(metric=_METRIC_NAMES[m], x_label=f"{BASIS_TEXT[basis]} per second",
                    series=series[m], slos=[SloLine(f"{k} <= {v:g} ms", v)
                                            for k, v in slos.get(m, [])],
                    svg_id=f"plot-latency-{m}"),
        f"{_METRIC_NAMES[m]} p50 (dashed) and p99 (solid) in ms against {BASIS_TEXT[basis]} "
        "per second for each platform; dotted lines are the SLOs, the star the chosen "
        "operating point, hollow points missed an SLO.") for m in metrics) if plots else ()
    every = all(p.chosen is not None for p in served)
    return Section("serving", "Serving: throughput and latency", True,
                   "SLOs met" if every else "no operating point", tuple(paras), (),
                   tuple(tables), figures)


def _price_text(pc: PlatformCost) -> str:
    row = pc.rate.price
    if row is None:
        return pc.rate.unknown or "no price"
    price = usd(row.usd_per_gpu_hour) if row.usd_per_gpu_hour is not None else (
        f"none: {row.unknown}")
    return f"{price} ({row.provider or '-'}, checked {row.checked}, {row.source})"


def _sweep_plot(cost: CostReport) -> Plot | None:
    from pinning.cost.report.plots import CostSeries, cost_sweep_svg

    series = []
    basis = next((p.basis for p in cost.platforms if p.basis is not None), None)
    for pc in cost.platforms:
        keep = [(k, pt) for k, pt in enumerate(pc.points)
                if pt.tokens_per_s is not None and pt.usd_per_million_tokens is not None]
        if not keep:
            continue
        chosen = pc.operating_point.point if pc.operating_point is not None else None
        series.append(CostSeries(
            label=f"{pc.role}: {pc.rate.gpu or pc.result}",
            xs=tuple(pt.tokens_per_s for _, pt in keep),  # type: ignore[misc]
            usd=tuple(pt.usd_per_million_tokens for _, pt in keep),  # type: ignore[misc]
            passed=tuple(pt.passed for _, pt in keep),
            chosen=next((j for j, (_, pt) in enumerate(keep) if pt.point == chosen), None),
            loads=tuple(load_label(pt.max_concurrency, pt.request_rate, pt.point)
                        for _, pt in keep)))
    if not series or basis is None:
        return None
    what = BASIS_TEXT[basis]
    svg = cost_sweep_svg(y_label=f"USD per million {what}", x_label=f"{what} per second",
                         series=series, svg_id="plot-cost-sweep")
    return Plot("plot-cost-sweep", "Cost per million tokens across the sweep", svg,
                f"US dollars per million {what} at each serving point against {what} per "
                "second; the star is the operating point, hollow points missed an SLO.")


def cost_section(cost: Loaded[CostReport] | None, plats: list[Platform], *,
                 plots: bool) -> Section:
    """R, Q and cost per million tokens per platform, the ratio rule, the caveats, and
    cost per million tokens at every point of the sweep.
    """
    if cost is None:
        return Section("cost", "Cost per million tokens", False, None,
                       (f"Cost report: {NOT_GIVEN} ({_COST_HINT}).",))
    c = cost.value
    paras = [f"{cost.path}: prices from {c.prices}; {c.formula}, R in US dollars per hour "
             "of the whole system, Q in tokens per second at the operating point."]
    rows = []
    for pc in c.platforms:
        op = pc.operating_point
        what = BASIS_TEXT[pc.basis] if pc.basis is not None else "tokens"
        rows.append((pc.role, pc.rate.gpu or "-",
                     f"{pc.rate.gpu_count} ({pc.rate.gpu_count_from})", _price_text(pc),
                     usd(pc.rate.usd_per_hour) + ("" if pc.rate.utilisation == 1 else
                                                  f" at utilisation {pc.rate.utilisation:g}"),
                     f"{num(op.tokens_per_s)} {what}/s" if op is not None else "-",
                     (f"{usd(pc.usd_per_million_tokens)} per million {what}"
                      if pc.usd_per_million_tokens is not None else
                      f"unknown: {pc.unknown or 'no operating point'}"),
                     "passed" if pc.passed else "failed"))
    table = Table("Per platform", ("Role", "GPU", "GPUs", "Price per GPU-hour", "R (per hour)",
                                   "Q", "Cost", "Acceptance"), tuple(rows))
    points = Table("Across the sweep", ("Role", "Point", "Met every SLO", "Tokens/s",
                                        "USD per million tokens"),
                   tuple((pc.role, str(pt.point), "yes" if pt.passed else "no",
                          num(pt.tokens_per_s), usd(pt.usd_per_million_tokens))
                         for pc in c.platforms for pt in pc.points))
    if c.ratio is not None:
        paras.append(f"Ratio rule: {c.ratio.statement}.")
    plot = _sweep_plot(c) if plots else None
    status = None if c.ratio is None or c.ratio.candidate_cheaper is None else (
        "candidate cheaper" if c.ratio.candidate_cheaper else "candidate not cheaper")
    return Section("cost", "Cost per million tokens", True, status, tuple(paras),
                   tuple(f"Caveat: {x}" for x in c.caveats), (table, points),
                   (plot,) if plot is not None else ())


def payback_section(cost: Loaded[CostReport] | None, *, plots: bool) -> Section:
    """One-time cost, monthly savings, payback in months against the remaining life, and
    the payback timeline.
    """
    from pinning.cost.report.plots import payback_svg

    if cost is None:
        return Section("payback", "Payback", False, None,
                       (f"Cost report: {NOT_GIVEN} ({_COST_HINT}).",))
    pb = cost.value.payback
    if pb is None:
        return Section("payback", "Payback", True, None,
                       ("The cost report has no payback (it prices one platform).",))
    mig = pb.migration
    rows = (("Migration", "-" if mig is None else f"{usd(mig.usd)} ({mig.kind}"
             + (f", {mig.audit}" if mig.audit else "") + ")"
             + (f"; unknown: {mig.unknown}" if mig is not None and mig.unknown else "")),
            ("Validation", f"{usd(pb.validation_usd)} ({num(pb.validation_gpu_hours)} "
                           "GPU-hours)"),
            ("One-time cost", usd(pb.one_time_usd)),
            ("Tokens per month", num(pb.tokens_per_month)),
            ("Savings per month", usd(pb.savings_usd_per_month)),
            ("Maintenance per month", usd(pb.maintenance_usd_per_month)),
            ("Net savings per month", usd(pb.net_savings_usd_per_month)),
            ("Payback", "none" if pb.months is None else f"{num(pb.months)} months"),
            ("Remaining life", "-" if pb.life_months is None else f"{num(pb.life_months)} "
                                                                 "months"))
    paras = (f"Payback unknown or none: {pb.unknown}.",) if pb.unknown else ()
    plot = None
    if plots and pb.one_time_usd is not None and pb.net_savings_usd_per_month is not None:
        plot = Plot("plot-payback", "Payback timeline", payback_svg(
            one_time_usd=pb.one_time_usd, net_usd_per_month=pb.net_savings_usd_per_month,
            payback_months=pb.months, life_months=pb.life_months, svg_id="plot-payback"),
            "Cumulative net savings in US dollars by month after the port, starting at minus "
            "the one-time cost; vertical lines at the payback month and the end of the "
            "workload's remaining life.")
    status = "no payback" if pb.months is None else f"{num(pb.months, 3)} months"
    return Section("payback", "Payback", True, status, paras, (),
                   (Table("Payback", ("Item", "Value"), rows),),
                   (plot,) if plot is not None else ())


def inputs_section(inputs: ReportInputs) -> Section:
    """Every file the report was made from, with the sha256 of the bytes read."""
    rows: list[tuple[str, str, str]] = []
    for kind, item in (("lock", inputs.lock), ("verify", inputs.verify),
                       ("audit", inputs.audit)):
        if item is not None:
            rows.append((kind, item.path, item.sha256))
    rows += [("accept (" + a.signature + ")", a.path, a.sha256) for a in inputs.results]
    if inputs.cost is not None:
        rows.append(("cost", inputs.cost.path, inputs.cost.sha256))
    if not rows:
        return Section("inputs", "Inputs", False, None, ("No input was given.",))
    return Section("inputs", "Inputs", True, None, (),
                   (), (Table("Files read", ("Kind", "File", "sha256"), tuple(rows)),))
