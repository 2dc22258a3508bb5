"""``pin freeze LOCK --target NAME`` on a multi-target lock (lock-version 2), as a user
runs it against the recorded MI300X host: the host's values go into that target's section
only (the other target's content hash and values identical), the file stays lock-version 2
and valid; ``-o -`` prints the whole file; several targets and none named is exit 2 naming
them; the single-target freeze is unchanged (tests/unit/cli/test_cli_host.py).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pinning.lockfile.io import read_lock
from pinning.matrix.load import Matrix
from tests.support.cli import json_result, pin
from tests.support.hosts import MI300X
from tests.support.locks import lock_for
from tests.support.multilock_locktargets import H200, views, write_multi

HOST = ["--root", str(MI300X / "root"), "--replay", str(MI300X / "commands.toml")]


@pytest.fixture
def multi(tmp_path: Path, matrix: Matrix) -> Path:
    candidate = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    return write_multi(tmp_path / "pin.lock", {"current": read_lock(H200),
                                               "candidate": candidate})


def test_freeze_one_target(multi: Path) -> None:
    before = views(multi)
    r = pin("freeze", str(multi), "--target", "candidate", *HOST)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].startswith(
        f"Froze root {MI300X / 'root'} into {multi} [targets.candidate] (snapshot sha256:")
    after = views(multi)
    assert after["current"] == before["current"]  # the sibling: hash and values identical
    assert after["candidate"]["frozen"]["snapshot"].startswith("sha256:")
    assert "frozen" not in after["current"]
    assert tomllib.loads(multi.read_text())["lock-version"] == 2
    assert pin("lock", "validate", str(multi)).returncode == 0


def test_freeze_json_and_stdout(multi: Path) -> None:
    raw = multi.read_bytes()
    r = pin("freeze", str(multi), "--target", "candidate", *HOST, "-o", "-")
    assert r.returncode == 0, r.stderr
    assert multi.read_bytes() == raw
    whole = tomllib.loads(r.stdout)
    assert whole["lock-version"] == 2 and list(whole["targets"]) == ["current", "candidate"]
    assert "frozen" in whole["targets"]["candidate"]
    doc = json_result(pin("freeze", str(multi), "--target", "candidate", *HOST,
                          "--format", "json"))
    assert doc["target"] == "candidate" and doc["lockfile"] == str(multi)
    assert views(multi)["candidate"] == doc["lock"]


def test_freeze_needs_the_target(multi: Path) -> None:
    raw = multi.read_bytes()
    r = pin("freeze", str(multi), *HOST)
    assert r.returncode == 2
    assert f"{multi} locks 2 targets (current, candidate); name one with --target NAME." \
        in r.stderr
    r = pin("freeze", str(multi), "--target", "edge", *HOST)
    assert r.returncode == 2 and "has no such target" in r.stderr
    assert multi.read_bytes() == raw
