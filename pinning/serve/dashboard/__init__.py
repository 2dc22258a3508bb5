"""pin serve's dashboard: server-rendered HTML pages of the fleet, a host's history and the
stored locks (acceptance results, audit totals, cost verdicts), with no script and no
external URL, under a strict Content-Security-Policy.

:func:`make_router` gives the FastAPI router the server includes
(:mod:`.router`, which imports FastAPI); the page bodies are pure functions of store
records (:mod:`.fleet`, :mod:`.locks`, :mod:`.page`) laid out by the Jinja2 templates in
``templates/``, testable without a server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import APIRouter

__all__ = ["make_router"]


def make_router(store: Any, config: Any = None, **options: Any) -> APIRouter:
    """:func:`pinning.serve.dashboard.router.make_router` (imported when called)."""
    from pinning.serve.dashboard.router import make_router as make

    return make(store, config, **options)
