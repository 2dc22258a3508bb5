"""``pin accept run --image`` end to end: a pin-built, pin-signed trial image pulled into the
private engine by its manifest digest, the import and training gates run inside it, the
signed result attached to the image in the registry, and ``pin verify-image --lock LOCK
--require-acceptance`` accepting exactly a passing result (exit 0) and refusing a failing one
(exit 9); an image the engine does not have, and ``--image`` with ``--host``, are usage
errors (exit 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest

from pinning.lockfile.io import read_lock, write_lock
from pinning.oci.registry import Registry
from tests.support.cli import json_result
from tests.support.components import WHEELS, BaseImage, Engine, RegistryProc, small_lock

PASSPHRASE = "test-passphrase"
REPO = "pin/accept-run"

# A stdlib-only trainer following the PIN_* contract of the training gate: JSON lines with
# step, loss, tokens and step_time_s; stops after PIN_STOP_AT writing a checkpoint into
# PIN_CHECKPOINT_DIR, and resumes from it when PIN_RESUME is 1.
TRAINER = """\
import json, os, pathlib, sys
steps = int(os.environ["PIN_STEPS"]); stop = os.environ.get("PIN_STOP_AT", "")
ck = pathlib.Path(os.environ["PIN_CHECKPOINT_DIR"]) / "state.json"
start, w = 1, 4.0
if os.environ.get("PIN_RESUME") == "1":
    st = json.loads(ck.read_text()); start, w = st["step"] + 1, st["w"]
for s in range(start, steps + 1):
    w *= 0.9
    print(json.dumps({"step": s, "loss": w, "tokens": 8, "step_time_s": 0.01}), flush=True)
    if stop and s == int(stop):
        ck.write_text(json.dumps({"step": s, "w": w})); sys.exit(0)
"""

GATES = """\
[import]
modules = [{modules}]
numeric-check = false

[train]
command = ["python3", "trainer.py"]
steps = 10

[train.loss]
final-max-ratio = 0.5

[train.checkpoint]
resume-at = 4
max-abs-diff = 0.0
"""


class Trial(TypedDict):
    """The signed trial image (in the registry and the engine) and its files."""

    dir: Path
    lock: Path
    lock_hash: str
    ref: str
    digest: str
    registry: RegistryProc
    engine: Engine


def pin(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pinning", *args], capture_output=True,
                          text=True, timeout=900, cwd=cwd,
                          env={**os.environ, "PIN_KEY_PASSWORD": PASSPHRASE})


@pytest.fixture(scope="module")
def trial(dockerd: Engine, registry: RegistryProc, base_image: BaseImage,
          tmp_path_factory: pytest.TempPathFactory) -> Trial:
    """Built and signed by ``pin build --sign`` (pushed by pin, not by the engine), then
    pulled into the engine by digest so the engine records that manifest digest."""
    d = tmp_path_factory.mktemp("accept-run")
    assert pin("keygen", "-o", str(d / "pin")).returncode == 0
    lock = d / "trial.lock"
    write_lock(small_lock(), lock)
    r = pin("build", str(lock), "--base", base_image.ref, "--registry", registry.url,
            "--repo", REPO, "--wheelhouse", str(WHEELS), "--engine", dockerd.url,
            "--sign", str(d / "pin.key"), "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json_result(r)
    assert out["signed"] and out["ref"].endswith("@" + out["digest"])
    dockerd.client.images.pull(out["ref"])
    repo_digests = dockerd.client.images.get(out["ref"]).attrs["RepoDigests"]
    assert f"{registry.host}/{REPO}@{out['digest']}" in repo_digests, repo_digests
    return {"dir": d, "lock": lock, "lock_hash": read_lock(lock).content_hash,
            "ref": out["ref"], "digest": out["digest"], "registry": registry,
            "engine": dockerd}


@pytest.fixture
def fresh(trial: Trial) -> Iterator[Trial]:
    """The trial image with its ``.att`` manifest as the build left it, before and after."""
    reg = Registry(trial["registry"].url)
    tag = trial["digest"].replace(":", "-") + ".att"
    saved = reg.get_manifest(REPO, tag)
    yield trial
    reg.put_manifest(REPO, tag, saved)


def gates(where: Path, modules: str = '"json", "sqlite3"') -> Path:
    """``where/accept.toml`` (import ``modules``, the trainer with checkpoint-resume) and
    ``where/trainer.py``."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "trainer.py").write_text(TRAINER)
    path = where / "accept.toml"
    path.write_text(GATES.format(modules=modules))
    return path


def accept_run(trial: Trial, config: Path, out: Path, *extra: str
               ) -> subprocess.CompletedProcess[str]:
    return pin("accept", "run", str(config), "--image", trial["ref"], "--lock",
               str(trial["lock"]), "--sign", str(trial["dir"] / "pin.key"), "-o", str(out),
               "--engine", trial["engine"].url, "--vendor", "cpu", "--format", "json",
               "--unbound-ok", *extra, cwd=config.parent)


def require(trial: Trial) -> subprocess.CompletedProcess[str]:
    return pin("verify-image", trial["ref"], "--key", str(trial["dir"] / "pin.pub"),
               "--lock", str(trial["lock"]), "--require-acceptance")


def show(trial: Trial, signed: Path) -> Any:
    """The result inside the signed envelope ``signed``, its signature verified."""
    r = pin("accept", "show", str(signed), "--key", str(trial["dir"] / "pin.pub"),
            "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json_result(r)
    assert out["signature-verified"] is True
    return out["result"]


def image_python(trial: Trial) -> tuple[str, str]:
    """``(executable, version)`` of the image's ``python3``, asked of the engine directly."""
    raw = trial["engine"].client.containers.run(
        trial["ref"], ["python3", "-c", "import json, platform, sys; print(json.dumps("
                       "[sys.executable, platform.python_version()]))"],
        network_mode="none", remove=True)
    exe, version = json.loads(raw)
    return str(exe), str(version)


@pytest.mark.docker
def test_gates_pass_inside_the_image_and_the_signed_result_is_attached(
        fresh: Trial, tmp_path: Path) -> None:
    config = gates(tmp_path / "gates")
    signed = tmp_path / "out.json"
    r = accept_run(fresh, config, signed)
    assert r.returncode == 0, r.stderr
    result = json_result(r)
    assert "Attached the signed result to" in r.stderr
    assert result["mode"] == "image" and result["passed"] is True and result["failed"] == []
    assert result["gates"] == {"import": True, "train": True}
    subject = result["subject"]
    assert subject["image"] == fresh["ref"]
    assert subject["image-digest"] == fresh["digest"]
    assert subject["image-digest-kind"] == "manifest"
    assert subject["lock-content-hash"] == fresh["lock_hash"]
    assert "image-digest" not in subject["unknown"]

    # The import gate ran the image's Python, not this host's.
    exe, version = image_python(fresh)
    imports = result["import"]
    assert imports["passed"] is True
    assert imports["python"] == "python3"  # as run in the image, not the host-side shim
    assert (imports["python-executable"], imports["python-version"]) == (exe, version)
    assert imports["python-executable"] != sys.executable
    assert [m["name"] for m in imports["modules"] if m["ok"]] == ["json", "sqlite3"]
    assert imports["numeric"] is None
    assert not any(c["name"] == "numeric" for c in imports["checks"])

    train = result["train"]
    assert train["passed"] is True
    assert [run["label"] for run in train["runs"]] == ["full", "stop", "resume"]
    full, stop, resume = train["runs"]
    assert full["steps"] == list(range(1, 11)) and resume["steps"] == list(range(5, 11))
    assert stop["losses"] + resume["losses"] == full["losses"]
    assert any(c["name"] == "checkpoint-resume" and c["passed"] for c in train["checks"]), \
        train["checks"]

    # A CPU run against a GPU lock: kept with --unbound-ok, marked unbound, never evidence.
    assert result["binding"]["allowed-unbound"] is True
    assert any(d.startswith("gpu:") for d in result["binding"]["differences"]), result["binding"]

    # -o holds the signed envelope of the same result; the registry holds it too.
    assert show(fresh, signed) == result
    v = require(fresh)
    assert v.returncode == 9 and "not bound to the lock's stack" in v.stderr, v.stderr

    # Nothing the gates started is left in the engine.
    assert fresh["engine"].client.containers.list(
        all=True, filters={"label": "dev.pin.accept"}) == []


@pytest.mark.docker
def test_a_failing_result_is_signed_and_attached_but_does_not_satisfy_verify_image(
        fresh: Trial, tmp_path: Path) -> None:
    assert require(fresh).returncode == 9  # only the build's attestations so far
    config = gates(tmp_path / "gates", modules='"json", "pin_no_such_module"')
    signed = tmp_path / "out.json"
    r = accept_run(fresh, config, signed)
    assert r.returncode == 12, r.stderr
    result = json_result(r)
    assert result["passed"] is False and result["gates"] == {"import": False, "train": True}
    assert any(f.startswith("import: import pin_no_such_module") for f in result["failed"]), \
        result["failed"]
    assert result["subject"]["image-digest"] == fresh["digest"]
    assert "Attached the signed result to" in r.stderr
    assert show(fresh, signed) == result
    v = require(fresh)
    assert v.returncode == 9 and "Only failing" in v.stderr, v.stderr
    assert "pin_no_such_module" in v.stderr


@pytest.mark.docker
def test_an_image_the_engine_does_not_have_is_a_usage_error(trial: Trial,
                                                            tmp_path: Path) -> None:
    config = gates(tmp_path / "gates")
    absent = f"{trial['registry'].host}/pin/absent:t1"
    r = pin("accept", "run", str(config), "--image", absent, "--lock", str(trial["lock"]),
            "--engine", trial["engine"].url, "--vendor", "cpu")
    assert r.returncode == 2, r.stderr
    assert "is not in the Docker Engine" in r.stderr
    assert "Pull it" in r.stderr and "pin build" in r.stderr
    assert "Traceback" not in r.stderr


def test_image_and_host_exclude_each_other(tmp_path: Path) -> None:
    config = gates(tmp_path / "gates")
    r = pin("accept", "run", str(config), "--image", "127.0.0.1:1/pin/x:t", "--host",
            "--vendor", "cpu")
    assert r.returncode == 2 and "--image and --host exclude each other" in r.stderr
    assert "Traceback" not in r.stderr
