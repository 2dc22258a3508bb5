"""Two acceptance results side by side (``pin accept compare``): each metric in both, the
delta and percent change, the better side by the metric's sense, and which gates pass where.
Serving runs are paired by concurrency and rate; workloads and models are compared on what
both results record (a judged file records no gates-file workload, only its runs).
"""

from __future__ import annotations

from pydantic import Field

from pinning.accept.result import AcceptanceResult, ServeResult
from pinning.util.models import Strict

__all__ = ["Comparison", "MetricRow", "compare_results"]


class MetricRow(Strict):
    """One metric in both results: ``a``/``b`` (``None`` where a result lacks it),
    ``delta`` = b - a and ``change-pct`` = delta / a * 100, ``better`` which side is
    better (``a``, ``b``, ``same`` or ``None`` when not comparable) by the metric's sense
    (lower latency, higher throughput).
    """

    gate: str
    metric: str
    unit: str
    a: float | None
    b: float | None
    delta: float | None
    change_pct: float | None
    better: str | None


class Comparison(Strict):
    """Two results side by side: their names, subjects, gate verdicts per side, the
    metric rows, and ``notes`` on why they may not measure the same thing.
    """

    a: str
    b: str
    subject_a: dict[str, object]
    subject_b: dict[str, object]
    gates: dict[str, dict[str, bool | None]]
    rows: list[MetricRow]
    notes: list[str] = Field(default_factory=list)


def _row(gate: str, metric: str, unit: str, a: float | None, b: float | None,
         lower_is_better: bool) -> MetricRow:
    """A :class:`MetricRow` with its delta and the better side."""
    delta = b - a if a is not None and b is not None else None
    pct = delta / a * 100.0 if delta is not None and a else None
    better = None
    if delta is not None:
        better = "same" if delta == 0 else (
            ("b" if delta < 0 else "a") if lower_is_better else ("b" if delta > 0 else "a"))
    return MetricRow(gate=gate, metric=metric, unit=unit, a=a, b=b, delta=delta,
                     change_pct=pct, better=better)


def _serve_metrics(result: AcceptanceResult) -> dict[str, tuple[str, float, bool]]:
    """``{"c4 ttft p99": ("ms", 12.3, True)}``: each serving run's latency percentiles
    (lower is better) and throughputs (higher is better), keyed by concurrency and rate.
    """
    out: dict[str, tuple[str, float, bool]] = {}
    if result.serve is None:
        return out
    for p in result.serve.points:
        s = p.summary
        key = (f"c{s.max_concurrency}" if s.max_concurrency else "c-") + (
            f" r{s.request_rate:g}" if s.request_rate else "")
        for metric, stats in s.latency.items():
            values = dict(stats.percentiles)
            if "p50" not in values and stats.median is not None:
                values["p50"] = stats.median
            for pct in ("p50", "p90", "p99"):
                if pct in values:
                    out[f"{key} {metric} {pct}"] = ("ms", values[pct], True)
        for t in s.throughput:
            out[f"{key} {t.name}"] = (f"/s ({t.basis})", t.per_s, False)
        judged = next((c.measured for c in p.checks if c.slo == "goodput-min-rps"
                       and c.measured is not None), None)
        if judged is not None:
            out[f"{key} goodput judged"] = ("req/s (requests within this result's SLOs)",
                                            judged, False)
    return out


def _train_metrics(result: AcceptanceResult) -> dict[str, tuple[str, float, bool]]:
    """The training gate's step-time summary and final loss (lower is better)."""
    out: dict[str, tuple[str, float, bool]] = {}
    t = result.train
    if t is None:
        return out
    for name, value in (("step time median", t.step_time_median_s),
                        ("step time p90", t.step_time_p90_s),
                        ("step time cv", t.step_time_cv)):
        if value is not None:
            out[name] = ("s" if "cv" not in name else "", value, True)
    full = next((r for r in t.runs if r.label == "full"), None)
    if full is not None and full.losses and full.losses[-1] is not None:
        out["final loss"] = ("", full.losses[-1], True)
    return out


def compare_results(a: AcceptanceResult, b: AcceptanceResult, name_a: str,
                    name_b: str) -> Comparison:
    """Pair ``a`` and ``b`` metric by metric (see :class:`Comparison`)."""
    rows: list[MetricRow] = []
    for gate, pick in (("train", _train_metrics), ("serve", _serve_metrics)):
        ma, mb = pick(a), pick(b)
        for metric in list(ma) + [m for m in mb if m not in ma]:
            unit, _, lower = ma.get(metric) or mb[metric]
            rows.append(_row(gate, metric, unit, ma[metric][1] if metric in ma else None,
                             mb[metric][1] if metric in mb else None, lower))
    gates = {g: {"a": a.gates.get(g), "b": b.gates.get(g)}
             for g in ("import", "train", "serve") if g in a.gates or g in b.gates}
    return Comparison(
        a=name_a, b=name_b, notes=comparability_notes(a, b),
        subject_a=a.subject.model_dump(mode="json", by_alias=True, exclude_none=True),
        subject_b=b.subject.model_dump(mode="json", by_alias=True, exclude_none=True),
        gates=gates, rows=rows)


def comparability_notes(a: AcceptanceResult, b: AcceptanceResult) -> list[str]:
    """Why ``a`` and ``b`` may not measure the same thing: another mode (a live run against
    judged files), another serving harness (harnesses disagree by several percent), another
    workload (token lengths, API, prompts), another model or training setup. Empty when
    nothing differs that pin can see.
    """
    notes: list[str] = []
    if a.mode != b.mode:
        notes.append(f"modes differ: A {a.mode}, B {b.mode}")
    sa, sb = a.serve, b.serve
    if sa is not None and sb is not None:
        if sa.harness != sb.harness:
            notes.append(f"serving harnesses differ: A {sa.harness}, B {sb.harness} "
                         "(harnesses measure the same server differently; see "
                         "vllm-project/guidellm#470)")
        notes += workload_notes(sa, sb)
    ta, tb = a.train, b.train
    if ta is not None and tb is not None and (ta.trainer, ta.steps) != (tb.trainer, tb.steps):
        notes.append(f"training runs differ: A {ta.trainer} x{ta.steps}, B {tb.trainer} "
                     f"x{tb.steps}")
    pa, pb = _serve_metrics(a), _serve_metrics(b)
    if pa and pb and not set(pa) & set(pb):
        notes.append("no serving run pairs: A and B ran at different concurrency or rate "
                     "points, so each metric appears on one side only")
    ma, mb = a.subject.model_content_hash, b.subject.model_content_hash
    if ma and mb and ma != mb:
        notes.append("model content hashes differ: not the same weights")
    return notes


def _model(serve: ServeResult) -> str | None:
    """The served model's name: the gates file's, else the one name its runs record."""
    names = {p.summary.model for p in serve.points if p.summary.model}
    return serve.model or (names.pop() if len(names) == 1 else None)


def _recorded(serve: ServeResult) -> dict[str, object]:
    """What a serving gate records of its workload, from its runs (a gates file's
    ``[serve.workload]`` fills what the runs do not say): requests per run, mean input
    and output tokens per completed request, and the API.
    """
    w = serve.workload or {}
    out: dict[str, object] = {}
    runs = [p.summary for p in serve.points]
    if runs and all(s.failed is not None for s in runs):
        out["requests per run"] = sorted({s.completed + (s.failed or 0) for s in runs})
    for key, total, conf in (("input tokens per request", "total_input_tokens", "input-tokens"),
                             ("output tokens per request", "total_output_tokens",
                              "output-tokens")):
        per = [getattr(s, total) / s.completed for s in runs
               if s.completed and getattr(s, total) is not None]
        configured = w.get(conf)
        if per:
            out[key] = sum(per) / len(per)
        elif isinstance(configured, int):
            out[key] = float(configured)
    apis = {"openai": "completions", "vllm": "completions", "openai-chat": "chat",
            "openai-completions": "completions"}
    found = {apis.get(s.endpoint or "") or apis.get(s.backend or "") for s in runs}
    api = w.get("api") or (found.pop() if len(found) == 1 else None)
    if api:
        out["API"] = api
    return out


def _differs(a: object, b: object) -> bool:
    """Whether two recorded workload values differ: token means by more than 5 % (a
    server may count a prompt's BOS token, a tokenizer may split a word differently),
    anything else when unequal.
    """
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) > 0.05 * max(abs(a), abs(b))
    return a != b


def workload_notes(sa: ServeResult, sb: ServeResult) -> list[str]:
    """Notes where two serving gates' workloads or models differ, on what both record:
    the whole ``[serve.workload]`` when both are pin's own runs, else :func:`_recorded`;
    the model by name when both name one. Empty when nothing both record differs.
    """
    notes: list[str] = []
    if sa.workload is not None and sb.workload is not None:
        if sa.workload != sb.workload:
            keys = sorted(k for k in set(sa.workload) | set(sb.workload)
                          if sa.workload.get(k) != sb.workload.get(k))
            notes.append(f"serving workloads differ ({', '.join(keys)}): deltas mix the "
                         "workload with the platform")
    else:
        ra, rb = _recorded(sa), _recorded(sb)
        diff = [f"{k} A {_show(ra[k])}, B {_show(rb[k])}" for k in ra
                if k in rb and _differs(ra[k], rb[k])]
        if diff:
            notes.append(f"serving workloads differ ({'; '.join(diff)}): deltas mix the "
                         "workload with the platform")
    ma, mb = _model(sa), _model(sb)
    if ma is not None and mb is not None and ma != mb:
        notes.append(f"served model names differ: A {ma}, B {mb}")
    if sa.slo != sb.slo:
        notes.append("SLOs differ: each side's checks and judged goodput use its own "
                     "gates file's limits")
    return notes


def _show(value: object) -> str:
    """A recorded workload value for a note (``128``, ``127.5``, ``[24]``)."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)
