"""Build planning without an engine: wheels and their hashes, the inputs hash, the epoch,
the rendered Dockerfile, deterministic OCI documents, and the errors a user sees (exit 8)."""

from __future__ import annotations

import hashlib
import json

import pytest
from conftest import ROOT

from pinning.errors import BuildError
from pinning.image.layers import gzip_layer
from pinning.image.plan import build_inputs_hash, default_epoch, plan_build, render_context
from pinning.lockfile.io import lock_json, read_lock, seal
from pinning.oci.documents import LOCK_LABEL, image_docs

BASE = "127.0.0.1:5000/pin/base@sha256:" + "a" * 64


def lock_with(packages, **extra):
    data = lock_json(read_lock(ROOT / "lockfiles/mi300x-pytorch-2.13.0.lock"))
    data["packages"] = packages
    data.update(extra)
    data.pop("content-hash")
    return seal(data)


@pytest.fixture
def wheelhouse(tmp_path):
    for name in ("six-1.16.0-py2.py3-none-any.whl", "idna-3.10-py3-none-any.whl"):
        (tmp_path / name).write_bytes(name.encode())
    return tmp_path


def test_first_build_hashes_wheels_and_rebuild_checks_them(wheelhouse):
    lock = lock_with({"six": "1.16.0", "idna": "3.10"})
    plan = plan_build(lock, BASE, wheelhouse)
    assert [(w.name, w.filename) for w in plan.wheels] == [
        ("idna", "idna-3.10-py3-none-any.whl"), ("six", "six-1.16.0-py2.py3-none-any.whl")]
    assert plan.wheels[1].sha256 == hashlib.sha256(
        b"six-1.16.0-py2.py3-none-any.whl").hexdigest()
    recorded = lock.model_copy(update={"wheels": list(plan.wheels)})
    assert plan_build(recorded, BASE, wheelhouse).input_hash == plan.input_hash
    (wheelhouse / "six-1.16.0-py2.py3-none-any.whl").write_bytes(b"other")
    with pytest.raises(BuildError) as exc:
        plan_build(recorded, BASE, wheelhouse)
    assert exc.value.exit_code == 8 and "does not match the lock" in exc.value.message


def test_plan_errors(wheelhouse, tmp_path):
    with pytest.raises(BuildError, match="not pinned by digest"):
        plan_build(lock_with({"six": "1.16.0"}), "127.0.0.1:5000/pin/base:latest", wheelhouse)
    with pytest.raises(BuildError, match="No wheel for numpy==2.1.2"):
        plan_build(lock_with({"numpy": "2.1.2"}), BASE, wheelhouse)
    with pytest.raises(BuildError, match="names no Python packages"):
        plan_build(lock_with(None), BASE, wheelhouse)
    with pytest.raises(BuildError, match="is not a directory"):
        plan_build(lock_with({"six": "1.16.0"}), BASE, tmp_path / "absent")


def test_inputs_hash_ignores_what_a_build_records(wheelhouse):
    lock = lock_with({"six": "1.16.0"})
    data = lock_json(lock)
    data["image"]["digest"] = {"value": "sha256:" + "b" * 64, "origin": "derived"}
    data["image"]["epoch"] = 1
    data.pop("content-hash")
    assert build_inputs_hash(seal(data)) == build_inputs_hash(lock)
    assert build_inputs_hash(lock_with({"six": "1.16.0"}, environment={"X": "1"})) != \
        build_inputs_hash(lock)


def test_epoch_is_fixed_by_the_lock():
    lock = lock_with({"six": "1.16.0"})
    assert default_epoch(lock) == default_epoch(lock)
    assert default_epoch(lock) % 86400 == 0


def test_rendered_dockerfile(wheelhouse, tmp_path):
    lock = lock_with({"six": "1.16.0"}, environment={"HIPBLASLT_ALLOW_TF32": "1"})
    plan = plan_build(lock, BASE, wheelhouse)
    ctx = render_context(plan, wheelhouse, tmp_path / "ctx")
    text = (ctx / "Dockerfile").read_text()
    assert f"FROM {BASE}" in text and 'ENV HIPBLASLT_ALLOW_TF32="1"' in text
    assert "--require-hashes" in text and "--no-deps" in text and "--no-index" in text
    assert f'{LOCK_LABEL}="{plan.input_hash}"' in text
    req = (ctx / "wheels/requirements.txt").read_text()
    assert req == f"six==1.16.0 --hash=sha256:{plan.wheels[0].sha256}\n"


def test_oci_documents_are_deterministic():
    layer = gzip_layer(b"tar bytes")
    a = image_docs([layer], epoch=1700000000, env={"B": "2", "A": "1"}, labels={"k": "v"})
    b = image_docs([layer], epoch=1700000000, env={"A": "1", "B": "2"}, labels={"k": "v"})
    assert a.manifest == b.manifest and a.digest == b.digest
    config = json.loads(a.config)
    assert config["created"] == "2023-11-14T22:13:20Z"
    assert config["config"]["Env"] == ["A=1", "B=2"]
    assert config["rootfs"]["diff_ids"] == [layer.diff_id]
    manifest = json.loads(a.manifest)
    assert manifest["config"]["digest"] == a.config_digest
    assert manifest["layers"][0] == {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                                     "digest": layer.digest, "size": layer.size}
    assert image_docs([layer], epoch=1700000001).digest != a.digest


def test_inputs_hash_covers_base_and_epoch(wheelhouse):
    lock = lock_with({"six": "1.16.0"})
    a = plan_build(lock, BASE, wheelhouse).input_hash
    other_base = BASE[:-64] + "b" * 64
    assert plan_build(lock, other_base, wheelhouse).input_hash != a
    data = lock_json(lock)
    data["image"]["epoch"] = 5
    data.pop("content-hash")
    assert plan_build(seal(data), BASE, wheelhouse).input_hash != a


def test_engine_stream_errors_name_the_step():
    from pinning.image.plan import engine_build

    class Api:
        def build(self, **kw):
            yield {"stream": "Step 1/4 : FROM base\n"}
            yield {"stream": "Step 3/4 : RUN python3 -m pip install ...\n"}
            yield {"stream": "ERROR: six-1.16.0.whl is not a valid wheel\n"}
            yield {"errorDetail": {"message": "returned a non-zero code: 1"},
                   "error": "The command '/bin/sh -c python3 -m pip install' returned a "
                            "non-zero code: 1"}

    class Client:
        api = Api()

    with pytest.raises(BuildError) as exc:
        engine_build(Client(), ROOT, tag="t")
    assert "Step 3/4" in exc.value.message and "not a valid wheel" in exc.value.message
    assert exc.value.exit_code == 8


def test_rebuild_diff_names_the_changed_file():
    import io
    import tarfile

    from pinning.image.record import diff_images

    def tar(files):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            for name, data in files.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        return gzip_layer(buf.getvalue())

    a = image_docs([tar({"usr/a": b"1", "usr/b": b"2"})], epoch=1)
    b = image_docs([tar({"usr/a": b"1", "usr/b": b"3"})], epoch=1)
    lines = diff_images(a, b)
    assert lines[0].startswith("layer 0 differs")
    assert len(lines) == 2 and lines[1].startswith("  usr/b: size 1")
    c = image_docs([tar({"usr/a": b"1", "usr/b": b"2"})], epoch=2)
    assert any(line.startswith("  created:") for line in diff_images(a, c))
