"""The import gate (``[import]``): the listed modules import, the torch build is recorded,
and a small matmul on the device agrees with the CPU.

:func:`run_import_gate` runs pin's probe (``harness/import_probe.py``, :data:`PROBE`) once,
as a subprocess without a shell, in a new session whose whole process group is killed on
timeout, and judges its report. The probe imports each listed module in turn, records the
torch build (``torch.version.cuda`` / ``hip``, the devices torch sees, torch's own
``collect_env`` text) and, with ``numeric-check``, compares a seeded matmul in the gate's
dtype on the device with the float64 CPU product (``torch.testing.assert_close`` with the
gate's ``rtol``/``atol``, torch.testing's defaults for the dtype when unset).

The command contract, so the same probe can run elsewhere (a container): the process run
is ``[*argv_prefix, probe, SPEC_JSON]``, where ``argv_prefix`` starts a Python 3.9 or later
in the environment under test (``["/opt/venv/bin/python"]``, or ``["docker", "run",
"--rm", "-v", f"{PROBE}:/pin/import_probe.py:ro", "IMAGE", "python3"]`` with ``probe =
"/pin/import_probe.py"``), ``probe`` is the probe's path as that Python sees it, and
``SPEC_JSON`` is one JSON object (keys in the probe's docstring). The probe prints one JSON
report on standard output and progress lines ``{"info": {"stage": ...}}`` on standard
error. A probe that cannot start, crashes, hangs or prints garbage is a failed ``probe``
check with the reason (its exit status, what it was doing, the tail of its standard
error), never an exception.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from pinning.accept.config import ImportGate
from pinning.accept.procs import run_logged, stderr_tail
from pinning.accept.result import ImportedModule, ImportResult, NumericResult
from pinning.accept.train import TrainCheck
from pinning.errors import UsageError
from pinning.util.jsonread import load_json
from pinning.util.text import printable

__all__ = ["PROBE", "run_import_gate"]

#: The file path of the import probe script (stdlib and torch only; run by path).
PROBE: Path = Path(__file__).resolve().parent / "harness" / "import_probe.py"

# At most this much of the probe's standard output (16 MiB) and standard error (4 MiB) is
# read; a report line longer than the output bound is garbage.
_MAX_OUT = 16 * 1024 * 1024
_MAX_ERR = 4 * 1024 * 1024
# The numeric check's default matrix size is 64 (pin's choice: small enough for any
# device, large enough to sum 64 products per element). Measured on this
# project's CPU test host with torch 2.13.0+cpu (date not recorded): at 64 the float32
# product stays within torch.testing's float32 defaults (largest error at most 0.4 of its
# allowance over seeds 0-3), at 256 it exceeds them (up to 2.3x), and a float16 product at
# 64 can round exactly like the reference (seed 1: no mismatch), so a zero-tolerance float16
# test uses 256 (about 90 mismatches of 65536).


class _Lax(BaseModel):
    """Base of the probe report as read: unknown keys ignored (a newer probe may add some)."""

    model_config = ConfigDict(extra="ignore")


class _Device(_Lax):
    name: str
    gcn_arch_name: str | None = None
    compute_capability: str | None = None


class _Torch(_Lax):
    imported: bool
    error: str | None = None
    version: str | None = None
    cuda: str | None = None
    hip: str | None = None
    cuda_available: bool | None = None
    device_count: int | None = None
    devices: list[_Device] = []
    device_error: str | None = None


class _CollectEnv(_Lax):
    text: str | None = None
    error: str | None = None


class _Python(_Lax):
    executable: str | None = None
    version: str | None = None


class _Report(_Lax):
    probe: int
    error: str | None = None
    python: _Python | None = None
    modules: list[ImportedModule] = []
    torch: _Torch | None = None
    collect_env: _CollectEnv | None = None
    numeric: NumericResult | None = None

    @field_validator("numeric", mode="before")
    @classmethod
    def _flatten_numeric(cls, raw: object) -> object:
        """The probe's numeric report in :class:`NumericResult`'s shape, the one model of
        it: ``worst`` (``index``, ``abs_error``, ``allowed``) flattened to ``worst_*``, and
        keys the result does not know dropped (a newer probe may add some).
        """
        if not isinstance(raw, dict):
            return raw
        worst = raw.get("worst") if isinstance(raw.get("worst"), dict) else {}
        flat = {**raw, **{f"worst_{k}": v for k, v in (worst or {}).items()}}
        return {k: v for k, v in flat.items() if k in NumericResult.model_fields}


def run_import_gate(gate: ImportGate, python: str | Sequence[str], workdir: Path, *,
                    timeout_s: float = 300.0, probe: str | None = None,
                    collect_env: bool = True, matrix_size: int = 64,
                    seed: int = 0) -> ImportResult:
    """Run the probe for ``gate`` and judge its report.

    ``python`` starts the Python under test: a path or a name on PATH, or a whole argv
    prefix (see the module docstring for the contract and a container example);
    ``workdir`` (an existing folder) receives ``import-probe.stdout`` / ``.stderr``;
    ``timeout_s`` bounds the probe in seconds (then its process group is killed);
    ``probe`` is the probe's path as that Python sees it (default :data:`PROBE`);
    ``collect_env`` runs torch's ``collect_env`` (it starts other programs; waited for at
    most a third of ``timeout_s``, 60 s at most); ``matrix_size`` (1 to 4096) and ``seed``
    (0 to 2**63 - 1) shape the numeric check's square matmul. Returns an
    :class:`ImportResult`; a probe that fails is a failed check, never an exception.
    Raises ``UsageError`` (exit 2) only for an empty ``python``, a ``timeout_s`` that is
    not a positive number, or ``matrix_size``/``seed`` out of range.
    """
    prefix = [python] if isinstance(python, str) else list(python)
    if not prefix or not all(prefix):
        raise UsageError("The import gate needs a Python to run: give its path (or a "
                         "command prefix that starts it), e.g. --python .venv/bin/python.")
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        raise UsageError(f"The import gate's timeout must be a positive number of seconds, "
                         f"not {timeout_s!r}.")
    if not 1 <= matrix_size <= 4096 or not 0 <= seed <= 2**63 - 1:
        raise UsageError(f"The import gate's numeric check takes a matrix size from 1 to "
                         f"4096 and a seed from 0 to 2**63 - 1, not {matrix_size} and {seed}.")
    if isinstance(python, str) and os.sep in python:
        prefix = [os.path.abspath(python)]
    spec = {"modules": gate.modules, "dtype": gate.dtype, "rtol": gate.rtol,
            "atol": gate.atol, "numeric_check": gate.numeric_check,
            "collect_env": collect_env, "collect_env_timeout_s": min(60.0, timeout_s / 3),
            "size": matrix_size, "seed": seed}
    argv = [*prefix, probe if probe is not None else str(PROBE),
            json.dumps(spec, separators=(",", ":"))]
    exit_code, report, failure = _run_probe(argv, workdir, timeout_s)
    return _judge(gate, " ".join(prefix), exit_code, report, failure)


def _run_probe(argv: list[str], workdir: Path,
               timeout_s: float) -> tuple[int | None, _Report | None, str | None]:
    """Run the probe; ``(exit status, report, why there is no usable report)``."""
    out_path = workdir / "import-probe.stdout"
    err_path = workdir / "import-probe.stderr"
    exit_code, failed = run_logged(argv, out_path, err_path, timeout_s)
    if failed is not None:
        return None, None, f"{failed}{_stage(err_path)}{stderr_tail(err_path)}"
    report, why = _read_report(out_path)
    if report is None:
        status = f"exited with status {exit_code}" if exit_code else "exited 0"
        return exit_code, None, f"{status}{_stage(err_path)} and {why}{stderr_tail(err_path)}"
    if report.error is not None:
        return exit_code, None, (f"refused its spec (exit {exit_code}): "
                                 f"{printable(report.error, newlines=False)}")
    if exit_code != 0:
        return exit_code, report, (f"printed its report but exited with status {exit_code}"
                                   f"{stderr_tail(err_path)}")
    return exit_code, report, None


def _read_report(path: Path) -> tuple[_Report | None, str]:
    """The report on the last non-empty line of ``path``, or ``None`` and why not."""
    try:
        with path.open("rb") as fh:
            data = fh.read(_MAX_OUT + 1)
    except OSError as exc:
        return None, f"its output could not be read ({exc.strerror or exc})"
    if len(data) > _MAX_OUT:
        return None, f"printed more than {_MAX_OUT} bytes on standard output"
    lines = [ln.strip() for ln in data.splitlines() if ln.strip()]
    if not lines:
        return None, "printed no report (its standard output was empty)"
    last = lines[-1].decode("utf-8", "replace")
    try:
        obj = load_json(last, UsageError, label="the report")
    except UsageError:
        return None, f"printed no JSON report; last line: {printable(last[:120], newlines=False)!r}"
    try:
        return _Report.model_validate(obj), ""
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        return None, (f"printed a report pin does not understand ({where}: {first['msg']}; "
                      f"{exc.error_count()} problem(s))")


def _last_stage(path: Path) -> str | None:
    """What the probe said it was doing last (its ``{"info": {"stage": ...}}`` lines)."""
    try:
        with path.open("rb") as fh:
            data = fh.read(_MAX_ERR)
    except OSError:
        return None
    found = None
    for raw in data.splitlines():
        if raw.startswith(b"{\"info\": {\"stage\""):
            try:
                obj = load_json(raw, UsageError, label="a stage line")
            except UsageError:
                continue
            stage = obj.get("info", {}).get("stage") if isinstance(obj, dict) else None
            if isinstance(stage, str):
                found = stage
    return found


def _stage(path: Path) -> str:
    """``" while it was at: import vllm"``, or ``""`` when the probe said nothing."""
    stage = _last_stage(path)
    return f" while at: {printable(stage, newlines=False)}" if stage else ""


def _judge(gate: ImportGate, python: str, exit_code: int | None, report: _Report | None,
           failure: str | None) -> ImportResult:
    """The checks and the result from what the probe left."""
    checks = [_probe_check(report, exit_code, failure)]
    if report is None:
        assert failure is not None
        checks += [TrainCheck(name=f"import {m}", measured=None, limit=None, passed=False,
                              reason=f"not reported: the probe {failure}")
                   for m in gate.modules]
        if gate.numeric_check:
            checks.append(TrainCheck(name="numeric", measured=None, limit=None, passed=False,
                                     reason=f"not reported: the probe {failure}"))
        return ImportResult(python=python, exit_code=exit_code, error=failure, checks=checks,
                            passed=False)
    checks += [_module_check(name, report) for name in gate.modules]
    numeric = report.numeric
    if gate.numeric_check:
        checks.append(_numeric_check(numeric))
    torch, env = report.torch, report.collect_env
    devices = torch.devices if torch is not None else []
    return ImportResult(
        python=python, python_executable=report.python.executable if report.python else None,
        python_version=report.python.version if report.python else None,
        exit_code=exit_code, error=failure,
        torch_version=torch.version if torch else None,
        torch_cuda=torch.cuda if torch else None, torch_hip=torch.hip if torch else None,
        torch_error=torch.error if torch and not torch.imported else None,
        cuda_available=torch.cuda_available if torch else None,
        device_count=torch.device_count if torch else None,
        device_names=[d.name for d in devices],
        gcn_arch_names=[d.gcn_arch_name for d in devices],
        compute_capabilities=[d.compute_capability for d in devices],
        device_error=torch.device_error if torch else None,
        numeric_device=numeric.device if numeric else None, numeric=numeric,
        collect_env=env.text if env else None, collect_env_error=_env_error(report),
        modules=report.modules, checks=checks, passed=all(c.passed for c in checks))


def _env_error(report: _Report) -> str | None:
    """Why the result has no ``collect_env`` text (``None`` when it has one)."""
    env, torch = report.collect_env, report.torch
    if env is not None:
        return None if env.text is not None else (env.error or "the probe gave no reason")
    if torch is None or not torch.imported:
        return "torch not importable"
    return "not asked for"


def _probe_check(report: _Report | None, exit_code: int | None,
                 failure: str | None) -> TrainCheck:
    """``probe``: the probe ran, exited 0 and printed a report."""
    if failure is not None:
        return TrainCheck(name="probe", measured=None, limit=None, passed=False,
                          reason=f"the probe {failure}")
    assert report is not None
    where = report.python
    said = (f" from Python {where.version} at {printable(where.executable or '?', newlines=False)}"
            if where is not None and where.version else "")
    return TrainCheck(name="probe", measured=None, limit=None, passed=True,
                      reason=f"reported{said} (exit {exit_code})")


def _module_check(name: str, report: _Report) -> TrainCheck:
    """``import <name>``: the module imported."""
    found = next((m for m in report.modules if m.name == name), None)
    if found is None:
        return TrainCheck(name=f"import {name}", measured=None, limit=None, passed=False,
                          reason="the probe's report does not mention this module")
    if found.ok:
        version = f" (version {printable(found.version, newlines=False)})" \
            if found.version else " (no __version__)"
        took = f" in {found.seconds:.3g} s" if found.seconds is not None else ""
        return TrainCheck(name=f"import {name}", measured=found.seconds, limit=None,
                          passed=True, reason=f"imported{took}{version}")
    kind = found.error_type or "error"
    return TrainCheck(name=f"import {name}", measured=found.seconds, limit=None, passed=False,
                      reason=printable(f"{kind}: {found.error or '(no message)'}",
                                       newlines=False))


def _numeric_check(n: NumericResult | None) -> TrainCheck:
    """``numeric``: assert_close's verdict. ``measured`` is the absolute error of the
    element closest to (or furthest past) its allowance and ``limit`` that allowance,
    ``atol + rtol * |expected|``, so ``measured <= limit`` exactly when every element
    passes (a NaN or infinite difference has no ``measured``).
    """
    if n is None:
        return TrainCheck(name="numeric", measured=None, limit=None, passed=False,
                          reason="the probe's report has no numeric check")
    if not n.ran or n.passed is None:
        return TrainCheck(name="numeric", measured=None, limit=None, passed=False,
                          reason=printable(f"did not run: {n.error or 'no reason given'}",
                                           newlines=False))
    shape = "x".join(map(str, n.shape or []))
    where = printable(f"{n.device} ({n.device_name})" if n.device_name != n.device
                      and n.device != "cpu" else str(n.device_name or n.device),
                      newlines=False)
    tol = (f"rtol {n.rtol:g} ({n.rtol_source}), atol {n.atol:g} ({n.atol_source})"
           if n.rtol is not None and n.atol is not None else "tolerances not reported")
    count = (f"{n.mismatched} of {n.elements} elements outside atol + rtol*|expected|"
             if n.mismatched else f"all {n.elements} elements within atol + rtol*|expected|")
    bad = f", {n.nonfinite} non-finite" if n.nonfinite else ""
    largest = f"; largest |actual - expected| {n.max_abs_error:.3g}" \
        if n.max_abs_error is not None else ""
    closest = (f"; closest to its allowance: element {tuple(n.worst_index)} off by "
               f"{n.worst_abs_error:.3g}, allowed {n.worst_allowed:.3g}"
               if n.worst_index is not None and n.worst_abs_error is not None
               and n.worst_allowed is not None else "")
    return TrainCheck(
        name="numeric", measured=n.worst_abs_error, limit=n.worst_allowed, passed=n.passed,
        reason=(f"{n.dtype} {shape} matmul on {where} vs the float64 CPU reference cast to "
                f"{n.dtype}: {count}{bad} ({tol}){largest}{closest}"))
