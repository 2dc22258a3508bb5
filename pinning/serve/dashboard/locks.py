"""The locks pages: every stored lock with its request and host counts, and one lock with
its fleet counts, top drift reasons, acceptance results, audit totals and cost verdicts.
Pure functions of store records (escaped with :func:`~pinning.serve.dashboard.page.t`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pinning.errors import UsageError
from pinning.serve.dashboard.page import STATUSES, age, badge, lock_url, query, short, t, when
from pinning.util.jsonread import load_json

if TYPE_CHECKING:
    from pinning.serve.storage.records import ArtefactInfo, FleetSummary, LockInfo

__all__ = ["cost_decision", "render_lock", "render_locks", "request_line"]


def request_line(request: Mapping[str, Any]) -> str:
    """A lock's ``[request]`` in one escaped line: GPU, frameworks, then ROCm or CUDA and
    the other constraints when given (``gpu mi300x · pytorch==2.7 · rocm 7.1.1``).
    """
    parts = [f"gpu {request.get('gpu', '?')}"]
    frameworks = request.get("frameworks")
    if isinstance(frameworks, list):
        parts.append(", ".join(str(f) for f in frameworks))
    for key in ("rocm", "cuda", "os", "model", "as-of", "as_of"):
        if request.get(key):
            parts.append(f"{key} {request[key]}")
    return t(" \u00b7 ".join(parts))


def _host_counts(summary: FleetSummary | None) -> str:
    """``match n · drift n · unknown n`` cells (0 when no host reports against it)."""
    hosts = summary.hosts if summary is not None else {}
    return "".join(f'<td class="r">{hosts.get(s, 0):,}</td>' for s in STATUSES)


def render_locks(locks: Sequence[LockInfo], summaries: Mapping[str, FleetSummary],
                 *, now: dt.datetime) -> str:
    """The locks page body: one row per stored lock (``summaries``: by lock hash)."""
    rows = "".join(
        f'<tr><td><a href="{lock_url(lock.content_hash)}"><code>{short(lock.content_hash)}'
        f"</code></a></td><td>{request_line(lock.request)}</td>"
        f'<td class="r">{lock.size:,}</td><td>{when(lock.created_at)} '
        f'<span class="muted">({age(lock.created_at, now)})</span></td>'
        f"{_host_counts(summaries.get(lock.content_hash))}</tr>\n" for lock in locks)
    if not locks:
        rows = ('<tr><td colspan="7" class="muted">No lock is stored: push one with '
                "<code>pin lock push FILE</code>.</td></tr>\n")
    return ('<h2>Locks</h2>\n<table id="locks">\n<thead><tr><th>Lock</th><th>Request</th>'
            '<th class="r">Bytes</th><th>First stored (UTC)</th>'
            + "".join(f'<th class="r">{badge(s)}</th>' for s in STATUSES)
            + "</tr></thead>\n<tbody>\n" + rows + "</tbody>\n</table>\n")


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


def _yes(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "no")


def render_lock(lock: LockInfo, summary: FleetSummary | None,
                acceptance: Sequence[ArtefactInfo], audits: Sequence[ArtefactInfo],
                costs: Sequence[tuple[ArtefactInfo, str | None]], *, now: dt.datetime) -> str:
    """One lock's page body: its request, the hosts reporting against it by status and its
    top drift reasons (``summary``; ``None``: no host reports against it), its acceptance
    results, audits (with totals) and cost verdicts (each with its decision, when read),
    newest first, and a link to download it.
    """
    h = lock.content_hash
    hosts = summary.hosts if summary is not None else {}
    counts = "".join(
        f'<a href="/{query({"lock": h, "status": s})}"><strong>{hosts.get(s, 0):,}</strong>'
        f"{badge(s)}</a>" for s in STATUSES)
    reasons = "".join(f'<tr><td>{t(r.reason)}</td><td class="r">{r.hosts:,}</td></tr>\n'
                      for r in (summary.top_reasons if summary is not None else []))
    acc = "".join(
        f'<tr><td><a href="/api/v1/acceptance/{a.id}">{a.id}</a></td><td>'
        f"{_outcome(a.passed)}"
        f"</td><td>{_yes(a.signature_verified)}</td><td>{t(a.image_digest)}</td>"
        f"<td>{when(a.received_at)}</td></tr>\n" for a in acceptance)
    aud = "".join(
        f'<tr><td><a href="/api/v1/audits/{a.id}">{a.id}</a></td><td>'
        + t(" \u00b7 ".join(f"{k} {v}" for k, v in (a.totals or {}).items()))
        + f"</td><td>{when(a.received_at)}</td></tr>\n" for a in audits)
    cost = "".join(
        f'<tr><td><a href="/api/v1/cost-verdicts/{c.id}">{c.id}</a></td>'
        f"<td>{t(d) if d else '<span class=muted>none</span>'}</td>"
        f"<td>{when(c.received_at)}</td></tr>\n" for c, d in costs)

    def table(ident: str, heads: str, body: str, empty: str) -> str:
        if not body:
            return f'<p class="muted" id="{ident}">{empty}</p>\n'
        return (f'<table id="{ident}">\n<thead><tr>{heads}</tr></thead>\n<tbody>\n{body}'
                "</tbody>\n</table>\n")

    return (f"<h2>Lock <code>{t(h)}</code></h2>\n"
            f'<dl><dt>Request</dt><dd>{request_line(lock.request)}</dd>'
            f"<dt>Size</dt><dd>{lock.size:,} bytes</dd><dt>First stored</dt>"
            f"<dd>{when(lock.created_at)} ({age(lock.created_at, now)})</dd>"
            f'<dt>Download</dt><dd><a href="/api/v1/locks/{t(h)}" download>{short(h)}.lock</a>'
            "</dd></dl>\n<h2>Fleet</h2>\n"
            f'<div class="counts">{counts}</div>\n'
            + table("reasons", '<th>Top drift reasons</th><th class="r">Hosts</th>', reasons,
                    "No host drifts from this lock.")
            + "<h2>Acceptance results</h2>\n"
            + table("acceptance", "<th>Result</th><th>Outcome</th><th>Signature verified</th>"
                    "<th>Image</th><th>Received (UTC)</th>", acc,
                    "No acceptance result for this lock.")
            + "<h2>Audits</h2>\n"
            + table("audits", "<th>Audit</th><th>Totals</th><th>Received (UTC)</th>", aud,
                    "No audit for this lock.")
            + "<h2>Cost verdicts</h2>\n"
            + table("costs", "<th>Verdict</th><th>Decision</th><th>Received (UTC)</th>", cost,
                    "No cost verdict for this lock."))


def _outcome(passed: bool | None) -> str:
    """An acceptance result's badge: passed, failed or not stated."""
    if passed is None:
        return badge("unknown")
    if passed:
        return '<span class="b match">\u2713 passed</span>'
    return '<span class="b drift">\u2717 failed</span>'
