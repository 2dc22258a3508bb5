"""What an acceptance result is evidence about, in words: the first line and the verdict
line of ``pin accept run`` / ``judge`` / ``show`` (:func:`pinning.cli.accept_report.result_text`).

A result is evidence about one stack. Gates that pass on results whose GPU, kernel driver
or runtime pin did not verify (judged files record none of them) are a pass on the gates,
not a pass of the lock's stack, so the text says that first and the verdict never reads as
a bare ``PASS``. Unknown is said before the verdict, unbound beside it.
"""

from __future__ import annotations

from pinning.accept.result import AcceptanceResult, unverified_stack
from pinning.util.text import printable

__all__ = ["not_verified_line", "verdict_line"]


def _about(result: AcceptanceResult) -> str:
    """``"Instinct MI300X (amd)"``: the GPU of the lock the result names, or a phrase."""
    b = result.binding
    if b is not None and b.lock_gpu:
        return b.lock_gpu
    return "the lock's GPU stack" if result.subject.lock_content_hash else "any GPU stack"


def not_verified_line(result: AcceptanceResult) -> str | None:
    """``NOT VERIFIED: not evidence about Instinct MI300X (amd): gpu, kernel-driver,
    runtime: not verified (judged results: ...)`` when pin did not verify ``result``'s GPU
    stack (:func:`~pinning.accept.result.unverified_stack`), else ``None``. Never raises.
    """
    unverified = unverified_stack(result)
    if not unverified:
        return None
    return printable(f"NOT VERIFIED: not evidence about {_about(result)}: "
                     + "; ".join(unverified), newlines=False)


def verdict_line(result: AcceptanceResult, *, unbound: bool) -> str:
    """The closing verdict: ``FAIL: n check(s) failed`` with each; for a pass ``PASS: every
    gate holds.`` only when pin verified the GPU stack (``, on a stack the lock does not
    describe (UNBOUND, see above).`` when ``unbound`` and the result has binding
    differences), else ``PASS on the gates; not evidence about <GPU> (gpu, kernel-driver,
    runtime not verified, see the first line).`` Never raises.
    """
    if not result.passed:
        return (f"FAIL: {len(result.failed)} check(s) failed:\n" + "\n".join(
            "  " + printable(f, newlines=False) for f in result.failed))
    unverified = unverified_stack(result)
    if not unverified:
        differs = unbound and result.binding is not None and bool(result.binding.differences)
        return "PASS: every gate holds" + (
            ", on a stack the lock does not describe (UNBOUND, see above)." if differs else ".")
    layers = ", ".join(dict.fromkeys(
        layer.strip() for u in unverified for layer in u.split(":", 1)[0].split(",")))
    return (f"PASS on the gates; not evidence about {printable(_about(result), newlines=False)}"
            f" ({layers} not verified, see the first line).")
