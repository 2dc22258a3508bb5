"""The pin serve ASGI application: :func:`create_app` wires the store, the settings, the
token checker, the batch writer and the verifiers into FastAPI, with the JSON API under
``/api/v1`` (:mod:`pinning.serve.api`), ``/metrics``, ``/openapi.json`` and the dashboard
(:mod:`pinning.serve.dashboard`) at ``/``. There is no ``/docs`` page: Swagger UI loads
its scripts from a CDN. Every route follows the read policy: under ``reads = "token"``,
``/openapi.json`` and ``/metrics`` need a token as the API's reads do; writes check the
token before anything of the request is read (:class:`~pinning.serve.api.context.
AuthFirstRoute`).

Use it in process (``with TestClient(create_app(store, config)) as client``) or through
:func:`pinning.serve.server.run`. Leaving the app's lifespan stores every queued report
(the batch writer drains) before it ends.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from starlette.responses import Response

from pinning import __version__

if TYPE_CHECKING:

    from pinning.matrix.load import Matrix
    from pinning.serve.config import ServeConfig
    from pinning.serve.storage.store import Store

__all__ = ["create_app", "load_keys"]

_LOG = logging.getLogger("pin.serve")
API_DESCRIPTION = (
    "pin's team service: content-addressed locks, host reports verified against the lock "
    "assigned to the host or its group, acceptance results, porting audits and cost "
    "verdicts. Writes need `Authorization: Bearer <secret>` with scope report, publish or "
    "admin (`pin serve token create`); reads too when the server's [serve] reads = "
    "\"token\". Errors: {\"error\": {\"status\", \"code\", \"message\", \"hint\"}}.")


def load_keys(config: ServeConfig) -> list[Any]:
    """The PEM public keys of ``[serve] acceptance-keys``. Raises ``SignatureError``
    (exit 9) or ``UsageError`` naming a key file that cannot be read.
    """
    from pinning.sign.crypto import load_public

    return [load_public(path) for path in config.acceptance_keys]


def create_app(store: Store, config: ServeConfig | None = None, *,
               matrix: Matrix | None = None) -> FastAPI:
    """The pin serve app over ``store`` with ``config`` (``None``: the defaults) and
    ``matrix`` (``None``: the shipped matrix, loaded on the first report). Starts the
    batch writer's thread; the app's lifespan end closes it (queued reports stored).
    Raises as :func:`load_keys` for an unreadable acceptance key.
    """
    from pinning.serve import errors
    from pinning.serve.api import artefacts, hosts, locks
    from pinning.serve.api.context import Service
    from pinning.serve.api.fastpath import ReportFastPath
    from pinning.serve.assign import AssignmentCache
    from pinning.serve.auth import Authenticator
    from pinning.serve.config import ServeConfig
    from pinning.serve.ingest import PG_WRITERS, BatchWriter, Verifiers

    cfg = config or ServeConfig()
    writers = PG_WRITERS if store.dialect == "postgresql" else 1
    svc = Service(store=store, config=cfg, auth=Authenticator(store),
                  writer=BatchWriter(store, writers=writers), verifiers=Verifiers(store, matrix),
                  assignments=AssignmentCache(store),
                  keys=load_keys(cfg))

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            svc.writer.close()

    app = _PinApp(title="pin serve", version=__version__, description=API_DESCRIPTION,
                  docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.pin = svc
    errors.install(app)
    app.fast = ReportFastPath(app.framework)
    for module in (locks, hosts, artefacts):
        app.include_router(module.router)
    _add_service_routes(app, svc)
    _include_dashboard(app, svc)
    _add_security_scheme(app)
    return app


class _PinApp(FastAPI):
    """FastAPI with :class:`~pinning.serve.api.fastpath.ReportFastPath` in front of its whole
    middleware stack: a report never passes FastAPI's own middlewares (error catching,
    telemetry, body limit), which cost about 35 us of a report's CPU (cProfile of
    bench/bench_serve.py's PostgreSQL load, 2026-12-05); the fast path answers its own
    errors. Every other request goes to FastAPI unchanged.
    """

    fast: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Every request passes the fast path first (it sets what Starlette sets)."""
        scope["app"] = self
        await self.fast(scope, receive, send)

    async def framework(self, scope: Any, receive: Any, send: Any) -> None:
        """FastAPI's own handling of a request (what the fast path passes on)."""
        await super().__call__(scope, receive, send)


def _add_service_routes(app: FastAPI, svc: Any) -> None:
    """``/api/v1/health``, ``/metrics`` and ``/openapi.json`` on ``app`` for ``svc``."""
    from pinning.serve import errors
    from pinning.serve.api.context import guard_read
    from pinning.serve.api.models import Health, json_response
    from pinning.serve.metrics import CONTENT_TYPE, StoreCollector, render

    store = svc.store
    collector = StoreCollector(store, lambda: svc.reports)

    @app.get("/api/v1/health", response_model=Health, tags=["service"],
             summary="Whether the service and its database are up",
             responses={**errors.responses(),
                        503: {"model": Health, "description": "Database unreachable"}})
    def health() -> Response:
        """200 ``{"status": "ok", ...}``; 503 ``{"status": "unavailable", ...}`` when the
        database cannot be reached. Never needs a token.
        """
        from pinning.errors import PinError

        body: dict[str, Any] = {"status": "ok", "database": store.dialect,
                                "version": __version__}
        try:
            body["schema"] = store.revision()
        except PinError as exc:
            _LOG.warning("health: %s", exc.message)
            return json_response({**body, "status": "unavailable", "schema": None,
                                  "message": exc.message}, 503)
        return json_response(body)

    @app.get("/metrics", tags=["service"], response_class=Response,
             summary="Prometheus text exposition",
             responses={200: {"content": {CONTENT_TYPE: {"schema": {"type": "string"}}},
                              "description": "Metrics"}, **errors.responses(401, 503)},
             openapi_extra={"security": [{"bearer": []}]})
    def metrics(request: Request) -> Response:
        """The metrics of :mod:`pinning.serve.metrics` (a read: token-guarded under
        ``reads = "token"``).
        """
        guard_read(request)
        return Response(render(collector), media_type=CONTENT_TYPE)

    @app.get("/openapi.json", include_in_schema=False)
    def openapi_document(request: Request) -> Response:
        """The OpenAPI document (a read: token-guarded under ``reads = "token"``)."""
        guard_read(request)
        return json_response(app.openapi())


def _include_dashboard(app: FastAPI, svc: Any) -> None:
    """Mount the dashboard's pages at ``/``, reading with the service's cached token checks."""
    from pinning.serve.dashboard.router import make_router

    auth = svc.auth

    def read_check(secret: str | None) -> bool:
        return secret is not None and auth.lookup(secret) is not None

    app.include_router(make_router(svc.store, svc.config, read_check=read_check))


def _add_security_scheme(app: FastAPI) -> None:
    """Give the OpenAPI document the ``bearer`` HTTP security scheme the operations name."""
    from fastapi.openapi.utils import get_openapi

    from pinning.serve.api.hosts import REPORT_DOC

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version,
                                 description=app.description,
                                 routes=[*app.routes, REPORT_DOC])
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "A pin serve token: `pin serve token create`."}}
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
