"""Which lock a result may be priced against, and why a result cannot count as evidence.

A result is priced only against the lock it names (its subject's lock content hash); a
result that names none is refused unless the user says ``--unbound-ok``, and then it is a
caveat. The reasons a result is not bound come from
:func:`pinning.accept.result.binding_problems`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pinning.accept.result import AcceptanceResult
from pinning.accept.result import binding_problems as accept_binding_problems
from pinning.errors import UsageError

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile

__all__ = ["binding_problems", "check_lock"]

def binding_problems(result: AcceptanceResult) -> list[str]:
    """Why ``result`` cannot count as evidence for its lock ([] when bound):
    :func:`pinning.accept.result.binding_problems`. Raises nothing.
    """
    return accept_binding_problems(result)


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
