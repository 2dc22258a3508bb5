"""pin build / pin rebuild as a user runs them, and the fault cases (exit 8, lock untouched)."""

from __future__ import annotations

import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pinning.lockfile.io import read_lock, write_lock
from tests.support.cli import json_result
from tests.support.components import WHEELS, BaseImage, Engine, RegistryProc, small_lock

pytestmark = pytest.mark.docker


def pin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pinning", *args], capture_output=True,
                          text=True, timeout=900)


@pytest.fixture
def lock_file(tmp_path: Path) -> Path:
    path = tmp_path / "trial.lock"
    write_lock(small_lock(), path)
    return path


def test_cli_build_skip_and_rebuild(dockerd: Engine, registry: RegistryProc, base_image: BaseImage,
                                    lock_file: Path) -> None:
    args = ["--wheelhouse", str(WHEELS), "--engine", dockerd.url]
    r = pin("build", str(lock_file), "--base", base_image.ref, "--registry", registry.url,
            *args, "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json_result(r)
    lock = read_lock(lock_file)
    assert out["built"] and lock.image.digest.value == out["digest"]
    assert lock.image.ref is not None
    assert lock.image.ref.value == f"{registry.host}/pin/trial@{out['digest']}"
    assert lock.image.base_digest.value == base_image.digest
    again = pin("build", str(lock_file), "--registry", registry.url, *args)
    assert again.returncode == 0 and "nothing to build" in again.stdout
    rb = pin("rebuild", str(lock_file), "--runs", "2", *args)
    assert rb.returncode == 0, rb.stdout + rb.stderr
    assert rb.stdout.count("identical") == 2


def test_rebuild_names_the_files_that_differ(dockerd: Engine, registry: RegistryProc,
                                             base_image: BaseImage, lock_file: Path,
                                             tmp_path: Path) -> None:
    args = ["--wheelhouse", str(WHEELS), "--engine", dockerd.url]
    assert pin("build", str(lock_file), "--base", base_image.ref, "--registry", registry.url,
               *args).returncode == 0
    # Another wheel file under the recorded name and hash would be refused; instead change an
    # input the image carries: the environment, with the recorded digest kept.
    lock = read_lock(lock_file)
    from pinning.lockfile.io import lock_json, seal

    data = lock_json(lock)
    data["environment"] = {"PIN_TRIAL": "2"}
    data.pop("content-hash")
    changed = tmp_path / "changed.lock"
    write_lock(seal(data), changed)
    r = pin("rebuild", str(changed), "--registry", registry.url, *args)
    assert r.returncode == 6
    assert "DIFFERENT" in r.stdout and "config differs" in r.stdout


def test_faults_are_exit_8_and_leave_the_lock(dockerd: Engine, registry: RegistryProc,
                                              base_image: BaseImage, lock_file: Path,
                                              tmp_path: Path) -> None:
    before = lock_file.read_bytes()
    wh = ["--wheelhouse", str(WHEELS)]
    no_base = pin("build", str(lock_file), "--registry", registry.url, *wh,
                  "--engine", dockerd.url)
    assert no_base.returncode == 8 and "no base image digest" in no_base.stderr
    dead = pin("build", str(lock_file), "--base", base_image.ref, *wh,
               "--registry", "http://127.0.0.1:9", "--engine", dockerd.url)
    assert dead.returncode == 8 and "127.0.0.1:9" in dead.stderr
    no_engine = pin("build", str(lock_file), "--base", base_image.ref, *wh,
                    "--registry", registry.url, "--engine", f"unix://{tmp_path}/none.sock")
    assert no_engine.returncode == 8 and "does not answer" in no_engine.stderr
    assert lock_file.read_bytes() == before
    for r in (no_base, dead, no_engine):
        assert "Traceback" not in r.stderr


def test_hash_mismatch_is_exit_8(dockerd: Engine, registry: RegistryProc, base_image: BaseImage,
                                 lock_file: Path, tmp_path: Path) -> None:
    assert pin("build", str(lock_file), "--base", base_image.ref, "--registry", registry.url,
               "--wheelhouse", str(WHEELS), "--engine", dockerd.url).returncode == 0
    bad = tmp_path / "wheels"
    shutil.copytree(WHEELS, bad)
    six = next(bad.glob("six-*.whl"))
    six.write_bytes(six.read_bytes() + b"\0")
    before = lock_file.read_bytes()
    r = pin("build", str(lock_file), "--no-cache", "--registry", registry.url,
            "--wheelhouse", str(bad), "--engine", dockerd.url)
    assert r.returncode == 8 and "does not match the lock" in r.stderr
    assert lock_file.read_bytes() == before


class _DyingRegistry(http.server.BaseHTTPRequestHandler):
    """Answers like a registry until the first blob upload, then drops the connection."""

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_HEAD(self) -> None:
        self.send_response(404)
        self.end_headers()

    def do_POST(self) -> None:
        self.send_response(202)
        self.send_header("Location", "/v2/upload/1")
        self.end_headers()

    def do_PUT(self) -> None:
        self.connection.close()


def test_registry_dying_mid_push(dockerd: Engine, registry: RegistryProc, base_image: BaseImage,
                                 lock_file: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _DyingRegistry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    before = lock_file.read_bytes()
    try:
        r = pin("build", str(lock_file), "--base", base_image.ref, "--registry", url,
                "--wheelhouse", str(WHEELS), "--engine", dockerd.url)
    finally:
        server.shutdown()
        server.server_close()
    assert r.returncode == 8 and "Traceback" not in r.stderr
    assert lock_file.read_bytes() == before
    # A re-run against a working registry succeeds.
    ok = pin("build", str(lock_file), "--base", base_image.ref, "--registry", registry.url,
             "--wheelhouse", str(WHEELS), "--engine", dockerd.url)
    assert ok.returncode == 0, ok.stderr


def test_a_failing_build_step_is_exit_8(dockerd: Engine, registry: RegistryProc,
                                        base_image: BaseImage, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for whl in WHEELS.glob("*.whl"):
        shutil.copy(whl, wheels)
    bad = next(wheels.glob("six-*.whl"))
    bad.write_bytes(b"not a zip file")  # hashed as is on the first build; pip rejects it
    lock = tmp_path / "bad.lock"
    write_lock(small_lock(), lock)
    before = lock.read_bytes()
    r = pin("build", str(lock), "--base", base_image.ref, "--registry", registry.url,
            "--wheelhouse", str(wheels), "--engine", dockerd.url)
    assert r.returncode == 8 and "Image build failed at Step" in r.stderr
    assert "Traceback" not in r.stderr and lock.read_bytes() == before
