"""The serving gate (``[serve]``) run by pin's own load generator.

:func:`run_serve_gate` measures one run per concurrency in ``[serve.workload]`` (each with
the Poisson ``request-rate`` when set), judges every run with the same SLO logic as ``pin
accept judge`` (:func:`pinning.accept.judge.judge_point`), then, when configured, the
output quality (temperature-0 outputs against reference outputs, or an external evaluation
score against a threshold) and sustained throughput (a fixed-duration run whose
output-token throughput in its last third must stay within ``max-drop-pct`` percent of its
first third).

Raises ``UsageError`` (exit 2) for a gates file whose workload cannot be built (no
tokenizer for random prompts, a bad prompt, reference or score file), an endpoint that is
not a valid URL, refuses the first connection or answers its first request with HTTP 404
(a base URL without ``/v1``), and when pin runs out of file descriptors; a run with failed
requests is judged, not raised. Credentials in the endpoint are used but never recorded or
printed (:func:`pinning.accept.endpoint.redact_endpoint`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pinning.accept.config import ServeGate, ServeQuality, ServeSustained
from pinning.accept.judge import Check, PointVerdict, failed_lines, judge_point, make_check
from pinning.accept.result import QualityResult, ServeResult, SustainedResult
from pinning.errors import UsageError

__all__ = ["quality_check", "run_serve_gate", "score_check", "sustained_check",
           "token_agreement"]

Progress = Callable[[str], None]


def run_serve_gate(gate: ServeGate, config_dir: Path, *, pin_version: str,
                   progress: Progress | None = None) -> ServeResult:
    """Run the serving gate against ``gate.endpoint``; relative files in the gates file
    (prompts, tokenizer, reference, score file) resolve against ``config_dir``.

    Raises ``UsageError`` (exit 2) as the module says.
    """
    from pinning.accept.endpoint import check_endpoint, redact_endpoint
    from pinning.accept.loadgen import run_point
    from pinning.accept.workload import build_prompts, load_tokenizer

    check_endpoint(gate.endpoint)
    shown = redact_endpoint(gate.endpoint)
    w = gate.workload
    tokenizer = load_tokenizer(w.tokenizer, config_dir) if w.tokenizer else None
    count = tokenizer.count if tokenizer is not None else None
    prompts = build_prompts(w, config_dir, tokenizer)
    model = gate.model or ""
    points: list[PointVerdict] = []
    for index, concurrency in enumerate(w.concurrency):
        label = (f"concurrency {concurrency}" + (f", rate {w.request_rate}/s"
                                                  if w.request_rate else ""))
        run = run_point(gate.endpoint, model, w.api, prompts, concurrency=concurrency,
                        request_rate=w.request_rate, warmup=w.warmup_requests,
                        min_duration_s=w.min_duration_s, seed=w.seed,
                        timeout_s=w.request_timeout_s, ignore_eos=w.ignore_eos,
                        count_tokens=count, progress=_counter(progress, label),
                        stop_on_404=True)
        read = run.to_read_result(source=shown, index=index,
                                  harness_version=pin_version)
        points.append(_with_errors(judge_point(read, gate.slo, keep_requests=True), run))
    quality = None
    if gate.quality is not None:
        quality = quality_check(gate, config_dir, tokenizer, progress=progress)
    sustained = None
    if gate.sustained is not None:
        sustained = sustained_check(gate, gate.sustained, prompts, count, progress=progress)
    failed = failed_lines(points)
    if quality is not None:
        failed += [f"quality: {c.slo}: {c.reason}" for c in quality.checks if not c.passed]
    if sustained is not None and not sustained.passed:
        failed.append(f"sustained: {sustained.check.slo}: {sustained.check.reason}")
    has_checks = any(p.checks for p in points) or quality is not None or sustained is not None
    if not has_checks:
        failed.append("slo: [serve.slo] sets no limit and no quality or sustained check is "
                      "configured; nothing was judged")
    return ServeResult(
        harness="pin-loadgen", harness_version=pin_version, endpoint=shown,
        model=gate.model, workload=w.model_dump(mode="json", by_alias=True,
                                                 exclude_none=True),
        slo=gate.slo.model_dump(mode="json", by_alias=True, exclude_none=True),
        points=points, quality=quality, sustained=sustained, passed=not failed,
        failed_checks=failed)


def _with_errors(point: PointVerdict, run: Any) -> PointVerdict:
    """``point`` with the most common request errors (at most three, with counts) added to
    its ``failed-max`` check's reason, else to a failed ``completed-min`` check's (every
    request failed), so a run that measured nothing says why. Verdicts are unchanged.
    """
    errors = [r.error for r in run.records if r.error]
    if not errors:
        return point
    counts: dict[str, int] = {}
    for e in errors:
        counts[e] = counts.get(e, 0) + 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    said = "; ".join(f"{n}x {e[:200]}" for e, n in top)
    checks = list(point.checks)
    idx = next((i for i, c in enumerate(checks) if c.slo == "failed-max"), None)
    if idx is None:
        idx = next((i for i, c in enumerate(checks)
                    if c.slo == "completed-min" and not c.passed), None)
    if idx is None:
        return point
    checks[idx] = checks[idx].model_copy(
        update={"reason": checks[idx].reason + f" (errors: {said})"})
    return point.model_copy(update={"checks": checks})


def _counter(progress: Progress | None, label: str) -> Callable[[int, int], None] | None:
    """A load-generator progress callback printing ``label: done/total`` about every
    tenth of the run.
    """
    if progress is None:
        return None
    shown = [-1]
    last = [0.0]

    def tick(done: int, total: int) -> None:
        now = time.monotonic()
        if done > total:  # a min-duration run goes on past the prompt list: once a second
            if now - last[0] >= 1.0:
                last[0] = now
                progress(f"serve: {label}: {done} requests")
            return
        step = max(1, total // 10)
        if done == total or done // step != shown[0]:
            shown[0] = done // step
            last[0] = now
            progress(f"serve: {label}: {done}/{total} requests")

    return tick


def token_agreement(reference: list[str], output: list[str]) -> float:
    """The share of token positions where ``output`` equals ``reference``, over the longer
    of the two (1.0 for two empty lists): a token dropped or added early counts every
    later position as a disagreement, as greedy decoding diverges from there.
    """
    longest = max(len(reference), len(output))
    if longest == 0:
        return 1.0
    same = sum(1 for a, b in zip(reference, output, strict=False) if a == b)
    return same / longest


def _read_reference(path: Path, label: str) -> list[dict[str, Any]]:
    """The reference lines (``prompt``, ``text``, optional ``max_tokens``) of a JSON-lines
    file; ``UsageError`` naming the file and line when one is not of that shape.
    """
    from pinning.util.files import decode_utf8, json_lines, read_regular_bytes

    hint = ("Each line must be a JSON object with string `prompt` and `text` (and optional "
            "integer `max_tokens`), as temperature-0 outputs of the reference stack.")
    raw = read_regular_bytes(path, UsageError, label=label, hint=hint,
                             limit=64 * 1024 * 1024)
    out: list[dict[str, Any]] = []
    text = decode_utf8(raw, UsageError, label=label, hint=hint)
    for n, doc in json_lines(text, UsageError, label=label, hint=hint):
        max_tokens = doc.get("max_tokens") if isinstance(doc, dict) else None
        if (not isinstance(doc, dict) or not isinstance(doc.get("prompt"), str)
                or not isinstance(doc.get("text"), str)
                or (max_tokens is not None and (isinstance(max_tokens, bool) or
                                                not isinstance(max_tokens, int)
                                                or not 1 <= max_tokens <= 1_000_000))):
            raise UsageError(f"{label} line {n}: not a reference line.", hint=hint)
        out.append(doc)
    if not out:
        raise UsageError(f"{label}: no reference line in it.", hint=hint)
    return out


def quality_check(gate: ServeGate, config_dir: Path, tokenizer: Any,
                  *, progress: Progress | None = None) -> QualityResult:
    """Judge ``[serve.quality]``: the reference prompts completed at temperature 0 (one at
    a time, without ``ignore-eos``, ``max_tokens`` as the reference line gives or the
    workload's ``output-tokens``) compared with the reference texts, and/or the external
    score. Raises ``UsageError`` (exit 2) for a bad reference or score file.
    """
    q = gate.quality
    assert q is not None
    checks: list[Check] = []
    result: dict[str, Any] = {}
    if q.reference is not None:
        result.update(_reference_check(gate, q, config_dir, tokenizer, checks, progress))
    if q.score_file is not None:
        score, check = score_check(q, config_dir)
        result.update(score_file=q.score_file, score=score)
        checks.append(check)
    if not checks:
        raise UsageError("[serve.quality] sets no limit: give reference with exact-match-min "
                         "or token-agreement-min, or score-file with score-task, "
                         "score-metric and score-min.")
    return QualityResult(**result, checks=checks, passed=all(c.passed for c in checks))


def _reference_check(gate: ServeGate, q: ServeQuality, config_dir: Path, tokenizer: Any,
                     checks: list[Check], progress: Progress | None) -> dict[str, Any]:
    """Run the reference prompts and add the exact-match and token-agreement checks."""
    from pinning.accept.loadgen import run_point
    from pinning.accept.workload import Prompt

    assert q.reference is not None
    if q.exact_match_min is None and q.token_agreement_min is None:
        raise UsageError("[serve.quality] names a reference but neither exact-match-min nor "
                         "token-agreement-min; set at least one.")
    path = _resolve(q.reference, config_dir)
    refs = _read_reference(path, f"Reference file {q.reference}")
    prompts = [Prompt(text=r["prompt"], input_tokens=None,
                      max_tokens=int(r.get("max_tokens") or gate.workload.output_tokens))
               for r in refs]
    run = run_point(gate.endpoint, gate.model or "", gate.workload.api, prompts,
                    concurrency=1, request_rate=None, warmup=0, min_duration_s=None,
                    seed=gate.workload.seed, timeout_s=gate.workload.request_timeout_s,
                    ignore_eos=False, count_tokens=None,
                    progress=_counter(progress, "quality"), stop_on_404=True)
    outputs = run.texts()
    exact = 0
    agreements: list[float] = []
    mismatches: list[dict[str, str]] = []
    split = tokenizer.tokens if tokenizer is not None else str.split
    for ref, (out, error) in zip(refs, outputs, strict=True):
        if error:
            mismatches.append({"prompt": ref["prompt"], "error": error})
            agreements.append(0.0)
            continue
        if out == ref["text"]:
            exact += 1
        else:
            mismatches.append({"prompt": ref["prompt"], "expected": ref["text"],
                               "got": out})
        agreements.append(token_agreement(split(ref["text"]), split(out)))
    rate = exact / len(refs)
    agreement = sum(agreements) / len(agreements)
    basis = ("tokens of the workload's tokenizer" if tokenizer is not None
             else "whitespace-separated words (no tokenizer set in [serve.workload])")
    if q.exact_match_min is not None:
        checks.append(make_check("exact-match-min", rate, q.exact_match_min, "", "min",
                                 "recomputed", "", f" (share of prompts: {exact} of {len(refs)})"))
    if q.token_agreement_min is not None:
        checks.append(make_check("token-agreement-min", agreement, q.token_agreement_min, "",
                                 "min", "recomputed", "", " (share of token positions)"))
    return {"reference": q.reference, "prompts": len(refs), "exact_matches": exact,
            "exact_match_rate": rate, "token_agreement": agreement, "token_basis": basis,
            "mismatches": mismatches[:20]}


def _resolve(name: str, config_dir: Path) -> Path:
    """``name`` as a path, relative ones against the gates file's folder."""
    path = Path(name).expanduser()
    return path if path.is_absolute() else config_dir / path


def score_check(q: ServeQuality, config_dir: Path) -> tuple[float | None, Check]:
    """Read ``results[score-task][score-metric]`` of an lm-evaluation-harness results file
    (``lm_eval --output_path`` writes ``{"results": {TASK: {"METRIC,FILTER": x}}}`` as
    ``results_<date>.json``: EleutherAI/lm-evaluation-harness@
    da2119697bd3b16e707f71d0886aed2cf5b0cd40:lm_eval/loggers/evaluation_tracker.py, commit
    date not recorded)
    and check it against ``score-min``. Raises ``UsageError`` (exit 2) naming the file and
    key when the file or the value is missing or not a finite number.
    """
    from pinning.util.files import read_regular_bytes
    from pinning.util.jsonread import as_finite, load_json

    assert q.score_file is not None
    if q.score_min is None or not q.score_task or not q.score_metric:
        raise UsageError("[serve.quality] score-file needs score-task, score-metric and "
                         "score-min (e.g. score-task = \"gsm8k\", score-metric = "
                         "\"exact_match,strict-match\", score-min = 0.9).")
    label = f"Score file {q.score_file}"
    hint = ("Pass the results JSON lm-evaluation-harness wrote (--output_path), with "
            "results.TASK.METRIC a number.")
    raw = read_regular_bytes(_resolve(q.score_file, config_dir), UsageError, label=label,
                             hint=hint, limit=256 * 1024 * 1024)
    doc = load_json(raw, UsageError, label=label, hint=hint)
    value = None
    if isinstance(doc, dict) and isinstance(doc.get("results"), dict):
        task = doc["results"].get(q.score_task)
        value = task.get(q.score_metric) if isinstance(task, dict) else None
    score = as_finite(value)
    if score is None:
        raise UsageError(f"{label}: results.{q.score_task}.{q.score_metric} is not a "
                         f"finite number in it ({type(value).__name__!s}).", hint=hint)
    return score, make_check("score-min", score, q.score_min, "", "min", "recomputed", "")


def sustained_check(gate: ServeGate, sustained: ServeSustained, prompts: list[Any],
                    count_tokens: Callable[[str], int] | None,
                    *, progress: Progress | None = None) -> SustainedResult:
    """Run ``[serve.sustained]``: the workload's prompts, repeated, at ``concurrency`` for
    ``duration-s``; the drop ``(first - last) / first * 100`` of output-token throughput
    between the first and last third of the run must be at most ``max-drop-pct``.
    """
    from pinning.accept.loadgen import run_point
    from pinning.accept.loadrun import thirds

    w = gate.workload
    run = run_point(gate.endpoint, gate.model or "", w.api, prompts,
                    concurrency=sustained.concurrency, request_rate=None, warmup=0,
                    min_duration_s=sustained.duration_s, seed=w.seed,
                    timeout_s=w.request_timeout_s, ignore_eos=w.ignore_eos,
                    count_tokens=count_tokens, progress=_counter(progress, "sustained"),
                    stop_on_404=True)
    first, last = thirds(run)
    drop = None
    missing = "no output tokens in the first third of the run"
    if first is not None and last is not None and first > 0:
        drop = (first - last) / first * 100.0
    check = make_check("sustained-max-drop-pct", drop, sustained.max_drop_pct, "%", "max",
                       "recomputed", missing)
    if drop is not None:
        check = check.model_copy(update={"reason": check.reason + (
            f" (output tok/s: first third {first:.4g}, last third {last:.4g})")})
    return SustainedResult(duration_s=sustained.duration_s,
                           concurrency=sustained.concurrency, first_third_tps=first,
                           last_third_tps=last, drop_pct=drop, check=check,
                           passed=check.passed)


def record_reference(gate: ServeGate, config_dir: Path, *, prompts_file: Path | None = None,
                     progress: Progress | None = None) -> list[dict[str, Any]]:
    """Greedy reference outputs from the trusted stack's server, for ``[serve.quality]
    reference``: each prompt (from ``prompts_file``, a prompt file, else the workload's
    prompts) completed one at a time at temperature 0 without ``ignore-eos``; returns the
    lines ``{"prompt", "max_tokens", "text", "model", "endpoint"}`` (the endpoint
    redacted), in order. Raises ``UsageError`` (exit 2) for bad prompts, an unreachable
    endpoint, or a request that fails (a reference must be complete).
    """
    from pinning.accept.endpoint import check_endpoint, redact_endpoint
    from pinning.accept.loadgen import run_point
    from pinning.accept.workload import build_prompts, load_tokenizer, read_prompt_file

    check_endpoint(gate.endpoint)
    w = gate.workload
    if prompts_file is not None:
        prompts = read_prompt_file(prompts_file, w.output_tokens)
    else:
        tokenizer = load_tokenizer(w.tokenizer, config_dir) if w.tokenizer else None
        prompts = build_prompts(w, config_dir, tokenizer)
    run = run_point(gate.endpoint, gate.model or "", w.api, prompts, concurrency=1,
                    request_rate=None, warmup=0, min_duration_s=None, seed=w.seed,
                    timeout_s=w.request_timeout_s, ignore_eos=False, count_tokens=None,
                    progress=_counter(progress, "reference"), stop_on_404=True)
    shown = redact_endpoint(gate.endpoint)
    lines: list[dict[str, Any]] = []
    for prompt, (text, error) in zip(prompts, run.texts(), strict=True):
        if error:
            raise UsageError(f"The reference request for prompt {prompt.text[:60]!r} failed: "
                             f"{error}", hint="A reference must be complete: fix the server "
                                              "or the prompt and record it again.")
        lines.append({"prompt": prompt.text, "max_tokens": prompt.max_tokens, "text": text,
                      "model": gate.model, "endpoint": shown})
    return lines
