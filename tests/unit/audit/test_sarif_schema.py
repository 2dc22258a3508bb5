"""`pin audit --format sarif` against SARIF 2.1.0's rules for the objects pin writes.

The OASIS schema (sarif-schema-2.1.0.json, https://docs.oasis-open.org/sarif/sarif/v2.1.0/)
cannot be fetched from this machine (no route to docs.oasis-open.org, schemastore or GitHub),
and no package on PyPI or npm ships it. So this test carries the constraints of that schema
for every object pin emits, transcribed property by property: required members, enums,
minimums, and ``additionalProperties: false`` where the standard closes an object - a typo
in a member name fails here as it would against the full schema.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import jsonschema

from pinning.audit.bill import build_report
from pinning.audit.model import Citation, Finding, Kind, Skipped, Verdict
from pinning.audit.render import render_sarif

_PROPS = {"type": "object"}  # propertyBag: any members
_MESSAGE = {"type": "object", "additionalProperties": False,
            "properties": {"text": {"type": "string"}, "id": {"type": "string"},
                           "markdown": {"type": "string"}, "arguments": {"type": "array"},
                           "properties": _PROPS},
            "anyOf": [{"required": ["text"]}, {"required": ["id"]}]}
_MFMS = {"type": "object", "additionalProperties": False, "required": ["text"],
         "properties": {"text": {"type": "string"}, "markdown": {"type": "string"},
                        "properties": _PROPS}}
_ARTIFACT_LOCATION = {"type": "object", "additionalProperties": False,
                      "properties": {"uri": {"type": "string", "format": "uri-reference"},
                                     "uriBaseId": {"type": "string"},
                                     "index": {"type": "integer", "minimum": -1},
                                     "description": _MESSAGE, "properties": _PROPS}}
_REGION = {"type": "object", "additionalProperties": False,
           "properties": {"startLine": {"type": "integer", "minimum": 1},
                          "startColumn": {"type": "integer", "minimum": 1},
                          "endLine": {"type": "integer", "minimum": 1},
                          "endColumn": {"type": "integer", "minimum": 1},
                          "properties": _PROPS}}
_LEVEL = {"enum": ["none", "note", "warning", "error"]}
SARIF_SUBSET: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["version", "runs"],
    "properties": {
        "$schema": {"type": "string", "format": "uri"},
        "version": {"enum": ["2.1.0"]},
        "runs": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["tool"],
            "properties": {
                "tool": {"type": "object", "additionalProperties": False,
                         "required": ["driver"], "properties": {"driver": {
                             "type": "object", "additionalProperties": False,
                             "required": ["name"],
                             "properties": {
                                 "name": {"type": "string"}, "version": {"type": "string"},
                                 "informationUri": {"type": "string", "format": "uri"},
                                 "rules": {"type": "array", "uniqueItems": True, "items": {
                                     "type": "object", "additionalProperties": False,
                                     "required": ["id"],
                                     "properties": {"id": {"type": "string"},
                                                    "name": {"type": "string"},
                                                    "shortDescription": _MFMS,
                                                    "fullDescription": _MFMS,
                                                    "helpUri": {"type": "string",
                                                                "format": "uri"},
                                                    "properties": _PROPS}}},
                                 "properties": _PROPS}}}},
                "columnKind": {"enum": ["utf16CodeUnits", "unicodeCodePoints"]},
                "originalUriBaseIds": {"type": "object",
                                       "additionalProperties": _ARTIFACT_LOCATION},
                "results": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False, "required": ["message"],
                    "properties": {
                        "ruleId": {"type": "string"},
                        "ruleIndex": {"type": "integer", "minimum": -1},
                        "level": _LEVEL, "message": _MESSAGE, "properties": _PROPS,
                        "locations": {"type": "array", "items": {
                            "type": "object", "additionalProperties": False,
                            "properties": {"physicalLocation": {
                                "type": "object", "additionalProperties": False,
                                "anyOf": [{"required": ["address"]},
                                          {"required": ["artifactLocation"]}],
                                "properties": {"artifactLocation": _ARTIFACT_LOCATION,
                                               "region": _REGION,
                                               "address": {"type": "object"},
                                               "properties": _PROPS}},
                                "properties": _PROPS}}}}}},
                "invocations": {"type": "array", "items": {
                    "type": "object", "required": ["executionSuccessful"],
                    "properties": {
                        "executionSuccessful": {"type": "boolean"},
                        "toolExecutionNotifications": {"type": "array", "items": {
                            "type": "object", "additionalProperties": False,
                            "required": ["message"],
                            "properties": {"level": _LEVEL, "message": _MESSAGE,
                                           "properties": _PROPS}}}}}},
                "properties": _PROPS}}},
        "properties": _PROPS}}


def test_pin_sarif_meets_the_standard() -> None:
    cite = Citation(source="https://example.org/x", published=dt.date(2026, 1, 1))
    nodate = Citation(source="ROCm/HIP@abc:docs/faq.md", published_unknown="not dated")
    findings = [
        Finding(kind=Kind.INLINE_PTX, rule="kernel.inline-ptx", verdict=Verdict.BLOCKED,
                subject="asm volatile", path="csrc/a b.cu", line=3, column=5, lines=[3, 8],
                why="w.", todo="t.", citation=nodate),
        Finding(kind=Kind.PACKAGE, rule="package.torch", verdict=Verdict.SWAP,
                subject="torch==2.5.1+cu121", path="requirements.txt", line=1, package="torch",
                why="w.", todo="t.", replacement="https://download.pytorch.org/whl/rocm6.2",
                citation=cite),
        Finding(kind=Kind.PACKAGE, rule="package.no-data", verdict=Verdict.NO_DATA,
                subject="x==1", package="x", why="w.", todo="t.", citation=cite),
    ]
    report = build_report(inputs=["."], requirements=[], gpu=None, gfx_targets=[],
                          findings=findings, skipped=[Skipped(path="b", reason="binary")],
                          files_scanned=2, kernel_lines={}, fail_on=Verdict.BLOCKED)
    log = render_sarif(report, version="0.1.0")
    jsonschema.validate(log, SARIF_SUBSET, format_checker=jsonschema.FormatChecker())
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in log["runs"][0]["results"] if "locations" in r}
    assert uris == {"csrc/a%20b.cu", "requirements.txt"}
    assert len(log["runs"][0]["results"]) == 4  # 2 lines of PTX, the swap, the no-data


def test_subset_catches_a_misspelt_member() -> None:
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "pin"}},
                                         "results": [{"mesage": {"text": "x"}}]}]}
    try:
        jsonschema.validate(bad, SARIF_SUBSET)
    except jsonschema.ValidationError as exc:
        assert "message" in exc.message or "mesage" in exc.message
    else:
        raise AssertionError("a result without `message` passed")
