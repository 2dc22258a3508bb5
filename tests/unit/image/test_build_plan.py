"""Build planning without an engine: wheels and their hashes, the inputs hash, the epoch,
the rendered Dockerfile, deterministic OCI documents, and the errors a user sees (exit 8)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinning.errors import BuildError
from pinning.image.layers import gzip_layer
from pinning.image.plan import build_inputs_hash, default_epoch, plan_build, render_context
from pinning.lockfile.io import lock_json, read_lock, seal
from pinning.lockfile.models import Lockfile
from pinning.oci.documents import LOCK_LABEL, LayerBlob, image_docs
from tests.support.paths import ROOT

BASE = "127.0.0.1:5000/pin/base@sha256:" + "a" * 64


def lock_with(packages: dict[str, str] | None, **extra: Any) -> Lockfile:
    data = lock_json(read_lock(ROOT / "lockfiles/mi300x-pytorch-2.13.0.lock"))
    data["packages"] = packages
    data.update(extra)
    data.pop("content-hash")
    return seal(data)


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    for name in ("six-1.16.0-py2.py3-none-any.whl", "idna-3.10-py3-none-any.whl"):
        (tmp_path / name).write_bytes(name.encode())
    return tmp_path


def test_first_build_hashes_wheels_and_rebuild_checks_them(wheelhouse: Path) -> None:
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


def test_plan_errors(wheelhouse: Path, tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="not pinned by digest"):
        plan_build(lock_with({"six": "1.16.0"}), "127.0.0.1:5000/pin/base:latest", wheelhouse)
    with pytest.raises(BuildError, match="No wheel for numpy==2.1.2"):
        plan_build(lock_with({"numpy": "2.1.2"}), BASE, wheelhouse)
    with pytest.raises(BuildError, match="names no Python packages"):
        plan_build(lock_with(None), BASE, wheelhouse)
    with pytest.raises(BuildError, match="is not a directory"):
        plan_build(lock_with({"six": "1.16.0"}), BASE, tmp_path / "absent")


def test_inputs_hash_ignores_what_a_build_records(wheelhouse: Path) -> None:
    lock = lock_with({"six": "1.16.0"})
    data = lock_json(lock)
    data["image"]["digest"] = {"value": "sha256:" + "b" * 64, "origin": "derived"}
    data["image"]["epoch"] = 1
    data.pop("content-hash")
    assert build_inputs_hash(seal(data)) == build_inputs_hash(lock)
    assert build_inputs_hash(lock_with({"six": "1.16.0"}, environment={"X": "1"})) != \
        build_inputs_hash(lock)


def test_epoch_is_fixed_by_the_lock() -> None:
    lock = lock_with({"six": "1.16.0"})
    assert default_epoch(lock) == default_epoch(lock)
    assert default_epoch(lock) % 86400 == 0


def test_rendered_dockerfile(wheelhouse: Path, tmp_path: Path) -> None:
    lock = lock_with({"six": "1.16.0"}, environment={"HIPBLASLT_ALLOW_TF32": "1"})
    plan = plan_build(lock, BASE, wheelhouse)
    ctx = render_context(plan, wheelhouse, tmp_path / "ctx")
    text = (ctx / "Dockerfile").read_text()
    assert f"FROM {BASE}" in text and 'ENV HIPBLASLT_ALLOW_TF32="1"' in text
    assert "--require-hashes" in text and "--no-deps" in text and "--no-index" in text
    assert f'{LOCK_LABEL}="{plan.input_hash}"' in text
    req = (ctx / "wheels/requirements.txt").read_text()
    assert req == f"six==1.16.0 --hash=sha256:{plan.wheels[0].sha256}\n"


def test_inputs_hash_covers_base_and_epoch(wheelhouse: Path) -> None:
    lock = lock_with({"six": "1.16.0"})
    a = plan_build(lock, BASE, wheelhouse).input_hash
    other_base = BASE[:-64] + "b" * 64
    assert plan_build(lock, other_base, wheelhouse).input_hash != a
    data = lock_json(lock)
    data["image"]["epoch"] = 5
    data.pop("content-hash")
    assert plan_build(seal(data), BASE, wheelhouse).input_hash != a


def test_engine_stream_errors_name_the_step() -> None:
    from pinning.image.engine import engine_build

    class Api:
        def build(self, **kw: Any) -> Iterator[dict[str, Any]]:
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


def test_rebuild_diff_names_the_changed_file() -> None:
    import io
    import tarfile

    from pinning.image.record import diff_images

    def tar(files: dict[str, bytes]) -> LayerBlob:
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
