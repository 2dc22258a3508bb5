"""The report's first sections: the stack from the lock and the host verification, the
porting bill, and the acceptance gates; and the platforms (one per acceptance result) the
later sections plot.
"""

from __future__ import annotations

from pathlib import Path

from pinning.accept.result import AcceptanceResult, unverified_stack
from pinning.audit.bill import AuditReport
from pinning.audit.model import VERDICTS_SHOWN, Verdict
from pinning.cost.report.headline import problems_of
from pinning.cost.report.inputs import AcceptInput, Loaded, ReportInputs
from pinning.cost.report.view import LIST_LIMIT, NOT_GIVEN, Platform, Section, Table, num
from pinning.lockfile.models import Lockfile, Pinned
from pinning.verify.report import VerifyReport

__all__ = ["audit_section", "gates_section", "platforms", "stack_section"]


def _pinned(p: Pinned | None) -> str:
    """One locked value: the value, the constraint or allowed set still to be frozen, or
    ``unknown: reason``; ``-`` when absent.
    """
    if p is None:
        return "-"
    if p.value is not None:
        return p.value
    if p.constraint:
        return f"{p.constraint} (to freeze from a host)"
    if p.allowed:
        return "one of " + ", ".join(p.allowed[:4]) + (", ..." if len(p.allowed) > 4 else "")
    return f"unknown: {p.reason}"


def _stack_rows(lock: Lockfile) -> list[tuple[str, str]]:
    t, rt, fw, kd, im = lock.target, lock.runtime, lock.firmware, lock.kernel_driver, lock.image
    target = t.gfx_target or t.compute_capability
    rows = [("GPU", f"{_pinned(t.gpu)} ({_pinned(target)})"
             + (f" x {_pinned(t.count)}" if t.count is not None else ""))]
    rows.append((f"Firmware ({fw.kind})", _pinned(fw.version)
                 + (f"; VBIOS/IFWI {_pinned(fw.vbios)}" if fw.vbios is not None else "")))
    rows.append((f"Driver ({kd.name})", _pinned(kd.version)))
    rows.append(("Runtime", f"{'ROCm' if rt.name == 'rocm' else 'CUDA'} {_pinned(rt.version)}"
                 + "".join(f"; {k} {_pinned(v)}" for k, v in (
                     ("HIP", rt.hip), ("toolkit", rt.toolkit)) if v is not None)))
    rows += [(f"Framework {f.name}", f"{_pinned(f.version)} (build {_pinned(f.build)})")
             for f in lock.frameworks]
    rows += [("OS", _pinned(lock.os)), ("Kernel", _pinned(lock.kernel)),
             ("Image", _pinned(im.ref)), ("Image digest", _pinned(im.digest)),
             ("Lock content hash", lock.content_hash)]
    return rows


def _verify_part(verify: Loaded[VerifyReport] | None, lock: Loaded[Lockfile] | None
                 ) -> tuple[str | None, list[str], list[str]]:
    """(status, paragraphs, items) of the host-verification part of the stack section."""
    if verify is None:
        return None, [f"Host verification: {NOT_GIVEN} (pin verify LOCK --format json, "
                      "then --verify FILE)."], []
    v = verify.value
    counts = ", ".join(f"{n} {k}" for k, n in sorted(v.counts.items()))
    paras = [f"Host verification ({verify.path}): {v.result} - host {v.host} against "
             f"{v.lock}" + (" (strict)" if v.strict else "") + f"; {counts or 'no findings'}."]
    if lock is not None and v.lock_hash != lock.value.content_hash:
        paras.append(f"Caution: the verify report is of lock {v.lock_hash}, not of the lock "
                     f"shown ({lock.value.content_hash}).")
    items = [f"{f.fact}: {f.status} ({f.severity}) - {f.message}" for f in v.drift[:LIST_LIMIT]]
    if len(v.drift) > LIST_LIMIT:
        items.append(f"... and {len(v.drift) - LIST_LIMIT} more")
    return v.result, paras, items


def stack_section(lock: Loaded[Lockfile] | None, verify: Loaded[VerifyReport] | None
                  ) -> Section:
    """The stack from the lock (GPU, firmware, driver, runtime, frameworks, OS, image
    digest) and whether a host verified against it.
    """
    status, paras, items = _verify_part(verify, lock)
    if lock is None:
        return Section("stack", "Stack", False, status,
                       (f"Lockfile: {NOT_GIVEN} (--lock LOCK).", *paras), tuple(items))
    table = Table(f"Locked stack ({lock.path})", ("Part", "Locked value"),
                  tuple(_stack_rows(lock.value)))
    return Section("stack", "Stack", True, status, tuple(paras), tuple(items), (table,))


def audit_section(audit: Loaded[AuditReport] | None, unweighed: list[str]) -> Section:
    """The porting bill: totals per verdict, kernel lines, the team's effort estimate, and
    every blocked item (up to :data:`LIST_LIMIT`). ``unweighed`` are the blocked items
    (``rule: subject``) the cost verdict did not price or waive: the badge says
    ``blocked`` while any is left, ``blocked items priced or waived`` when none is.
    """
    if audit is None:
        return Section("audit", "Porting bill", False, None,
                       (f"Porting audit: {NOT_GIVEN} (pin audit --format json -o audit.json, "
                        "then --audit audit.json).",))
    a = audit.value
    totals = Table("Findings per verdict", ("Verdict", "Findings"),
                   tuple((v.value, str(a.totals.get(v, 0))) for v in VERDICTS_SHOWN))
    paras = [f"{audit.path}: {a.files_scanned} files scanned, {a.kernel_lines} lines of "
             f"kernel code" + (f", for GPU {a.gpu}" if a.gpu else "") + "."]
    if a.effort is not None:
        unpriced = (f"; no hours given for {', '.join(a.effort.unpriced)} (unknown, not zero)"
                    if a.effort.unpriced else "")
        paras.append(f"Effort estimate ({a.effort.source}): {num(a.effort.total_hours)} "
                     f"hours{unpriced}.")
    blocked = [f for f in a.findings if f.verdict is Verdict.BLOCKED]
    rows = tuple((f.rule, f.subject, f"{f.path or f.package or '-'}"
                  + (f":{f.line}" if f.line else ""), f.why, f.todo)
                 for f in blocked[:LIST_LIMIT])
    tables = [totals]
    if blocked:
        more = f" (first {LIST_LIMIT} of {len(blocked)})" if len(blocked) > LIST_LIMIT else ""
        tables.append(Table(f"Blocked items{more}", ("Rule", "Subject", "Where", "Why",
                                                    "What to do"), rows))
    else:
        paras.append("No blocked items.")
    status = ("blocked" if unweighed else "blocked items priced or waived") if blocked else (
        "no blocked items")
    if blocked and not unweighed:
        paras.append("The cost verdict priced or waived every blocked item (see the cost "
                     "report's caveats in the headline).")
    return Section("audit", "Porting bill", True, status, tuple(paras), (), tuple(tables))


def _gate_rows(r: AcceptanceResult) -> list[tuple[str, str]]:
    return [(gate, "passed" if ok else "failed") for gate, ok in r.gates.items()]


def _unbound(p: Platform, shown: str | None, last: bool) -> list[str]:
    """Why ``p``'s result is not evidence for the page: its binding problems, and for the
    last (the one the verdict is for) a lock other than the ``shown`` lock's hash.
    """
    named = p.accept.result.subject.lock_content_hash
    other = (f"measured on lock {named}, not on the lock shown ({shown})"
             if last and shown is not None and named is not None and named != shown else None)
    return [*problems_of(p.accept.result), *([other] if other else [])]


def gates_section(results: tuple[AcceptInput, ...], plats: list[Platform],
                  shown_lock: str | None = None) -> Section:
    """Each result's gates (import, train, serve) with their verdict, failed checks and
    binding (whether the result is evidence about the stack it names, and for the last
    result, about the lock shown: ``shown_lock``, its content hash). The badge is
    ``passed`` only when every result passed, is bound and had its GPU stack verified;
    ``passed, not bound`` when every one passed but some are not bound; ``passed, not
    verified`` when all are bound but pin did not verify some one's GPU stack.
    """
    if not results:
        return Section("gates", "Acceptance gates", False, None,
                       (f"Acceptance results: {NOT_GIVEN} (--accept RESULT.json, "
                        "repeatable).",))
    tables, items = [], []
    unbound = [_unbound(p, shown_lock, i == len(plats) - 1) for i, p in enumerate(plats)]
    for p, why in zip(plats, unbound, strict=True):
        r = p.accept.result
        sig = {"verified": "signature verified", "not-verified": "signed, signature not "
               "verified (no --key)", "unsigned": "unsigned"}[p.accept.signature]
        subject = r.subject
        rows = [*_gate_rows(r), ("overall", "passed" if r.passed else "failed"),
                ("mode", r.mode), ("signature", sig),
                ("lock", subject.lock_content_hash or subject.lock or "-"),
                ("image digest", subject.image_digest or "-"),
                ("finished", r.finished_at or "-"),
                ("bound to its stack", "; ".join(["no", *why]) if why else (
                    "not verified: " + "; ".join(unverified_stack(r)) if unverified_stack(r)
                    else "yes"))]
        tables.append(Table(f"{p.label} ({p.accept.path})", ("Gate", "Result"), tuple(rows)))
        items += [f"{p.label}: {line}" for line in r.failed[:LIST_LIMIT]]
    every = all(p.accept.result.passed for p in plats)
    bound = not any(unbound)
    verified = not any(unverified_stack(p.accept.result) for p in plats)
    status = (("passed" if verified else "passed, not verified") if bound
              else "passed, not bound") if every else "failed"
    return Section("gates", "Acceptance gates", True, status,
                   () if items else ("Every gate that ran passed.",), tuple(items),
                   tuple(tables))


def _same_file(a: str, b: str) -> bool:
    pa, pb = Path(a), Path(b)
    try:
        if pa.resolve() == pb.resolve():
            return True
    except (OSError, RuntimeError):
        pass
    return pa.name == pb.name


def platforms(inputs: ReportInputs) -> list[Platform]:
    """One :class:`Platform` per acceptance result: labelled with the cost report's role
    and GPU when the cost report priced the same file (matched by path, then file name),
    with the chosen operating point from the cost report, else chosen as ``pin cost``
    chooses it (the passing point with the highest token rate).
    """
    from pinning.cost.rule import operating_point, result_basis

    cost_platforms = list(inputs.cost.value.platforms) if inputs.cost is not None else []
    out: list[Platform] = []
    for a in inputs.results:
        pc = next((c for c in cost_platforms if _same_file(c.result, a.path)), None)
        label = Path(a.path).name
        if pc is not None:
            label = f"{pc.role}: {pc.rate.gpu or label}"
            op = pc.operating_point
            chosen, why = (op.point, op.chosen) if op is not None else (
                None, pc.unknown or "no point met every SLO")
        elif a.result.serve is not None and (basis := result_basis(a.result)) is not None:
            op = operating_point(a.result, basis, label=a.path)
            chosen, why = (op.point, op.chosen + " (as pin cost chooses; no cost report "
                           "names this result)") if op is not None else (
                None, "no point met every SLO")
        else:
            chosen, why = None, "no serving points with a token rate"
        out.append(Platform(label, a, pc, chosen, why))
    return out
