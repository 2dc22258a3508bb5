"""The fleet page (every host's latest report, filtered) and a host's page (its status and
report history), as HTML bodies built from store records: pure functions of the records,
the filters and the time ``now`` (for ages), testable without a server.

Laid out by ``templates/fleet.html`` and ``host.html`` (Jinja2, autoescaped): 10,000 rows
(4.3 MB) render in about 0.2 s on this project's 2-CPU machine and one GET of them takes
about 0.4 s in-process, against 0.05 s and 0.16 s with the f-strings they replaced
(measured 2026-12-05 with a scratch script): a small part of the seconds chromium needs to
lay such a table out.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pinning.serve.dashboard.page import render

if TYPE_CHECKING:
    from pinning.serve.storage.records import HostStatus, ReportRecord

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "Filters", "render_fleet", "render_host"]

#: Rows a fleet page lists unless ``limit`` says otherwise. Measured on 2026-12-02 on this
#: project's 2-CPU machine in headless chromium (bench/bench_serve.py): a page of 500 rows
#: loads in about 0.35 s, 1,000 in 0.5 s, all 10,000 in 3 to 6 s (parsing and laying out
#: the table, not the server).
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


def render_fleet(hosts: Sequence[HostStatus], *, total: int, counts: Mapping[str, int],
                 filters: Filters, locks: Sequence[str], now: dt.datetime,
                 note: str | None = None) -> str:
    """The fleet page's body: counts per status (``counts``: result -> hosts under the
    filters other than status), the filter form (``locks``: full hashes offered), ``note``
    (a line about the query, e.g. an unknown lock; escaped), and one table row per host
    of ``hosts`` (``total``: how many match the filters in all, for the page links).
    """
    return render("fleet.html", hosts=hosts, total=total, counts=counts, filters=filters,
                  locks=locks, now=now, note=note)


def render_host(name: str, status: HostStatus | None, history: Sequence[ReportRecord],
                *, now: dt.datetime) -> str:
    """A host's page body: its current status (``status``: its latest report; ``None``
    when it has none) and ``history`` (its reports, newest first).
    """
    return render("host.html", name=name, status=status, history=history, now=now)
