"""``pin lock model`` and ``pin freeze`` with a model file that a writer changes while pin
hashes it (in-process, so the writer acts at a chosen moment of pin's read): changed once,
the new bytes are pinned; changed at every read, exit 6 naming the file, the lock untouched.
"""

from __future__ import annotations

import hashlib
import shutil
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pinning.cli import main
from tests.support.hosts import MI300X
from tests.support.rewrite import grow, rewrite_while_hashing

RESOLVE = ("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1")


def run(tmp_path: Path, *args: str) -> Result:
    env = {"PIN_CACHE_DIR": str(tmp_path / "pin-cache"), "PIN_MATRIX": None,
           "HF_HUB_CACHE": str(tmp_path / "no-cache"), "HF_HOME": None}
    return CliRunner(env=env).invoke(main, list(args))


def files_of(lock: Path) -> dict[str, str]:
    return {f["path"]: f["sha256"] for f in tomllib.loads(lock.read_text())["model"]["files"]}


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    folder = tmp_path / "host" / "root" / "models" / "ckpt"
    folder.mkdir(parents=True)
    (folder / "config.json").write_bytes(b'{"hidden_size": 384}\n')
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    return folder


@pytest.fixture
def lock(tmp_path: Path, ckpt: Path) -> Path:
    out = tmp_path / "pin.lock"
    done = run(tmp_path, *RESOLVE, "--model", str(ckpt), "--no-model-files", "-o", str(out))
    assert done.exit_code == 0, done.output
    return out


def test_lock_model_pins_the_bytes_of_a_file_changed_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ckpt: Path, lock: Path) -> None:
    weights = ckpt / "model.safetensors"
    seen = rewrite_while_hashing(monkeypatch, weights, grow(weights), times=1)
    done = run(tmp_path, "lock", "model", str(lock))
    assert done.exit_code == 0, done.output
    now = weights.read_bytes()
    assert now.startswith(b"v1") and (seen.reads, seen.rewrites) == (2, 1)
    assert files_of(lock)["model.safetensors"] == hashlib.sha256(now).hexdigest()


def test_lock_model_refuses_a_file_that_keeps_changing(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ckpt: Path, lock: Path) -> None:
    before = lock.read_bytes()
    weights = ckpt / "model.safetensors"
    rewrite_while_hashing(monkeypatch, weights, grow(weights), times=99)
    done = run(tmp_path, "lock", "model", str(lock))
    assert done.exit_code == 6, done.output
    assert f"{weights}: the file changed while pin was hashing it, twice" in done.stderr
    assert "Stop whatever writes it" in done.stderr and "Traceback" not in done.output
    assert lock.read_bytes() == before  # nothing written


def test_freeze_refuses_a_model_file_that_keeps_changing(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ckpt: Path) -> None:
    host = tmp_path / "host"
    shutil.copytree(MI300X, host, symlinks=True, dirs_exist_ok=True)
    lock = tmp_path / "pin.lock"
    done = run(tmp_path, *RESOLVE, "--model", "/models/ckpt", "--no-model-files", "-o",
               str(lock))
    assert done.exit_code == 0, done.output
    before = lock.read_bytes()
    weights = ckpt / "model.safetensors"
    rewrite_while_hashing(monkeypatch, weights, grow(weights), times=99)
    host_args = ["--root", str(host / "root"), "--replay", str(host / "commands.toml")]
    done = run(tmp_path, "freeze", str(lock), *host_args)
    assert done.exit_code == 6, done.output
    assert "model.safetensors: the file changed while pin was hashing it" in done.stderr
    assert lock.read_bytes() == before
