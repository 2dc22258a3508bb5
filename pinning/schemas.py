"""JSON Schemas generated from the wire models (committed under ``schemas/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMAS = ("matrix", "lockfile", "host", "verify-report", "doctor-report", "guards", "envelope",
           "audit-report", "accept-config", "accept-result", "prices", "cost-report",
           "fleet-report", "project", "lockfile-v2")


def generate() -> dict[str, str]:
    """Return ``{file name: schema JSON text}`` for every committed schema."""
    from pydantic import BaseModel

    from pinning.accept.config import AcceptConfig
    from pinning.accept.result import AcceptanceResult
    from pinning.audit.bill import AuditReport
    from pinning.cost.model import CostReport, PriceFile
    from pinning.doctor.report import DoctorReport
    from pinning.fleet.models import FleetReport
    from pinning.guards.models import RuleFile
    from pinning.lockfile.models import Lockfile
    from pinning.matrix.models import MatrixFile
    from pinning.probe.models import HostFacts
    from pinning.project.model import ProjectFile
    from pinning.util.envelope import Envelope
    from pinning.verify.report import VerifyReport

    models: tuple[tuple[str, type[BaseModel]], ...] = (
        ("matrix", MatrixFile), ("lockfile", Lockfile), ("host", HostFacts),
        ("verify-report", VerifyReport), ("doctor-report", DoctorReport), ("guards", RuleFile),
        ("envelope", Envelope), ("audit-report", AuditReport),
        ("accept-config", AcceptConfig), ("accept-result", AcceptanceResult),
        ("prices", PriceFile), ("cost-report", CostReport), ("fleet-report", FleetReport),
        ("project", ProjectFile),
    )
    out: dict[str, str] = {}
    for name, model in models:
        schema = model.model_json_schema(by_alias=True, mode="validation")
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["$id"] = f"https://pin.dev/schemas/{name}.schema.json"
        out[f"{name}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    schema = multilock_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://pin.dev/schemas/lockfile-v2.schema.json"
    out["lockfile-v2.schema.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return out


def multilock_schema() -> dict[str, Any]:
    """The JSON Schema of a ``lock-version = 2`` file (:class:`~pinning.lockfile.multi.
    MultiLock`), its ``[shared]`` and ``[targets.NAME]`` tables described with the
    single-target lock's own definitions: a section holds any key of a lock but
    ``lock-version`` (``content-hash`` required), ``[shared]`` the keys written once.
    """
    from pinning.lockfile.models import Lockfile
    from pinning.lockfile.multi import (
        SHARED_KEYS,
        SHARED_REQUEST_KEYS,
        TARGET_NAME_PATTERN,
        MultiLock,
    )

    schema = MultiLock.model_json_schema(by_alias=True, mode="validation")
    lock = Lockfile.model_json_schema(by_alias=True, mode="validation")
    defs = lock.pop("$defs", {})
    schema.setdefault("$defs", {}).update(defs)
    props = lock["properties"]
    request = defs["Request"]["properties"]
    own: dict[str, Any] = {k: v for k, v in props.items() if k != "lock-version"}
    own["request"] = {"type": "object", "additionalProperties": False, "properties": request}
    section = {"type": "object", "additionalProperties": False, "required": ["content-hash"],
               "properties": own}
    targets = schema["properties"]["targets"]
    targets["patternProperties"] = {TARGET_NAME_PATTERN: section}
    targets["additionalProperties"] = False
    schema["properties"]["shared"] = {
        "type": "object", "additionalProperties": False,
        "description": "Values every target has the same, written once.",
        "properties": {**{k: props[k] for k in SHARED_KEYS},
                       "request": {"type": "object", "additionalProperties": False,
                                   "properties": {k: request[k]
                                                  for k in SHARED_REQUEST_KEYS}}}}
    return schema


def write(folder: Path) -> list[Path]:
    """Write every schema into ``folder`` atomically; return the paths written."""
    from pinning.util.files import atomic_write_bytes

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in generate().items():
        path = folder / name
        atomic_write_bytes(path, text.encode())
        paths.append(path)
    return paths
