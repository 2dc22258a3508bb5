"""Whether two acceptance results measured the same thing, so their costs may be compared.

The ROCm migration article (tests/data/rocm-migration-article.txt): "Keep model revision,
precision, input and output lengths, concurrency, quality threshold and latency target fixed
in the comparison." :func:`differences` lists every such field that differs (what pin cost
refuses with); :func:`common_loads` the loads (concurrency, rate) both results passed.
Fields neither result records are not differences; they become caveats the report prints.
"""

from __future__ import annotations

from pinning.accept.judge import PointVerdict, load_words
from pinning.accept.result import AcceptanceResult
from pinning.cost.rule import result_basis
from pinning.util.text import printable

__all__ = ["Load", "common_loads", "differences"]

#: A serving point's load: (max concurrency, request rate); ``None`` rate = unlimited.
Load = tuple[int | None, float | None]

#: Metadata keys that record precision (vLLM ``--metadata`` keys are free-form).
_PRECISION_KEYS = ("dtype", "precision", "quantization")
#: Workload keys that change what a token costs; the rest (seed, timeouts, prompt file
#: path) do not.
_WORKLOAD_KEYS = ("input-tokens", "output-tokens", "api", "ignore-eos", "tokenizer")
#: Two measured mean lengths are "the same" within this relative tolerance (1%).
_LENGTH_TOLERANCE = 0.01


def _show(value: object) -> str:
    return printable(str(value), newlines=False)


def _model(result: AcceptanceResult) -> tuple[str, str] | None:
    """``(how, value)``: the model's content hash, else its served name, else ``None``."""
    if result.subject.model_content_hash:
        return "content hash", result.subject.model_content_hash
    serve = result.serve
    names = {serve.model} if serve is not None and serve.model else set()
    if serve is not None and not names:
        names = {p.summary.metadata.get("model") or p.summary.model or "" for p in serve.points}
        names.discard("")
    return ("name", ", ".join(sorted(names))) if names else None


def _precision(result: AcceptanceResult) -> str | None:
    """The precision recorded in the serving runs' metadata, or ``None``."""
    found = {f"{k}={p.summary.metadata[k]}" for p in (result.serve.points if result.serve
                                                       else [])
             for k in _PRECISION_KEYS if k in p.summary.metadata}
    return ", ".join(sorted(found)) if found else None


def _mean_lengths(point: PointVerdict) -> tuple[float, float] | None:
    """Mean input and output tokens per completed request of ``point``, or ``None``."""
    s = point.summary
    if not s.completed or s.total_input_tokens is None or s.total_output_tokens is None:
        return None
    return s.total_input_tokens / s.completed, s.total_output_tokens / s.completed


def _quality(result: AcceptanceResult) -> tuple[tuple[str, float, str], ...] | None:
    """The quality gate as what it demanded: each check's (name, limit, bound)."""
    q = result.serve.quality if result.serve is not None else None
    if q is None:
        return None
    return tuple(sorted((c.slo, c.limit, c.bound) for c in q.checks))


def passing_loads(result: AcceptanceResult) -> set[Load]:
    """The loads of ``result``'s serving points that met every SLO."""
    if result.serve is None:
        return set()
    return {(p.summary.max_concurrency, p.summary.request_rate)
            for p in result.serve.points if p.passed}


def common_loads(a: AcceptanceResult, b: AcceptanceResult) -> set[Load]:
    """The loads at which both results have a point that met every SLO."""
    return passing_loads(a) & passing_loads(b)


def differences(a: AcceptanceResult, b: AcceptanceResult, *, loads: set[Load] | None = None
                ) -> tuple[list[str], list[str]]:
    """``(differences, caveats)`` between the current result ``a`` and the candidate ``b``.

    Differences (each one sentence naming both values): the token basis, the model (content
    hash when both record one; a hash on one side only; else the served model name), the
    precision (when either records one), the workload's input/output lengths and API (when
    both record a workload; else the measured mean lengths per request at the compared
    loads, within 1%), no load (concurrency or rate) that both passed, the SLOs and the
    quality gate. Caveats: what neither records, so it could not be checked.
    """
    diffs: list[str] = []
    caveats: list[str] = []
    basis_a, basis_b = result_basis(a), result_basis(b)
    if basis_a != basis_b:
        diffs.append(f"token basis: {basis_a or 'none recorded'} vs {basis_b or 'none recorded'}"
                     " (token rates on different bases are never compared)")
    _model_differences(a, b, diffs, caveats)
    pa, pb = _precision(a), _precision(b)
    if pa != pb:
        diffs.append(f"precision: {_show(pa or 'not recorded')} vs {_show(pb or 'not recorded')}")
    elif pa is None:
        caveats.append("neither result records the precision (dtype); it could not be checked")
    diffs += _workload_differences(a, b, loads)
    sa = a.serve.slo if a.serve is not None else {}
    sb = b.serve.slo if b.serve is not None else {}
    if sa != sb:
        keys = sorted(set(sa) | set(sb))
        diffs += [f"SLO {_show(k)}: {_show(sa.get(k, 'not set'))} vs "
                  f"{_show(sb.get(k, 'not set'))}" for k in keys if sa.get(k) != sb.get(k)]
    qa, qb = _quality(a), _quality(b)
    if qa != qb:
        def show(q: tuple[tuple[str, float, str], ...] | None) -> str:
            return ("none" if q is None else ", ".join(
                f"{_show(n)} {'<=' if bound == 'max' else '>='} {lim:g}" for n, lim, bound in q)
                or "no check")
        diffs.append(f"quality gate: {show(qa)} vs {show(qb)}")
    if loads is not None and not loads:
        la = sorted(passing_loads(a), key=_sort_key)
        lb = sorted(passing_loads(b), key=_sort_key)
        diffs.append("concurrency or rate: no load met the SLOs on both (current passed at "
                     f"{'; '.join(load_words(*x) for x in la) or 'none'}; candidate at "
                     f"{'; '.join(load_words(*x) for x in lb) or 'none'})")
    return diffs, caveats


def _model_differences(a: AcceptanceResult, b: AcceptanceResult, diffs: list[str],
                       caveats: list[str]) -> None:
    """Append the model's difference (or caveat) between ``a`` and ``b``."""
    ma, mb = _model(a), _model(b)
    if ma is None and mb is None:
        caveats.append("neither result records the model (content hash or name); "
                       "the model could not be checked")
    elif ma is None or mb is None:
        diffs.append(f"model: {'recorded' if ma else 'not recorded'} vs "
                     f"{'recorded' if mb else 'not recorded'}")
    elif ma[0] != mb[0]:
        diffs.append(f"model: {ma[0]} {_show(ma[1])} vs {mb[0]} {_show(mb[1])} (one result "
                     "records the model's content hash, the other only its name)")
    elif ma[1] != mb[1]:
        diffs.append(f"model {ma[0]}: {_show(ma[1])} vs {_show(mb[1])}")
    elif ma[0] == "name":
        caveats.append("the model is compared by name only: neither result records its "
                       "content hash (revision)")


def _sort_key(load: Load) -> tuple[int, float]:
    return (load[0] if load[0] is not None else -1,
            load[1] if load[1] is not None else float("inf"))


def _workload_differences(a: AcceptanceResult, b: AcceptanceResult,
                          loads: set[Load] | None) -> list[str]:
    """Input/output lengths (and API) from the workloads, else measured at ``loads``."""
    wa = a.serve.workload if a.serve is not None else None
    wb = b.serve.workload if b.serve is not None else None
    if wa is not None and wb is not None:
        return [f"workload {k}: {_show(wa.get(k, 'not set'))} vs {_show(wb.get(k, 'not set'))}"
                for k in _WORKLOAD_KEYS if wa.get(k) != wb.get(k)]
    out: list[str] = []
    for load in sorted(loads or set(), key=_sort_key):
        la, lb = _lengths_at(a, load), _lengths_at(b, load)
        if la is None or lb is None:
            continue
        for what, x, y in (("input", la[0], lb[0]), ("output", la[1], lb[1])):
            if abs(x - y) > _LENGTH_TOLERANCE * max(x, y):
                out.append(f"mean {what} tokens per request at {load_words(*load)}: {x:.4g} vs "
                           f"{y:.4g} (more than 1% apart)")
    return out


def _lengths_at(result: AcceptanceResult, load: Load) -> tuple[float, float] | None:
    """Mean lengths of ``result``'s first passing point at ``load``."""
    for p in result.serve.points if result.serve is not None else []:
        if p.passed and (p.summary.max_concurrency, p.summary.request_rate) == load:
            return _mean_lengths(p)
    return None
