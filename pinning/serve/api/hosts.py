"""``/api/v1/hosts``: a node posts its snapshot, the service verifies it against the lock
assigned to the host (or its group, or the one the client names), stores the report and
answers match or drift with reasons; host listing, a host's history, the fleet summary.

The report path is the hot one (``make bench``): token from the cache, body read against
the limit, the assignment from memory (:mod:`pinning.serve.assign`), verification in the
event loop (the verifier remembers identical snapshots), then the batch writer's group
commit; the answer is serialised once.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.routing import APIRoute
from starlette.responses import Response

from pinning.errors import LockfileError, ProbeError
from pinning.serve.api.body import JSON_TYPES, body_doc
from pinning.serve.api.context import (
    SECURITY,
    AuthFirstRoute,
    check_name,
    resolve_lock,
    service,
)
from pinning.serve.api.models import (
    FleetSummaryOut,
    HostDetail,
    HostList,
    ReportAck,
    json_response,
)
from pinning.serve.errors import ApiError, responses

__all__ = ["REPORT_DOC", "ingest_report", "router", "snapshot_digest"]

router = APIRouter(prefix="/api/v1", route_class=AuthFirstRoute)
#: What a report is judged on: everything the lock pins, or the node beneath its containers.
Scope = Literal["full", "node"]
_SNAPSHOT = body_doc(JSON_TYPES, "The host snapshot as `pin probe -o FILE` writes it (or its "
                                 "--format json envelope)",
                     {"type": "object", "additionalProperties": True})
_NO_LOCK_HINT = ("Assign a lock to the host or its group (PUT /api/v1/assignments/...), or "
                 "name one with ?lock=HASH (pin verify --report-to does).")


#: hashlib lets go of the GIL while it hashes 2,048 bytes or more at once (CPython's
#: ``HASHLIB_GIL_MINSIZE``), and the event loop then waits to take it back from the writer
#: threads: a 3.7 KB snapshot's sha256 took 63 us of the loop's time that way, against
#: about 10 us of hashing (cProfile of bench/bench_serve.py's PostgreSQL load, 2026-12-05).
#: Snapshots up to :data:`SMALL_BODY` bytes are therefore hashed in pieces of
#: :data:`GIL_PIECE` bytes, holding the GIL; larger ones at once.
GIL_PIECE = 2047
SMALL_BODY = 64 * 1024


def snapshot_digest(data: bytes) -> Any:
    """The sha256 (a ``hashlib`` object) of ``data``, see :data:`GIL_PIECE`."""
    if len(data) > SMALL_BODY:
        return hashlib.sha256(data)
    digest = hashlib.sha256()
    view = memoryview(data)
    for start in range(0, len(view), GIL_PIECE):
        digest.update(view[start:start + GIL_PIECE])
    return digest


def _pick_lock(svc: Any, host: str, group: str | None, lock: str | None,
               assigned: str | None) -> str:
    """The lock a report of ``host`` is verified against (see the module docstring):
    ``assigned`` (the host's or its group's), else the one the report names.
    """
    if assigned is not None:
        return assigned
    if lock is None:
        raise ApiError(409, f"No lock is assigned to host {host!r}"
                            + (f" or its group {group!r}" if group else "")
                            + " and the report names none.", _NO_LOCK_HINT)
    return resolve_lock(svc.store, lock, hint="The lock the report names is not stored: "
                                              "push it with pin lock push.")


async def report_doc(request: Request, host: str,
                     group: str | None = Query(None, max_length=255),
                     lock: str | None = Query(None, max_length=200),
                     scope: Scope = "full") -> Response:
    """Verify the snapshot of ``host`` and store the report (201 once committed). Scope
    report; a host-bound token only for its host. 409 when no lock applies, 404 when the
    named lock is not stored, 422 (nothing stored) for an invalid snapshot. ``scope``
    ``node`` judges only what the node provides beneath its containers (GPUs, firmware,
    kernel driver, kernel, OS), as ``pin verify --node-only``: for Kubernetes nodes, whose
    user space comes with the images.

    The one door of this path is :class:`pinning.serve.api.fastpath.ReportFastPath` (with
    :func:`ingest_report`); this signature only describes it in the OpenAPI document
    (:data:`REPORT_DOC`, never mounted), so this function never runs.
    """
    raise AssertionError("documentation only: ReportFastPath answers this path")


#: The OpenAPI description of ``POST /api/v1/hosts/{host}/reports`` (not a mounted route:
#: the app adds it to the routes its document is generated from).
REPORT_DOC = APIRoute(
    "/api/v1/hosts/{host}/reports", report_doc, methods=["POST"], response_model=ReportAck,
    status_code=201, tags=["hosts"], summary="Post a host's snapshot; get match or drift",
    responses=responses(400, 401, 403, 404, 409, 413, 415, 422, 503),
    openapi_extra={**SECURITY, **_SNAPSHOT})


async def ingest_report(svc: Any, host: str, group: str | None, lock: str | None,
                        data: bytes, *, scope: str = "full") -> dict[str, Any]:
    """Verify and store one report of ``host`` (its snapshot bytes ``data``, read within
    the size limit once the caller checked the token allows reporting as ``host``); the
    acknowledgement (the 201 body), returned only
    once the report is committed. ``group`` places a host that has none yet; a known host
    keeps the group of its first report (:mod:`pinning.serve.assign`). Raises
    :class:`ApiError` (422 name, snapshot or scope, 404/409 lock).
    """
    from pinning.serve.storage.records import NewReport

    if scope not in ("full", "node"):
        raise ApiError(422, f"Invalid request: query.scope: {scope[:20]!r} is not full or "
                            "node.", "Send ?scope=node (pin verify --node-only) or leave it "
                                     "out.")
    check_name("Host", host)
    if group is not None:
        check_name("Group", group)
    group, assigned = svc.assignments.resolve(host, group)  # a known host keeps its group
    lock_hash = _pick_lock(svc, host, group, lock, assigned)
    digest = snapshot_digest(data)
    try:
        out, gpu = svc.verifiers.check_gpu(lock_hash, data, f"of host {host}",
                                           node_only=scope == "node", digest=digest.digest())
    except ProbeError as exc:
        raise ApiError.of(422, exc) from exc
    except LockfileError as exc:  # a stored lock that no longer reads (never expected)
        raise ApiError.of(409, exc) from exc
    received = dt.datetime.now(dt.UTC)
    report = NewReport(host=host, lock_hash=lock_hash, result=out.result, group=group,
                       reason=out.reason, reasons=out.reasons,
                       snapshot_hash="sha256:" + digest.hexdigest(),
                       gpu=gpu, body=data)
    report_id = await svc.writer.write(report)
    svc.assignments.joined(host, group)
    svc.reports += 1
    return {"id": report_id, "host": host, "group": group, "lock_hash": lock_hash,
            "scope": scope, "result": out.result, "reason": out.reason,
            "reasons": list(out.reasons),
            "received_at": received.isoformat().replace("+00:00", "Z")}


Status = Literal["match", "drift", "unknown"]


@router.get("/hosts", response_model=HostList, tags=["hosts"],
            summary="Hosts and their latest report", responses=responses(401, 404, 409),
            openapi_extra=SECURITY)
def list_hosts(request: Request, lock: str | None = Query(None, max_length=200),
               status: Status | None = None, gpu: str | None = Query(None, max_length=255),
               group: str | None = Query(None, max_length=255),
               limit: int = Query(100, ge=1, le=10_000),
               offset: int = Query(0, ge=0, le=1 << 31)) -> Response:
    """One page of hosts by name with their latest report, filtered by lock (hash or
    prefix), result, GPU name and group; ``total`` counts every host matching.
    """
    svc = service(request)
    lock_hash = resolve_lock(svc.store, lock) if lock is not None else None
    filters: dict[str, Any] = {"lock": lock_hash, "status": status, "gpu": gpu, "group": group}
    found = svc.store.latest_reports(**filters, limit=limit, offset=offset)
    return json_response({"hosts": [h.model_dump(mode="json") for h in found],
                          "total": svc.store.count_hosts(**filters)})


@router.get("/hosts/{host}", response_model=HostDetail, tags=["hosts"],
            summary="A host's status and history", responses=responses(401, 404),
            openapi_extra=SECURITY)
def get_host(request: Request, host: str,
             limit: int = Query(50, ge=1, le=1000)) -> Response:
    """``host``'s latest report and its last ``limit`` reports, newest first; 404 when it
    never reported.
    """
    svc = service(request)
    status = svc.store.host_status(host)
    if status is None:
        raise ApiError(404, f"Host {host[:80]!r} has never reported.",
                       "List the hosts that did at /api/v1/hosts.")
    history = svc.store.host_history(host, limit=limit)
    return json_response({"host": status.model_dump(mode="json"),
                          "history": [r.model_dump(mode="json") for r in history]})


@router.get("/fleet/summary", response_model=FleetSummaryOut, tags=["hosts"],
            summary="Hosts per lock by result, with top drift reasons",
            responses=responses(401, 404, 409), openapi_extra=SECURITY)
def fleet_summary(request: Request,
                  lock: str | None = Query(None, max_length=200)) -> Response:
    """One entry per lock that hosts' latest reports name (only ``lock`` when given), and
    the number of hosts that reported.
    """
    svc = service(request)
    lock_hash = resolve_lock(svc.store, lock) if lock is not None else None
    locks = [{"lock_hash": s.lock_hash, **{r: s.hosts.get(r, 0)
                                          for r in ("match", "drift", "unknown")},
              "top_reasons": [r.model_dump(mode="json") for r in s.top_reasons]}
             for s in svc.store.fleet_summaries(lock_hash)]
    return json_response({"locks": locks, "hosts": svc.store.count_hosts()})
