"""The lock's own status as a ``pin verify`` finding: a host can match an unconfirmed lock
exactly, so the report says first what no source confirms about the lock itself.

An ``unconfirmed`` lock gives a warning (``lock-unconfirmed``): plain ``pin verify`` still
says MATCH, and ``--strict`` (every warning is drift) fails on it, because a CI gate that
must see every locked fact confirmed must not pass a stack no source confirms. A lock
without ``[status]`` (written before pin recorded it) gives a note (``lock-status-not-
recorded``), never drift: pin cannot say more of it than ``pin lock upgrade`` would. A
validated lock gives no finding.
"""

from __future__ import annotations

from pinning.guards.view import Finding
from pinning.lockfile.models import Lockfile
from pinning.lockfile.status import NOT_RECORDED

__all__ = ["status_finding"]


def status_finding(lock: Lockfile) -> Finding | None:
    """The finding on ``lock``'s status (fact ``status``), or ``None`` when validated.

    Unconfirmed: severity ``warning``, status ``outside-validated``, the message naming
    each reason, ``source`` the source that would settle the first. Not recorded:
    severity ``info``, status ``not-locked``. Raises nothing.
    """
    status = lock.status
    if status is None:
        return Finding(code="lock-status-not-recorded", fact="status", status="not-locked",
                       severity="info", message=f"the lock's status is {NOT_RECORDED}.",
                       expected=None, actual="not recorded")
    if status.value == "validated":
        return None
    reasons = "; ".join(r.reason.rstrip(".") for r in status.reasons)
    return Finding(code="lock-unconfirmed", fact="status", status="outside-validated",
                   severity="warning",
                   message=f"the lock is unconfirmed: {reasons}. The host may match it, but no "
                           "source pin holds confirms this stack (drift with --strict).",
                   expected="validated", actual="unconfirmed",
                   source="; ".join(dict.fromkeys(r.settled_by for r in status.reasons)))
