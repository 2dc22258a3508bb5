"""The locks pages: every stored lock with its request and host counts, and one lock with
its fleet counts, top drift reasons, acceptance results, audit totals and cost verdicts.
Pure functions of store records, laid out by ``templates/locks.html`` and ``lock.html``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pinning.errors import UsageError
from pinning.serve.dashboard.page import render
from pinning.util.jsonread import load_json

if TYPE_CHECKING:
    from pinning.serve.storage.records import ArtefactInfo, FleetSummary, LockInfo

__all__ = ["cost_decision", "render_lock", "render_locks", "request_line"]


def request_line(request: Mapping[str, Any]) -> str:
    """A lock's ``[request]`` in one line of text: GPU, frameworks, then ROCm or CUDA and
    the other constraints when given (``gpu mi300x · pytorch==2.7 · rocm 7.1.1``).
    """
    parts = [f"gpu {request.get('gpu', '?')}"]
    frameworks = request.get("frameworks")
    if isinstance(frameworks, list):
        parts.append(", ".join(str(f) for f in frameworks))
    for key in ("rocm", "cuda", "os", "model", "as-of", "as_of"):
        if request.get(key):
            parts.append(f"{key} {request[key]}")
    return " \u00b7 ".join(parts)


def render_locks(locks: Sequence[LockInfo], summaries: Mapping[str, FleetSummary],
                 *, now: dt.datetime) -> str:
    """The locks page body: one row per stored lock (``summaries``: by lock hash) with its
    hosts by status (0 when none reports against it).
    """
    return render("locks.html", locks=locks, summaries=summaries, now=now,
                  request_line=request_line)


def cost_decision(body: bytes | None) -> str | None:
    """The verdict of a stored cost report (``port`` or ``stay``): ``verdict.decision`` of
    ``pin cost --format json``'s result (or of the bare report); ``None`` when the body has
    none or is not such JSON.
    """
    if body is None:
        return None
    try:
        doc = load_json(body, UsageError, label="A stored cost verdict")
    except UsageError:
        return None
    if isinstance(doc, dict) and isinstance(doc.get("result"), dict):
        doc = doc["result"]
    verdict = doc.get("verdict") if isinstance(doc, dict) else None
    decision = verdict.get("decision") if isinstance(verdict, dict) else None
    return decision if isinstance(decision, str) else None


def render_lock(lock: LockInfo, summary: FleetSummary | None,
                acceptance: Sequence[ArtefactInfo], audits: Sequence[ArtefactInfo],
                costs: Sequence[tuple[ArtefactInfo, str | None]], *, now: dt.datetime) -> str:
    """One lock's page body: its request, the hosts reporting against it by status and its
    top drift reasons (``summary``; ``None``: no host reports against it), its acceptance
    results, audits (with totals) and cost verdicts (each with its decision, when read),
    newest first, and a link to download it.
    """
    return render("lock.html", lock=lock, summary=summary, acceptance=acceptance,
                  audits=audits, costs=costs, now=now, request_line=request_line)
