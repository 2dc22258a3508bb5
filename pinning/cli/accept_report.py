"""Acceptance results for people: ``pin accept show`` / ``run`` / ``judge`` print
:func:`result_text` (``UNBOUND: why`` first when the result is not evidence about its
lock's stack, what was tested and the stack it ran on, each gate's checks with measured
value, limit and reason, then the verdict per gate and overall); ``pin accept compare``
prints :func:`compare_text` of a :class:`~pinning.accept.compare.Comparison`;
:func:`unbound_refusal` is the exit-12 paragraph of an unbound run.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pinning.accept.compare import Comparison
from pinning.accept.evidence import not_verified_line, verdict_line
from pinning.accept.judge import Check, load_text
from pinning.accept.result import LAYERS, AcceptanceResult, binding_problems
from pinning.accept.train import TrainCheck
from pinning.cli.render import table_text
from pinning.util.text import printable

__all__ = ["compare_text", "failure_text", "is_envelope", "result_text", "unbound_refusal"]


def _num(value: float | None) -> str:
    """A value for a table cell (``-`` when unknown)."""
    return "-" if value is None else f"{value:.6g}"


_HEADERS = ("check", "measured", "limit", "verdict", "reason")


def _rows(checks: Sequence[TrainCheck]) -> list[tuple[str, ...]]:
    """One table row per import or training check: name, measured, limit, verdict, reason."""
    return [(c.name, _num(c.measured), _num(c.limit), "pass" if c.passed else "FAIL",
             c.reason) for c in checks]


def _subject_lines(result: AcceptanceResult) -> list[str]:
    """What was tested, one line a fact (unknown ones with their reason)."""
    s = result.subject
    lines = [f"pin {result.pin_version}, mode {result.mode}, gates file "
             f"{result.config_sha256[:19]}…"]
    b = result.binding
    status = b.lock_status.replace("-", " ") if b is not None and b.lock_status else None
    for key, value in (("lock", s.lock), ("lock content hash", s.lock_content_hash),
                       ("lock status", status and status + "".join(
                           f"; {r}" for r in (b.lock_unconfirmed if b else []))),
                       ("image", s.image),
                       ("image digest", s.image_digest and
                        f"{s.image_digest} ({s.image_digest_kind})"),
                       ("host snapshot", s.host_snapshot_hash),
                       ("model content hash", s.model_content_hash and
                        f"{s.model_content_hash} ({s.model_hash_basis})")):
        if value:
            lines.append(f"  {key}: {value}")
    for key, why in sorted(s.unknown.items()):
        lines.append(f"  {key}: unknown ({why})")
    if result.mode == "judged" and result.finished_at:
        lines.append(f"  judged {result.finished_at} (the runs themselves are the files')")
    elif result.started_at:
        lines.append(f"  ran {result.started_at} .. {result.finished_at}")
    lines += _binding_lines(result)
    return [printable(line, newlines=False) for line in lines]


def _binding_lines(result: AcceptanceResult) -> list[str]:
    """The stack the gates ran on, layer by layer, and where it differs from the lock's."""
    b = result.binding
    if b is None:
        return []
    how = "as pin probed this host" if b.checked == "run" else "judged files"
    lines = [f"stack the gates ran on ({how}):"]
    for layer in LAYERS:
        value = b.ran_on.get(layer)
        lines.append(f"  {layer}: " + (value if value is not None else
                                       f"unknown ({b.ran_on_unknown.get(layer, '?')})"))
    lines += [f"  differs from the lock: {d}" for d in b.differences]
    if b.allowed_unbound and b.differences:
        lines.append("  kept with --unbound-ok: not evidence about the lock's stack")
    return lines


def _unbound_line(result: AcceptanceResult) -> str | None:
    """``UNBOUND: why`` when the result cannot count as evidence for its lock."""
    problems = [p + " (--lock LOCK names the stack measured)" if p == "names no lock" else p
                for p in binding_problems(result)]
    if not problems:
        return None
    return printable("UNBOUND: " + "; ".join(problems) + (
        " (kept with --unbound-ok)" if result.binding is not None
        and result.binding.allowed_unbound and result.binding.differences else ""),
        newlines=False)


def unbound_refusal(result: AcceptanceResult) -> str | None:
    """The error paragraph (exit 12) of a result whose binding found differences and the
    user did not pass ``--unbound-ok``; ``None`` otherwise. The result was written first.
    """
    b = result.binding
    if b is None or not b.differences or b.allowed_unbound:
        return None
    return printable("Unbound: what the result was measured on differs from the lock, or "
                     "pin could not check it: "
                     + "; ".join(b.differences) + ". The result is not evidence about the "
                     "lock (pass --unbound-ok to keep it anyway, marked unbound).",
                     newlines=False)


def _import_text(result: AcceptanceResult) -> str | None:
    """The import gate's build facts and checks."""
    imp = result.import_
    if imp is None:
        return None
    title = f"import {'PASS' if imp.passed else 'FAIL'}"
    facts = imp.model_dump(mode="json", by_alias=True, exclude={"checks", "modules",
                                                                 "collect_env",
                                                                 "failed_checks"},
                           exclude_none=True)
    extra = ", ".join(f"{k} {v}" for k, v in facts.items() if not isinstance(v, dict | list)
                      and k not in ("passed",))
    return table_text(_HEADERS, _rows(imp.checks), title=title) + (
        f"\n  build: {printable(extra, newlines=False)}" if extra else "")


def _train_text(result: AcceptanceResult) -> str | None:
    """The training gate's checks."""
    train = result.train
    if train is None:
        return None
    title = f"train: {train.trainer}, {train.steps} steps {'PASS' if train.passed else 'FAIL'}"
    return table_text(_HEADERS, _rows(train.checks), title=title)


def _slo_rows(checks: Sequence[Check]) -> list[tuple[str, ...]]:
    """One table row per serving check: SLO, measured, bound and limit (with its unit),
    verdict, reason.
    """
    return [(c.slo, _num(c.measured), f"{'<=' if c.bound == 'max' else '>='} {c.limit:.6g}"
             + (f" {c.unit}" if c.unit else ""), "pass" if c.passed else "FAIL", c.reason)
            for c in checks]


def _serve_text(result: AcceptanceResult) -> Iterator[str]:
    """One table per serving run, then quality and sustained throughput."""
    serve = result.serve
    if serve is None:
        return
    for p in serve.points:
        s = p.summary
        version = s.harness_version or "version not recorded"
        title = (f"serve {s.source}#{s.index} ({s.harness}, {version}; {load_text(p)}; "
                 f"{s.completed} completed, {s.failed if s.failed is not None else '?'} "
                 f"failed) {'PASS' if p.passed else 'FAIL'}")
        rates = ", ".join(f"{t.per_s:.4g}/s {t.basis}" for t in s.throughput)
        yield table_text(("metric", *_HEADERS[1:]), _slo_rows(p.checks), title=title) + (
            f"\n  throughput: {rates}" if rates else "")
    if serve.quality is not None:
        q = serve.quality
        note = (f"\n  {q.exact_matches} of {q.prompts} outputs equal the reference; token "
                f"agreement on {q.token_basis}" if q.reference else "")
        yield table_text(_HEADERS, _slo_rows(q.checks),
                         title=f"serve quality {'PASS' if q.passed else 'FAIL'}") + note
    if serve.sustained is not None:
        st = serve.sustained
        yield table_text(_HEADERS, _slo_rows([st.check]),
                         title=(f"serve sustained ({st.duration_s:g} s at concurrency "
                                f"{st.concurrency}) {'PASS' if st.passed else 'FAIL'}"))


def result_text(result: AcceptanceResult) -> str:
    """The whole result for people: subject, each gate, the verdict per gate and overall."""
    unbound = _unbound_line(result)
    parts = [x for x in (not_verified_line(result), unbound) if x] + [
        "\n".join(_subject_lines(result))]
    for part in (_import_text(result), _train_text(result)):
        if part is not None:
            parts.append(part)
    parts.extend(_serve_text(result))
    gates = ", ".join(f"{'imports' if g == 'import' else g + 's'}: "
                      f"{'yes' if ok else 'NO'}" for g, ok in result.gates.items())
    verdict = verdict_line(result, unbound=unbound is not None)
    return "\n\n".join(parts) + f"\n\n{gates}\n{verdict}"


def compare_text(cmp: Comparison) -> str:
    """The comparison for people: the gates per side, then every metric with the delta."""
    def verdict(v: bool | None) -> str:
        return "-" if v is None else ("pass" if v else "FAIL")

    gate_rows = [(g, verdict(v["a"]), verdict(v["b"])) for g, v in cmp.gates.items()]
    parts = [f"A: {cmp.a}\nB: {cmp.b}" + "".join(f"\nNote: {n}" for n in cmp.notes),
             table_text(("gate", "A", "B"), gate_rows, title="gates")]
    metric_rows = [(r.gate, r.metric, _num(r.a), _num(r.b), _num(r.delta),
                    "-" if r.change_pct is None else f"{r.change_pct:+.1f}%",
                    r.better or "-", r.unit) for r in cmp.rows]
    if metric_rows:
        parts.append(table_text(("gate", "metric", "A", "B", "B-A", "change", "better",
                                 "unit"), metric_rows, title="metrics"))
    else:
        parts.append("No metric in common to compare.")
    return printable("\n\n".join(parts), newlines=True)


def failure_text(result: AcceptanceResult) -> str:
    """The error paragraph of a failed result: which checks failed, by name (their values,
    limits and reasons are in the tables, or the JSON result); at most 20 named.
    """
    names: list[str] = []
    if result.import_ is not None:
        names += [f"import: {c.name}" for c in result.import_.checks if not c.passed]
    if result.train is not None:
        names += [f"train: {c.name}" for c in result.train.checks if not c.passed]
    if result.serve is not None:
        serve = result.serve
        names += [f"serve: {p.summary.source}#{p.summary.index}: {c.slo}"
                  for p in serve.points for c in p.checks if not c.passed]
        if serve.quality is not None:
            names += [f"serve: quality: {c.slo}" for c in serve.quality.checks if not c.passed]
        if serve.sustained is not None and not serve.sustained.passed:
            names.append(f"serve: sustained: {serve.sustained.check.slo}")
    shown = "; ".join(names[:20]) + (f"; and {len(names) - 20} more" if len(names) > 20
                                     else "")
    return (f"Acceptance failed: {len(names) or len(result.failed)} check(s): "
            f"{shown or '; '.join(result.failed)}.")


def is_envelope(name: str) -> bool:
    """Whether the file ``name`` holds a DSSE envelope (a signed result; best effort: False
    when unreadable), for ``pin accept show``.
    """
    from pinning.cli.options import cli_path
    from pinning.errors import UsageError
    from pinning.util.jsonread import load_json

    try:
        doc = load_json(cli_path(name).read_bytes(), UsageError,
                        label=name) if name != "-" else None
    except (OSError, UsageError):
        return False
    return isinstance(doc, dict) and "payloadType" in doc

