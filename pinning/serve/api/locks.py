"""``/api/v1/locks``: content-addressed lock upload and download, list, diff and summary;
``/api/v1/assignments``: which lock a host or a host group is verified against.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from pinning.errors import LockfileError
from pinning.serve.api.body import TOML_TYPES, body_doc, read_body
from pinning.serve.api.context import (
    SECURITY,
    AuthFirstRoute,
    check_name,
    needs,
    resolve_lock,
    service,
)
from pinning.serve.api.models import (
    AssignBody,
    Assignments,
    GroupAssignment,
    HostAssignment,
    LockDiff,
    LockList,
    LockStored,
    LockSummary,
    json_response,
)
from pinning.serve.errors import ApiError, responses

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", route_class=AuthFirstRoute)
_READ_ERRORS = (401, 404, 409)
_LIMIT = 100


@router.post("/locks", response_model=LockStored, status_code=201, tags=["locks"],
             summary="Upload a lock (its exact TOML bytes)",
             responses={200: {"model": LockStored, "description": "Already stored"},
                        **responses(400, 401, 403, 413, 415, 422)},
             openapi_extra={**SECURITY, **body_doc(TOML_TYPES, "The lockfile's exact bytes")})
@needs("publish")
async def post_lock(request: Request) -> Response:
    """Store a lock; 201 when new, 200 when its content hash was already stored (the first
    bytes are kept). 422 with the lockfile error's paragraph when the bytes are not a valid
    lock, and for a multi-target lock (lock-version 2), naming its targets: the service
    stores one target's lock at a time (``pin lock push FILE --target NAME``). Scope
    publish.
    """
    svc = service(request)
    data = await read_body(request, svc.config.max_body_bytes, TOML_TYPES)
    from pinning.lockfile.io import parse_lock_bytes

    try:
        _refuse_multi(data)
        content_hash = parse_lock_bytes(data, label="uploaded lock").content_hash
    except LockfileError as exc:
        raise ApiError.of(422, exc) from exc
    known = svc.store.get_lock(content_hash) is not None
    if not known:
        svc.store.store_lock(data)
    body = {"content_hash": content_hash, "created": not known,
            "url": f"/api/v1/locks/{content_hash}"}
    return json_response(body, 200 if known else 201)


def _refuse_multi(data: bytes) -> None:
    """Raise :class:`ApiError` 422 when ``data`` is a multi-target lock (lock-version 2),
    naming its targets (at most 20) and the remedy. Every stored lock is one target's, under
    its own content hash: what hosts verify against and report, and what ``pin lock pull``
    writes back. Raises ``LockfileError`` (exit 5) when ``data`` is not TOML.
    """
    from pinning.lockfile.multi import MULTI_VERSION
    from pinning.util.files import parse_toml
    from pinning.util.text import printable

    doc = parse_toml(data, LockfileError, label="uploaded lock")
    version = doc.get("lock-version")
    if version != MULTI_VERSION or isinstance(version, bool):
        return
    targets = doc.get("targets")
    names = [printable(str(n)[:64], newlines=False)
             for n in (targets if isinstance(targets, dict) else {})]
    shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
    raise ApiError(422, f"uploaded lock: a multi-target lock (lock-version {MULTI_VERSION}; "
                        f"targets: {shown or 'none'}); the service stores one target's lock, "
                        "under that target's content hash, which hosts verifying against it "
                        "report.",
                   "Push one target at a time: pin lock push FILE --target NAME uploads that "
                   "target's lock (a lock-version 1 document).")


@router.get("/locks", response_model=LockList, tags=["locks"], summary="List stored locks",
            responses=responses(401), openapi_extra=SECURITY)
def list_locks(request: Request) -> Response:
    """Every stored lock without its bytes, newest first."""
    svc = service(request)
    return json_response({"locks": [i.model_dump(mode="json")
                                    for i in svc.store.list_locks()]})


@router.get("/locks/{ref}", tags=["locks"], summary="Download a lock's exact bytes",
            response_class=Response,
            responses={200: {"content": {"application/toml": {"schema": {"type": "string"}}},
                             "description": "The lock's exact bytes"},
                       **responses(*_READ_ERRORS)}, openapi_extra=SECURITY)
def get_lock(request: Request, ref: str) -> Response:
    """The stored bytes of the lock ``ref`` (``sha256:<64 hex>`` or a unique prefix of >= 12
    hex digits), with its hash as ETag; 404 unknown, 409 ambiguous prefix.
    """
    svc = service(request)
    content_hash = resolve_lock(svc.store, ref)
    data = svc.store.get_lock(content_hash)
    if data is None:
        raise ApiError(404, f"Lock {content_hash} is no longer stored.",
                       "List the stored locks at /api/v1/locks, or push it again with "
                       "`pin lock push FILE`.")
    return Response(data, media_type="application/toml",
                    headers={"ETag": f'"{content_hash}"'})


@router.get("/locks/{ref}/diff/{other}", response_model=LockDiff, tags=["locks"],
            summary="Diff two stored locks (as pin lock diff --format json)",
            responses=responses(*_READ_ERRORS), openapi_extra=SECURITY)
def diff_locks(request: Request, ref: str, other: str) -> Response:
    """Every value that differs from lock ``ref`` to lock ``other``: ``{"equal", "changes"}``
    as ``pin lock diff --format json`` gives.
    """
    from pinning.lockfile.diff import diff_locks as diff
    from pinning.lockfile.io import parse_lock_bytes

    svc = service(request)
    locks = []
    for name in (ref, other):
        content_hash = resolve_lock(svc.store, name)
        data = svc.store.get_lock(content_hash) or b""
        locks.append(parse_lock_bytes(data, label=f"stored lock {content_hash}"))
    changes = diff(locks[0], locks[1])
    return json_response({"equal": not changes,
                          "changes": [c.model_dump(mode="json") for c in changes]})


def _artefacts(svc: Any, kind: str, lock_hash: str) -> list[dict[str, Any]]:
    return [a.model_dump(mode="json")
            for a in svc.store.list_artefacts(kind, lock_hash=lock_hash, limit=_LIMIT)]


@router.get("/locks/{ref}/summary", response_model=LockSummary, tags=["locks"],
            summary="A lock with its fleet, acceptance results, audits and cost verdicts",
            responses=responses(*_READ_ERRORS), openapi_extra=SECURITY)
def lock_summary(request: Request, ref: str) -> Response:
    """The lock, its hosts by result and top drift reasons, and its newest acceptance
    results, audits and cost verdicts (at most 100 each).
    """
    svc = service(request)
    content_hash = resolve_lock(svc.store, ref)
    info = next((i for i in svc.store.list_locks() if i.content_hash == content_hash), None)
    if info is None:
        raise ApiError(404, f"Lock {content_hash} is no longer stored.",
                       "List the stored locks at /api/v1/locks, or push it again with "
                       "`pin lock push FILE`.")
    fleet = svc.store.fleet_summary(content_hash)
    counts = {**{r: fleet.hosts.get(r, 0) for r in ("match", "drift", "unknown")},
              "top_reasons": [r.model_dump(mode="json") for r in fleet.top_reasons]}
    return json_response({
        "lock": info.model_dump(mode="json"), "fleet": counts,
        "acceptance": _artefacts(svc, "acceptance", content_hash),
        "audits": _artefacts(svc, "audit", content_hash),
        "cost_verdicts": _artefacts(svc, "cost", content_hash)})


@router.get("/assignments", response_model=Assignments, tags=["assignments"],
            summary="Every lock assignment", responses=responses(401),
            openapi_extra=SECURITY)
def get_assignments(request: Request) -> Response:
    """``{"hosts": {name: hash}, "groups": {name: hash}}``."""
    svc = service(request)
    hosts, groups = svc.store.assignments()
    return json_response({"hosts": hosts, "groups": groups})


_ASSIGN_ERRORS = responses(401, 403, 404, 409, 422)


@router.put("/assignments/hosts/{host}", response_model=HostAssignment, tags=["assignments"],
            summary="Assign a stored lock to a host", responses=_ASSIGN_ERRORS,
            openapi_extra=SECURITY)
@needs("publish")
def assign_host(request: Request, host: str, body: AssignBody) -> Response:
    """Verify ``host``'s reports against the stored lock ``body.lock``. Scope publish."""
    svc = service(request)
    check_name("Host", host)
    content_hash = resolve_lock(svc.store, body.lock)
    svc.store.assign_host(host, content_hash)
    svc.assignments.invalidate()
    return json_response({"host": host, "lock": content_hash})


@router.put("/assignments/groups/{group}", response_model=GroupAssignment,
            tags=["assignments"], summary="Assign a stored lock to a host group",
            responses=_ASSIGN_ERRORS, openapi_extra=SECURITY)
@needs("publish")
def assign_group(request: Request, group: str, body: AssignBody) -> Response:
    """Verify the reports of ``group``'s hosts (without their own assignment) against the
    stored lock ``body.lock``. Scope publish.
    """
    svc = service(request)
    check_name("Group", group)
    content_hash = resolve_lock(svc.store, body.lock)
    svc.store.assign_group(group, content_hash)
    svc.assignments.invalidate()
    return json_response({"group": group, "lock": content_hash})


@router.delete("/assignments/hosts/{host}", status_code=204, response_class=Response,
               tags=["assignments"], summary="Remove a host's own assignment",
               responses=responses(401, 403, 422), openapi_extra=SECURITY)
@needs("publish")
def unassign_host(request: Request, host: str) -> Response:
    """Remove ``host``'s own assignment (its group's applies again). Scope publish."""
    svc = service(request)
    svc.store.assign_host(check_name("Host", host), None)
    svc.assignments.invalidate()
    return Response(status_code=204)


@router.delete("/assignments/groups/{group}", status_code=204, response_class=Response,
               tags=["assignments"], summary="Remove a group's assignment",
               responses=responses(401, 403, 422), openapi_extra=SECURITY)
@needs("publish")
def unassign_group(request: Request, group: str) -> Response:
    """Remove ``group``'s assignment. Scope publish."""
    svc = service(request)
    svc.store.assign_group(check_name("Group", group), None)
    svc.assignments.invalidate()
    return Response(status_code=204)
