"""The headline box that opens ``pin report``: the verdict, the stack it is for, and every
caveat and binding problem in one list; the lock's status, when not validated, is the
first caveat.

The page must never contradict itself (issue 30 §5): a green "port" above a red "blocked"
porting bill, or a lock of one GPU above an acceptance result measured on another, is a
report a manager would act on wrongly. So the inputs are checked against each other here
(lock vs results, lock vs audit GPU, lock vs cost platforms, cost platforms vs results,
the cost verdict vs the porting bill's blocked items, acceptance binding and unverified GPU
stacks vs a port verdict);
any disagreement makes the verdict ``inconclusive`` and each one is a sentence of ``why``.
"""

from __future__ import annotations

from pinning.accept.result import (
    AcceptanceResult,
    binding_problems,
    unverified_layers,
    unverified_stack,
)
from pinning.audit.model import Verdict as AuditVerdict
from pinning.cost.blocked import finding_id
from pinning.cost.model import CostReport, Migration
from pinning.cost.prices import gpu_key
from pinning.cost.report.inputs import ReportInputs
from pinning.cost.report.view import Headline, Platform, file_name, usd
from pinning.lockfile.models import Lockfile
from pinning.lockfile.status import NOT_RECORDED

__all__ = ["INCONCLUSIVE", "build_headline", "gpu_of_lock", "problems_of",
           "uncovered_blocked"]

#: The verdict when the inputs disagree.
INCONCLUSIVE = "inconclusive"

#: The cost verdict's reasons that say its results are not evidence about the stacks priced.
_EVIDENCE = ("unverified", "unbound", "same-measurement")


def problems_of(result: AcceptanceResult) -> list[str]:
    """Why ``result`` cannot count as evidence for its lock ([] when bound; see
    :func:`pinning.accept.result.binding_problems`). Raises no ``PinError``.
    """
    return binding_problems(result)


def gpu_of_lock(lock: Lockfile) -> str | None:
    """The GPU a lock pins (its target, else what it was resolved for), or ``None``."""
    return lock.target.gpu.value or lock.request.gpu


def _migration(cost: CostReport | None) -> Migration | None:
    return cost.payback.migration if cost is not None and cost.payback is not None else None


def uncovered_blocked(inputs: ReportInputs) -> list[str]:
    """The porting bill's blocked items (finding ids, ``rule: subject (path:line)``) that
    the cost report neither priced nor waived: all of them without a cost report or when
    its migration cost was not weighed against an audit; none without a porting bill.
    """
    if inputs.audit is None:
        return []
    blocked = [finding_id(f) for f in inputs.audit.value.findings
               if f.verdict is AuditVerdict.BLOCKED]
    mig = _migration(inputs.cost.value if inputs.cost is not None else None)
    settled = ({b.finding for b in mig.blocked_priced} | {b.finding for b in mig.blocked_waived}
               if mig is not None else set())
    return [b for b in blocked if b not in settled]


def _lock_vs_results(inputs: ReportInputs) -> list[str]:
    """The result the verdict is for (the last, or only, one) measured on another lock."""
    if inputs.lock is None or not inputs.results:
        return []
    lock, last = inputs.lock, inputs.results[-1]
    named = last.result.subject.lock_content_hash
    if named is None or named == lock.value.content_hash:
        return []
    return [f"the acceptance result {file_name(last.path)} was measured on the lock with "
            f"content hash {named}, not on the lock shown, {file_name(lock.path)} "
            f"({gpu_of_lock(lock.value) or 'GPU unknown'}, {lock.value.content_hash}): its "
            "gates say nothing about this stack"]


def _audit_vs_lock(inputs: ReportInputs) -> list[str]:
    if inputs.audit is None or inputs.lock is None or inputs.audit.value.gpu is None:
        return []
    locked = gpu_of_lock(inputs.lock.value)
    audited = inputs.audit.value.gpu
    if locked is None or gpu_key(locked) == gpu_key(audited):
        return []
    return [f"the porting bill {file_name(inputs.audit.path)} is for GPU {audited}, but the "
            f"lock {file_name(inputs.lock.path)} pins {locked}"]


def _cost_vs_inputs(inputs: ReportInputs, plats: list[Platform]) -> list[str]:
    """The cost report's candidate (or only) platform against the lock, and the cost
    report's platforms against the results given.
    """
    if inputs.cost is None:
        return []
    out: list[str] = []
    cost = inputs.cost.value
    last = cost.platforms[-1]
    if inputs.lock is not None:
        locked = gpu_of_lock(inputs.lock.value)
        name = file_name(inputs.lock.path)
        if locked and last.rate.gpu and gpu_key(locked) != gpu_key(last.rate.gpu):
            out.append(f"the cost report prices the {last.role} as {last.rate.gpu}, but the "
                       f"lock {name} pins {locked}")
        if last.lock_content_hash not in (None, inputs.lock.value.content_hash):
            out.append(f"the cost report priced the {last.role} on the lock with content "
                       f"hash {last.lock_content_hash}, not on {name} "
                       f"({inputs.lock.value.content_hash})")
    for p in plats:
        if p.cost is None:
            out.append(f"the acceptance result {file_name(p.accept.path)} is not one the cost "
                       "report priced: the verdict is about other results")
        elif p.cost.lock_content_hash not in (None, p.accept.result.subject.lock_content_hash):
            out.append(f"the cost report priced {file_name(p.cost.result)} on lock "
                       f"{p.cost.lock_content_hash}, but the result names lock "
                       f"{p.accept.result.subject.lock_content_hash}")
    return out


def _verify_vs_lock(inputs: ReportInputs) -> list[str]:
    if inputs.verify is None or inputs.lock is None:
        return []
    if inputs.verify.value.lock_hash == inputs.lock.value.content_hash:
        return []
    return [f"the host verification {file_name(inputs.verify.path)} is of the lock with "
            f"content hash {inputs.verify.value.lock_hash}, not of "
            f"{file_name(inputs.lock.path)} ({inputs.lock.value.content_hash})"]


def _stack(inputs: ReportInputs) -> str:
    """One line naming the stack the verdict is for."""
    if inputs.lock is not None:
        lock = inputs.lock.value
        target = lock.target.gfx_target or lock.target.compute_capability
        parts = [gpu_of_lock(lock) or "GPU unknown"]
        if target is not None and target.value:
            parts[0] += f" ({target.value})"
        rt = lock.runtime
        parts.append(f"{'ROCm' if rt.name == 'rocm' else 'CUDA'} {rt.version.value or '?'}")
        parts += [f"{f.name} {f.version.value or '?'}" for f in lock.frameworks]
        return (", ".join(parts) + f": lock {file_name(inputs.lock.path)} "
                f"({lock.content_hash})")
    if inputs.cost is not None:
        last = inputs.cost.value.platforms[-1]
        return (f"the {last.role} priced as {last.rate.gpu or 'an unknown GPU'} by the cost "
                "report; no lock given (--lock LOCK), so the stack is not shown")
    return "no lock given (--lock LOCK): the stack is not known"


def _settled(mig: Migration | None) -> list[str]:
    """One caveat per blocked item the cost report priced or waived (who, when, why)."""
    if mig is None:
        return []
    out = [f"blocked item priced at {usd(b.usd)}"
           + (f" ({b.hours:g} hours)" if b.hours is not None else "")
           + f": {b.finding}; {b.priced_by} {file_name(b.source)}"
           + (f", {b.reason}" if b.reason else "") + (f", by {b.by}" if b.by else "")
           + (f", {b.date}" if b.date else "") for b in mig.blocked_priced]
    out += [f"blocked item waived: {b.finding}; {b.reason}, by {b.by}, {b.date} "
            f"({file_name(b.source)})" for b in mig.blocked_waived]
    return out


def _status_caveats(inputs: ReportInputs, plats: list[Platform]) -> list[str]:
    """The lock's status when it is not validated (unconfirmed, each reason; or not
    recorded), and each result's measured on an unconfirmed lock.
    """
    out: list[str] = []
    if inputs.lock is not None:
        name, status = file_name(inputs.lock.path), inputs.lock.value.status
        if status is None:
            out.append(f"the lock {name}'s status is {NOT_RECORDED}")
        elif status.value == "unconfirmed":
            out += [f"the lock {name} is unconfirmed: {r.reason} (settled by {r.settled_by})"
                    for r in status.reasons]
    for p in plats:
        b = p.accept.result.binding
        if b is not None and b.lock_status == "unconfirmed":
            out.append(f"{file_name(p.accept.path)}: measured on an unconfirmed lock: "
                       + "; ".join(b.lock_unconfirmed))
    return out


def _caveats(inputs: ReportInputs, plats: list[Platform]) -> list[str]:
    """Every caveat and binding problem: the lock's status (:func:`_status_caveats`), per
    result the layers pin did not verify and its binding problems, the cost report's (two
    results that are one measurement first), the porting bill's, the host verification's.
    """
    out = _status_caveats(inputs, plats)
    out += [f"{file_name(p.accept.path)}: {what}"
            for p in plats for what in unverified_layers(p.accept.result)]
    out += [f"{file_name(p.accept.path)}: not bound to its stack: {why}"
            for p in plats for why in problems_of(p.accept.result)]
    if inputs.cost is not None:
        cost = inputs.cost.value
        if cost.verdict is not None:
            out += [r.text for r in cost.verdict.reasons if r.code == "same-measurement"]
        out += list(cost.caveats)
        mig = _migration(cost)
        if mig is not None and mig.unknown:
            out.append(f"migration cost unknown: {mig.unknown}")
        out += _settled(mig)
        given = {file_name(p.accept.path) for p in plats}
        for c in cost.platforms:
            if file_name(c.result) not in given:
                out.append(f"the cost report priced {file_name(c.result)}, which is not given "
                           "here (--accept): its gates are not shown")
                out += [f"{file_name(c.result)}: not bound to its stack: {why}"
                        for why in c.binding_problems]
    if inputs.verify is not None and inputs.verify.value.result != "match":
        out.append(f"the host verification {file_name(inputs.verify.path)} found "
                   f"{inputs.verify.value.result}: the host differs from the lock")
    if inputs.audit is not None and inputs.audit.value.effort is not None and \
            inputs.audit.value.effort.unpriced:
        out.append("the porting bill gives no hours for "
                   + ", ".join(inputs.audit.value.effort.unpriced) + " (unknown, not zero)")
    return list(dict.fromkeys(out))


def build_headline(inputs: ReportInputs, plats: list[Platform]) -> Headline:
    """The headline of the report of ``inputs`` (``plats`` from
    :func:`pinning.cost.report.sections.platforms`): the cost verdict, unless the inputs
    disagree (then ``inconclusive``, each disagreement in ``why``), or ``no verdict``.
    A ``port`` that rests on results with binding problems, or on a porting bill whose
    blocked items the cost verdict did not price or waive, is ``inconclusive`` too.
    Raises no ``PinError``.
    """
    why = (_lock_vs_results(inputs) + _audit_vs_lock(inputs) + _cost_vs_inputs(inputs, plats)
           + _verify_vs_lock(inputs))
    verdict = inputs.cost.value.verdict if inputs.cost is not None else None
    decision = verdict.decision if verdict is not None else "no verdict"
    if verdict is not None and decision == INCONCLUSIVE:
        why += [f"the cost report is inconclusive: {r.text}" for r in verdict.reasons
                if r.code in _EVIDENCE] or ["the cost report is inconclusive"]
    if decision == "port":
        blocked = uncovered_blocked(inputs)
        if blocked:
            why.append(f"the cost verdict is port, but the porting bill has {len(blocked)} "
                       "blocked item(s) it neither priced nor waived: "
                       + "; ".join(blocked[:5]) + ("; ..." if len(blocked) > 5 else ""))
        assert inputs.cost is not None  # a port verdict comes from a cost report
        for what, bad in (("not bound to their stack", problems_of),
                          ("whose GPU stack pin did not verify", unverified_stack)):
            names = [file_name(p.accept.path) for p in plats if bad(p.accept.result)]
            names += [file_name(c.result) for c in inputs.cost.value.platforms
                      if (c.binding_problems if bad is problems_of else c.unverified)
                      and file_name(c.result) not in names]
            if names:
                why.append(f"the cost verdict is port, but it rests on acceptance results "
                           f"{what} ({', '.join(names)}): they cannot support a port")
    return Headline(INCONCLUSIVE if why else decision, _stack(inputs), tuple(why),
                    tuple(_caveats(inputs, plats)))
