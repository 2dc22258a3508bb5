"""The acceptance result: one document for ``pin accept run`` and ``pin accept judge``.

It records what was tested (the :class:`Subject`: the lock's content hash, the image's
digest, the host snapshot's hash, the model's content hash; each ``None`` with the reason
in ``unknown`` when it could not be established), the harness and its version, the gates
file's sha256, and per gate (``import``, ``train``, ``serve``) its measurements, checks and
verdict, so "imports", "trains" and "serves" are reported separately. ``passed`` is true
when every gate that ran passed (and at least one ran).

Signed with ``pin accept run --sign``, the document is the predicate of an in-toto
Statement v1 of type :data:`PREDICATE_TYPE` (pin's own) inside a DSSE envelope.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pinning.accept.imports import ImportResult
from pinning.accept.judge import Check, PointVerdict
from pinning.accept.train import TrainResult
from pinning.util.models import FormatVersion, Strict

__all__ = ["PREDICATE_TYPE", "AcceptanceResult", "QualityResult", "ServeResult",
           "Subject", "SustainedResult", "gate_verdicts"]

#: The in-toto predicate type of a signed acceptance result (pin's own).
PREDICATE_TYPE = "https://pin.dev/attestation/acceptance/v1"


class Subject(Strict):
    """What the gates ran against. ``lock`` is the lock file as given, ``lock-content-hash``
    its content hash (``sha256:<hex>``); ``image`` the reference given and ``image-digest``
    its digest (the registry manifest digest when the reference names one, else the local
    image ID, and ``image-digest-kind`` says which); ``host-snapshot-hash`` the hash of the
    host's snapshot (``pin probe``); ``model-content-hash`` the served model's content hash
    as read on the host (else as the lock records it, and ``model-hash-basis`` says which).
    ``unknown`` maps each field left ``None`` to why.
    """

    lock: str | None = None
    lock_content_hash: str | None = None
    image: str | None = None
    image_digest: str | None = None
    image_digest_kind: Literal["manifest", "image-id"] | None = None
    host_snapshot_hash: str | None = None
    model_content_hash: str | None = None
    model_hash_basis: Literal["read-on-host", "from-lock"] | None = None
    unknown: dict[str, str] = Field(default_factory=dict)


class QualityResult(Strict):
    """The output-quality check: per reference prompt the output and whether it matched;
    ``exact-match-rate`` and ``token-agreement`` (0-1, the token basis named in
    ``token-basis``), or an external ``score`` read from ``score-file``; its ``checks``.
    """

    reference: str | None = None
    prompts: int = 0
    exact_matches: int = 0
    exact_match_rate: float | None = None
    token_agreement: float | None = None
    token_basis: str | None = None
    mismatches: list[dict[str, str]] = Field(default_factory=list)
    score_file: str | None = None
    score: float | None = None
    checks: list[Check]
    passed: bool


class SustainedResult(Strict):
    """The sustained-throughput run: its duration and concurrency, output-token
    throughput (output tokens per second) in the first and last third of its wall time,
    the drop in percent and the check.
    """

    duration_s: float
    concurrency: int
    first_third_tps: float | None
    last_third_tps: float | None
    drop_pct: float | None
    check: Check
    passed: bool


class ServeResult(Strict):
    """The serving gate: the harness that measured (``pin-loadgen`` for ``pin accept run``,
    else the harnesses of the judged files), the workload and SLOs as the gates file set
    them, every run (concurrency or rate point) judged, the quality and sustained checks,
    and ``passed``.
    """

    harness: str
    harness_version: str | None = None
    endpoint: str | None = None
    model: str | None = None
    workload: dict[str, object] | None = None
    slo: dict[str, object] = Field(default_factory=dict)
    points: list[PointVerdict]
    quality: QualityResult | None = None
    sustained: SustainedResult | None = None
    passed: bool
    failed_checks: list[str] = Field(default_factory=list)


class AcceptanceResult(Strict):
    """The whole result (schema ``accept-result``). ``mode``: ``host`` (gates ran on this
    host), ``image`` (inside the lock's image) or ``judged`` (results another harness
    measured). ``gates`` is the verdict per gate that ran (``{"import": true, "train":
    false}``); ``failed`` lists ``gate: check: reason`` for every failed check.
    ``started-at``/``finished-at`` are UTC ISO 8601 times.
    """

    schema_version: FormatVersion = 1
    pin_version: str
    mode: Literal["host", "image", "judged"]
    config_sha256: str
    started_at: str | None = None
    finished_at: str | None = None
    subject: Subject = Subject()
    import_: ImportResult | None = Field(default=None, alias="import")
    train: TrainResult | None = None
    serve: ServeResult | None = None
    gates: dict[str, bool]
    passed: bool
    failed: list[str]


def gate_verdicts(imports: ImportResult | None, train: TrainResult | None,
                  serve: ServeResult | None) -> tuple[dict[str, bool], list[str]]:
    """``(gates, failed)`` for :class:`AcceptanceResult` from the gates that ran."""
    gates: dict[str, bool] = {}
    failed: list[str] = []
    if imports is not None:
        gates["import"] = imports.passed
        failed += [f"import: {c}" for c in imports.failed_checks]
    if train is not None:
        gates["train"] = train.passed
        failed += [f"train: {c}" for c in train.failed_checks]
    if serve is not None:
        gates["serve"] = serve.passed
        failed += [f"serve: {c}" for c in serve.failed_checks]
    return gates, failed
