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

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from pinning.accept.judge import Check, PointVerdict
from pinning.accept.train import TrainCheck, TrainResult
from pinning.lockfile.status import StatusValue
from pinning.util.models import FormatVersion, Strict

__all__ = ["GPU_STACK", "LAYERS", "NOT_CHECKED", "PREDICATE_TYPE", "AcceptanceResult", "Binding",
           "ImportResult", "ImportedModule", "NumericResult", "QualityResult", "ServeResult",
           "Subject", "SustainedResult", "binding_problems", "gate_verdicts",
           "unverified_layers", "unverified_stack"]

#: The in-toto predicate type of a signed acceptance result (pin's own).
PREDICATE_TYPE = "https://pin.dev/attestation/acceptance/v1"

#: The layers of a stack a :class:`Binding` compares with the lock, in this order.
LAYERS = ("gpu", "kernel-driver", "runtime", "framework", "image-digest",
          "model-content-hash")

#: The layers of the GPU stack: a result that did not verify them is no evidence about a GPU.
GPU_STACK = ("gpu", "kernel-driver", "runtime")

#: The binding problem of a result written before pin checked bindings.
NOT_CHECKED = "binding not checked (result written by an older pin)"


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
    as read on the host (``model-hash-basis`` ``read-on-host``; ``from-lock``, the lock's
    hash copied, only in results of an older pin: pin never records a hash it did not
    read). ``unknown`` maps each field left ``None`` to why.
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


class Binding(Strict):
    """Whether a result is evidence about the stack its lock pins.

    ``checked``: ``run`` (pin ran the gates and probed the host) or ``judge`` (pin read
    results another harness measured). ``ran-on`` maps each of :data:`LAYERS` to what the
    gates ran on (``gpu`` ``"H200 (nvidia, PCI 0x2335)"``, ``kernel-driver``, ``runtime``
    ``"cuda 13.0"``, ``framework`` ``"pytorch 2.13.0 (cu130)"``, ``image-digest``,
    ``model-content-hash`` ``sha256:<hex>``), ``None`` when unknown, with the reason in
    ``ran-on-unknown``. ``differences``: one sentence per layer the lock pins where the
    run differed or could not be checked (``"gpu: ran on the CPU (no GPU found), the lock
    pins H200 (nvidia)"``). ``allowed-unbound``: the user passed ``--unbound-ok``, so a
    result with differences was written and exited on its gates alone. ``lock-status`` is
    the lock's status (``validated``, ``unconfirmed``, ``not-recorded``; ``None`` without a
    lock or in an older pin's result) and ``lock-unconfirmed`` each reason of an
    unconfirmed lock: a result bound to an unconfirmed lock is evidence about a stack no
    vendor source confirms. ``lock-gpu`` is the GPU the lock pins (``"Instinct MI300X
    (amd)"``; ``None`` without a lock, for a lock that pins none, or in an older pin's
    result): what the result would be evidence about.
    """

    checked: Literal["run", "judge"]
    ran_on: dict[str, str | None] = Field(default_factory=dict)
    ran_on_unknown: dict[str, str] = Field(default_factory=dict)
    differences: list[str] = Field(default_factory=list)
    allowed_unbound: bool = False
    lock_status: StatusValue | None = None
    lock_unconfirmed: list[str] = Field(default_factory=list)
    lock_gpu: str | None = None

    @property
    def bound(self) -> bool:
        """True when no layer the lock pins differed or went unchecked."""
        return not self.differences


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
    ``started-at``/``finished-at`` are UTC ISO 8601 times. ``binding`` says whether the
    result is evidence about its lock's stack (:class:`Binding`; ``None`` in a result of an
    older pin, which :func:`binding_problems` treats as unbound).
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
    binding: Binding | None = None


def binding_problems(result: AcceptanceResult) -> list[str]:
    """Why ``result`` cannot count as evidence for its lock, one sentence each; ``[]``
    when it is bound to the lock it names. A result naming no lock gives ``"names no
    lock"``; one without a binding (an older pin's) :data:`NOT_CHECKED`; otherwise the
    binding's ``differences``. Never raises.
    """
    problems: list[str] = []
    if result.subject.lock_content_hash is None:
        problems.append("names no lock")
    if result.binding is None:
        problems.append(NOT_CHECKED)
    else:
        problems += result.binding.differences
    return problems


def unverified_layers(result: AcceptanceResult,
                      layers: Sequence[str] = LAYERS) -> list[str]:
    """The ``layers`` of the stack pin could not see for ``result`` although they are not
    differences (a judged file records no GPU, driver or runtime), one sentence per reason:
    ``"gpu, kernel-driver, runtime: not verified (judged results: ...)"``; ``[]`` when every
    layer was seen or there is no binding. Caveats to print beside a verdict, first.
    """
    if result.binding is None:
        return []
    differing = {d.split(":", 1)[0] for d in result.binding.differences}
    by_reason: dict[str, list[str]] = {}
    for layer, why in result.binding.ran_on_unknown.items():
        named = "model" if layer == "model-content-hash" else layer
        if named not in differing and layer in layers:
            by_reason.setdefault(why, []).append(layer)
    return [f"{', '.join(layers)}: not verified ({why})" if not why.startswith("not verified")
            else f"{', '.join(layers)}: {why}" for why, layers in by_reason.items()]


def unverified_stack(result: AcceptanceResult) -> list[str]:
    """:func:`unverified_layers` of the GPU stack only (:data:`GPU_STACK`: gpu,
    kernel-driver, runtime): why ``result`` is no evidence about the GPU its lock pins even
    where nothing differs. ``[]`` when pin saw those layers, when any of them differs (the
    binding problem says more: a result that ran on the CPU is not evidence about a GPU,
    whatever its driver), or without a binding (an older pin's result: unbound). Never
    raises.
    """
    b = result.binding
    if b is None or any(d.split(":", 1)[0] in GPU_STACK for d in b.differences):
        return []
    return unverified_layers(result, GPU_STACK)


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
