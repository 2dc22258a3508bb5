"""The import gate: pin's probe under real PyTorch 2.13.0 (CPU) and under a Python without
torch, the probe script's own behaviour, and probes that crash, hang or print garbage.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pinning.accept.config import ImportGate
from pinning.accept.harness import import_probe
from pinning.accept.imports import PROBE, run_import_gate
from pinning.accept.result import ImportResult
from pinning.accept.train import TrainCheck
from pinning.errors import UsageError
from tests.support.torchenv import torch_python

# pin's own Python with -S: no site-packages, so certainly no torch (json is stdlib).
NO_TORCH = [sys.executable, "-S"]


def _gate(**data: Any) -> ImportGate:
    return ImportGate.model_validate(data)


def _check(result: ImportResult, name: str) -> TrainCheck:
    found = [c for c in result.checks if c.name == name]
    assert len(found) == 1, [c.name for c in result.checks]
    return found[0]


@pytest.fixture(scope="module")
def torch_result(tmp_path_factory: pytest.TempPathFactory) -> ImportResult:
    return run_import_gate(_gate(modules=["torch", "json"]), torch_python(),
                           tmp_path_factory.mktemp("torch"), timeout_s=300)


def test_torch_imports_and_numeric_check_passes_on_cpu(torch_result: ImportResult) -> None:
    r = torch_result
    assert r.passed, r.failed_checks
    assert [c.name for c in r.checks] == ["probe", "import torch", "import json", "numeric"]
    assert r.torch_version is not None and r.torch_version.startswith("2.13.0")
    assert r.torch_cuda is None and r.torch_hip is None and r.torch_error is None
    assert r.cuda_available is False and r.device_count == 0 and r.device_names == []
    assert r.gcn_arch_names == [] and r.compute_capabilities == []
    assert r.python_version is not None and r.exit_code == 0 and r.error is None
    torch_mod = r.modules[0]
    assert torch_mod.name == "torch" and torch_mod.ok and torch_mod.version == r.torch_version
    assert torch_mod.seconds is not None and torch_mod.seconds > 0
    assert r.collect_env is not None and "PyTorch version: 2.13.0" in r.collect_env
    assert r.collect_env_error is None
    n = r.numeric
    assert n is not None and n.ran and n.passed and r.numeric_device == "cpu"
    assert n.dtype == "float32" and n.shape == [64, 64] and n.elements == 4096
    # torch.testing.assert_close's float32 defaults, as torch 2.13.0 reports them.
    assert (n.rtol, n.atol) == (1.3e-6, 1e-5)
    assert n.rtol_source == n.atol_source == "torch.testing default"
    assert n.mismatched == 0 and n.nonfinite == 0
    check = _check(r, "numeric")
    assert check.measured is not None and check.limit is not None
    assert 0 < check.measured <= check.limit
    assert "compared the CPU with the CPU" in check.reason
    assert "all 4096 elements within atol + rtol*|expected|" in check.reason
    wire = r.model_dump(mode="json", by_alias=True)
    assert wire["torch-version"] == r.torch_version and "failed-checks" not in wire


@pytest.mark.parametrize(("dtype", "size"), [("float16", 256), ("float32", 64)])
def test_zero_tolerance_fails_numeric_check(tmp_path: Path, dtype: str, size: int) -> None:
    gate = _gate(modules=["torch"], dtype=dtype, rtol=0.0, atol=0.0)
    r = run_import_gate(gate, torch_python(), tmp_path, timeout_s=300, collect_env=False,
                        matrix_size=size)
    assert not r.passed
    assert [c.name for c in r.checks if not c.passed] == ["numeric"]
    check = _check(r, "numeric")
    assert check.limit == 0.0 and check.measured is not None and check.measured > 0
    assert f"{dtype} {size}x{size} matmul on cpu" in check.reason
    assert "elements outside atol + rtol*|expected|" in check.reason
    assert "(rtol 0 (gates file), atol 0 (gates file))" in check.reason
    assert r.numeric is not None and r.numeric.mismatched is not None
    assert r.numeric.mismatched > 0 and r.numeric.message is not None
    assert "Mismatched elements" in r.numeric.message
    assert r.collect_env is None and r.collect_env_error == "not asked for"


def test_one_tolerance_set_takes_torch_default_for_the_other(tmp_path: Path) -> None:
    gate = _gate(modules=["torch"], dtype="bfloat16", rtol=0.05)
    r = run_import_gate(gate, torch_python(), tmp_path, timeout_s=300, collect_env=False)
    assert r.passed, r.failed_checks
    n = r.numeric
    assert n is not None and (n.rtol, n.rtol_source) == (0.05, "gates file")
    assert (n.atol, n.atol_source) == (1e-5, "torch.testing default")


def test_unimportable_module_fails_with_its_reason(tmp_path: Path) -> None:
    gate = _gate(modules=["json", "pin_no_such_module_xyz"], numeric_check=False)
    r = run_import_gate(gate, NO_TORCH, tmp_path, timeout_s=60)
    assert not r.passed
    assert r.failed_checks == [
        "import pin_no_such_module_xyz: ModuleNotFoundError: No module named "
        "'pin_no_such_module_xyz'"]
    assert _check(r, "import json").passed
    bad = r.modules[1]
    assert not bad.ok and bad.error_type == "ModuleNotFoundError" and bad.version is None


def test_numeric_check_without_torch_fails_saying_so(tmp_path: Path) -> None:
    r = run_import_gate(_gate(modules=["json"]), NO_TORCH, tmp_path, timeout_s=60)
    assert not r.passed
    assert [c.name for c in r.checks if c.passed] == ["probe", "import json"]
    reason = _check(r, "numeric").reason
    assert reason == ("did not run: torch not importable: ModuleNotFoundError: No module "
                      "named 'torch'")
    assert r.torch_version is None and r.numeric_device is None
    assert r.torch_error == "ModuleNotFoundError: No module named 'torch'"
    assert r.collect_env is None and r.collect_env_error == "torch not importable"


def test_numeric_check_off_passes_without_torch(tmp_path: Path) -> None:
    r = run_import_gate(_gate(modules=["json"], numeric_check=False), NO_TORCH, tmp_path,
                        timeout_s=60)
    assert r.passed, r.failed_checks
    assert [c.name for c in r.checks] == ["probe", "import json"]
    assert r.numeric is None and r.python_executable is not None


# Fake "Pythons": argv prefix [python, -c, CODE], so the probe path and the spec arrive as
# sys.argv[1] and sys.argv[2].
REPORT = json.dumps({"probe": 1, "modules": [{"name": "json", "ok": True}]})


@pytest.mark.parametrize(("code", "timeout", "probe_reason"), [
    ("print('hello'); print('{not json')", 30,
     "the probe exited 0 and printed no JSON report; last line: '{not json'"),
    ("import sys; sys.stderr.write('boom: no GPU\\n'); sys.exit(3)", 30,
     "the probe exited with status 3 and printed no report (its standard output was "
     "empty): boom: no GPU"),
    ("import time; time.sleep(30)", 1, "the probe timed out after 1 s"),
    ("print('{\"probe\": \"one\"}')", 30,
     "the probe exited 0 and printed a report pin does not understand (probe: Input "
     "should be a valid integer"),
    ("import json, sys; print(json.dumps({'probe': 1, 'error': 'bad spec: x'})); "
     "sys.exit(2)", 30, "the probe refused its spec (exit 2): bad spec: x"),
    (f"import sys; print({REPORT!r}); sys.stderr.write('Segmentation fault\\n'); "
     "sys.stdout.flush(); import os; os._exit(139)", 30,
     "the probe printed its report but exited with status 139: Segmentation fault"),
])
def test_bad_probe_is_a_failed_check(tmp_path: Path, code: str, timeout: int,
                                     probe_reason: str) -> None:
    gate = _gate(modules=["json"], numeric_check=False)
    r = run_import_gate(gate, [sys.executable, "-c", code], tmp_path, timeout_s=timeout)
    assert not r.passed
    assert probe_reason in _check(r, "probe").reason
    assert r.error is not None and r.error in _check(r, "probe").reason


def test_probe_dying_mid_import_names_the_module(tmp_path: Path) -> None:
    code = ("import json, os, sys\n"
            "for s in ('import json', 'import vllm'):\n"
            "    sys.stderr.write(json.dumps({'info': {'stage': s}}) + '\\n')\n"
            "sys.stderr.flush(); os.abort()\n")
    gate = _gate(modules=["json", "vllm"])
    r = run_import_gate(gate, [sys.executable, "-c", code], tmp_path, timeout_s=30)
    why = "exited with status -6 while at: import vllm and printed no report"
    assert why in _check(r, "probe").reason
    for name in ("import json", "import vllm", "numeric"):
        check = _check(r, name)
        assert not check.passed and check.reason.startswith("not reported: the probe ")
        assert why in check.reason
    assert r.exit_code == -6 and r.modules == []


def test_missing_python_fails_with_reason(tmp_path: Path) -> None:
    r = run_import_gate(_gate(), "/nonexistent/python", tmp_path, timeout_s=5)
    assert "could not start /nonexistent/python" in _check(r, "probe").reason
    assert not r.passed and r.exit_code is None


def test_argv_prefix_contract(tmp_path: Path) -> None:
    seen = tmp_path / "argv.json"
    code = (f"import json, sys; open({str(seen)!r}, 'w').write(json.dumps(sys.argv)); "
            f"print('noise'); print({REPORT!r})")
    gate = _gate(modules=["json"], dtype="float16", atol=0.5, numeric_check=False)
    r = run_import_gate(gate, [sys.executable, "-c", code], tmp_path, timeout_s=30,
                        probe="/pin/import_probe.py",
                        collect_env=False, matrix_size=8, seed=7)
    assert r.passed, r.failed_checks
    assert r.python == f"{sys.executable} -c {code}"
    argv = json.loads(seen.read_text())
    assert argv[1] == "/pin/import_probe.py" and len(argv) == 3
    assert json.loads(argv[2]) == {
        "modules": ["json"], "dtype": "float16", "rtol": None, "atol": 0.5,
        "numeric_check": False, "collect_env": False, "collect_env_timeout_s": 10.0,
        "size": 8, "seed": 7}


@pytest.mark.parametrize(("python", "kwargs", "fragment"), [
    ([], {}, "needs a Python to run"),
    ("", {}, "needs a Python to run"),
    ("python3", {"timeout_s": 0.0}, "positive number of seconds"),
    ("python3", {"timeout_s": float("nan")}, "positive number of seconds"),
    ("python3", {"matrix_size": 0}, "matrix size from 1 to 4096"),
    ("python3", {"seed": -1}, "matrix size from 1 to 4096"),
])
def test_bad_arguments_are_usage_errors(tmp_path: Path, python: str | list[str],
                                        kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment) as info:
        run_import_gate(_gate(), python, tmp_path, **kwargs)
    assert info.value.exit_code == 2


# The probe script itself.

def _run_probe(spec: object, tmp_path: Path, python: str = sys.executable
               ) -> subprocess.CompletedProcess[str]:
    arg = spec if isinstance(spec, str) else json.dumps(spec)
    return subprocess.run([python, str(PROBE), arg], capture_output=True, text=True,
                          timeout=300, check=False, cwd=tmp_path,
                          env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})


def test_probe_keeps_stdout_to_one_report_line(tmp_path: Path) -> None:
    (tmp_path / "pin_noisy.py").write_text(
        "import os\nprint('hello from import')\nos.system('echo child output')\n"
        "__version__ = (1, 2)\n")
    (tmp_path / "pin_raises.py").write_text("raise RuntimeError('broken at import')\n")
    (tmp_path / "pin_exits.py").write_text("import sys\nsys.exit(4)\n")
    done = _run_probe({"modules": ["pin_noisy", "pin_raises", "pin_exits"],
                       "numeric_check": False}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    report = json.loads(done.stdout)
    assert report["probe"] == 1 and report["numeric"] is None
    noisy, raises, exits = report["modules"]
    assert noisy["ok"] and noisy["version"] == "(1, 2)"
    assert (raises["ok"], raises["error_type"], raises["error"]) == (
        False, "RuntimeError", "broken at import")
    assert (exits["ok"], exits["error_type"], exits["error"]) == (False, "SystemExit", "4")
    assert "hello from import" in done.stderr and "child output" in done.stderr
    assert '{"info": {"stage": "import pin_raises"}}' in done.stderr


def test_probe_reads_spec_from_environment(tmp_path: Path) -> None:
    env = {"PIN_IMPORT_PROBE_SPEC": json.dumps({"modules": ["json"], "numeric_check": False}),
           "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-S", str(PROBE)], capture_output=True, text=True,
                          timeout=60, check=False, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["modules"][0]["name"] == "json"


@pytest.mark.parametrize(("spec", "message"), [
    ("not json", "bad spec: Expecting value"),
    ([1], "bad spec: the spec must be a JSON object"),
    ({"modules": "torch"}, "bad spec: modules must be a list of module names"),
    ({"dtype": "int8"}, "bad spec: dtype must be one of float16, bfloat16, float32, float64"),
    ({"rtol": -1}, "bad spec: rtol must be a number >= 0 or null"),
    ('{"atol": NaN}', "bad spec: atol must be a number >= 0 or null"),
    ({"size": 0}, "bad spec: size must be an integer from 1 to 4096"),
    ({"seed": True}, "bad spec: seed must be an integer >= 0"),
    ({"collect_env_timeout_s": 0}, "bad spec: collect_env_timeout_s must be a number > 0"),
])
def test_probe_refuses_bad_spec(tmp_path: Path, spec: object, message: str) -> None:
    done = _run_probe(spec, tmp_path)
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert report["probe"] == 1 and report["error"].startswith(message)


def test_probe_without_spec_is_refused(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(PROBE)], capture_output=True, text=True,
                          timeout=60, check=False, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert "give the spec as the first argument" in json.loads(done.stdout)["error"]


def test_probe_is_python39_stdlib_only() -> None:
    tree = ast.parse(PROBE.read_text(), feature_version=(3, 9))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)}
    assert imported - {"torch", "__future__"} <= sys.stdlib_module_names
    assert "torch" in imported and "pinning" not in imported


def test_probe_fallback_tolerances_match_torch(tmp_path: Path) -> None:
    code = ("import json, torch\nfrom torch.testing._comparison import default_tolerances\n"
            "print(json.dumps({n: default_tolerances(getattr(torch, n)) for n in "
            "('float16', 'bfloat16', 'float32', 'float64')}))")
    done = subprocess.run([torch_python(), "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    got = {k: tuple(v) for k, v in json.loads(done.stdout).items()}
    assert got == import_probe._DOC_TOLERANCES


def test_probe_compare_counts_nan_as_mismatch(tmp_path: Path) -> None:
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import torch, import_probe\n"
            "a = torch.tensor([[1.0, float('nan')], [3.0, 4.5]])\n"
            "e = torch.tensor([[1.0, 2.0], [3.0, 4.0]])\n"
            "print(json.dumps(import_probe.compare(torch, a, e, 0.0, 0.1)))")
    done = subprocess.run([torch_python(), "-c", code, str(PROBE.parent)],
                          capture_output=True, text=True, timeout=300, check=True)
    out = json.loads(done.stdout)
    assert out["passed"] is False and out["nonfinite"] == 1 and out["mismatched"] == 2
    assert out["max_abs_error"] == 0.5
    assert out["worst"]["index"] == [0, 1] and out["worst"]["abs_error"] is None
