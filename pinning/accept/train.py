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
import signal
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pinning.accept.config import TrainGate
from pinning.errors import UsageError
from pinning.util.jsonread import as_finite, load_json
from pinning.util.models import Strict
from pinning.util.text import printable

__all__ = ["TrainCheck", "TrainResult", "TrainRun", "run_train_gate"]

# At most this much of a trainer's standard output is read (64 MiB), and this much of
# each line (64 KiB); the tail of standard error kept for a reason (2 KiB).
_MAX_OUT = 64 * 1024 * 1024
_MAX_LINE = 64 * 1024
_ERR_TAIL = 2048


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


@dataclass
class _Proc:
    """A finished trainer process as read: step lines and what went wrong."""

    label: str
    exit_code: int | None = None
    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    info: dict[str, Any] | None = None
    error: str | None = None
    skipped: int = 0
    first_skipped: str = ""

    def model(self) -> TrainRun:
        return TrainRun(label=self.label, exit_code=self.exit_code, steps=self.steps,
                        losses=[x if math.isfinite(x) else None for x in self.losses],
                        tokens=self.tokens, step_times_s=self.times, info=self.info,
                        error=self.error)


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
    cwd = config_dir if config_dir is not None else Path.cwd()
    if python is not None and os.sep in python:
        python = os.path.abspath(python)
    if gate.builtin is not None:
        from pinning.accept.harness import TINY_LM

        trainer: str = gate.builtin
    else:
        assert gate.command is not None
        trainer = " ".join(gate.command)

    def run(label: str, stop_at: int | None, resume: bool, ckpt: str) -> _Proc:
        ckdir = workdir / ckpt
        ckdir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PIN_CHECKPOINT_DIR=str(ckdir), PIN_STEPS=str(gate.steps),
                   PIN_STOP_AT="" if stop_at is None else str(stop_at),
                   PIN_RESUME="1" if resume else "0", PIN_SEED=str(gate.seed))
        if gate.builtin is not None:
            argv = [python or "python3", str(TINY_LM), "--steps", str(gate.steps),
                    "--seed", str(gate.seed), "--checkpoint-dir", str(ckdir)]
            argv += ["--stop-at", str(stop_at)] if stop_at is not None else []
            argv += ["--resume"] if resume else []
        else:
            argv = list(gate.command or [])
        if wrap is not None:
            argv = wrap(argv)
        first = stop_at + 1 if resume and stop_at is not None else 1
        last = stop_at if stop_at is not None and not resume else gate.steps
        return _run_process(label, argv, env, workdir, cwd, timeout_s,
                            range(first, last + 1))

    full = run("full", None, False, "full")
    procs = [full]
    checks = [_run_check(full)]
    checks += _loss_checks(gate, full, config_dir)
    if gate.checkpoint is not None:
        k = gate.checkpoint.resume_at
        stop = run("stop", k, False, "resume")
        procs.append(stop)
        checks.append(_run_check(stop))
        if stop.error is None:
            resume = run("resume", k, True, "resume")
            procs.append(resume)
            checks.append(_run_check(resume))
            checks.append(_resume_check(gate.checkpoint.max_abs_diff, full, stop, resume))
        else:
            checks.append(TrainCheck(name="checkpoint-resume", measured=None,
                                     limit=gate.checkpoint.max_abs_diff, passed=False,
                                     reason="not run: the run to stop at step "
                                            f"{k} did not complete"))
    median = p90 = cv = None
    if gate.step_time is not None:
        st = gate.step_time
        times = full.times[st.warmup:] if full.error is None else []
        if len(times) >= 2:
            median = statistics.median(times)
            p90 = _quantile(times, 0.9)
            mean = statistics.fmean(times)
            cv = statistics.pstdev(times) / mean if mean > 0 else math.inf
            ok = cv <= st.cv_max
            checks.append(TrainCheck(
                name="step-time-cv", measured=cv, limit=st.cv_max, passed=ok,
                reason=(f"coefficient of variation {cv:.3g} {'within' if ok else 'above'} "
                        f"{st.cv_max:g} over {len(times)} steps after {st.warmup} warm-up "
                        f"(median {median:.4g} s, p90 {p90:.4g} s)")))
        else:
            checks.append(TrainCheck(name="step-time-cv", measured=None, limit=st.cv_max,
                                     passed=False, reason="fewer than 2 step times after "
                                     f"{st.warmup} warm-up steps"))
        if st.median_max_pct is not None:
            second = next((p for p in procs if p.label == "stop"), None)
            if second is None:
                second = run("repeat", None, False, "repeat")
                procs.append(second)
                checks.append(_run_check(second))
            checks.append(_median_check(st.median_max_pct, median,
                                        second.times[st.warmup:] if second.error is None
                                        else [], second.label))
    return TrainResult(trainer=trainer, steps=gate.steps, runs=[p.model() for p in procs],
                       step_time_median_s=median, step_time_p90_s=p90, step_time_cv=cv,
                       checks=checks, passed=all(c.passed for c in checks))


def _quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (linear interpolation between closest ranks)."""
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _run_process(label: str, argv: list[str], env: dict[str, str], workdir: Path,
                 cwd: Path, timeout_s: float, expected: range) -> _Proc:
    """Run ``argv`` in ``cwd`` with its output in files under ``workdir``; read the step
    lines.
    """
    proc = _Proc(label)
    out_path, err_path = workdir / f"{label}.stdout", workdir / f"{label}.stderr"
    try:
        with out_path.open("wb") as out, err_path.open("wb") as err:
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                     env=env, cwd=cwd, start_new_session=True)
            try:
                proc.exit_code = child.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _kill_group(child)
                proc.error = f"timed out after {timeout_s:g} s"
            except BaseException:  # Ctrl-C or an error here: never leave the trainer running
                _kill_group(child)
                raise
    except OSError as exc:
        proc.error = f"could not start {printable(argv[0], newlines=False)}: " \
                     f"{exc.strerror or exc}"
        return proc
    _read_steps(proc, out_path)
    _read_info(proc, err_path)
    if proc.error is None and proc.exit_code != 0:
        proc.error = f"exited with status {proc.exit_code}{_tail(err_path)}"
    elif proc.error is None and not proc.steps:
        why = (f"; first other line: {proc.first_skipped!r}" if proc.skipped else
               "; its standard output was empty")
        proc.error = f"printed no JSON step lines {{\"step\", \"loss\", ...}}{why}"
    elif proc.error is None and proc.steps != list(expected):
        proc.error = (f"printed steps {_span(proc.steps)}, expected "
                      f"{expected.start}-{expected.stop - 1}")
    return proc


def _kill_group(child: subprocess.Popen[bytes], grace_s: float = 5.0) -> None:
    """Stop ``child``'s process group (it was started in a new session) and reap it:
    SIGTERM first, so a process that cleans up (the container shim removes its container)
    can, then SIGKILL after ``grace_s`` seconds.
    """
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        try:
            os.killpg(child.pid, sig)
        except OSError:
            child.send_signal(sig)
        try:
            child.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _span(steps: list[int]) -> str:
    """``1-20`` for a run of steps, else the first few (``3, 1, 2, ...``)."""
    if steps == list(range(steps[0], steps[0] + len(steps))):
        return f"{steps[0]}-{steps[-1]}"
    return ", ".join(map(str, steps[:5])) + (", ..." if len(steps) > 5 else "")


def _tail(path: Path) -> str:
    """``": <last line(s) of standard error>"``, bounded, or ``""``."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - _ERR_TAIL))
            text = fh.read(_ERR_TAIL).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()
             and not ln.lstrip().startswith("{\"info\"")]
    return f": {printable(' | '.join(lines[-3:]), newlines=False)}" if lines else ""


def _read_steps(proc: _Proc, path: Path) -> None:
    """Fill ``proc`` from the JSON step lines of ``path`` (bounded); count other lines."""
    try:
        with path.open("rb") as fh:
            data = fh.read(_MAX_OUT)
    except OSError as exc:
        proc.error = f"its output could not be read ({exc.strerror or exc})"
        return
    for raw in data.splitlines():
        line = raw[:_MAX_LINE].decode("utf-8", "replace").strip()
        if not line:
            continue
        step = _step(line)
        if step is None:
            if not proc.skipped:
                proc.first_skipped = printable(line[:120], newlines=False)
            proc.skipped += 1
            continue
        proc.steps.append(step[0])
        proc.losses.append(step[1])
        proc.tokens.append(step[2])
        proc.times.append(step[3])


def _step(line: str) -> tuple[int, float, int, float] | None:
    """``(step, loss, tokens, step_time_s)`` of a step line, or ``None`` for any other."""
    if not line.startswith("{"):
        return None
    try:
        obj = load_json(line, UsageError, label="a step line")
    except UsageError:
        return None
    if not isinstance(obj, dict):
        return None
    step, loss = obj.get("step"), obj.get("loss")
    tokens, secs = obj.get("tokens", 0), obj.get("step_time_s")
    if not (isinstance(step, int) and not isinstance(step, bool) and step >= 0):
        return None
    if as_finite(tokens) is None or as_finite(secs) is None:
        return None
    loss_f, secs_f = _loss_value(loss), as_finite(secs)
    if loss_f is None or secs_f is None or not (isinstance(tokens, int) and tokens >= 0
                                                and secs_f >= 0):
        return None
    return step, loss_f, tokens, secs_f


def _loss_value(loss: object) -> float | None:
    """A loss as the harness writes it: a number, NaN or infinite included (a diverged
    step); ``None`` for anything else, an integer too large for a float too.
    """
    if isinstance(loss, bool) or not isinstance(loss, int | float):
        return None
    try:
        return float(loss)
    except OverflowError:
        return None


def _read_info(proc: _Proc, path: Path) -> None:
    """Take the harness's ``{"info": {...}}`` line from the head of standard error."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_MAX_LINE)
    except OSError:
        return
    for raw in head.splitlines()[:20]:
        if raw.startswith(b"{\"info\""):
            try:
                obj = load_json(raw, UsageError, label="an info line")
            except UsageError:
                continue
            info = obj.get("info") if isinstance(obj, dict) else None
            if isinstance(info, dict):
                proc.info = {str(k): v for k, v in info.items()
                             if isinstance(v, str | int | float | bool) or v is None}
            return


def _run_check(proc: _Proc) -> TrainCheck:
    """``run-<label>``: the process completed and printed every step it was asked for."""
    if proc.error is None:
        return TrainCheck(name=f"run-{proc.label}", measured=float(len(proc.steps)),
                          limit=None, passed=True,
                          reason=f"completed steps {_span(proc.steps)}")
    return TrainCheck(name=f"run-{proc.label}", measured=None, limit=None, passed=False,
                      reason=f"the {proc.label} run {proc.error}")


def _loss_checks(gate: TrainGate, full: _Proc, config_dir: Path | None) -> list[TrainCheck]:
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


def _reference_check(reference: str, band: float, full: _Proc,
                     config_dir: Path | None) -> TrainCheck:
    """``loss-reference``: every step's loss within ``band`` (relative) of the reference
    curve (JSON lines with ``step`` and ``loss``, as a trainer prints them).
    """
    path = Path(reference)
    if not path.is_absolute() and config_dir is not None:
        path = config_dir / path
    ref = _Proc("reference")
    _read_steps(ref, path)
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


def _resume_check(limit: float, full: _Proc, stop: _Proc, resume: _Proc) -> TrainCheck:
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
