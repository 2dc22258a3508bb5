"""What every handler of pin serve reaches through ``request.app.state.pin``: the store,
the settings, the token checker, the batch writer and the verifiers; and the helpers the
route modules share (read guard, lock references, names).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi.routing import APIRoute

from pinning.serve.auth import READ, Authenticator, Need
from pinning.serve.errors import ApiError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePublicKey
    from starlette.requests import Request
    from starlette.responses import Response

    from pinning.serve.assign import AssignmentCache
    from pinning.serve.config import ServeConfig
    from pinning.serve.ingest import BatchWriter, Verifiers
    from pinning.serve.storage.store import Store

__all__ = ["NAME", "AuthFirstRoute", "Service", "authorize", "check_name", "guard_read",
           "needs", "resolve_lock", "service"]

#: A host or group name: letters, digits, ``.``, ``_``, ``-``, as Slurm and Kubernetes node
#: names are written (a DNS label set plus ``_``), 1-253 characters: Kubernetes node names are
#: DNS subdomain names, which "contain no more than 253 characters"
#: (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-subdomain-names,
#: read 2026-12-02); RFC 1035 section 2.3.4 (https://www.rfc-editor.org/rfc/rfc1035#section-2.3.4)
#: bounds a domain name to 255 octets on the wire.
NAME = re.compile(r"[A-Za-z0-9._-]{1,253}")
_LOCK_REF = re.compile(r"(?:sha256:)?[0-9a-f]{12,64}")
SECURITY: dict[str, Any] = {"security": [{"bearer": []}]}


@dataclass
class Service:
    """The state of one running app: ``store``, ``config``, ``auth``, ``writer`` (report
    batches), ``verifiers`` (per lock), ``assignments`` (in memory), ``keys`` (acceptance
    public keys) and ``reports`` (reports acknowledged since start).
    """

    store: Store
    config: ServeConfig
    auth: Authenticator
    writer: BatchWriter
    verifiers: Verifiers
    assignments: AssignmentCache
    keys: list[EllipticCurvePublicKey] = field(default_factory=list)
    reports: int = 0


def service(request: Request) -> Service:
    """The :class:`Service` of the app serving ``request``."""
    svc: Service = request.app.state.pin
    return svc


def authorize(request: Request, need: Need, host: str | None = None) -> Service:
    """The service, once ``request``'s bearer token allows ``need`` (for ``host``); raises
    :class:`ApiError` 401 / 403 (:meth:`Authenticator.require`).
    """
    svc = service(request)
    svc.auth.require(request.headers.get("authorization"), need, host)
    return svc


def guard_read(request: Request) -> Service:
    """The service, once a read is allowed: always with ``reads = "open"``, with any valid
    token under ``reads = "token"`` (else :class:`ApiError` 401).
    """
    svc = service(request)
    if svc.config.reads == "token":
        svc.auth.require(request.headers.get("authorization"), READ)
    return svc


F = TypeVar("F", bound=Callable[..., Any])


def needs(need: Need, *, host: str | None = None) -> Callable[[F], F]:
    """Mark a route's endpoint as needing a token of scope ``need``, for the host its path
    parameter ``host`` names (a host-bound report token). Put it under the ``@router``
    line; :class:`AuthFirstRoute` checks it before anything else of the request is read.
    """
    def mark(endpoint: F) -> F:
        endpoint.__pin_need__ = (need, host)  # type: ignore[attr-defined]
        return endpoint
    return mark


class AuthFirstRoute(APIRoute):
    """A FastAPI route that checks the bearer token before FastAPI reads or validates the
    query, the headers or the body, so a request without a valid token gets 401 (or 403),
    never 422 or 413. The need is the endpoint's :func:`needs` mark; an endpoint without
    one is a read (a token only under ``reads = "token"``). A route of another method than
    GET or HEAD without a mark is a programming error (``TypeError`` when it is declared):
    no write can be left open by omission.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        self.pin_need: tuple[Need, str | None] = getattr(endpoint, "__pin_need__", (READ, None))
        methods = {m.upper() for m in kwargs.get("methods") or ("GET",)}
        if self.pin_need[0] == READ and methods - {"GET", "HEAD"}:
            raise TypeError(f"{path}: a write route needs @needs(scope)")
        super().__init__(path, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """FastAPI's handler, behind the token check of the class docstring."""
        handler = super().get_route_handler()
        need, host_param = self.pin_need

        async def guarded(request: Request) -> Response:
            if need == READ:
                guard_read(request)
            else:
                host = request.path_params.get(host_param) if host_param else None
                authorize(request, need, host)
            return await handler(request)

        return guarded


def check_name(kind: str, value: str) -> str:
    """``value`` when it is a valid host or group name (:data:`NAME`), else
    :class:`ApiError` 422 naming ``kind``.
    """
    if not NAME.fullmatch(value) or not value.strip("."):
        raise ApiError(422, f"{kind} name {value[:80]!r} is not valid: use 1-253 letters, "
                            "digits, '.', '_' or '-', not dots alone.",
                       "Use the node's name as Slurm or Kubernetes knows it.")
    return value


def resolve_lock(store: Store, ref: str, *, hint: str = "") -> str:
    """The full hash of the stored lock ``ref`` names (``sha256:<64 hex>`` or a unique
    prefix of >= 12 hex digits, with or without ``sha256:``). Raises :class:`ApiError` 404
    when none is stored, 409 when the prefix is ambiguous.
    """
    ref = ref.strip().lower()
    found = store.find_locks(ref) if _LOCK_REF.fullmatch(ref) else []
    if not found:
        raise ApiError(404, f"No stored lock matches {ref[:80]!r} (give sha256:<64 hex> or a "
                            "prefix of at least 12 hex digits).",
                       hint or "Push the lock with `pin lock push`, or list them at "
                               "/api/v1/locks.")
    if len(found) > 1:
        raise ApiError(409, f"Lock prefix {ref!r} is ambiguous: {len(found)} stored locks "
                            f"start with it ({', '.join(found[:3])}).",
                       "Give more hex digits, or the full sha256:<64 hex> hash.")
    return found[0]
