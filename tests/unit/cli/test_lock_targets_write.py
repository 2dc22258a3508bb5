"""``pin lock upgrade``, ``model``, ``packages`` and ``export`` with ``--target NAME`` on a
multi-target lock (lock-version 2), as a user runs them: the named target's section is
updated in place, every other target's content hash and values stay exactly as they were,
the file stays lock-version 2, ``-o`` gets the whole file; several targets and none named
is exit 2 naming them.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinning.lockfile.io import amend, lock_json, read_lock, read_locks
from pinning.lockfile.wheels import PythonTarget, Wheel
from pinning.matrix.load import Matrix
from tests.support.cli import json_result, pin
from tests.support.hfcache import gt_model_dir
from tests.support.locks import lock_for
from tests.support.multilock_locktargets import H200, MI300X, shipped_multi, views, write_multi
from tests.support.pyindex import build_wheels, serve_index


@pytest.fixture
def multi(tmp_path: Path) -> Path:
    return shipped_multi(tmp_path / "pin.lock")


def test_upgrade_one_target_in_place(multi: Path, tmp_path: Path) -> None:
    before = views(multi)
    r = pin("lock", "upgrade", str(multi), "--target", "candidate",
            "--framework", "pytorch==2.12.0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == f"Changes from {multi} [targets.candidate]:"
    assert "  pytorch 2.13.0 -> 2.12.0" in r.stdout.splitlines()
    assert r.stdout.splitlines()[-1] == f"Wrote {multi} (target candidate)"
    after = views(multi)
    assert after["current"] == before["current"]  # the sibling: hash and values identical
    assert after["candidate"]["content-hash"] != before["candidate"]["content-hash"]
    assert tomllib.loads(multi.read_text())["lock-version"] == 2
    assert pin("lock", "validate", str(multi)).returncode == 0
    again = pin("lock", "upgrade", str(multi), "--target", "candidate",
                "--framework", "pytorch==2.12.0")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == \
        f"{multi} [targets.candidate]: unchanged, not rewritten."


def test_upgrade_output_is_the_whole_file(multi: Path, tmp_path: Path) -> None:
    raw = multi.read_bytes()
    out = tmp_path / "out.lock"
    doc = json_result(pin("lock", "upgrade", str(multi), "--target", "candidate",
                          "--framework", "pytorch==2.12.0", "-o", str(out), "--format", "json"))
    assert doc["target"] == "candidate" and doc["lockfile"] == str(out)
    assert multi.read_bytes() == raw
    assert list(views(out)) == ["current", "candidate"]
    assert views(out)["current"] == views(multi)["current"]
    assert views(out)["candidate"] == doc["lock"]
    r = pin("lock", "upgrade", str(multi), "--target", "candidate",
            "--framework", "pytorch==2.12.0", "-o", "-")
    assert r.returncode == 0, r.stderr
    assert r.stdout == out.read_text()  # no #:schema hint: no schemas folder above tmp_path
    assert tomllib.loads(r.stdout)["lock-version"] == 2


def test_several_targets_and_none_named(multi: Path) -> None:
    for args in (("lock", "upgrade", str(multi)), ("lock", "model", str(multi)),
                 ("lock", "packages", str(multi)),
                 ("lock", "export", str(multi), "--format", "requirements")):
        r = pin(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert f"{multi} locks 2 targets (current, candidate); name one with --target " \
               "NAME." in r.stderr, args
        assert "Traceback" not in r.stderr


def test_a_single_target_lock_with_a_target_flag(tmp_path: Path) -> None:
    lock = tmp_path / "one.lock"
    shutil.copyfile(MI300X, lock)
    r = pin("lock", "upgrade", str(lock), "--target", "candidate", "--dry-run")
    assert r.returncode == 2
    assert "is a single-target lock (lock-version 1)" in r.stderr
    assert lock.read_bytes() == MI300X.read_bytes()


def test_upgrade_of_a_single_target_lock_stays_version_1(tmp_path: Path) -> None:
    lock = tmp_path / "one.lock"
    shutil.copyfile(MI300X, lock)
    r = pin("lock", "upgrade", str(lock), "--framework", "pytorch==2.12.0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == f"Wrote {lock}"
    assert tomllib.loads(lock.read_text())["lock-version"] == 1


@pytest.fixture
def with_wheels(tmp_path: Path) -> Path:
    """A multi-target lock whose candidate records two real wheels (URL, size, sha256)."""
    wheels = []
    for d in build_wheels(tmp_path / "w", {"torch==2.13.0+rocm7.2": ["filelock>=3"],
                                           "filelock==3.0": []}):
        name, version = d.filename.split("-")[:2]
        wheels.append(Wheel(name=name, version=version, filename=d.filename, sha256=d.sha256,
                            url=f"http://127.0.0.1:9/files/{d.filename}",
                            size=(tmp_path / "w" / d.filename).stat().st_size))
    python = PythonTarget(version="3.12", platform="x86_64-manylinux_2_28",
                          indexes=["http://127.0.0.1:9/simple"])
    candidate = amend(read_lock(MI300X), packages={w.name: w.version for w in wheels},
                      wheels=wheels, python=python)
    return write_multi(tmp_path / "pin.lock", {"current": read_lock(H200),
                                               "candidate": candidate})


def test_export_one_target(with_wheels: Path) -> None:
    r = pin("lock", "export", str(with_wheels), "--target", "candidate",
            "--format", "requirements")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"# Generated by pin from {with_wheels} [targets.candidate] (")
    assert f"pin lock export {with_wheels} --target candidate --format requirements" \
        in r.stdout.splitlines()[0]
    assert "torch==2.13.0+rocm7.2 \\\n    --hash=sha256:" in r.stdout
    r = pin("lock", "export", str(with_wheels), "--target", "candidate", "--format", "pylock")
    assert r.returncode == 0, r.stderr
    assert tomllib.loads(r.stdout)["tool"]["pin"]["lock"] == \
        views(with_wheels)["candidate"]["content-hash"]
    r = pin("lock", "export", str(with_wheels), "--target", "current", "--format", "pylock")
    assert r.returncode == 2
    assert f"{with_wheels} [targets.current] records no wheels" in r.stderr
    assert f"Run `pin lock packages {with_wheels} --target current`" in r.stderr


def test_model_one_target(tmp_path: Path, matrix: Matrix) -> None:
    shutil.copytree(gt_model_dir(), tmp_path / "ckpt")
    mi = lock_for(matrix, "mi300x", "pytorch==2.13.0", model="./ckpt")
    h = lock_for(matrix, "h200", "pytorch==2.13.0", model="./ckpt")
    path = write_multi(tmp_path / "pin.lock", {"current": h, "candidate": mi})
    assert "model" in tomllib.loads(path.read_text())["shared"]  # the same model, once
    env = {**os.environ, "PIN_CACHE_DIR": str(tmp_path / "pin-cache")}
    before = views(path)
    r = pin("lock", "model", "pin.lock", "--target", "candidate", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert "Model ./ckpt: 13 files pinned" in r.stdout
    after = views(path)
    assert after["current"] == before["current"]
    assert len(after["candidate"]["model"]["files"]) == 13
    _, multi, _ = read_locks(path)
    assert multi is not None and "model" not in multi.shared  # now differs per target


@pytest.fixture
def index(tmp_path: Path) -> Iterator[str]:
    graph: dict[str, list[str]] = {"torch==2.13.0+rocm7.2": ["filelock>=3"], "filelock==3.0": []}
    tags = {"torch==2.13.0+rocm7.2": ["cp312-cp312-manylinux_2_28_x86_64", "py3-none-any"]}
    with serve_index(tmp_path, graph, tags=tags) as (url, _):
        yield url


def test_packages_one_target(multi: Path, index: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(UV_CACHE_DIR=str(tmp_path / "uv-cache"), NO_PROXY="127.0.0.1")
    before = views(multi)
    r = pin("lock", "packages", str(multi), "--target", "candidate", "--index", index,
            "--python-version", "3.12", "--python-platform", "x86_64-manylinux_2_28", env=env)
    assert r.returncode == 0, r.stderr
    after = views(multi)
    assert after["current"] == before["current"]
    assert after["candidate"]["packages"] == {"filelock": "3.0", "torch": "2.13.0+rocm7.2"}
    assert lock_json(read_lock(MI300X))["content-hash"] != after["candidate"]["content-hash"]
