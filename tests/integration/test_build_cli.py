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
from tests.integration.test_build import vendor_base
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
    images, tags = engine_ids(dockerd), pin_tags(dockerd)
    try:
        r = pin("build", str(lock_file), "--base", base_image.ref, "--registry", url,
                "--wheelhouse", str(WHEELS), "--engine", dockerd.url)
    finally:
        server.shutdown()
        server.server_close()
    assert r.returncode == 8 and "Traceback" not in r.stderr
    assert lock_file.read_bytes() == before
    # Built, then the push failed: the image and its steps are removed all the same.
    base = dockerd.client.images.get(base_image.ref).id
    assert engine_ids(dockerd) - images <= {base} and pin_tags(dockerd) == tags
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
    images, tags = engine_ids(dockerd), pin_tags(dockerd)
    r = pin("build", str(lock), "--base", base_image.ref, "--registry", registry.url,
            "--wheelhouse", str(wheels), "--engine", dockerd.url)
    assert r.returncode == 8 and "Image build failed at Step" in r.stderr
    assert "Traceback" not in r.stderr and lock.read_bytes() == before
    # The step images the failed build committed are removed; the base (pulled) stays.
    base = dockerd.client.images.get(base_image.ref).id
    assert engine_ids(dockerd) - images <= {base} and pin_tags(dockerd) == tags
    assert "pin: warning" not in r.stderr


def engine_ids(engine: Engine) -> set[str]:
    """Every image on the engine, intermediate ones included."""
    return {i.id for i in engine.client.images.list(all=True)}


def pin_tags(engine: Engine) -> dict[str, str]:
    """The engine's pin-build:* tags -> image ID."""
    return {t: i.id for i in engine.client.images.list(all=True)
            for t in i.tags if t.startswith("pin-build:")}


def unrelated_images(engine: Engine) -> tuple[str, str]:
    """A user's tagged image and a dangling one (the tag moved on), built by the engine from
    scratch before pin runs: ``(tagged ID, dangling ID)``."""
    import io
    import tarfile

    ids = []
    for text in (b"one", b"two"):
        ctx = io.BytesIO()
        with tarfile.open(fileobj=ctx, mode="w") as tar:
            for name, data in (("Dockerfile", b"FROM scratch\nCOPY note /note\n"),
                               ("note", text)):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        ctx.seek(0)
        image, _ = engine.client.images.build(fileobj=ctx, custom_context=True, rm=True,
                                              network_mode="none", tag="user/unrelated:1")
        ids.append(image.id)
    return ids[1], ids[0]


def test_build_and_rebuild_remove_what_they_made_on_the_engine(
        dockerd: Engine, registry: RegistryProc, base_image: BaseImage, lock_file: Path) -> None:
    # The engine is shared by the session: compare with what earlier tests left there.
    mine, old = unrelated_images(dockerd)
    base_ref = vendor_base(dockerd, registry, base_image)  # not on the engine: pin pulls it
    before, tags = engine_ids(dockerd), pin_tags(dockerd)
    assert {mine, old} <= before
    args = ["--wheelhouse", str(WHEELS), "--engine", dockerd.url]
    r = pin("build", str(lock_file), "--base", base_ref, "--registry", registry.url, *args)
    assert r.returncode == 0, r.stderr
    assert "pin: warning" not in r.stderr and "Kept" not in r.stderr
    # Nothing that was there is gone (the user's images, tagged or dangling, included); the
    # vendor base, pulled by digest, stays and is the only image the build added.
    vendor = dockerd.client.images.get(base_ref.replace(":7.2@", "@"))
    assert engine_ids(dockerd) == before | {vendor.id} and pin_tags(dockerd) == tags
    assert dockerd.client.images.get("user/unrelated:1").id == mine
    before = engine_ids(dockerd)
    # Two runs from scratch, the last one's image kept to inspect: tagged, with its steps.
    rb = pin("rebuild", str(lock_file), "--runs", "2", "--keep-image", *args)
    assert rb.returncode == 0, rb.stdout + rb.stderr
    assert rb.stdout.count("identical") == 2 and "pin: warning" not in rb.stderr
    kept = {t: i for t, i in pin_tags(dockerd).items() if tags.get(t) != i}
    assert len(kept) == 1, kept
    tag, kept_id = next(iter(kept.items()))
    assert f"Kept the built image on the engine as {tag} (--keep-image)." in rb.stderr
    # The first run's images are gone: what is new is the kept image and its parents.
    chain, image = {kept_id}, dockerd.client.images.get(kept_id)
    while image.attrs.get("Parent") and image.attrs["Parent"] not in before:
        chain.add(image.attrs["Parent"])
        image = dockerd.client.images.get(image.attrs["Parent"])
    assert engine_ids(dockerd) == before | chain and len(chain) >= 6
    # A rebuild moves the tag to its own image, removes that, and gives the tag back.
    again = pin("rebuild", str(lock_file), *args)
    assert again.returncode == 0 and "pin: warning" not in again.stderr, again.stderr
    assert pin_tags(dockerd) == {**tags, tag: kept_id}
    assert engine_ids(dockerd) == before | chain
    dockerd.client.images.remove(kept_id)  # prunes its parents: the engine as it was
    assert engine_ids(dockerd) == before and {mine, old} <= before
