"""``pin build`` / ``pin rebuild`` / ``pin base build`` / ``pin login`` decide what they need
before touching an engine or registry: where to push (``--registry`` or the lock's image),
which wheels (``--wheelhouse`` or the lock's URLs), and refuse clearly when neither is known.
No Docker here: every case stops before the engine (tests/integration covers the builds).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pinning.lockfile.io import amend, read_lock, write_lock
from pinning.lockfile.models import Image, Pinned
from tests.support.cli import json_result, pin
from tests.support.paths import ROOT

LOCK = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"
BASE = "127.0.0.1:9/pin/base@sha256:" + "a" * 64


def _lock(tmp_path: Path) -> Path:
    path = tmp_path / "trial.lock"
    shutil.copyfile(LOCK, path)
    return path


def test_without_registry_and_no_recorded_image_build_says_where_to_push(tmp_path: Path
                                                                          ) -> None:
    r = pin("build", str(_lock(tmp_path)), "--base", BASE)
    assert r.returncode == 2, r.stderr
    assert "does not know where to push" in r.stderr and "--registry URL" in r.stderr
    assert "Traceback" not in r.stderr


def test_without_wheelhouse_and_no_locked_wheels_build_says_run_lock_packages(
        tmp_path: Path) -> None:
    r = pin("build", str(_lock(tmp_path)), "--base", BASE, "--registry", "127.0.0.1:9",
            "--format", "json")
    assert r.returncode == 8, r.stderr
    json_result(r)
    assert "records no wheels to fetch" in r.stderr and "pin lock packages" in r.stderr


def test_the_registry_comes_from_the_lock_image(tmp_path: Path) -> None:
    path = _lock(tmp_path)
    lock = read_lock(path)
    recorded = "127.0.0.1:9/team/trial@sha256:" + "b" * 64
    image = Image(base=Pinned(value="127.0.0.1:9/pin/base", origin="user"),
                  base_digest=Pinned(value="sha256:" + "a" * 64, origin="user"),
                  digest=Pinned(value="sha256:" + "b" * 64, origin="derived"),
                  ref=Pinned(value=recorded, origin="derived"), epoch=1_700_000_000)
    write_lock(amend(lock, image=image), path)
    # No --registry: pin goes to the lock's registry (nothing listens on port 9: exit 8
    # naming that registry, after the wheel step, which has no wheels either).
    r = pin("build", str(path), "--wheelhouse", str(tmp_path), "--quiet")
    assert r.returncode == 8, r.stderr
    assert "127.0.0.1:9" in r.stderr and "does not know where to push" not in r.stderr


def test_base_build_with_a_missing_recipe_is_exit_8_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-recipe.toml"
    r = pin("base", "build", "--recipe", str(missing), "--registry", "127.0.0.1:9")
    assert r.returncode == 8, r.stderr
    assert str(missing) in r.stderr and "Traceback" not in r.stderr


def test_login_without_a_password_is_refused(tmp_path: Path) -> None:
    r = subprocess_login(tmp_path, b"\n")
    assert r.returncode == 2, r.stderr
    assert "non-empty password" in r.stderr.decode()
    assert not (tmp_path / "docker" / "config.json").exists()


def test_login_to_nothing_is_exit_8_and_stores_nothing(tmp_path: Path) -> None:
    r = subprocess_login(tmp_path, b"secret-pw\n")
    assert r.returncode == 8, r.stderr
    assert b"secret-pw" not in r.stderr + r.stdout
    assert not (tmp_path / "docker" / "config.json").exists()


def subprocess_login(tmp_path: Path, stdin: bytes):  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys

    env = dict(os.environ, DOCKER_CONFIG=str(tmp_path / "docker"))
    return subprocess.run([sys.executable, "-m", "pinning", "login", "127.0.0.1:9", "-u",
                           "me", "--password-stdin"], input=stdin, capture_output=True,
                          env=env, timeout=60)


@pytest.mark.parametrize("base", ["docker.io/rocm/vllm:latest",
                                  "rocm/vllm@sha256:" + "c" * 64, "not a reference"])
def test_a_base_not_pinned_by_digest_is_refused_before_anything_else(
        tmp_path: Path, base: str) -> None:
    r = pin("build", str(_lock(tmp_path)), "--base", base, "--registry", "127.0.0.1:9")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "127.0.0.1:9" not in r.stderr
