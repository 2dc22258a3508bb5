"""The gates file, ``accept.toml``: the workloads, tolerances and SLOs a team chose.

Every key is kebab-case as written in the file; unknown keys are errors that name the key,
and every number is range-checked. :func:`load_config` reads a file and raises
``UsageError`` (exit 2) naming the file, the key and what to do. pin ships no default
SLO: the template (``pin accept init``) shows published values labelled as examples.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, model_validator

from pinning.errors import UsageError
from pinning.util.models import OneLine, Strict, validation_summary

__all__ = ["PERCENTILES", "AcceptConfig", "ImportGate", "LatencyMetric", "ServeGate",
           "ServeQuality", "ServeSlo", "ServeSustained", "ServeWorkload", "TrainGate",
           "load_config", "read_config"]

#: Per-request latency metrics an SLO may limit: time to first token, time per output token
#: ((end-to-end latency - TTFT) / (output tokens - 1), as vLLM defines it), inter-token
#: latency, end-to-end latency.
LatencyMetric = Literal["ttft", "tpot", "itl", "e2el"]
#: The percentiles an SLO key may name (``ttft-p99-ms``).
PERCENTILES: tuple[str, ...] = ("p50", "p90", "p95", "p99")

_HOUR_MS = 3_600_000.0
# A latency limit in milliseconds: above 0, at most an hour.
Ms = Annotated[float | None, Field(default=None, gt=0, le=_HOUR_MS, strict=True,
                                   allow_inf_nan=False)]
Ratio = Annotated[float, Field(ge=0, le=1, strict=True, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1, le=10_000_000, strict=True)]


class ServeSlo(Strict):
    """``[serve.slo]``: limits in milliseconds (``<metric>-p<NN>-ms``), failures, rates.

    A request is good when each of its TTFT, TPOT, ITL (its largest gap) and end-to-end
    latency is within the tightest limit set for that metric; goodput is good requests
    per second. vLLM's ``--goodput`` counts the same way for TTFT, TPOT and end-to-end
    latency (vllm-project/vllm@009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1:
    vllm/benchmarks/serve.py, commit date not recorded; after DistServe, arXiv 2401.09670);
    it has no ITL limit, which pin adds as a request's largest gap.
    """

    ttft_p50_ms: Ms
    ttft_p90_ms: Ms
    ttft_p95_ms: Ms
    ttft_p99_ms: Ms
    tpot_p50_ms: Ms
    tpot_p90_ms: Ms
    tpot_p95_ms: Ms
    tpot_p99_ms: Ms
    itl_p50_ms: Ms
    itl_p90_ms: Ms
    itl_p95_ms: Ms
    itl_p99_ms: Ms
    e2el_p50_ms: Ms
    e2el_p90_ms: Ms
    e2el_p95_ms: Ms
    e2el_p99_ms: Ms
    failed_max: Annotated[int | None, Field(default=None, ge=0, le=10_000_000, strict=True)]
    goodput_min_rps: Annotated[float | None, Field(default=None, gt=0, le=1e7, strict=True,
                                                   allow_inf_nan=False)]
    request_throughput_min_rps: Annotated[float | None, Field(
        default=None, gt=0, le=1e7, strict=True, allow_inf_nan=False)]
    output_throughput_min_tps: Annotated[float | None, Field(
        default=None, gt=0, le=1e9, strict=True, allow_inf_nan=False)]

    def latency_limits(self) -> list[tuple[str, LatencyMetric, str, float]]:
        """``[(key, metric, percentile, limit ms)]`` for every latency limit set, in file
        order (``("ttft-p99-ms", "ttft", "p99", 1000.0)``).
        """
        out: list[tuple[str, LatencyMetric, str, float]] = []
        metrics: tuple[LatencyMetric, ...] = ("ttft", "tpot", "itl", "e2el")
        for metric in metrics:
            for pct in PERCENTILES:
                value = getattr(self, f"{metric}_{pct}_ms")
                if value is not None:
                    out.append((f"{metric}-{pct}-ms", metric, pct, float(value)))
        return out

    def per_request_limits(self) -> dict[LatencyMetric, float]:
        """The limit each request must meet to count as good, in milliseconds: per metric,
        the tightest of its percentile limits (``{"ttft": 1000.0, "tpot": 100.0}``).
        """
        out: dict[LatencyMetric, float] = {}
        for _key, metric, _pct, limit in self.latency_limits():
            out[metric] = min(limit, out.get(metric, limit))
        return out


class ServeWorkload(Strict):
    """``[serve.workload]``: random prompts of fixed token lengths from a seed, a
    concurrency sweep and/or a Poisson request rate (requests per second).
    """

    input_tokens: Count = 128
    output_tokens: Count = 32
    requests: Count = 64
    concurrency: Annotated[list[Annotated[int, Field(ge=1, le=100_000, strict=True)]],
                           Field(min_length=1, max_length=64)] = Field(
        default_factory=lambda: [1])
    request_rate: Annotated[float | None, Field(default=None, gt=0, le=1e6, strict=True,
                                                allow_inf_nan=False)]
    seed: Annotated[int, Field(ge=0, le=2**63 - 1, strict=True)] = 0
    warmup_requests: Annotated[int, Field(ge=0, le=100_000, strict=True)] = 0
    min_duration_s: Annotated[float | None, Field(default=None, gt=0, le=86_400,
                                                  strict=True, allow_inf_nan=False)]
    prompts: OneLine | None = None
    tokenizer: OneLine | None = None
    api: Literal["completions", "chat"] = "completions"
    ignore_eos: bool = False
    request_timeout_s: Annotated[float, Field(gt=0, le=86_400, strict=True,
                                              allow_inf_nan=False)] = 600.0


class ServeQuality(Strict):
    """``[serve.quality]``: temperature-0 outputs against reference outputs, or an
    external evaluation score against a threshold.
    """

    reference: OneLine | None = None
    exact_match_min: Ratio | None = None
    token_agreement_min: Ratio | None = None
    score_file: OneLine | None = None
    score_task: OneLine | None = None
    score_metric: OneLine | None = None
    score_min: Annotated[float | None, Field(default=None, strict=True,
                                             allow_inf_nan=False)]


class ServeSustained(Strict):
    """``[serve.sustained]``: a fixed-duration run at one concurrency whose output-token
    throughput in its last third must stay within ``max-drop-pct`` percent of its first.
    """

    duration_s: Annotated[float, Field(gt=0, le=86_400, strict=True, allow_inf_nan=False)]
    concurrency: Annotated[int, Field(ge=1, le=100_000, strict=True)] = 1
    max_drop_pct: Annotated[float, Field(ge=0, le=100, strict=True, allow_inf_nan=False)]


class ServeGate(Strict):
    """``[serve]``: an OpenAI-compatible endpoint, the served model name, the workload,
    the SLOs and the output-quality check.
    """

    endpoint: Annotated[str, Field(pattern=r"^https?://[^\s]{1,2000}$")] = (
        "http://127.0.0.1:8000/v1")
    model: OneLine | None = None
    workload: ServeWorkload = ServeWorkload()
    slo: ServeSlo = ServeSlo()
    quality: ServeQuality | None = None
    sustained: ServeSustained | None = None


class LossCheck(Strict):
    """``[train.loss]``: final/initial loss at most ``final-max-ratio``; optionally a
    reference curve (JSON lines) the run must stay within ``band`` (relative) of.
    """

    final_max_ratio: Annotated[float, Field(gt=0, le=1000, strict=True,
                                            allow_inf_nan=False)] = 1.0
    reference: OneLine | None = None
    band: Annotated[float | None, Field(default=None, gt=0, le=10, strict=True,
                                        allow_inf_nan=False)]


class CheckpointCheck(Strict):
    """``[train.checkpoint]``: stop at step ``resume-at``, resume in a new process; the
    resumed losses must match the uninterrupted run within ``max-abs-diff``.
    """

    resume_at: Annotated[int, Field(ge=1, le=10_000_000, strict=True)]
    max_abs_diff: Annotated[float, Field(ge=0, le=1e6, strict=True,
                                         allow_inf_nan=False)] = 0.0


class StepTimeCheck(Strict):
    """``[train.step-time]``: after ``warmup`` steps, the coefficient of variation of step
    times at most ``cv-max``; two runs' medians within ``median-max-pct`` percent.
    """

    warmup: Annotated[int, Field(ge=0, le=10_000_000, strict=True)] = 0
    cv_max: Annotated[float, Field(gt=0, le=100, strict=True, allow_inf_nan=False)] = 0.25
    median_max_pct: Annotated[float | None, Field(default=None, gt=0, le=1000, strict=True,
                                                  allow_inf_nan=False)]


class TrainGate(Strict):
    """``[train]``: pin's ``builtin`` tiny LM or a user ``command`` printing JSON lines,
    ``steps`` steps, and the loss, checkpoint and step-time checks.
    """

    builtin: Literal["tiny-lm"] | None = None
    command: Annotated[list[OneLine], Field(min_length=1, max_length=256)] | None = None
    steps: Annotated[int, Field(ge=1, le=10_000_000, strict=True)] = 40
    seed: Annotated[int, Field(ge=0, le=2**63 - 1, strict=True)] = 0
    loss: LossCheck = LossCheck()
    checkpoint: CheckpointCheck | None = None
    step_time: StepTimeCheck | None = None

    @model_validator(mode="after")
    def _one_trainer(self) -> TrainGate:
        """Exactly one of ``builtin`` and ``command``; ``resume-at`` and ``warmup`` inside
        ``steps``.
        """
        if (self.builtin is None) == (self.command is None):
            raise ValueError("give exactly one of builtin = \"tiny-lm\" and command = [...]")
        if self.checkpoint is not None and self.checkpoint.resume_at >= self.steps:
            raise ValueError(f"checkpoint.resume-at ({self.checkpoint.resume_at}) must be "
                             f"below steps ({self.steps})")
        if self.step_time is not None and self.step_time.warmup >= self.steps:
            raise ValueError(f"step-time.warmup ({self.step_time.warmup}) must be below "
                             f"steps ({self.steps})")
        return self


class ImportGate(Strict):
    """``[import]``: modules to import, and the dtype tolerance of the small numeric check
    on the device against a CPU reference (``rtol``/``atol``; torch.testing's defaults
    when unset).
    """

    modules: Annotated[list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]{0,199}$")]],
                       Field(min_length=1, max_length=256)] = Field(
        default_factory=lambda: ["torch"])
    dtype: Literal["float16", "bfloat16", "float32", "float64"] = "float32"
    rtol: Annotated[float | None, Field(default=None, ge=0, le=1, strict=True,
                                        allow_inf_nan=False)]
    atol: Annotated[float | None, Field(default=None, ge=0, le=1, strict=True,
                                        allow_inf_nan=False)]
    numeric_check: bool = True


class AcceptConfig(Strict):
    """The whole ``accept.toml``: any of ``[import]``, ``[train]`` and ``[serve]``."""

    import_: ImportGate | None = Field(default=None, alias="import")
    train: TrainGate | None = None
    serve: ServeGate | None = None


_HINT = ("Fix the named key in the file; `pin accept init -o FILE` writes a commented "
         "template listing every key.")


def read_config(path: Path) -> tuple[bytes, AcceptConfig]:
    """Read ``path`` (TOML, at most 64 MiB) into an :class:`AcceptConfig`; return the exact
    bytes read (their sha256 goes into the result) and the model.

    Raises ``UsageError`` (exit 2) naming the file when it cannot be read, is not TOML, or
    has an unknown key or a value out of range (the key path, ``serve.slo.ttft-p99-ms``).
    """
    from pinning.util.files import read_toml

    raw, data = read_toml(Path(path), UsageError, label=f"Gates file {path}",
                          unreadable_hint="Check the path, or write one with `pin accept "
                                          "init`.", syntax_hint=_HINT)
    if not any(key in data for key in ("import", "train", "serve")) and not any(
            key not in ("import", "train", "serve") for key in data):
        raise UsageError(f"Gates file {path}: no [import], [train] or [serve] section; "
                         "nothing to accept.", hint=_HINT)
    try:
        return raw, AcceptConfig.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"Gates file {path}: {validation_summary(exc, data)}.",
                         hint=_HINT) from exc


def load_config(path: Path) -> AcceptConfig:
    """:func:`read_config` without the bytes. Raises ``UsageError`` (exit 2) as it does."""
    return read_config(path)[1]
