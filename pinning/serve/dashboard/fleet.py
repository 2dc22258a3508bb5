"""The fleet page (every host's latest report, filtered) and a host's page (its status and
report history), as HTML bodies built from store records: pure functions of the records,
the filters and the time ``now`` (for ages), testable without a server.

Rows are built with f-strings and :func:`~pinning.serve.dashboard.page.t` (``html.escape``),
no template engine: 10,000 rows (4.7 MB of HTML) render in about 0.13 s on a 2-CPU
machine (measured 2026-12-01 with a scratch script; ``make bench`` times the whole page).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pinning.serve.dashboard.page import (
    STATUSES,
    age,
    badge,
    host_url,
    lock_url,
    query,
    short,
    t,
    when,
)

if TYPE_CHECKING:
    from pinning.serve.storage.records import HostStatus, ReportRecord

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "Filters", "render_fleet", "render_host"]

#: Rows a fleet page lists unless ``limit`` says otherwise. Measured on 2026-12-02 on this
#: project's 2-CPU machine in headless chromium (bench/bench_serve.py): a page of 500 rows
#: loads in about 0.35 s, 1,000 in 0.5 s, all 10,000 in 3 to 6 s (parsing and laying out
#: the table, not the server: it renders and sends the 10,000 in about 0.35 s).
DEFAULT_LIMIT = 500
#: The most rows one fleet page lists (``?limit=``); ``offset`` pages through more.
MAX_LIMIT = 20_000


@dataclass(frozen=True)
class Filters:
    """The fleet page's query: ``lock`` (a full hash or a prefix of >= 12 hex digits),
    ``status`` (match, drift or unknown), ``gpu`` and ``group`` (exact values; ``None`` or
    empty: any), and the page: ``limit`` rows (1 to :data:`MAX_LIMIT`) from ``offset``.
    """

    lock: str | None = None
    status: str | None = None
    gpu: str | None = None
    group: str | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0

    def params(self, **changes: object) -> dict[str, object]:
        """The query parameters of these filters with ``changes`` applied (defaults left
        out, so links stay short).
        """
        f = replace(self, **changes)  # type: ignore[arg-type]
        return {"lock": f.lock, "status": f.status, "gpu": f.gpu, "group": f.group,
                "limit": None if f.limit == DEFAULT_LIMIT else f.limit,
                "offset": f.offset or None}


def _counts(counts: Mapping[str, int], filters: Filters) -> str:
    """The count of hosts per status, each a link to the fleet filtered by it."""
    total = sum(counts.values())
    parts = [f'<a href="{query(filters.params(status=None, offset=0))}" id="count-all">'
             f"<strong>{total:,}</strong>hosts</a>"]
    parts += [f'<a href="{query(filters.params(status=s, offset=0))}" id="count-{s}">'
              f"<strong>{counts.get(s, 0):,}</strong>{badge(s)}</a>" for s in STATUSES]
    return '<div class="counts">' + "".join(parts) + "</div>\n"


def _form(filters: Filters, locks: Sequence[str]) -> str:
    """The filter form (GET, submitted to the fleet page itself)."""
    lock_opts = ['<option value="">any</option>'] + [
        f'<option value="{t(h)}"{" selected" if h == filters.lock else ""}>{short(h)}</option>'
        for h in locks]
    if filters.lock and filters.lock not in locks:
        lock_opts.append(f'<option value="{t(filters.lock)}" selected>{t(filters.lock)}'
                         "</option>")
    status_opts = ['<option value="">any</option>'] + [
        f'<option value="{s}"{" selected" if s == filters.status else ""}>{s}</option>'
        for s in STATUSES]
    return ('<form class="filter" method="get" action="/" role="search">\n'
            f'<label>Lock<select name="lock">{"".join(lock_opts)}</select></label>\n'
            f'<label>Status<select name="status">{"".join(status_opts)}</select></label>\n'
            f'<label>GPU<input name="gpu" value="{t(filters.gpu)}" size="14"></label>\n'
            f'<label>Group<input name="group" value="{t(filters.group)}" size="14"></label>\n'
            '<button type="submit">Filter</button> <a href="/">clear</a>\n</form>\n')


def _pages(shown: int, total: int, filters: Filters) -> str:
    """Which rows are listed, with links to the previous and next page when there are."""
    if total == 0:
        return ""
    first, last = filters.offset + 1, filters.offset + shown
    links = []
    if filters.offset > 0:
        prev = max(0, filters.offset - filters.limit)
        links.append(f'<a href="{query(filters.params(offset=prev))}" rel="prev">previous</a>')
    if last < total:
        links.append(f'<a href="{query(filters.params(offset=last))}" rel="next">next</a>')
    span = f"{first:,}\u2013{last:,}" if shown else "none"
    return f'<p class="pages">Hosts {span} of {total:,} {" ".join(links)}</p>\n'


def render_fleet(hosts: Sequence[HostStatus], *, total: int, counts: Mapping[str, int],
                 filters: Filters, locks: Sequence[str], now: dt.datetime,
                 note: str | None = None) -> str:
    """The fleet page's body: counts per status (``counts``: result -> hosts under the
    filters other than status), the filter form (``locks``: full hashes offered), ``note``
    (a line about the query, e.g. an unknown lock; escaped), and one table row per host
    of ``hosts`` (``total``: how many match the filters in all, for the page links).
    """
    cells: dict[object, str] = {}  # values many rows share (group, GPU, lock, reason)

    def cell(value: str | None) -> str:
        found = cells.get(value)
        if found is None:
            found = cells[value] = t(value)
        return found

    rows = []
    for h in hosts:
        lock = cells.get(("lock", h.lock_hash))
        if lock is None:
            lock = cells[("lock", h.lock_hash)] = (
                f'<a href="{lock_url(h.lock_hash)}" title="{t(h.lock_hash)}">'
                f"<code>{short(h.lock_hash)}</code></a>")
        status = cells.get(("status", h.result))
        if status is None:
            status = cells[("status", h.result)] = badge(h.result)
        title = f' title="{cell("; ".join(h.reasons))}"' if h.reasons else ""
        rows.append(f'<tr class="{cell(h.result)}"><td><a href="{host_url(h.host)}">{t(h.host)}'
                    f"</a></td><td>{cell(h.group)}</td><td>{cell(h.gpu)}</td><td>{lock}</td>"
                    f"<td>{status}</td><td>{when(h.received_at)}</td>"
                    f'<td class="age">{age(h.received_at, now)}</td>'
                    f"<td{title}>{cell(h.reason)}</td></tr>\n")
    head = ('<table id="fleet">\n<thead><tr><th scope="col">Host</th><th scope="col">Group</th>'
            '<th scope="col">GPU</th><th scope="col">Lock</th><th scope="col">Status</th>'
            '<th scope="col">Last seen (UTC)</th><th scope="col">Age</th>'
            '<th scope="col">Reason</th></tr></thead>\n<tbody>\n')
    empty = ('<tr><td colspan="8" class="muted">No host has reported yet.</td></tr>\n'
             if not rows and sum(counts.values()) == 0 else
             '<tr><td colspan="8" class="muted">No host matches these filters.</td></tr>\n'
             if not rows else "")
    note_line = f'<p class="note">{t(note)}</p>\n' if note else ""
    return ("<h2>Fleet</h2>\n" + _counts(counts, filters) + _form(filters, locks) + note_line
            + _pages(len(hosts), total, filters) + head + "".join(rows) + empty
            + "</tbody>\n</table>\n")


def render_host(name: str, status: HostStatus | None, history: Sequence[ReportRecord],
                *, now: dt.datetime) -> str:
    """A host's page body: its current status (``status``: its latest report; ``None``
    when it has none) and ``history`` (its reports, newest first).
    """
    parts = [f"<h2>Host {t(name)}</h2>\n"]
    if status is not None:
        parts.append(
            f'<dl id="status"><dt>Status</dt><dd>{badge(status.result)}</dd>'
            f"<dt>Reason</dt><dd>{t(status.reason) or '<span class=muted>none</span>'}</dd>"
            f"<dt>Group</dt><dd>{t(status.group)}</dd><dt>GPU</dt><dd>{t(status.gpu)}</dd>"
            f'<dt>Lock</dt><dd><a href="{lock_url(status.lock_hash)}"><code>'
            f"{t(status.lock_hash)}</code></a></dd><dt>Last seen</dt>"
            f"<dd>{when(status.received_at)} ({age(status.received_at, now)})</dd></dl>\n")
        if status.reasons:
            parts.append("<h3>Drifting facts</h3>\n<ul>"
                         + "".join(f"<li>{t(r)}</li>" for r in status.reasons) + "</ul>\n")
    rows = "".join(
        f"<tr><td class=r>{r.id}</td><td>{when(r.received_at)}</td><td>{badge(r.result)}</td>"
        f'<td><a href="{lock_url(r.lock_hash)}"><code>{short(r.lock_hash)}</code></a></td>'
        f"<td>{t(r.reason)}</td></tr>\n" for r in history)
    parts.append(f"<h2>History ({len(history)} newest)</h2>\n<table id=\"history\">\n<thead>"
                 "<tr><th class=r>Report</th><th>Received (UTC)</th><th>Result</th>"
                 "<th>Lock</th><th>Reason</th></tr></thead>\n<tbody>\n" + rows
                 + "</tbody>\n</table>\n")
    return "".join(parts)
