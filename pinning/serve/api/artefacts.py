"""``/api/v1/acceptance``, ``/api/v1/audits``, ``/api/v1/cost-verdicts``: the exact JSON
bytes pin writes, validated by the models that read the files
(:class:`~pinning.accept.result.AcceptanceResult` through
:func:`~pinning.accept.attest.open_signed_result`,
:class:`~pinning.audit.bill.AuditReport`, :class:`~pinning.cost.model.CostReport`), and
fetched back byte for byte.

A signed acceptance result (a DSSE envelope, ``pin accept run --sign``) is verified with
the PEM public keys of ``[serve] acceptance-keys``: one that verifies makes it
``signature_verified``; when keys are configured and none verifies, it is refused (422,
nothing stored); with no key configured it is stored unverified, as a plain one is.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ValidationError
from starlette.responses import Response

from pinning.errors import SignatureError, UsageError
from pinning.serve.api.body import JSON_TYPES, body_doc, read_body
from pinning.serve.api.context import (
    SECURITY,
    AuthFirstRoute,
    needs,
    resolve_lock,
    service,
)
from pinning.serve.api.models import AcceptanceAck, AuditAck, CostAck, json_response
from pinning.serve.errors import ApiError, responses

if TYPE_CHECKING:
    from pinning.accept.result import AcceptanceResult
    from pinning.serve.api.context import Service

M = TypeVar("M", bound=BaseModel)

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", route_class=AuthFirstRoute)
_HASH = re.compile(r"sha256:[0-9a-f]{64}")
_POST_ERRORS = responses(400, 401, 403, 404, 409, 413, 415, 422)
_KINDS = {"acceptance": "acceptance", "audits": "audit", "cost-verdicts": "cost"}


def _json(data: bytes, what: str, command: str) -> Any:
    """``data`` parsed as JSON, unwrapped from pin's ``--format json`` envelope of
    ``command``; :class:`ApiError` 422 when it is not JSON.
    """
    from pinning.util.envelope import unwrap
    from pinning.util.jsonread import load_json

    try:
        return unwrap(load_json(data, UsageError, label=f"The {what}"), command)
    except UsageError as exc:
        raise ApiError(422, exc.message, f"Send the file `pin {command}` wrote.") from exc


def _invalid(what: str, command: str, exc: ValidationError, doc: Any) -> ApiError:
    from pinning.util.models import validation_summary

    return ApiError(422, f"Not a valid {what}: {validation_summary(exc, doc)}.",
                    f"Send the file `pin {command}` wrote.")


def _is_envelope(data: bytes) -> bool:
    """Whether ``data`` (JSON that already parsed) is a DSSE envelope: an object with a
    ``payloadType`` key, however the key is escaped in the text.
    """
    from pinning.util.jsonread import load_json

    try:
        doc = load_json(data, UsageError, label="The uploaded acceptance result")
    except UsageError:
        return False
    return isinstance(doc, dict) and "payloadType" in doc


def _open_acceptance(svc: Service, data: bytes) -> tuple[AcceptanceResult, bool]:
    """The result in ``data`` and whether its signature verified with a configured key."""
    from pinning.accept.attest import open_signed_result

    label = "The uploaded acceptance result"
    try:
        result, _ = open_signed_result(data, None, label=label)
    except UsageError as exc:
        raise ApiError.of(422, exc) from exc
    signed = _is_envelope(data)
    if not signed or not svc.keys:
        return result, False
    for key in svc.keys:
        try:
            return open_signed_result(data, key, label=label)
        except SignatureError:
            continue
    raise ApiError(422, f"{label} is signed, but its signature does not verify with any of "
                        f"the {len(svc.keys)} key(s) of [serve] acceptance-keys; nothing was "
                        "stored.",
                   "Sign with the team's key (pin accept run --sign KEY), or add its public "
                   "key to [serve] acceptance-keys.")


@router.post("/acceptance", response_model=AcceptanceAck, status_code=201, tags=["artefacts"],
             summary="Upload an acceptance result (plain or signed)", responses=_POST_ERRORS,
             openapi_extra={**SECURITY, **body_doc(
                 JSON_TYPES, "The result file `pin accept run -o` writes (the DSSE envelope "
                             "with --sign)")})
@needs("publish")
async def post_acceptance(request: Request) -> Response:
    """Store an acceptance result; scope publish. 422 when it is not a valid result, names
    no lock, or is signed and no configured key verifies it.
    """
    svc = service(request)
    data = await read_body(request, svc.config.max_body_bytes, JSON_TYPES)
    result, verified = _open_acceptance(svc, data)
    lock_hash = result.subject.lock_content_hash
    if lock_hash is None or not _HASH.fullmatch(lock_hash):
        raise ApiError(422, "The acceptance result names no lock content hash "
                            "(subject.lock-content-hash); the service files results by lock.",
                       "Run the gates with --lock (pin accept run --lock FILE).")
    digest = result.subject.image_digest
    passed = bool(result.passed)
    rid = svc.store.add_acceptance(
        lock_hash, data, passed=passed, signature_verified=verified,
        image_digest=digest if digest and _HASH.fullmatch(digest) else None)
    return json_response({"id": rid, "lock_hash": lock_hash, "passed": passed,
                          "signature_verified": verified}, 201)


async def _upload(request: Request, lock: str | None, model: type[M], what: str,
                  command: str) -> tuple[Service, bytes, str | None, M]:
    """An audit or cost upload (the route checked scope publish): the service, the exact
    body bytes, the stored lock ``?lock=`` names (``None``: none named) and the body
    validated as ``model`` (``pin COMMAND --format json`` output, report or envelope).
    Raises :class:`ApiError`.
    """
    svc = service(request)
    data = await read_body(request, svc.config.max_body_bytes, JSON_TYPES)
    lock_hash = resolve_lock(svc.store, lock) if lock is not None else None
    doc = _json(data, what, command)
    try:
        return svc, data, lock_hash, model.model_validate(doc)
    except ValidationError as exc:
        raise _invalid(f"pin {what}", f"{command} --format json", exc, doc) from exc


@router.post("/audits", response_model=AuditAck, status_code=201, tags=["artefacts"],
             summary="Upload a porting audit (pin audit --format json)",
             responses=_POST_ERRORS, openapi_extra={**SECURITY, **body_doc(
                 JSON_TYPES, "`pin audit --format json` output (report or envelope)")})
@needs("publish")
async def post_audit(request: Request,
                     lock: str | None = Query(None, max_length=200)) -> Response:
    """Store a porting audit, about the stored lock ``?lock=`` when given; scope publish."""
    from pinning.audit.bill import AuditReport

    svc, data, lock_hash, report = await _upload(request, lock, AuditReport,
                                                 "audit report", "audit")
    totals = {str(k): int(v) for k, v in report.totals.items()}
    rid = svc.store.add_audit(data, totals, lock_hash=lock_hash)
    return json_response({"id": rid, "totals": totals}, 201)


@router.post("/cost-verdicts", response_model=CostAck, status_code=201, tags=["artefacts"],
             summary="Upload a cost verdict (pin cost --format json)",
             responses=_POST_ERRORS, openapi_extra={**SECURITY, **body_doc(
                 JSON_TYPES, "`pin cost --format json` output (report or envelope)")})
@needs("publish")
async def post_cost(request: Request,
                    lock: str | None = Query(None, max_length=200)) -> Response:
    """Store a cost verdict, about the stored lock ``?lock=`` when given; scope publish."""
    from pinning.cost.model import CostReport

    svc, data, lock_hash, _ = await _upload(request, lock, CostReport, "cost report", "cost")
    rid = svc.store.add_cost_verdict(data, lock_hash=lock_hash)
    return json_response({"id": rid}, 201)


def _getter(path: str, kind: str) -> None:
    @router.get(f"/{path}/{{artefact_id}}", tags=["artefacts"], response_class=Response,
                summary=f"The exact bytes of a stored {kind} artefact",
                responses={200: {"content": {"application/json": {"schema": {
                    "type": "object"}}}, "description": "The exact bytes uploaded"},
                    **responses(401, 404, 422)}, openapi_extra=SECURITY,
                name=f"get_{kind}")
    def get_artefact(request: Request, artefact_id: int) -> Response:
        svc = service(request)
        data = (svc.store.get_artefact(kind, artefact_id)
                if 0 < artefact_id < 1 << 31 else None)
        if data is None:
            raise ApiError(404, f"No stored {kind} artefact has id {artefact_id}.",
                           "Take the id from the upload's answer or from the lock's "
                           "summary (GET /api/v1/locks/{hash}/summary).")
        return Response(data, media_type="application/json")


for _path, _kind in _KINDS.items():
    _getter(_path, _kind)
