"""pin's import probe: what an environment imports and what build of torch it holds.

Run by file path in the environment under test, which need not have pin installed (this
file imports only the standard library, and torch when it is there; Python 3.9 or later):

    PYTHON import_probe.py SPEC_JSON        (or SPEC_JSON in $PIN_IMPORT_PROBE_SPEC)

``SPEC_JSON`` is an object: ``modules`` (list of module names, imported one by one, in
order), ``dtype`` (``float16``, ``bfloat16``, ``float32``, ``float64``), ``rtol`` and
``atol`` (numbers, or null for torch.testing's defaults for the dtype), ``numeric_check``
(bool), ``collect_env`` (bool: run ``torch.utils.collect_env.get_pretty_env_info()``, which
starts other programs), ``collect_env_timeout_s`` (seconds to wait for it), ``size`` (the
numeric check's square matrices, default 64) and ``seed`` (its generator seed, default 0).

Standard output: one JSON object on one line and nothing else (anything an imported module
prints goes to standard error): ``probe`` (this format's version, 1), ``python``,
``modules`` (one record per module: ``name``, ``ok``, ``version`` (its ``__version__``),
``seconds``, ``error_type``, ``error``), ``torch`` (build facts: ``version``, ``cuda``,
``hip``, ``cuda_available``, ``device_count``, ``devices`` with ``name``,
``gcn_arch_name``, ``compute_capability``, ``total_memory_bytes``), ``collect_env``
(``text`` or ``error``) and ``numeric`` (null when not asked). Standard error gets a line
``{"info": {"stage": WHAT}}`` before each step (``import NAME``, ``import torch (build
facts)``, ``torch build facts``, ``collect_env``, ``numeric check``), so a caller can say
what the process was doing when it died or hung. Exit 0 after printing the report; 2 (with
a report holding only ``error``) for a bad spec.

The numeric check multiplies two ``size`` x ``size`` matrices drawn from a seeded CPU
generator (float64, then cast to ``dtype``) on the device (``cuda:0`` when torch sees one;
ROCm builds expose HIP devices as ``cuda``; else the CPU, so the check then compares the
CPU with the CPU) and compares the product, with ``torch.testing.assert_close``, against
the float64 CPU product of the same cast inputs cast back to ``dtype``. It passes when every
element satisfies ``|actual - expected| <= atol + rtol * |expected|`` (NaN never matches).
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import math
import os
import platform
import sys
import threading
import time
from typing import Any

FORMAT = 1
SPEC_ENV = "PIN_IMPORT_PROBE_SPEC"
DTYPES = ("float16", "bfloat16", "float32", "float64")
# Longest error message or version string kept, in characters.
_MAX_TEXT = 2000
# torch.testing.assert_close's default (rtol, atol) per dtype, used only when this torch has
# no torch.testing._comparison.default_tolerances. Values as in the table of the
# assert_close documentation (https://docs.pytorch.org/docs/stable/testing.html) and
# _DTYPE_PRECISIONS in pytorch/pytorch torch/testing/_comparison.py, read from torch 2.13.0;
# date not recorded.
_DOC_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),
                   "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


def _text(value: object) -> str:
    """``str(value)``, at most ``_MAX_TEXT`` characters."""
    try:
        text = str(value)
    except Exception as exc:  # a __str__ that raises
        text = f"<unprintable {type(value).__name__}: {type(exc).__name__}>"
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."


def _error(exc: BaseException) -> dict[str, str]:
    """``{"error_type": "ModuleNotFoundError", "error": "No module named 'x'"}``."""
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else \
        f"{kind.__module__}.{kind.__qualname__}"
    return {"error_type": name, "error": _text(exc)}


def _finite(value: float) -> float | None:
    """``value`` when finite, else ``None`` (JSON has no NaN or infinity)."""
    return value if math.isfinite(value) else None


def stage(what: str) -> None:
    """Say on standard error what the probe starts next (``{"info": {"stage": what}}``)."""
    sys.stderr.write(json.dumps({"info": {"stage": what}}) + "\n")
    sys.stderr.flush()


def import_modules(names: list[str]) -> list[dict[str, Any]]:
    """Import each module in turn; one record per module (never raises for a module)."""
    out = []
    for name in names:
        stage(f"import {name}")
        record: dict[str, Any] = {"name": name, "ok": False, "version": None,
                                  "seconds": None, "error_type": None, "error": None}
        start = time.perf_counter()
        try:
            module = importlib.import_module(name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit from a module is a failed import too
            record.update(_error(exc))
        else:
            record["ok"] = True
            version = getattr(module, "__version__", None)
            record["version"] = None if version is None else _text(version)
        record["seconds"] = time.perf_counter() - start
        out.append(record)
    return out


def torch_facts(torch: Any) -> dict[str, Any]:
    """What build of torch this is and which devices it sees."""
    facts: dict[str, Any] = {"imported": True, "error": None,
                             "version": _text(getattr(torch, "__version__", None)),
                             "cuda": None, "hip": None, "cuda_available": None,
                             "device_count": None, "devices": [], "device_error": None}
    version = getattr(torch, "version", None)
    for key in ("cuda", "hip"):
        value = getattr(version, key, None)
        facts[key] = None if value is None else _text(value)
    try:
        facts["cuda_available"] = bool(torch.cuda.is_available())
        facts["device_count"] = int(torch.cuda.device_count())
        for index in range(facts["device_count"]):
            props = torch.cuda.get_device_properties(index)
            arch = getattr(props, "gcnArchName", None)
            major, minor = getattr(props, "major", None), getattr(props, "minor", None)
            memory = getattr(props, "total_memory", None)
            facts["devices"].append({
                "index": index, "name": _text(torch.cuda.get_device_name(index)),
                "gcn_arch_name": _text(arch) if arch else None,
                "compute_capability": None if major is None else f"{major}.{minor}",
                "total_memory_bytes": int(memory) if memory is not None else None})
    except Exception as exc:
        facts["device_error"] = "{error_type}: {error}".format(**_error(exc))
    return facts


def collect_env(timeout_s: float) -> dict[str, Any]:
    """The environment report torch writes itself, waited for at most ``timeout_s`` seconds (it runs
    other programs, which may hang); the error instead of the text when it fails.
    """
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            from torch.utils import collect_env as ce

            box["text"] = str(ce.get_pretty_env_info())
        except BaseException as exc:
            box["error"] = "{error_type}: {error}".format(**_error(exc))

    start = time.perf_counter()
    thread = threading.Thread(target=work, name="collect_env", daemon=True)
    thread.start()
    thread.join(timeout_s)
    seconds = time.perf_counter() - start
    if thread.is_alive():
        return {"text": None, "error": f"timed out after {timeout_s:g} s",
                "seconds": seconds}
    return {"text": box.get("text"), "error": box.get("error"), "seconds": seconds}


def tolerances(torch: Any, dtype: Any, name: str, rtol: float | None,
               atol: float | None) -> dict[str, Any]:
    """The ``rtol`` and ``atol`` the check uses and where each came from."""
    try:
        from torch.testing._comparison import default_tolerances

        d_rtol, d_atol = default_tolerances(dtype)
        source = "torch.testing default"
    except Exception:
        d_rtol, d_atol = _DOC_TOLERANCES[name]
        source = "torch.testing default (documented table; this torch has no " \
                 "torch.testing._comparison.default_tolerances)"
    return {"rtol": float(d_rtol) if rtol is None else float(rtol),
            "rtol_source": source if rtol is None else "gates file",
            "atol": float(d_atol) if atol is None else float(atol),
            "atol_source": source if atol is None else "gates file"}


def numeric_check(torch: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """The seeded matmul on the device against the float64 CPU reference (see the module
    docstring); the error instead of a verdict when it could not run.
    """
    name, size, seed = spec["dtype"], spec["size"], spec["seed"]
    out: dict[str, Any] = {"ran": False, "error": None, "device": None,
                           "device_name": None, "dtype": name, "shape": [size, size],
                           "seed": seed, "elements": size * size}
    try:
        dtype = getattr(torch, name)
        out.update(tolerances(torch, dtype, name, spec["rtol"], spec["atol"]))
        if torch.cuda.is_available():
            device = torch.device("cuda", 0)
            out["device_name"] = _text(torch.cuda.get_device_name(0))
        else:
            device = torch.device("cpu")
            out["device_name"] = "cpu (no device visible to torch: compared the CPU " \
                                 "with the CPU)"
        out["device"] = str(device)
        gen = torch.Generator().manual_seed(seed)
        a = torch.randn(size, size, generator=gen, dtype=torch.float64).to(dtype)
        b = torch.randn(size, size, generator=gen, dtype=torch.float64).to(dtype)
        actual = (a.to(device) @ b.to(device)).cpu()
        expected = (a.double() @ b.double()).to(dtype)
    except Exception as exc:
        out["error"] = "{error_type}: {error}".format(**_error(exc))
        return out
    out["ran"] = True
    out.update(compare(torch, actual, expected, out["rtol"], out["atol"]))
    return out


def compare(torch: Any, actual: Any, expected: Any, rtol: float,
            atol: float) -> dict[str, Any]:
    """assert_close's verdict and message, with the largest error and the element closest
    to (or furthest past) its allowance ``atol + rtol * |expected|``.
    """
    result: dict[str, Any] = {"passed": True, "message": None}
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)
    except AssertionError as exc:
        result["passed"] = False
        result["message"] = _text(exc)
    a, e = actual.double(), expected.double()
    diff = (a - e).abs()
    allowed = atol + rtol * e.abs()
    bad = ~(diff <= allowed)  # NaN compares false, so it counts as a mismatch
    finite = torch.isfinite(diff)
    result["nonfinite"] = int((~finite).sum().item())
    result["mismatched"] = int(bad.sum().item())
    result["max_abs_error"] = _finite(float(diff[finite].max().item())) \
        if bool(finite.any()) else None
    excess = torch.where(finite, diff - allowed, torch.full_like(diff, float("inf")))
    flat = int(excess.argmax().item())
    row, col = divmod(flat, actual.shape[1])
    result["worst"] = {"index": [row, col],
                       "actual": _finite(float(a[row, col].item())),
                       "expected": _finite(float(e[row, col].item())),
                       "abs_error": _finite(float(diff[row, col].item())),
                       "allowed": _finite(float(allowed[row, col].item()))}
    return result


def _spec(argv: list[str]) -> dict[str, Any]:
    """The checked spec from ``argv[1]`` or ``$PIN_IMPORT_PROBE_SPEC``; ``ValueError``."""
    raw = argv[1] if len(argv) > 1 else os.environ.get(SPEC_ENV)
    if raw is None:
        raise ValueError(f"give the spec as the first argument or in ${SPEC_ENV}")
    spec = json.loads(raw)
    if not isinstance(spec, dict):
        raise ValueError("the spec must be a JSON object")
    modules = spec.get("modules", ["torch"])
    if not (isinstance(modules, list) and all(isinstance(m, str) and m for m in modules)):
        raise ValueError("modules must be a list of module names")
    if spec.get("dtype", "float32") not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}")
    for key in ("rtol", "atol"):
        value = spec.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value < 0):
            raise ValueError(f"{key} must be a number >= 0 or null")
    size, seed = spec.get("size", 64), spec.get("seed", 0)
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 4096:
        raise ValueError("size must be an integer from 1 to 4096")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError("seed must be an integer >= 0")
    timeout = spec.get("collect_env_timeout_s", 60)
    if (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout) or timeout <= 0):
        raise ValueError("collect_env_timeout_s must be a number > 0")
    return {"modules": modules, "dtype": spec.get("dtype", "float32"),
            "rtol": spec.get("rtol"), "atol": spec.get("atol"),
            "numeric_check": bool(spec.get("numeric_check", True)),
            "collect_env": bool(spec.get("collect_env", True)),
            "collect_env_timeout_s": float(timeout), "size": size, "seed": seed}


def probe(spec: dict[str, Any]) -> dict[str, Any]:
    """The whole report for a checked spec."""
    report: dict[str, Any] = {
        "probe": FORMAT,
        "python": {"executable": sys.executable, "version": platform.python_version(),
                   "implementation": platform.python_implementation(),
                   "platform": platform.platform()},
        "modules": import_modules(spec["modules"]), "torch": None, "collect_env": None,
        "numeric": None}
    stage("import torch (build facts)")
    try:
        import torch
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        report["torch"] = {"imported": False,
                           "error": "{error_type}: {error}".format(**_error(exc))}
        torch = None
    if torch is not None:
        stage("torch build facts")
        report["torch"] = torch_facts(torch)
        if spec["collect_env"]:
            stage("collect_env")
            report["collect_env"] = collect_env(spec["collect_env_timeout_s"])
        if spec["numeric_check"]:
            stage("numeric check")
            report["numeric"] = numeric_check(torch, spec)
    elif spec["numeric_check"]:
        report["numeric"] = {"ran": False, "error": "torch not importable: "
                             + report["torch"]["error"]}
    return report


def main(argv: list[str]) -> int:
    """Probe, then print the report as the one line of standard output."""
    faulthandler.enable()
    # Whatever an imported module (or a program it starts) prints must not reach the
    # report's stream: point file descriptor 1 at standard error until the end.
    sys.stdout.flush()
    report_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        spec = _spec(argv)
    except ValueError as exc:
        report: dict[str, Any] = {"probe": FORMAT, "error": f"bad spec: {_text(exc)}"}
        code = 2
    else:
        report, code = probe(spec), 0
    sys.stderr.flush()
    data = (json.dumps(report, allow_nan=False) + "\n").encode("utf-8")
    while data:
        data = data[os.write(report_fd, data):]
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
