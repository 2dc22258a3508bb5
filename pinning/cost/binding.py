"""Which lock a result may be priced against, and why a result cannot count as evidence.

A result is priced only against the lock it names (its subject's lock content hash); a
result that names none is refused unless the user says ``--unbound-ok``, and then it is a
caveat. The reasons a result is not bound come from
:func:`pinning.accept.result.binding_problems`, the GPU stack layers pin did not verify from
:func:`pinning.accept.result.unverified_stack`, and two results that are one measurement
from :func:`same_measurement`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pinning.accept.result import AcceptanceResult, unverified_stack
from pinning.accept.result import binding_problems as accept_binding_problems
from pinning.errors import UsageError

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile

__all__ = ["binding_problems", "check_lock", "same_measurement", "unverified"]

def binding_problems(result: AcceptanceResult) -> list[str]:
    """Why ``result`` cannot count as evidence for its lock ([] when bound):
    :func:`pinning.accept.result.binding_problems`. Raises nothing.
    """
    return accept_binding_problems(result)


def unverified(result: AcceptanceResult) -> list[str]:
    """The layers of ``result``'s GPU stack pin did not verify, one sentence per reason
    (:func:`pinning.accept.result.unverified_stack`; [] when verified). Raises nothing.
    """
    return unverified_stack(result)


def _runs(result: AcceptanceResult) -> list[tuple[str, str | None, str]]:
    """``(file name, source sha256, the run's summary without its file)`` per serving run."""
    from pathlib import PurePath

    if result.serve is None:
        return []
    return [(PurePath(p.summary.source).name, p.summary.source_sha256,
             p.summary.model_dump_json(exclude={"source", "source_sha256", "index"}))
            for p in result.serve.points]


def same_measurement(current: AcceptanceResult, candidate: AcceptanceResult) -> list[str]:
    """Why ``current`` and ``candidate`` are not two measurements, one sentence; [] when
    they are. Judged from files with the same sha256 (``source-sha256``, recorded since pin
    recorded it), or, for results that do not record it, holding a run whose every measured
    value is identical (two measurements of a serving stack never agree to the last digit).
    Raises nothing.
    """
    a, b = _runs(current), _runs(candidate)
    shas = {sha for _, sha, _ in a if sha} & {sha for _, sha, _ in b if sha}
    if shas:
        names = sorted({name for name, sha, _ in a + b if sha in shas})
        return [f"the current and candidate results were judged from the same file(s) "
                f"({', '.join(names)}: same sha256): one measurement, not two, so it says "
                "nothing about the difference between the platforms"]
    same = {run for _, _, run in a} & {run for _, _, run in b}
    if same:
        names = sorted({name for name, _, run in a + b if run in same})
        return [f"the current and candidate results hold identical runs ({', '.join(names)}"
                "): one measurement, not two, so it says nothing about the difference "
                "between the platforms"]
    return []


def check_lock(name: str, result: AcceptanceResult, lock: Lockfile | None,
               lock_name: str | None, gpu: str | None, *, unbound_ok: bool) -> list[str]:
    """Refuse to price ``result`` (file ``name``) against a lock it does not name; return
    the caveats when ``unbound_ok`` lets it through.

    Raises :class:`UsageError` (exit 2): a ``lock`` whose content hash is not the one the
    result records (naming both, always); without ``unbound_ok``, a result that names no
    lock (judged without ``--lock``, or its hash removed), or one that names a lock priced
    without it (``--lock none``).
    """
    recorded = result.subject.lock_content_hash
    if lock is not None and recorded is not None and lock.content_hash != recorded:
        raise UsageError(f"{name} was measured on the lock with content hash {recorded}, "
                         f"but --lock {lock_name} has {lock.content_hash}.",
                         hint="Pass the lock the acceptance run used, in the same order as "
                              "the results.")
    priced_with = (f"--lock {lock_name}" if lock is not None
                   else f"--gpu {gpu}" if gpu is not None else "no GPU")
    if recorded is None:
        if not unbound_ok:
            raise UsageError(
                f"{name} names no lock (judged without --lock, or its lock content hash was "
                "removed): pin cost prices a result only against the lock it names.",
                hint="Judge or run it with --lock LOCK, or pass --unbound-ok to price it "
                     "anyway (it is then a caveat and never supports a port verdict).")
        return [f"{name} names no lock; priced with {priced_with} because of --unbound-ok: "
                "it is not evidence about that stack"]
    if lock is None:
        if not unbound_ok:
            raise UsageError(f"{name} was measured on the lock with content hash {recorded}; "
                             "pin cost prices it only against that lock.",
                             hint="Pass that lock with --lock (in the order of the results), "
                                  "or --unbound-ok to price it with --gpu anyway.")
        return [f"{name} names the lock {recorded} but was priced with {priced_with} "
                "because of --unbound-ok"]
    return []
