"""The acceptance shim with the real engine and the debootstrapped base image: output
streamed, exit status and files carried back, network off, the container removed after a
normal end and on SIGTERM, a SIGKILLed shim's leftover removed, the image's identity, and
the training gate run inside the image.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from pinning.accept.config import TrainGate
from pinning.accept.container import ContainerSpec, new_name, wrap_argv, write_spec
from pinning.accept.engine import ACCEPT_LABEL, image_identity, remove_leftovers
from pinning.accept.train import run_train_gate
from pinning.errors import UsageError
from tests.support.components import BaseImage, Engine, RegistryProc

pytestmark = pytest.mark.docker

SpecFactory = Callable[..., tuple[Path, ContainerSpec]]


@pytest.fixture(scope="module")
def image(dockerd: Engine, base_image: BaseImage) -> str:
    """The base image (Debian with python3), pulled into the engine by digest."""
    dockerd.client.images.pull(base_image.ref)
    return base_image.ref


@pytest.fixture
def make_spec(dockerd: Engine, image: str, tmp_path: Path) -> SpecFactory:
    """Write a CPU spec for ``image`` that mounts ``tmp_path`` (also the working folder)."""

    def make(**over: Any) -> tuple[Path, ContainerSpec]:
        data: dict[str, Any] = {"image": image, "name": new_name(), "vendor": "cpu",
                                "mounts": [{"path": str(tmp_path)}],
                                "workdir": str(tmp_path), "engine": dockerd.url}
        data.update(over)
        spec = ContainerSpec.model_validate(data)
        path = tmp_path / f"{spec.name}.json"
        write_spec(spec, path)
        return path, spec

    return make


def _gone(dockerd: Engine, name: str) -> bool:
    try:
        dockerd.client.containers.get(name)
    except docker.errors.NotFound:
        return True
    return False


def _shim(spec_path: Path, argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(wrap_argv(spec_path, argv), capture_output=True, text=True,
                          timeout=300, check=False, env=dict(os.environ, **env))


SCRIPT = """\
import json, os, sys
for step in (1, 2):
    print(json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
print("to-stderr", file=sys.stderr, flush=True)
with open("made-inside.txt", "w") as fh:
    fh.write(json.dumps({"uid": os.getuid(), "mark": os.environ.get("PIN_MARK"),
                         "named": os.environ.get("EXTRA_NAMED"),
                         "other": os.environ.get("NOT_PASSED")}))
"""


def test_shim_streams_output_carries_files_and_removes_the_container(
        dockerd: Engine, make_spec: SpecFactory, tmp_path: Path) -> None:
    path, spec = make_spec(env=["EXTRA_NAMED"])
    out = _shim(path, ["python3", "-c", SCRIPT], PIN_MARK="m1", EXTRA_NAMED="n1",
                NOT_PASSED="secret")
    assert out.returncode == 0, out.stderr
    assert [json.loads(line) for line in out.stdout.splitlines()] == [
        {"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5}]
    assert out.stderr.strip() == "to-stderr"
    made = tmp_path / "made-inside.txt"
    assert json.loads(made.read_text()) == {"uid": os.getuid(), "mark": "m1", "named": "n1",
                                            "other": None}
    assert made.stat().st_uid == os.getuid()
    assert _gone(dockerd, spec.name)
    assert dockerd.client.containers.list(all=True, filters={"label": ACCEPT_LABEL}) == []


NET = """\
import os, socket, sys
print(sorted(os.listdir("/sys/class/net")))
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
    print("connected")
except OSError as exc:
    print("refused", type(exc).__name__)
"""


def test_network_is_off_inside(make_spec: SpecFactory, registry: RegistryProc) -> None:
    port = int(registry.host.rsplit(":", 1)[1])
    socket.create_connection(("127.0.0.1", port), timeout=5).close()  # open on the host
    path, _ = make_spec()
    out = _shim(path, ["python3", "-c", NET, str(port)])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "['lo']" and lines[1].startswith("refused"), lines


def test_non_zero_exit_and_read_only_mount_propagate(
        dockerd: Engine, make_spec: SpecFactory, tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    path, spec = make_spec(mounts=[{"path": str(tmp_path)},
                                   {"path": str(ro), "read-only": True}])
    code = (f"import sys\ntry:\n    open({str(ro / 'x')!r}, 'w')\n"
            "except OSError as exc:\n    print('errno', exc.errno)\nsys.exit(7)\n")
    out = _shim(path, ["python3", "-c", code])
    assert out.returncode == 7 and out.stdout.strip() == "errno 30", out.stderr  # EROFS
    assert not (ro / "x").exists() and _gone(dockerd, spec.name)


def test_a_command_missing_from_the_image_exits_127(dockerd: Engine,
                                                    make_spec: SpecFactory) -> None:
    path, spec = make_spec()
    out = _shim(path, ["no-such-trainer", "--steps", "3"])
    assert out.returncode == 127 and "cannot start no-such-trainer" in out.stderr
    assert _gone(dockerd, spec.name)


def test_a_missing_image_exits_2_saying_pull_or_build(make_spec: SpecFactory,
                                                      registry: RegistryProc) -> None:
    path, _ = make_spec(image=f"{registry.host}/pin/absent:t1")
    out = _shim(path, ["true"])
    assert out.returncode == 2 and "is not in the Docker Engine" in out.stderr
    assert "pin build" in out.stderr


SLEEPER = "import time\nprint('ready', flush=True)\ntime.sleep(300)\n"


def _start_sleeper(spec_path: Path) -> subprocess.Popen[str]:
    """The shim running a sleeper, once it printed ``ready`` (within 120 s, else fail)."""
    proc = subprocess.Popen(wrap_argv(spec_path, ["python3", "-c", SLEEPER]),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    if not ready:
        proc.kill()
        pytest.fail("the shim's container printed nothing within 120 s")
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_sigterm_kills_and_removes_the_container(dockerd: Engine,
                                                 make_spec: SpecFactory) -> None:
    path, spec = make_spec()
    proc = _start_sleeper(path)
    assert dockerd.client.containers.get(spec.name).status == "running"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert _gone(dockerd, spec.name)


def test_a_sigkilled_shims_leftover_is_removed(dockerd: Engine,
                                               make_spec: SpecFactory) -> None:
    path, spec = make_spec()
    proc = _start_sleeper(path)
    proc.kill()
    proc.communicate(timeout=60)
    leftover = dockerd.client.containers.get(spec.name)
    assert leftover.status == "running" and leftover.labels[ACCEPT_LABEL] == "1"
    # The next shim with the same name replaces it; then nothing is left.
    out = _shim(path, ["python3", "-c", "print('again')"])
    assert out.returncode == 0 and out.stdout.strip() == "again", out.stderr
    assert _gone(dockerd, spec.name)
    proc = _start_sleeper(path)
    proc.kill()
    proc.communicate(timeout=60)
    assert remove_leftovers(dockerd.client, [spec.name, "pin-accept-never"]) == [spec.name]
    assert _gone(dockerd, spec.name)


def test_image_identity_in_the_real_engine(dockerd: Engine, image: str,
                                           base_image: BaseImage,
                                           registry: RegistryProc) -> None:
    client = dockerd.client
    assert image_identity(client, image)[:2] == (base_image.digest, "manifest")
    pulled = client.images.get(image)
    pulled.tag(f"{registry.host}/pin/base", "accept-test")
    assert image_identity(client, f"{registry.host}/pin/base:accept-test")[:2] == (
        base_image.digest, "manifest")
    pulled.tag("pin-accept-local", "t1")
    digest, kind, reason = image_identity(client, "pin-accept-local:t1")
    assert (digest, kind) == (pulled.id, "image-id") and "local image ID" in reason
    with pytest.raises(UsageError, match="not in the Docker Engine"):
        image_identity(client, f"{registry.host}/pin/absent:t1")


# A trainer following the PIN_* contract (as tests/unit/accept/test_train.py's), which also
# records the network interfaces it sees.
TRAINER = """\
import json, os, pathlib, sys
steps = int(os.environ["PIN_STEPS"]); stop = os.environ["PIN_STOP_AT"]
ckdir = pathlib.Path(os.environ["PIN_CHECKPOINT_DIR"])
(ckdir / "net.json").write_text(json.dumps(sorted(os.listdir("/sys/class/net"))))
ck = ckdir / "state.json"
start, w = 1, 4.0
if os.environ["PIN_RESUME"] == "1":
    st = json.loads(ck.read_text()); start, w = st["step"] + 1, st["w"]
if sys.argv[1] == "crash":
    sys.exit("CUDA error: out of memory (simulated)")
for s in range(start, steps + 1):
    w *= 0.9
    print(json.dumps({"step": s, "loss": w, "tokens": 8, "step_time_s": 0.01}), flush=True)
    if stop and s == int(stop):
        ck.write_text(json.dumps({"step": s, "w": w})); sys.exit(0)
"""


def test_train_gate_runs_inside_the_image_with_checkpoint_resume(
        dockerd: Engine, make_spec: SpecFactory, tmp_path: Path) -> None:
    (tmp_path / "trainer.py").write_text(TRAINER)
    work = tmp_path / "work"
    work.mkdir()
    path, spec = make_spec()
    gate = TrainGate.model_validate({
        "command": ["python3", "trainer.py", "ok"], "steps": 12,
        "loss": {"final-max-ratio": 0.5},
        "checkpoint": {"resume-at": 5, "max-abs-diff": 0.0}})
    result = run_train_gate(gate, None, work, timeout_s=300, config_dir=tmp_path,
                            wrap=lambda argv: wrap_argv(path, argv))
    assert result.passed, result.failed_checks
    assert [r.label for r in result.runs] == ["full", "stop", "resume"]
    full, stop, resume = result.runs
    assert full.steps == list(range(1, 13)) and resume.steps == list(range(6, 13))
    assert stop.losses + resume.losses == full.losses
    assert json.loads((work / "resume" / "net.json").read_text()) == ["lo"]  # in the image
    assert json.loads((work / "resume" / "state.json").read_text())["step"] == 5
    assert _gone(dockerd, spec.name)


def test_a_crashing_trainer_in_the_image_is_a_failed_check(make_spec: SpecFactory,
                                                           tmp_path: Path) -> None:
    (tmp_path / "trainer.py").write_text(TRAINER)
    work = tmp_path / "work"
    work.mkdir()
    path, _ = make_spec()
    gate = TrainGate.model_validate({"command": ["python3", "trainer.py", "crash"],
                                     "steps": 4, "loss": {"final-max-ratio": 0.5}})
    result = run_train_gate(gate, None, work, timeout_s=300, config_dir=tmp_path,
                            wrap=lambda argv: wrap_argv(path, argv))
    assert not result.passed
    check = next(c for c in result.checks if c.name == "run-full")
    assert not check.passed and "exited with status 1" in check.reason
    assert "out of memory (simulated)" in check.reason


def test_a_silent_command_gives_empty_output_and_status_0(make_spec: SpecFactory) -> None:
    path, _ = make_spec()
    out = _shim(path, ["true"])
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
