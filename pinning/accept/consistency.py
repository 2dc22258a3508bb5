"""Refuse an acceptance result whose verdicts contradict its own checks
(:func:`check_consistent`), so that a stored or edited ``passed`` is never trusted over what
was measured. ``pin accept show`` / ``compare``, ``pin cost``, ``pin report`` and
``pin verify-image --require-acceptance`` read results through it.
"""

from __future__ import annotations

import math

from pinning.accept.judge import Check
from pinning.accept.result import AcceptanceResult, ServeResult, gate_verdicts
from pinning.accept.train import TrainCheck
from pinning.errors import UsageError
from pinning.util.text import printable

__all__ = ["check_consistent"]


def _verdict(check: Check, where: str) -> str | None:
    """What is wrong with ``check``'s own verdict, or ``None``: a check without a
    measured value fails; with one, it passes exactly when the value is within the limit
    in the check's bound direction (``max``: at or below, ``min``: at or above).
    """
    name = f"{where} check {printable(check.slo, newlines=False)!r}"
    m, limit = check.measured, check.limit
    if not math.isfinite(limit) or (m is not None and not math.isfinite(m)):
        return f"{name} holds a number that is not finite"
    if m is None:
        return f"{name} passed without a measured value" if check.passed else None
    within = m <= limit if check.bound == "max" else m >= limit
    if within != check.passed:
        word = "passed" if check.passed else "failed"
        return (f"{name} {word} although measured {m:.6g} is "
                f"{'within' if within else 'beyond'} its {check.bound} limit {limit:.6g}")
    return None


def _aggregate(passed: bool, checks: list[Check] | list[TrainCheck], where: str) -> str | None:
    """What is wrong with a ``passed`` that should be "there are checks and all pass"."""
    expected = bool(checks) and all(c.passed for c in checks)
    if passed == expected:
        return None
    if not checks:
        return f"{where} is marked passed with no check"
    return f"{where} is marked {'passed' if passed else 'failed'} but its checks " + (
        "all pass" if expected else "do not all pass")


def _serve_problems(serve: ServeResult) -> list[str]:
    """The contradictions inside the serving gate (see :func:`check_consistent`)."""
    out: list[str] = []
    failed: list[Check] = []
    for i, point in enumerate(serve.points):
        where = f"serve point {i} ({printable(point.summary.source, newlines=False)}" \
                f"#{point.summary.index})"
        out += [p for c in point.checks if (p := _verdict(c, where)) is not None]
        if (p := _aggregate(point.passed, point.checks, where)) is not None:
            out.append(p)
        failed += [c for c in point.checks if not c.passed]
    if serve.quality is not None:
        q = serve.quality
        out += [p for c in q.checks if (p := _verdict(c, "serve quality")) is not None]
        if (p := _aggregate(q.passed, q.checks, "serve quality")) is not None:
            out.append(p)
        failed += [c for c in q.checks if not c.passed]
    if serve.sustained is not None:
        st = serve.sustained
        if (p := _verdict(st.check, "serve sustained")) is not None:
            out.append(p)
        if st.passed != st.check.passed:
            out.append("serve sustained is marked " + ("passed" if st.passed else "failed")
                       + " but its check " + ("passes" if st.check.passed else "fails"))
        if not st.check.passed:
            failed.append(st.check)
    judged = (any(p.checks for p in serve.points) or serve.quality is not None
              or serve.sustained is not None)
    expected = judged and not failed
    if serve.passed != expected:
        out.append("the serve gate is marked " + ("passed" if serve.passed else "failed")
                   + (" but nothing was judged" if not judged else " but its checks "
                      + ("all pass" if expected else "do not all pass")))
    listed = list(serve.failed_checks)
    extra = 0 if judged else 1  # "slo: ... nothing was judged"
    if len(listed) != len(failed) + extra or not all(
            line.endswith(f"{c.slo}: {c.reason}") for line, c in zip(listed, failed,
                                                                       strict=False)):
        out.append(f"serve failed-checks lists {len(listed)} entries for {len(failed)} "
                   "failed checks, or not the failed checks in order")
    return out


def check_consistent(result: AcceptanceResult, *, label: str = "The acceptance result"
                     ) -> None:
    """Refuse a result whose verdicts contradict its own checks, so that a stored or
    edited ``passed`` is never trusted over what was measured.

    Checks: every serving check's ``passed`` agrees with its ``measured`` value against
    its ``limit`` in its ``bound`` direction (no measured value: failed; numbers finite);
    each point's, the quality's, the sustained run's, the import and train gates' and
    the serve gate's ``passed`` is true exactly when it has checks and all pass (import
    and train checks have no bound direction, so only this aggregation is checked for
    them); the serve gate's ``failed-checks`` lists exactly its failed checks, in order
    (plus the "nothing was judged" line when it has no check); ``gates`` holds exactly
    the gates present with their verdicts; ``passed`` is ``bool(gates) and
    all(gates.values())``; ``failed`` is exactly ``gate: <failed check>`` for every failed
    check (:func:`gate_verdicts`). Results pin writes always satisfy it.

    Raises :class:`UsageError` (exit 2) starting with ``label`` and naming the first few
    contradictions.
    """
    problems: list[str] = []
    if result.import_ is not None and (
            p := _aggregate(result.import_.passed, result.import_.checks, "the import gate")):
        problems.append(p)
    if result.train is not None and (
            p := _aggregate(result.train.passed, result.train.checks, "the train gate")):
        problems.append(p)
    if result.serve is not None:
        problems += _serve_problems(result.serve)
    gates, failed = gate_verdicts(result.import_, result.train, result.serve)
    if result.gates != gates:
        problems.append(f"gates {_show(result.gates)} is not the verdict of the gates "
                        f"present {_show(gates)}")
    if result.passed != (bool(result.gates) and all(result.gates.values())):
        problems.append("passed is " + str(result.passed).lower() + " but gates are "
                        + _show(result.gates))
    if result.failed != failed:
        problems.append(f"failed lists {len(result.failed)} entries, not the "
                        f"{len(failed)} failed checks")
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise UsageError(f"{label}: the result contradicts itself: "
                         + "; ".join(problems[:5]) + more + ". It was edited or damaged; "
                         "pin does not trust its verdicts.",
                         hint="Use the result file pin accept run or pin accept judge "
                              "wrote, unedited, or run the gates again.")


def _show(gates: dict[str, bool]) -> str:
    """``{import: true, serve: false}`` for messages."""
    return "{" + ", ".join(f"{printable(k, newlines=False)}: {str(v).lower()}"
                           for k, v in gates.items()) + "}"
