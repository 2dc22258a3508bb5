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

import math
from typing import Literal

from pydantic import Field

from pinning.accept.judge import Check, PointVerdict
from pinning.accept.train import TrainCheck, TrainResult
from pinning.errors import UsageError
from pinning.util.models import FormatVersion, Strict
from pinning.util.text import printable

__all__ = ["PREDICATE_TYPE", "AcceptanceResult", "ImportResult", "ImportedModule",
           "NumericResult", "QualityResult", "ServeResult", "Subject", "SustainedResult",
           "check_consistent", "gate_verdicts"]

#: The in-toto predicate type of a signed acceptance result (pin's own).
PREDICATE_TYPE = "https://pin.dev/attestation/acceptance/v1"


class ImportedModule(Strict):
    """One listed module as the probe imported it: ``name``, ``ok``, ``version`` (its
    ``__version__``, ``None`` when it has none or did not import), ``seconds`` the import
    took, and for a failure the exception's ``error-type`` (``ModuleNotFoundError``) and
    ``error`` message.
    """

    name: str
    ok: bool
    version: str | None = None
    seconds: float | None = None
    error_type: str | None = None
    error: str | None = None


class NumericResult(Strict):
    """The numeric check as run: ``device`` (``cuda:0`` or ``cpu``) and ``device-name``
    (on the CPU it says the CPU was compared with the CPU), ``dtype``, matrix ``shape``,
    generator ``seed``, the ``rtol``/``atol`` used and their sources (``gates file`` or
    ``torch.testing default``), ``elements``, ``mismatched`` (outside ``atol + rtol *
    |expected|``), ``nonfinite`` (NaN or infinite differences), ``max-abs-error``, the
    element closest to or furthest past its allowance (``worst-index``, its
    ``worst-abs-error`` and ``worst-allowed``), assert_close's ``passed`` and ``message``;
    or ``ran`` false and the ``error``.
    """

    ran: bool
    error: str | None = None
    device: str | None = None
    device_name: str | None = None
    dtype: str | None = None
    shape: list[int] | None = None
    seed: int | None = None
    rtol: float | None = None
    atol: float | None = None
    rtol_source: str | None = None
    atol_source: str | None = None
    elements: int | None = None
    mismatched: int | None = None
    nonfinite: int | None = None
    max_abs_error: float | None = None
    worst_index: list[int] | None = None
    worst_abs_error: float | None = None
    worst_allowed: float | None = None
    passed: bool | None = None
    message: str | None = None


class ImportResult(Strict):
    """The import gate's result.

    ``python`` is the command prefix run (joined with spaces); ``python-executable`` and
    ``python-version`` as the probe reported them; ``exit-code`` of the probe (``None``
    when it could not start or timed out) and ``error`` when it gave no usable report. The
    build: ``torch-version``, ``torch-cuda``, ``torch-hip`` (``torch.version.cuda`` /
    ``hip``), ``torch-error`` when torch did not import, ``cuda-available``,
    ``device-count``, per device ``device-names``, ``gcn-arch-names`` (ROCm; ``None``
    elsewhere) and ``compute-capabilities`` (``"9.0"``), ``device-error`` when asking torch
    about devices failed, ``numeric-device`` (the device of the numeric check) and
    ``numeric``; ``collect-env`` (torch's own report) or ``None`` with
    ``collect-env-error`` saying why; ``modules``; the ``checks`` (``probe``, ``import
    <name>`` per module, ``numeric``) and ``passed`` (all checks pass).
    """

    python: str
    python_executable: str | None = None
    python_version: str | None = None
    exit_code: int | None = None
    error: str | None = None
    torch_version: str | None = None
    torch_cuda: str | None = None
    torch_hip: str | None = None
    torch_error: str | None = None
    cuda_available: bool | None = None
    device_count: int | None = None
    device_names: list[str] = Field(default_factory=list)
    gcn_arch_names: list[str | None] = Field(default_factory=list)
    compute_capabilities: list[str | None] = Field(default_factory=list)
    device_error: str | None = None
    numeric_device: str | None = None
    numeric: NumericResult | None = None
    collect_env: str | None = None
    collect_env_error: str | None = None
    modules: list[ImportedModule] = Field(default_factory=list)
    checks: list[TrainCheck]
    passed: bool

    @property
    def failed_checks(self) -> list[str]:
        """``["import vllm: ModuleNotFoundError: No module named 'vllm'", ...]`` for each
        failed check.
        """
        return [f"{c.name}: {c.reason}" for c in self.checks if not c.passed]


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


def _verdict(check: Check, where: str) -> str | None:
    """What is wrong with ``check``'s own verdict, or ``None``: a check without a
    measured value fails; with one, it passes exactly when the value is within the limit
    in the check's bound direction (``max``: at or below, ``min``: at or above).
    """
    name = f"{where} check {printable(check.slo, newlines=False)!r}"
    m, limit = check.measured, check.limit
    if not math.isfinite(limit) or (m is not None and not math.isfinite(m)):
        return f"{name} holds a number that is not finite"
    if m is None:
        return f"{name} passed without a measured value" if check.passed else None
    within = m <= limit if check.bound == "max" else m >= limit
    if within != check.passed:
        word = "passed" if check.passed else "failed"
        return (f"{name} {word} although measured {m:.6g} is "
                f"{'within' if within else 'beyond'} its {check.bound} limit {limit:.6g}")
    return None


def _aggregate(passed: bool, checks: list[Check] | list[TrainCheck], where: str) -> str | None:
    """What is wrong with a ``passed`` that should be "there are checks and all pass"."""
    expected = bool(checks) and all(c.passed for c in checks)
    if passed == expected:
        return None
    if not checks:
        return f"{where} is marked passed with no check"
    return f"{where} is marked {'passed' if passed else 'failed'} but its checks " + (
        "all pass" if expected else "do not all pass")


def _serve_problems(serve: ServeResult) -> list[str]:
    """The contradictions inside the serving gate (see :func:`check_consistent`)."""
    out: list[str] = []
    failed: list[Check] = []
    for i, point in enumerate(serve.points):
        where = f"serve point {i} ({printable(point.summary.source, newlines=False)}" \
                f"#{point.summary.index})"
        out += [p for c in point.checks if (p := _verdict(c, where)) is not None]
        if (p := _aggregate(point.passed, point.checks, where)) is not None:
            out.append(p)
        failed += [c for c in point.checks if not c.passed]
    if serve.quality is not None:
        q = serve.quality
        out += [p for c in q.checks if (p := _verdict(c, "serve quality")) is not None]
        if (p := _aggregate(q.passed, q.checks, "serve quality")) is not None:
            out.append(p)
        failed += [c for c in q.checks if not c.passed]
    if serve.sustained is not None:
        st = serve.sustained
        if (p := _verdict(st.check, "serve sustained")) is not None:
            out.append(p)
        if st.passed != st.check.passed:
            out.append("serve sustained is marked " + ("passed" if st.passed else "failed")
                       + " but its check " + ("passes" if st.check.passed else "fails"))
        if not st.check.passed:
            failed.append(st.check)
    judged = (any(p.checks for p in serve.points) or serve.quality is not None
              or serve.sustained is not None)
    expected = judged and not failed
    if serve.passed != expected:
        out.append("the serve gate is marked " + ("passed" if serve.passed else "failed")
                   + (" but nothing was judged" if not judged else " but its checks "
                      + ("all pass" if expected else "do not all pass")))
    listed = list(serve.failed_checks)
    extra = 0 if judged else 1  # "slo: ... nothing was judged"
    if len(listed) != len(failed) + extra or not all(
            line.endswith(f"{c.slo}: {c.reason}") for line, c in zip(listed, failed,
                                                                       strict=False)):
        out.append(f"serve failed-checks lists {len(listed)} entries for {len(failed)} "
                   "failed checks, or not the failed checks in order")
    return out


def check_consistent(result: AcceptanceResult, *, label: str = "The acceptance result"
                     ) -> None:
    """Refuse a result whose verdicts contradict its own checks, so that a stored or
    edited ``passed`` is never trusted over what was measured.

    Checks: every serving check's ``passed`` agrees with its ``measured`` value against
    its ``limit`` in its ``bound`` direction (no measured value: failed; numbers finite);
    each point's, the quality's, the sustained run's, the import and train gates' and
    the serve gate's ``passed`` is true exactly when it has checks and all pass (import
    and train checks have no bound direction, so only this aggregation is checked for
    them); the serve gate's ``failed-checks`` lists exactly its failed checks, in order
    (plus the "nothing was judged" line when it has no check); ``gates`` holds exactly
    the gates present with their verdicts; ``passed`` is ``bool(gates) and
    all(gates.values())``; ``failed`` is exactly ``gate: <failed check>`` for every failed
    check (:func:`gate_verdicts`). Results pin writes always satisfy it.

    Raises :class:`UsageError` (exit 2) starting with ``label`` and naming the first few
    contradictions.
    """
    problems: list[str] = []
    if result.import_ is not None and (
            p := _aggregate(result.import_.passed, result.import_.checks, "the import gate")):
        problems.append(p)
    if result.train is not None and (
            p := _aggregate(result.train.passed, result.train.checks, "the train gate")):
        problems.append(p)
    if result.serve is not None:
        problems += _serve_problems(result.serve)
    gates, failed = gate_verdicts(result.import_, result.train, result.serve)
    if result.gates != gates:
        problems.append(f"gates {_show(result.gates)} is not the verdict of the gates "
                        f"present {_show(gates)}")
    if result.passed != (bool(result.gates) and all(result.gates.values())):
        problems.append("passed is " + str(result.passed).lower() + " but gates are "
                        + _show(result.gates))
    if result.failed != failed:
        problems.append(f"failed lists {len(result.failed)} entries, not the "
                        f"{len(failed)} failed checks")
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise UsageError(f"{label}: the result contradicts itself: "
                         + "; ".join(problems[:5]) + more + ". It was edited or damaged; "
                         "pin does not trust its verdicts.",
                         hint="Use the result file pin accept run or pin accept judge "
                              "wrote, unedited, or run the gates again.")


def _show(gates: dict[str, bool]) -> str:
    """``{import: true, serve: false}`` for messages."""
    return "{" + ", ".join(f"{printable(k, newlines=False)}: {str(v).lower()}"
                           for k, v in gates.items()) + "}"
