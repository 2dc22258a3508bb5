"""The training gate: pin's tiny-lm under real PyTorch 2.13.0 (CPU), user commands that
follow the PIN_* environment contract, and trainers that crash, hang or print garbage.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pinning.accept.config import TrainGate
from pinning.accept.train import TrainResult, run_train_gate
from tests.support.cli import json_result, pin
from tests.support.torchenv import torch_python

# A trainer written against the PIN_* contract: loss 4 * 0.9**step; saves its state at
# PIN_STOP_AT; on resume adds argv[1] to the restored state (0 = exact recovery).
FAKE = """\
import json, os, pathlib, sys
steps = int(os.environ["PIN_STEPS"]); stop = os.environ["PIN_STOP_AT"]
ck = pathlib.Path(os.environ["PIN_CHECKPOINT_DIR"]) / "state.json"
start, w = 1, 4.0
if os.environ["PIN_RESUME"] == "1":
    st = json.loads(ck.read_text()); start, w = st["step"] + 1, st["w"] + float(sys.argv[1])
for s in range(start, steps + 1):
    w *= 0.9
    print(json.dumps({"step": s, "loss": w, "tokens": 8, "step_time_s": 0.01}), flush=True)
    if stop and s == int(stop):
        ck.write_text(json.dumps({"step": s, "w": w})); sys.exit(0)
"""


def _gate(**data: Any) -> TrainGate:
    return TrainGate.model_validate(data)


def _check(result: TrainResult, name: str) -> tuple[bool, float | None, str]:
    found = [c for c in result.checks if c.name == name]
    assert len(found) == 1, [c.name for c in result.checks]
    return found[0].passed, found[0].measured, found[0].reason


def _fake(tmp_path: Path, drift: str = "0") -> list[str]:
    script = tmp_path / "fake_train.py"
    script.write_text(FAKE)
    return [sys.executable, str(script), drift]


@pytest.fixture(scope="module")
def tiny_lm_result(tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    gate = _gate(builtin="tiny-lm", steps=40, loss={"final-max-ratio": 0.5},
                 checkpoint={"resume-at": 20, "max-abs-diff": 0.0},
                 **{"step-time": {"warmup": 5, "cv-max": 100.0}})
    return run_train_gate(gate, torch_python(), tmp_path_factory.mktemp("tiny"),
                          timeout_s=300)


def test_tiny_lm_passes_and_resumes_bit_exact_on_cpu(tiny_lm_result: TrainResult) -> None:
    r = tiny_lm_result
    assert r.passed, r.failed_checks
    assert r.trainer == "tiny-lm"
    assert [run.label for run in r.runs] == ["full", "stop", "resume"]
    full, stop, resume = r.runs
    assert full.steps == list(range(1, 41)) and full.tokens == [512] * 40
    assert stop.steps == list(range(1, 21)) and resume.steps == list(range(21, 41))
    assert resume.losses == full.losses[20:] and stop.losses == full.losses[:20]
    assert full.info is not None and full.info["device"] == "cpu"
    assert str(full.info["torch"]).startswith("2.13.0")
    passed, ratio, _ = _check(r, "loss-ratio")
    assert passed and ratio is not None and ratio < 0.5
    assert _check(r, "checkpoint-resume")[:2] == (True, 0.0)
    assert _check(r, "finite-loss")[:2] == (True, 0.0)
    passed, cv, reason = _check(r, "step-time-cv")
    assert passed and cv == r.step_time_cv and "35 steps after 5 warm-up" in reason
    assert r.step_time_median_s is not None and r.step_time_p90_s is not None
    assert r.step_time_p90_s >= r.step_time_median_s > 0


def test_tiny_lm_too_strict_ratio_fails_with_that_reason(tmp_path: Path) -> None:
    gate = _gate(builtin="tiny-lm", steps=40, loss={"final-max-ratio": 0.01})
    r = run_train_gate(gate, torch_python(), tmp_path, timeout_s=300)
    assert not r.passed
    passed, ratio, reason = _check(r, "loss-ratio")
    assert not passed and ratio is not None and ratio > 0.01
    assert "above 0.01" in reason and "final/initial loss" in reason
    assert [c.name for c in r.checks if not c.passed] == ["loss-ratio"]


def test_command_gate_gets_pin_env_and_resumes(tmp_path: Path) -> None:
    gate = _gate(command=_fake(tmp_path), steps=10, loss={"final-max-ratio": 0.5},
                 checkpoint={"resume-at": 4})
    r = run_train_gate(gate, None, tmp_path / "w", timeout_s=60, config_dir=tmp_path)
    assert r.passed, r.failed_checks
    assert r.runs[2].steps == list(range(5, 11))
    assert _check(r, "checkpoint-resume")[:2] == (True, 0.0)
    assert _check(r, "loss-ratio")[1] == pytest.approx(0.9 ** 9)


def test_command_gate_resume_drift_fails(tmp_path: Path) -> None:
    gate = _gate(command=_fake(tmp_path, "0.5"), steps=10,
                 checkpoint={"resume-at": 4, "max-abs-diff": 0.01})
    r = run_train_gate(gate, None, tmp_path / "w", timeout_s=60)
    passed, diff, reason = _check(r, "checkpoint-resume")
    assert not passed and diff == pytest.approx(0.45)
    assert "(step 5)" in reason and "above 0.01" in reason


@pytest.mark.parametrize(("code", "check", "reason"), [
    ("print('hello trainer'); print('{not json')", "run-full",
     "printed no JSON step lines {\"step\", \"loss\", ...}; first other line: "
     "'hello trainer'"),
    ("import sys; sys.stderr.write('boom: out of memory\\n'); sys.exit(3)", "run-full",
     "exited with status 3: boom: out of memory"),
    ("import time; time.sleep(30)", "run-full", "timed out after 1 s"),
    ("print('{\"step\": 1, \"loss\": 2.0, \"tokens\": 1, \"step_time_s\": 0.1}')",
     "run-full", "printed steps 1-1, expected 1-3"),
])
def test_bad_trainer_is_a_failed_check(tmp_path: Path, code: str, check: str,
                                       reason: str) -> None:
    gate = _gate(command=[sys.executable, "-c", code], steps=3)
    r = run_train_gate(gate, None, tmp_path, timeout_s=1)
    passed, _, why = _check(r, check)
    assert not passed and reason in why
    assert not r.passed


def test_nan_loss_fails_finite_check(tmp_path: Path) -> None:
    code = ("import json; [print(json.dumps({'step': s, 'loss': float('nan') if s == 2 "
            "else 3.0, 'tokens': 4, 'step_time_s': 0.1})) for s in (1, 2)]")
    r = run_train_gate(_gate(command=[sys.executable, "-c", code], steps=2), None, tmp_path,
                       timeout_s=30)
    passed, count, reason = _check(r, "finite-loss")
    assert not passed and count == 1.0 and "first at step 2 (nan)" in reason
    assert r.runs[0].losses == [3.0, None]
    assert not _check(r, "loss-ratio")[0]


def test_missing_command_fails_with_reason(tmp_path: Path) -> None:
    r = run_train_gate(_gate(command=["/nonexistent/trainer"], steps=2), None, tmp_path,
                       timeout_s=5)
    passed, _, reason = _check(r, "run-full")
    assert not passed and "could not start /nonexistent/trainer" in reason


def _write(tmp_path: Path, ratio: float) -> Path:
    path = tmp_path / "accept.toml"
    path.write_text(f'[train]\nbuiltin = "tiny-lm"\nsteps = 40\n[train.loss]\n'
                    f"final-max-ratio = {ratio}\n")
    return path


@pytest.mark.parametrize(("ratio", "code"), [(0.5, 0), (0.01, 12)])
def test_cli_accept_run(tmp_path: Path, ratio: float, code: int) -> None:
    out = tmp_path / "result.json"
    done = pin("accept", "run", str(_write(tmp_path, ratio)), "--python", torch_python(),
               "-o", str(out), "--format", "json")
    assert done.returncode == code, done.stderr
    result = json_result(done)
    assert result["passed"] is (code == 0)
    assert result["train"]["trainer"] == "tiny-lm"
    names = {c["name"]: c["passed"] for c in result["train"]["checks"]}
    assert names == {"run-full": True, "finite-loss": True, "loss-ratio": code == 0}
    assert json.loads(out.read_text())["config-sha256"] == result["config-sha256"]


def test_cli_accept_run_gate_not_in_file_is_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "accept.toml"
    path.write_text('[serve]\nendpoint = "http://127.0.0.1:8000/v1"\n')
    done = pin("accept", "run", str(path), "--gate", "train", "--python", sys.executable)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no [train] section for --gate train" in done.stderr



def test_cli_builtin_needs_python(tmp_path: Path) -> None:
    done = pin("accept", "run", str(_write(tmp_path, 0.5)))
    assert done.returncode == 2 and "need --python" in done.stderr


@pytest.mark.parametrize(("ref_loss", "passed", "fragment"), [
    (3.6, True, "0 (step 1) within 0.05"),
    (3.0, False, "0.2 (step 1) above 0.05"),
])
def test_loss_reference_band(tmp_path: Path, ref_loss: float, passed: bool,
                             fragment: str) -> None:
    (tmp_path / "ref.jsonl").write_text(
        json.dumps({"step": 1, "loss": ref_loss, "tokens": 8, "step_time_s": 0.1}) + "\n")
    gate = _gate(command=_fake(tmp_path), steps=3,
                 loss={"reference": "ref.jsonl", "band": 0.05})
    r = run_train_gate(gate, None, tmp_path / "w", timeout_s=60, config_dir=tmp_path)
    ok, _, reason = _check(r, "loss-reference")
    assert ok is passed and fragment in reason


def test_step_time_median_repeats_the_run(tmp_path: Path) -> None:
    gate = _gate(command=_fake(tmp_path), steps=4,
                 **{"step-time": {"warmup": 1, "cv-max": 0.5, "median-max-pct": 10.0}})
    r = run_train_gate(gate, None, tmp_path / "w", timeout_s=60)
    assert [run.label for run in r.runs] == ["full", "repeat"]
    assert _check(r, "step-time-median")[:2] == (True, 0.0)
    assert _check(r, "step-time-cv")[:2] == (True, 0.0)
    assert r.step_time_median_s == 0.01 and r.passed
