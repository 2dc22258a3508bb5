"""pin accept's CLI against careless and hostile use: -o naming an input, signing set up
before the gates run, a symlink under init --force, Ctrl-C while a trainer runs, escape
sequences in a result, results that do not measure the same thing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cli import json_result, pin
from tests.support.paths import DATA, ROOT

C1 = DATA / "acceptance" / "judged-c1.json"
C4 = DATA / "acceptance" / "judged-c4.json"
TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"
VLLM_C1 = DATA / "acceptance" / "vllm-bench-serve-smollm2-c1.json"


def _train_gates(tmp_path: Path, trainer: str, steps: int = 3) -> Path:
    (tmp_path / "trainer.py").write_text(trainer)
    path = tmp_path / "accept.toml"
    path.write_text(f'[train]\ncommand = ["{sys.executable}", "trainer.py"]\nsteps = {steps}\n')
    return path


FAST = """import json, os
for s in range(1, int(os.environ["PIN_STEPS"]) + 1):
    print(json.dumps({"step": s, "loss": 1.0 / s, "tokens": 8, "step_time_s": 0.01}))
"""


def test_o_naming_an_input_is_refused_and_the_input_kept(tmp_path: Path) -> None:
    gates = _train_gates(tmp_path, FAST)
    before = gates.read_bytes()
    done = pin("accept", "run", str(gates), "-o", str(gates))
    assert done.returncode == 2 and f"inputs of pin accept run: ACCEPT.TOML {gates}" in done.stderr
    assert gates.read_bytes() == before
    copy = tmp_path / "c1.json"
    copy.write_bytes(VLLM_C1.read_bytes())
    done = pin("accept", "judge", str(TEMPLATE), "--from", str(copy), "-o",
               str(tmp_path / "." / "c1.json"))
    assert done.returncode == 2 and f"inputs of pin accept judge: --from {copy}" in done.stderr
    assert copy.read_bytes() == VLLM_C1.read_bytes()
    key = tmp_path / "k.key"
    key.write_text("not a key, but mine")
    done = pin("accept", "run", str(gates), "--sign", str(key), "-o", str(key))
    assert done.returncode == 2 and f"inputs of pin accept run: --sign {key}" in done.stderr
    assert key.read_text() == "not a key, but mine"


def test_stdout_twice_and_sign_without_o_are_refused(tmp_path: Path) -> None:
    gates = _train_gates(tmp_path, FAST)
    done = pin("accept", "run", str(gates), "-o", "-", "--format", "json")
    assert done.returncode == 2 and "--format json" in done.stderr
    done = pin("accept", "run", str(gates), "--sign", str(tmp_path / "k.key"), "--format",
               "json")
    assert done.returncode == 2 and "-o FILE" in done.stderr


def test_signing_key_is_loaded_before_any_gate_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    gates = _train_gates(tmp_path, f"open({str(marker)!r}, 'w').close()\n" + FAST)
    env = {k: v for k, v in os.environ.items() if k != "PIN_KEY_PASSWORD"}
    done = pin("accept", "run", str(gates), "--sign", str(tmp_path / "missing.key"), "-o",
               str(tmp_path / "out.json"), env={**env, "PIN_KEY_PASSWORD": "x"})
    assert done.returncode == 9 and not marker.exists()
    assert pin("keygen", "-o", str(tmp_path / "k"),
               env={**env, "PIN_KEY_PASSWORD": "right"}).returncode == 0
    done = pin("accept", "run", str(gates), "--sign", str(tmp_path / "k.key"), "-o",
               str(tmp_path / "out.json"), env=env)
    assert done.returncode == 2 and "PIN_KEY_PASSWORD" in done.stderr
    assert not marker.exists() and not (tmp_path / "out.json").exists()


def test_init_force_replaces_a_symlink_not_its_target(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "accept.toml"
    link.symlink_to(target)
    assert pin("accept", "init", "-o", str(link)).returncode == 2
    done = pin("accept", "init", "-o", str(link), "--force")
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "keep me"
    assert not link.is_symlink() and link.read_bytes() == TEMPLATE.read_bytes()


def test_missing_python_is_a_usage_error(tmp_path: Path) -> None:
    gates = tmp_path / "accept.toml"
    gates.write_text('[import]\nmodules = ["json"]\nnumeric-check = false\n')
    for python in ("/nonexistent/python3", "no-such-python-on-path"):
        done = pin("accept", "run", str(gates), "--python", python)
        assert done.returncode == 2 and "not an executable file" in done.stderr, python
    ok = pin("accept", "run", str(gates), "--python", sys.executable, "--format", "json")
    assert ok.returncode == 0, ok.stderr
    assert json_result(ok)["import"]["passed"] is True


def test_ctrl_c_stops_the_trainer_too(tmp_path: Path) -> None:
    pid_file = tmp_path / "trainer.pid"
    gates = _train_gates(tmp_path, f"import os, time\nopen({str(pid_file)!r}, 'w').write("
                                   "str(os.getpid()))\ntime.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-m", "pinning", "accept", "run", str(gates),
                             "--snapshot", str(tmp_path / "none.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        for _ in range(600):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.05)
        trainer = int(pid_file.read_text())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert b"Traceback" not in err
    for _ in range(200):
        try:
            os.kill(trainer, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(trainer, signal.SIGKILL)
        raise AssertionError("the trainer outlived pin")


def test_escape_sequences_in_a_result_are_not_printed_raw(tmp_path: Path) -> None:
    doc = json.loads(C1.read_text())
    doc["serve"]["points"][0]["summary"]["source"] = "\x1b]0;pwned\x07evil.json"
    bad = tmp_path / "evil.json"
    bad.write_text(json.dumps(doc))
    done = pin("accept", "show", str(bad))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "pwned" in done.stdout


def test_compare_says_when_results_do_not_measure_the_same_thing(tmp_path: Path) -> None:
    doc = json.loads(C4.read_text())
    doc["mode"] = "host"
    doc["serve"]["harness"] = "pin-loadgen"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    done = pin("accept", "compare", str(C1), str(other), "--format", "json")
    assert done.returncode == 0, done.stderr
    notes = json_result(done)["notes"]
    assert any("modes differ" in n for n in notes)
    assert any("harnesses differ" in n for n in notes)
    same = pin("accept", "compare", str(C1), str(C4), "--format", "json")
    assert json_result(same)["notes"] == [
        "no serving run pairs: A and B ran at different concurrency or rate points, so each "
        "metric appears on one side only"]
    assert pin("accept", "compare", str(C1), str(C1), "--format",
               "json").stdout.count("no serving run pairs") == 0
