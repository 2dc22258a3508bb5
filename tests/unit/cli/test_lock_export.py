"""``pin lock export`` as a user runs it: standard output by default, ``-o FILE`` written
atomically with a line on stderr, byte-identical reruns, and the refusals (a shipped lock
without wheels names `pin lock packages`, exit 2; a bad lock exit 5; a missing --format exit
2). Installing what it writes is tests/integration/test_lock_export_install.py.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pinning.lockfile.io import amend, read_lock, write_lock
from tests.support.cli import pin
from tests.support.paths import ROOT
from tests.support.pyindex import with_two_wheels

SHIPPED = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    """A copy of the shipped MI300X lock with two real wheels recorded (URL, size, sha256)."""
    path = tmp_path / "pin.lock"
    write_lock(with_two_wheels(read_lock(SHIPPED), tmp_path / "w"), path)
    return path


def test_stdout_and_output_file(lock: Path, tmp_path: Path) -> None:
    r = pin("lock", "export", str(lock), "--format", "pylock")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    doc = tomllib.loads(r.stdout)
    assert doc["lock-version"] == "1.0"
    assert [p["name"] for p in doc["packages"]] == ["filelock", "torch"]
    out = tmp_path / "requirements.txt"
    w = pin("lock", "export", str(lock), "--format", "requirements", "-o", str(out))
    assert w.returncode == 0, w.stderr
    assert w.stdout == ""
    assert w.stderr.strip() == f"Wrote {out} (requirements, 2 wheel(s))"
    text = out.read_text()
    assert "--index-url http://127.0.0.1:9/simple\n" in text
    assert "torch==2.13.0+rocm7.2 \\\n    --hash=sha256:" in text
    again = pin("lock", "export", str(lock), "--format", "requirements", "-o", "-")
    assert again.returncode == 0 and again.stdout == text
    mtime = out.stat().st_mtime_ns
    same = pin("lock", "export", str(lock), "--format", "requirements", "-o", str(out))
    assert same.returncode == 0 and same.stderr.strip() == f"{out}: unchanged, not rewritten."
    assert out.stat().st_mtime_ns == mtime and out.read_text() == text


def test_a_lock_without_wheels_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "pylock.toml"
    r = pin("lock", "export", str(SHIPPED), "--format", "pylock", "-o", str(out))
    assert r.returncode == 2
    assert "records no wheels" in r.stderr
    assert f"pin lock packages {SHIPPED}" in r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists()


def test_a_package_without_its_hash_is_named(lock: Path, tmp_path: Path) -> None:
    partial = tmp_path / "partial.lock"
    old = read_lock(lock)
    write_lock(amend(old, packages={**(old.packages or {}), "rich": "13.0"}), partial)
    r = pin("lock", "export", str(partial), "--format", "requirements")
    assert r.returncode == 2
    assert "no hashed wheel for rich==13.0" in r.stderr
    assert r.stdout == ""


def test_bad_lock_and_usage(tmp_path: Path, lock: Path) -> None:
    bad = tmp_path / "bad.lock"
    bad.write_text("lock-version = 1\n")
    assert pin("lock", "export", str(bad), "--format", "pylock").returncode == 5
    r = pin("lock", "export", str(lock))
    assert r.returncode == 2 and "--format" in r.stderr
    r = pin("lock", "export", str(lock), "--format", "conda")
    assert r.returncode == 2
