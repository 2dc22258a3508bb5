"""A pin service whose answer cannot be parsed (100,000-deep JSON, a 5,000-digit integer,
not JSON at all), as a success or as an error status, is exit 13 for ``pin lock push``,
``pin lock pull`` and ``pin verify --report-to`` on a matching host; on a drifting host the
local result (6) decides. Served for real on 127.0.0.1 (tests/unit/remote/service.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import pin
from tests.support.hosts import HostCopy
from tests.support.paths import HOSTS
from tests.unit.remote.service import GOOD, FakeService

HOST = HOSTS / "mi300x-rocm7.1"
PROBE = ["--root", str(HOST / "root"), "--replay", str(HOST / "commands.toml")]
ANSWERS = {
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "huge-int": b'{"content_hash": ' + b"7" * 5_000 + b', "result": "match"}',
    "deep-error-body": b'{"error": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "not-json": b"\xff\xfe<html>",
}
WHY = {"deep": "JSON nested too deeply", "huge-int": "a number too long to read",
       "deep-error-body": "", "not-json": "not JSON (not UTF-8 text: byte 0)"}





def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PIN_")} | {
        "PIN_TOKEN": GOOD}


def _answering(service: FakeService, kind: str, status: int) -> None:
    service.force = (status, {"Content-Type": "application/json"}, ANSWERS[kind])


def _no_crash(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr, done.stderr
    assert "This is a bug in pin" not in done.stderr


def _command(name: str, url: str, lock: Path, out: Path) -> list[str]:
    if name == "push":
        return ["lock", "push", str(lock), "--to", url]
    if name == "pull":
        return ["lock", "pull", "sha256:" + "ab" * 32, "--from", url, "-o", str(out)]
    return ["verify", str(lock), *PROBE, "--report-to", url, "--report-host", "gpu01"]


@pytest.mark.parametrize("status", [200, 404])
@pytest.mark.parametrize("kind", sorted(ANSWERS))
@pytest.mark.parametrize("command", ["push", "pull", "verify"])
def test_an_unparsable_answer_is_exit_13(service: FakeService, frozen_lock: Path,
                                         tmp_path: Path, command: str, kind: str,
                                         status: int) -> None:
    _answering(service, kind, status)
    out = tmp_path / "pulled.lock"
    done = pin(*_command(command, service.url, frozen_lock, out), env=_env())
    assert done.returncode == 13, done.stderr
    _no_crash(done)
    assert service.url in done.stderr and not out.exists()
    if status == 200 and command != "pull":  # pull's 2xx answer is a lock, read as TOML
        assert "with something pin does not understand" in done.stderr
        assert WHY[kind] in done.stderr
    if status == 404:  # the body is quoted, bounded, as any error body that is not pin's
        assert "HTTP 404" in done.stderr and len(done.stderr) < 2_000
    assert "reported to" not in done.stdout


@pytest.mark.parametrize("kind", ["deep", "huge-int"])
def test_drift_decides_over_an_unparsable_answer(service: FakeService, frozen_lock: Path,
                                                 host_copy: HostCopy, kind: str) -> None:
    host = host_copy("mi300x-rocm7.1")
    fw = host / "out" / "amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("FW_VERSION: 32959\n", "FW_VERSION: 32960\n", 1))
    _answering(service, kind, 201)
    done = pin("verify", str(frozen_lock), "--root", str(host / "root"), "--replay",
               str(host / "commands.toml"), "--report-to", service.url, "--report-host",
               "gpu01", env=_env())
    assert done.returncode == 6, done.stderr
    _no_crash(done)
    assert "has drifted" in done.stderr and WHY[kind] in done.stderr
