"""The training gate (``[train]``): a training run judged for loss behaviour, checkpoint
recovery and repeatable step time.

:func:`run_train_gate` runs the trainer (pin's ``tiny-lm`` harness under a given Python, or
the user's ``command``) as subprocesses without a shell: an uninterrupted run of ``steps``
steps, then, with ``[train.checkpoint]``, a run stopped after ``resume-at`` and a resumed
run in a new process. Every trainer prints one JSON object per step on standard output,
``{"step", "loss", "tokens", "step_time_s"}``; a user command gets its instructions in
the environment: ``PIN_CHECKPOINT_DIR`` (save and load here), ``PIN_STEPS`` (train to this
step), ``PIN_STOP_AT`` (save after this step and exit; empty when not stopping),
``PIN_RESUME`` (``1``: load the checkpoint and continue after its step; else ``0``) and
``PIN_SEED``.

A trainer that crashes, times out or prints no step lines is a failed check with the
reason (its exit status and the tail of its standard error), never an exception.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pinning.accept.config import CheckpointCheck, StepTimeCheck, TrainGate
from pinning.accept.judge import percentile
from pinning.accept.procs import run_logged, stderr_tail
from pinning.accept.steps import Proc, read_info, read_steps, span
from pinning.util.models import Strict

__all__ = ["TrainCheck", "TrainResult", "TrainRun", "run_train_gate"]


class TrainCheck(Strict):
    """One check of the training gate: ``name`` (``finite-loss``, ``loss-ratio``,
    ``loss-reference``, ``checkpoint-resume``, ``step-time-cv``, ``step-time-median``, or
    ``run-<label>`` for a trainer that did not complete), the ``measured`` value and the
    ``limit`` (``None`` where there is no number), ``passed`` and a one-line ``reason``.
    """

    name: str
    measured: float | None
    limit: float | None
    passed: bool
    reason: str


class TrainRun(Strict):
    """One trainer process: ``label`` (``full``, ``stop``, ``resume``, ``repeat``), its
    ``exit-code`` (``None`` when it could not start or timed out), the steps it printed
    with their ``losses`` (``None`` for a NaN or infinite loss), ``tokens`` and
    ``step-times-s`` (seconds), the ``info`` object it printed on standard error (tiny-lm:
    device, torch, hip, cuda), and ``error`` when it did not complete.
    """

    label: str
    exit_code: int | None
    steps: list[int]
    losses: list[float | None]
    tokens: list[int]
    step_times_s: list[float]
    info: dict[str, Any] | None = None
    error: str | None = None


class TrainResult(Strict):
    """The training gate's result: the ``trainer`` (``tiny-lm`` or the command, joined),
    ``steps`` asked for, every process run, the step-time summary of the uninterrupted run
    after warm-up (``step-time-median-s``, ``step-time-p90-s``, ``step-time-cv``; ``None``
    without ``[train.step-time]`` or samples), every check, and ``passed`` (all checks pass).
    """

    trainer: str
    steps: int
    runs: list[TrainRun]
    step_time_median_s: float | None = None
    step_time_p90_s: float | None = None
    step_time_cv: float | None = None
    checks: list[TrainCheck]
    passed: bool

    @property
    def failed_checks(self) -> list[str]:
        """``["loss-ratio: final/initial loss 0.41 above 0.3", ...]`` for each failed check."""
        return [f"{c.name}: {c.reason}" for c in self.checks if not c.passed]


def _as_run(proc: Proc) -> TrainRun:
    """The recorded form of a trainer process (a NaN or infinite loss becomes ``None``)."""
    return TrainRun(label=proc.label, exit_code=proc.exit_code, steps=proc.steps,
                    losses=[x if math.isfinite(x) else None for x in proc.losses],
                    tokens=proc.tokens, step_times_s=proc.times, info=proc.info,
                    error=proc.error)


def run_train_gate(gate: TrainGate, python: str | None, workdir: Path, *,
                   timeout_s: float = 600.0, config_dir: Path | None = None,
                   wrap: Callable[[list[str]], list[str]] | None = None) -> TrainResult:
    """Run ``gate`` on this host (or, with ``wrap``, in an image) and judge it.

    ``python`` runs the ``tiny-lm`` harness (a path or a name on PATH; unused for a
    ``command`` gate, which runs as given); ``workdir`` (an existing folder) holds the
    checkpoint folders and the trainers' output; ``timeout_s`` bounds each process in
    seconds (then its whole process group is killed); ``config_dir`` (the gates file's
    folder) is the trainers' working directory (else the current one) and resolves a
    relative ``[train.loss] reference``. ``wrap`` turns each trainer argv into the argv
    actually run, such as :func:`pinning.accept.container.wrap_argv`'s shim that runs it in
    the lock's image (the ``PIN_*`` variables travel with it). In that image mode
    ``python`` is the image's interpreter (default ``python3`` on the image's PATH), and
    the container must see ``workdir``, ``config_dir`` and, for ``tiny-lm``, the harness
    file (:data:`pinning.accept.harness.TINY_LM`) at the same paths. Returns a
    :class:`TrainResult`; a trainer that fails is a failed check, never an exception.
    Raises nothing of its own.
    """
    if python is not None and os.sep in python:
        python = os.path.abspath(python)
    trainer = _Trainer(gate, python, workdir, config_dir or Path.cwd(), timeout_s, wrap)
    full = trainer.run("full", None, False, "full")
    checks = [_run_check(full), *_loss_checks(gate, full, config_dir)]
    if gate.checkpoint is not None:
        checks += _checkpoint_checks(trainer, gate.checkpoint, full)
    median = p90 = cv = None
    if gate.step_time is not None:
        step_checks, (median, p90, cv) = _step_time_checks(trainer, gate.step_time, full)
        checks += step_checks
    return TrainResult(trainer=gate.builtin or " ".join(gate.command or []), steps=gate.steps,
                       runs=[_as_run(p) for p in trainer.procs], step_time_median_s=median,
                       step_time_p90_s=p90, step_time_cv=cv, checks=checks,
                       passed=all(c.passed for c in checks))


@dataclass
class _Trainer:
    """How the gate's trainer runs (argv, environment, folders, timeout) and every process
    run so far, in order (:meth:`run`).
    """

    gate: TrainGate
    python: str | None
    workdir: Path
    cwd: Path
    timeout_s: float
    wrap: Callable[[list[str]], list[str]] | None
    procs: list[Proc] = field(default_factory=list)

    def run(self, label: str, stop_at: int | None, resume: bool, ckpt: str) -> Proc:
        """Run the trainer as ``label`` with its checkpoints in ``workdir/ckpt``: to step
        ``stop_at`` (``None``: every step), or on from it with ``resume``; read and keep it.
        """
        from pinning.accept.harness import TINY_LM

        gate, ckdir = self.gate, self.workdir / ckpt
        ckdir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PIN_CHECKPOINT_DIR=str(ckdir), PIN_STEPS=str(gate.steps),
                   PIN_STOP_AT="" if stop_at is None else str(stop_at),
                   PIN_RESUME="1" if resume else "0", PIN_SEED=str(gate.seed))
        if gate.builtin is not None:
            argv = [self.python or "python3", str(TINY_LM), "--steps", str(gate.steps),
                    "--seed", str(gate.seed), "--checkpoint-dir", str(ckdir)]
            argv += ["--stop-at", str(stop_at)] if stop_at is not None else []
            argv += ["--resume"] if resume else []
        else:
            argv = list(gate.command or [])
        first = stop_at + 1 if resume and stop_at is not None else 1
        last = stop_at if stop_at is not None and not resume else gate.steps
        proc = self._process(label, self.wrap(argv) if self.wrap else argv, env,
                             range(first, last + 1))
        self.procs.append(proc)
        return proc

    def _process(self, label: str, argv: list[str], env: dict[str, str],
                 expected: range) -> Proc:
        """Run ``argv`` in ``cwd`` with its output in files under ``workdir``; read the
        step lines and say what went wrong, if anything.
        """
        proc = Proc(label)
        out_path, err_path = self.workdir / f"{label}.stdout", self.workdir / f"{label}.stderr"
        proc.exit_code, proc.error = run_logged(argv, out_path, err_path, self.timeout_s,
                                                env=env, cwd=self.cwd)
        read_steps(proc, out_path)
        read_info(proc, err_path)
        if proc.error is None and proc.exit_code != 0:
            proc.error = f"exited with status {proc.exit_code}{stderr_tail(err_path)}"
        elif proc.error is None and not proc.steps:
            why = (f"; first other line: {proc.first_skipped!r}" if proc.skipped else
                   "; its standard output was empty")
            proc.error = f"printed no JSON step lines {{\"step\", \"loss\", ...}}{why}"
        elif proc.error is None and proc.steps != list(expected):
            proc.error = (f"printed steps {span(proc.steps)}, expected "
                          f"{expected.start}-{expected.stop - 1}")
        return proc


def _checkpoint_checks(trainer: _Trainer, ck: CheckpointCheck, full: Proc) -> list[TrainCheck]:
    """Stop after ``resume-at``, resume in a new process: ``run-stop``, ``run-resume`` and
    ``checkpoint-resume`` (not run when the stopping run did not complete).
    """
    stop = trainer.run("stop", ck.resume_at, False, "resume")
    checks = [_run_check(stop)]
    if stop.error is not None:
        return [*checks, TrainCheck(name="checkpoint-resume", measured=None,
                                    limit=ck.max_abs_diff, passed=False,
                                    reason="not run: the run to stop at step "
                                           f"{ck.resume_at} did not complete")]
    resume = trainer.run("resume", ck.resume_at, True, "resume")
    return [*checks, _run_check(resume),
            _resume_check(ck.max_abs_diff, full, stop, resume)]


def _step_time_checks(trainer: _Trainer, st: StepTimeCheck, full: Proc
                      ) -> tuple[list[TrainCheck], tuple[float | None, ...]]:
    """``step-time-cv`` over the full run after warm-up and, with ``median-max-pct``,
    ``step-time-median`` against the stopping run (or a repeated run when there is none);
    with ``(median, p90, cv)`` of the full run (``None`` with fewer than 2 samples).
    """
    times = full.times[st.warmup:] if full.error is None else []
    median = p90 = cv = None
    if len(times) >= 2:
        median, p90 = statistics.median(times), percentile(times, 90.0)
        mean = statistics.fmean(times)
        cv = statistics.pstdev(times) / mean if mean > 0 else math.inf
        ok = cv <= st.cv_max
        checks = [TrainCheck(
            name="step-time-cv", measured=cv, limit=st.cv_max, passed=ok,
            reason=(f"coefficient of variation {cv:.3g} {'within' if ok else 'above'} "
                    f"{st.cv_max:g} over {len(times)} steps after {st.warmup} warm-up "
                    f"(median {median:.4g} s, p90 {p90:.4g} s)"))]
    else:
        checks = [TrainCheck(name="step-time-cv", measured=None, limit=st.cv_max,
                             passed=False, reason="fewer than 2 step times after "
                             f"{st.warmup} warm-up steps")]
    if st.median_max_pct is not None:
        second = next((p for p in trainer.procs if p.label == "stop"), None)
        if second is None:
            second = trainer.run("repeat", None, False, "repeat")
            checks.append(_run_check(second))
        checks.append(_median_check(st.median_max_pct, median,
                                    second.times[st.warmup:] if second.error is None
                                    else [], second.label))
    return checks, (median, p90, cv)


def _run_check(proc: Proc) -> TrainCheck:
    """``run-<label>``: the process completed and printed every step it was asked for."""
    if proc.error is None:
        return TrainCheck(name=f"run-{proc.label}", measured=float(len(proc.steps)),
                          limit=None, passed=True,
                          reason=f"completed steps {span(proc.steps)}")
    return TrainCheck(name=f"run-{proc.label}", measured=None, limit=None, passed=False,
                      reason=f"the {proc.label} run {proc.error}")


def _loss_checks(gate: TrainGate, full: Proc, config_dir: Path | None) -> list[TrainCheck]:
    """``finite-loss``, ``loss-ratio`` and (with a reference curve) ``loss-reference``."""
    if not full.losses:
        return [TrainCheck(name="loss-ratio", measured=None, limit=gate.loss.final_max_ratio,
                           passed=False, reason="no losses: the full run printed no steps")]
    bad = [(s, x) for s, x in zip(full.steps, full.losses, strict=True) if not math.isfinite(x)]
    out = [TrainCheck(
        name="finite-loss", measured=float(len(bad)), limit=0.0, passed=not bad,
        reason=(f"{len(bad)} non-finite loss(es), first at step {bad[0][0]} ({bad[0][1]})"
                if bad else f"all {len(full.losses)} losses finite"))]
    first, last = full.losses[0], full.losses[-1]
    limit = gate.loss.final_max_ratio
    if bad or first <= 0:
        out.append(TrainCheck(name="loss-ratio", measured=None, limit=limit, passed=False,
                              reason=f"no ratio: initial loss {first}, final loss {last}"))
    else:
        ratio = last / first
        ok = ratio <= limit
        out.append(TrainCheck(
            name="loss-ratio", measured=ratio, limit=limit, passed=ok,
            reason=(f"final/initial loss {last:.4g}/{first:.4g} = {ratio:.4g} "
                    f"{'within' if ok else 'above'} {limit:g}")))
    if gate.loss.reference is not None and gate.loss.band is not None:
        out.append(_reference_check(gate.loss.reference, gate.loss.band, full, config_dir))
    return out


def _reference_check(reference: str, band: float, full: Proc,
                     config_dir: Path | None) -> TrainCheck:
    """``loss-reference``: every step's loss within ``band`` (relative) of the reference
    curve (JSON lines with ``step`` and ``loss``, as a trainer prints them).
    """
    path = Path(reference)
    if not path.is_absolute() and config_dir is not None:
        path = config_dir / path
    ref = Proc("reference")
    read_steps(ref, path)
    if ref.error is not None or not ref.steps:
        return TrainCheck(name="loss-reference", measured=None, limit=band, passed=False,
                          reason=f"reference {reference}: "
                                 + (ref.error or "no JSON step lines"))
    want = dict(zip(ref.steps, ref.losses, strict=True))
    worst, at = 0.0, None
    for step, loss in zip(full.steps, full.losses, strict=True):
        if step in want:
            base = want[step]
            dev = abs(loss - base) / abs(base) if base else math.inf
            if not math.isfinite(dev) or dev > worst or at is None:
                worst, at = (dev if math.isfinite(dev) else math.inf), step
    if at is None:
        return TrainCheck(name="loss-reference", measured=None, limit=band, passed=False,
                          reason=f"reference {reference} shares no step with the run")
    ok = worst <= band
    return TrainCheck(name="loss-reference", measured=worst, limit=band, passed=ok,
                      reason=(f"largest relative deviation from the reference {worst:.4g} "
                              f"(step {at}) {'within' if ok else 'above'} {band:g}"))


def _resume_check(limit: float, full: Proc, stop: Proc, resume: Proc) -> TrainCheck:
    """``checkpoint-resume``: the stopped-then-resumed losses against the full run's."""
    if full.error is not None or resume.error is not None:
        return TrainCheck(name="checkpoint-resume", measured=None, limit=limit, passed=False,
                          reason="not compared: the full or the resumed run did not complete")
    want = dict(zip(full.steps, full.losses, strict=True))
    worst, at = 0.0, resume.steps[0]
    for step, loss in zip(stop.steps + resume.steps, stop.losses + resume.losses,
                          strict=True):
        diff = abs(loss - want[step])
        if not math.isfinite(diff):
            diff = 0.0 if loss == want[step] else math.inf
        if diff > worst:
            worst, at = diff, step
    ok = worst <= limit
    return TrainCheck(
        name="checkpoint-resume", measured=worst, limit=limit, passed=ok,
        reason=(f"stopped after step {stop.steps[-1]}, resumed in a new process: largest "
                f"|loss - uninterrupted loss| {worst:.3g} (step {at}) "
                f"{'within' if ok else 'above'} {limit:g}"))


def _median_check(limit_pct: float, median: float | None, times: list[float],
                  label: str) -> TrainCheck:
    """``step-time-median``: two runs' median step times within ``limit_pct`` percent."""
    if median is None or not times:
        return TrainCheck(name="step-time-median", measured=None, limit=limit_pct,
                          passed=False, reason="not compared: a run has no step times "
                          "after warm-up")
    other = statistics.median(times)
    pct = abs(other - median) / median * 100 if median > 0 else math.inf
    ok = pct <= limit_pct
    return TrainCheck(name="step-time-median", measured=pct, limit=limit_pct, passed=ok,
                      reason=(f"median step time {median:.4g} s (full run) vs {other:.4g} s "
                              f"({label} run): {pct:.3g}% {'within' if ok else 'above'} "
                              f"{limit_pct:g}%"))
