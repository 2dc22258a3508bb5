"""The dashboard's routes: ``/`` (the fleet), ``/hosts/{name}``, ``/locks`` and
``/locks/{hash}``, server-rendered HTML with no script, under a strict
Content-Security-Policy. Reads follow the server's ``[serve] reads``: ``open``, or
``token`` (then the request needs ``Authorization: Bearer <secret>`` of a live token, as
the JSON API does; otherwise an HTML 401 page).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from pinning import __version__
from pinning.serve.dashboard.fleet import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    Filters,
    render_fleet,
    render_host,
)
from pinning.serve.dashboard.locks import cost_decision, render_lock, render_locks
from pinning.serve.dashboard.page import CSP, STATUSES, frame, message, not_found
from pinning.util.text import ascii_int

if TYPE_CHECKING:
    from pinning.serve.config import ServeConfig
    from pinning.serve.storage.store import Store

__all__ = ["HEADERS", "ReadCheck", "make_router"]

#: Headers on every dashboard page.
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}

#: A read check: given the request's bearer secret (``None``: no header), whether it may
#: read. The dashboard's hook for the server's auth (its cached token lookups).
ReadCheck = Callable[[str | None], bool]

#: How many reports a host's page lists (newest first).
HISTORY = 50

#: How many of a lock's acceptance results, audits and cost verdicts its page lists.
ARTEFACTS = 20


class _Refused(Exception):
    """A request the dashboard answers with an HTML error page."""

    def __init__(self, status: int, title: str, what: str, hint: str) -> None:
        super().__init__(what)
        self.status, self.title, self.what, self.hint = status, title, what, hint


def _bearer(request: Request) -> str | None:
    """The secret of an ``Authorization: Bearer <secret>`` header, else ``None``."""
    value = request.headers.get("authorization", "")
    scheme, _, secret = value.partition(" ")
    return secret.strip() or None if scheme.lower() == "bearer" else None


def store_read_check(store: Store) -> ReadCheck:
    """A read check against ``store``'s tokens: a live (not revoked) token of any scope,
    looked up through :class:`~pinning.serve.auth.Authenticator` (cached <= 5 s, as the
    JSON API's reads).
    """
    from pinning.serve.auth import Authenticator

    auth = Authenticator(store)
    return lambda secret: bool(secret) and auth.lookup(secret or "") is not None


def _filters(request: Request) -> Filters:
    """The fleet page's filters from the query string; ``_Refused`` (400) for a bad value."""
    q = request.query_params

    def text(key: str) -> str | None:
        value = q.get(key, "").strip()
        return value or None

    def number(key: str, default: int, low: int, high: int) -> int:
        raw = q.get(key, "").strip()
        if not raw:
            return default
        value = ascii_int(raw, max_digits=9)
        if value is None or not low <= value <= high:
            raise _Refused(400, "Bad request", f"The query parameter {key}={raw!r} is not a "
                           f"whole number from {low} to {high}.",
                           "Fix the number in the address, or clear the filters.")
        return value

    status = text("status")
    if status is not None and status not in STATUSES:
        raise _Refused(400, "Bad request", f"The query parameter status={status!r} is not "
                       f"one of {', '.join(STATUSES)}.", "Pick a status in the form.")
    return Filters(lock=text("lock"), status=status, gpu=text("gpu"), group=text("group"),
                   limit=number("limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
                   offset=number("offset", 0, 0, 10**9))


def _one_lock(store: Store, ref: str) -> tuple[str | None, str | None]:
    """The full hash ``ref`` names (a full hash or a prefix of >= 12 hex digits) and, when
    it names none or several, a line saying so.
    """
    try:
        found = store.find_locks(ref)
    except Exception:  # a malformed reference names no lock
        found = []
    if len(found) == 1:
        return found[0], None
    if not found:
        return None, (f"No stored lock matches {ref!r}: give a full sha256:... hash or at "
                      "least 12 of its hex digits.")
    return None, f"{ref!r} matches {len(found)} stored locks: give more hex digits."


class _Pages:
    """The page bodies over one store: each returns ``(body, HTTP status)`` or raises
    ``_Refused``.
    """

    def __init__(self, store: Store, now: Callable[[], dt.datetime]) -> None:
        self.store, self.now = store, now

    def lock_hashes(self) -> list[str]:
        """Every stored lock's hash (the filter form's choices)."""
        return [info.content_hash for info in self.store.list_locks()]

    def fleet(self, request: Request) -> tuple[str, int]:
        """``/``: the hosts under the query's filters."""
        f = _filters(request)
        note = None
        if f.lock is not None:
            full, note = _one_lock(self.store, f.lock)
            if full is None:
                return render_fleet([], total=0, counts=dict.fromkeys(STATUSES, 0), filters=f,
                                    locks=self.lock_hashes(), now=self.now(), note=note), 200
            f = replace(f, lock=full)
        base: dict[str, Any] = {"lock": f.lock, "gpu": f.gpu, "group": f.group}
        counts = {s: self.store.count_hosts(status=s, **base) for s in STATUSES}
        total = counts[f.status] if f.status else sum(counts.values())
        hosts = self.store.latest_reports(status=f.status, limit=f.limit, offset=f.offset,
                                          **base)
        return render_fleet(hosts, total=total, counts=counts, filters=f,
                            locks=self.lock_hashes(), now=self.now(), note=note), 200

    def host(self, name: str) -> tuple[str, int]:
        """``/hosts/{name}``: its status and history; 404 when it never reported."""
        status = self.store.host_status(name)
        history = self.store.host_history(name, limit=HISTORY)
        if status is None and not history:
            return not_found(f"No host named {name!r} has reported to this service.",
                             "Check the name on the fleet page; a host appears after its "
                             "first report (pin verify --report-to URL)."), 404
        return render_host(name, status, history, now=self.now()), 200

    def locks(self) -> tuple[str, int]:
        """``/locks``: every stored lock with its host counts."""
        summaries = {s.lock_hash: s for s in self.store.fleet_summaries()}
        return render_locks(self.store.list_locks(), summaries, now=self.now()), 200

    def lock(self, ref: str) -> tuple[str, int]:
        """``/locks/{ref}``: one lock (full hash or unique prefix); 404 otherwise."""
        full, why = _one_lock(self.store, ref)
        info = next((i for i in self.store.list_locks() if i.content_hash == full), None)
        if full is None or info is None:
            return not_found(why or f"No stored lock matches {ref!r}.",
                             "See the stored locks on the Locks page; push one with pin "
                             "lock push FILE."), 404
        store = self.store
        summary = next(iter(store.fleet_summaries(lock=full)), None)
        costs = [(c, cost_decision(store.get_artefact("cost", c.id)))
                 for c in store.list_artefacts("cost", lock_hash=full, limit=ARTEFACTS)]
        return render_lock(info, summary,
                           store.list_artefacts("acceptance", lock_hash=full, limit=ARTEFACTS),
                           store.list_artefacts("audit", lock_hash=full, limit=ARTEFACTS),
                           costs, now=self.now()), 200


def make_router(store: Store, config: ServeConfig | None = None, *,
                read_check: ReadCheck | None = None,
                clock: Callable[[], dt.datetime] | None = None) -> APIRouter:
    """The dashboard's routes over ``store`` (an ``APIRouter`` to include at the app's root).

    ``config``'s ``reads`` decides whether pages need a token (``None``: open);
    ``read_check`` checks the bearer secret then (default: a live token in ``store``; the
    server passes its cached lookup). ``clock`` gives "now" for ages (default: UTC now).
    Unknown hosts and locks get a 404 page, bad query values a 400 page, a missing or
    refused token a 401 page with ``WWW-Authenticate: Bearer realm="pin"``.
    """
    guarded = config is not None and config.reads == "token"
    check = read_check or store_read_check(store)
    pages = _Pages(store, clock or (lambda: dt.datetime.now(dt.UTC)))
    router = APIRouter(include_in_schema=False)

    def page(title: str, body: str, status: int = 200,
             extra: dict[str, str] | None = None) -> HTMLResponse:
        return HTMLResponse(frame(title, body, version=__version__), status_code=status,
                            headers={**HEADERS, **(extra or {})})

    def serve(request: Request, title: str, build: Callable[[], tuple[str, int]]
              ) -> HTMLResponse:
        """Answer with ``build()``'s body and status, after the read check."""
        if guarded and not check(_bearer(request)):
            return page("Token needed", message(
                "Token needed", 'This pin service needs a token to read (reads = "token").',
                "Send Authorization: Bearer <token>; create one with pin serve token create."),
                401, {"WWW-Authenticate": 'Bearer realm="pin"'})
        try:
            body, status = build()
        except _Refused as err:
            return page(err.title, message(err.title, err.what, err.hint), err.status)
        return page(title, body, status)

    @router.get("/", response_class=HTMLResponse)
    def fleet(request: Request) -> HTMLResponse:
        return serve(request, "Fleet", lambda: pages.fleet(request))

    @router.get("/hosts/{name:path}", response_class=HTMLResponse)
    def host(request: Request, name: str) -> HTMLResponse:
        return serve(request, f"Host {name}", lambda: pages.host(name))

    @router.get("/locks", response_class=HTMLResponse)
    def locks(request: Request) -> HTMLResponse:
        return serve(request, "Locks", pages.locks)

    @router.get("/locks/{ref}", response_class=HTMLResponse)
    def lock(request: Request, ref: str) -> HTMLResponse:
        return serve(request, f"Lock {ref}", lambda: pages.lock(ref))

    return router
