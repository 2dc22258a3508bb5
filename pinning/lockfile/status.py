"""The lock's ``[status]``: whether every source the resolution rests on confirms the stack.

``validated``: the vendor's own rows name this GPU target, framework and OS set for the
release. ``unconfirmed``: something the stack needs is confirmed by no source pin holds (a
framework whose GPU targets the release's source names only through another framework's
row; a per-GPU OS restriction whose source stops before the release), each with the
source that would settle it. A lock written before pin recorded it has no ``[status]``:
its status is *not recorded* (never read as validated). The texts people see
(:func:`status_line`, :func:`status_lines`) live here so ``pin resolve``, ``pin lock
show``, ``pin verify``, ``pin accept`` and ``pin report`` say it the same way.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from pinning.util.models import Reason, Strict

__all__ = ["NOT_RECORDED", "LockStatus", "StatusReason", "StatusValue", "status_line",
           "status_lines", "status_value"]

StatusValue = Literal["validated", "unconfirmed", "not-recorded"]
"""A lock's status as reported: ``not-recorded`` for a lock without ``[status]``."""

NOT_RECORDED = ("not recorded: this lock was written before pin recorded whether its sources "
                "confirm the stack; `pin lock upgrade FILE` records it")
"""What is said of a lock without ``[status]``."""


class StatusReason(Strict):
    """One thing no source confirms: ``reason`` (what, for which release, GPU target and
    framework or OS) and ``settled-by`` (the source that would settle it, naming the copy
    pin read and its date where there is one).
    """

    reason: Reason
    settled_by: Reason


class LockStatus(Strict):
    """``value`` ``validated`` (no ``reasons``) or ``unconfirmed`` (one ``reasons`` entry
    per thing no source confirms, at least one).
    """

    value: Literal["validated", "unconfirmed"]
    reasons: list[StatusReason] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> LockStatus:
        if self.value == "validated" and self.reasons:
            raise ValueError("a validated lock lists no `reasons`")
        if self.value == "unconfirmed" and not self.reasons:
            raise ValueError("an unconfirmed lock lists each reason in `reasons`")
        return self

    @classmethod
    def of(cls, reasons: list[StatusReason]) -> LockStatus:
        """``unconfirmed`` with ``reasons``, or ``validated`` when there are none."""
        return cls(value="unconfirmed" if reasons else "validated", reasons=list(reasons))


def status_value(status: LockStatus | None) -> StatusValue:
    """``validated``, ``unconfirmed``, or ``not-recorded`` for ``None`` (an older lock)."""
    return "not-recorded" if status is None else status.value


def status_line(status: LockStatus | None) -> str:
    """One line for the top of an output: ``Status: validated (...)``, ``Status:
    unconfirmed: N thing(s) ...`` or ``Status: not recorded: ...``. Not escaped.
    """
    if status is None:
        return f"Status: {NOT_RECORDED}"
    if status.value == "validated":
        return ("Status: validated: the sources pin holds confirm this GPU target with "
                "these frameworks on the release")
    n = len(status.reasons)
    return (f"Status: unconfirmed: {n} thing{'s' if n > 1 else ''} no source confirms "
            "(pin resolve --require-validated refuses it)")


def status_lines(status: LockStatus | None) -> list[str]:
    """:func:`status_line`, then for an unconfirmed lock each reason and the source that
    would settle it, indented. Not escaped.
    """
    out = [status_line(status)]
    for r in status.reasons if status is not None else []:
        out += [f"  - {r.reason}", f"    settled by: {r.settled_by}"]
    return out
