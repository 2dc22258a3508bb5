"""pin serve end to end, as a team uses it: a real ``pin serve`` process (SQLite and a real
PostgreSQL, the same tests), ``pin lock push`` of the lock frozen from the recorded MI300X
host (tests/data/hosts/mi300x-rocm7.1) assigned to a group, ``pin verify --report-to`` from
that host and from a copy whose GPU 0 CP_MEC1 firmware changed, ``pin lock pull`` by a
12-hex prefix; with a report token, without one (401) and with one bound to another host
(403). And ``pin serve`` with no options at all: SQLite in ``$XDG_DATA_HOME/pin/pin.db``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinning.fleet.reason import short_reason
from pinning.verify.report import VerifyReport
from tests.support.cli import pin
from tests.support.hosts import HostCopy
from tests.support.paths import HOSTS, ROOT
from tests.support.serve import (
    LISTENING,
    admin_token,
    mi300x_lock_bytes,
    serving,
    stop_serve,
)

HOST = HOSTS / "mi300x-rocm7.1"
PROBE = ["--root", str(HOST / "root"), "--replay", str(HOST / "commands.toml")]
GROUP = "mi300x"


def _env(**extra: str) -> dict[str, str]:
    """This environment without any ``PIN_*`` variable (no token unless given), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIN_")}
    return env | extra


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


def _host(url: str, name: str) -> Any:
    """``GET /api/v1/hosts/{name}``; ``None`` for 404."""
    try:
        return _get(f"{url}/api/v1/hosts/{name}")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def _drifted(host_copy: HostCopy) -> list[str]:
    """``--root/--replay`` of a copy of the recorded host whose first ``FW_VERSION: 32959``
    (GPU 0's CP_MEC1) reads 32960, as in tests/integration/test_slurm.py.
    """
    host = host_copy("mi300x-rocm7.1")
    fw = host / "out" / "amd-smi-firmware.txt"
    text = fw.read_text()
    assert "FW_VERSION: 32959\n" in text
    fw.write_text(text.replace("FW_VERSION: 32959\n", "FW_VERSION: 32960\n", 1))
    return ["--root", str(host / "root"), "--replay", str(host / "commands.toml")]


class Site:
    """A running service with the lock pushed and assigned to ``GROUP``."""

    def __init__(self, url: str, db_url: str, lock: Path, lock_hash: str) -> None:
        self.url, self.db_url, self.lock, self.lock_hash = url, db_url, lock, lock_hash

    def verify(self, *probe: str, host: str, token: str | None,
               fmt: str = "text") -> subprocess.CompletedProcess[str]:
        extra = {} if token is None else {"PIN_TOKEN": token}
        return pin("verify", str(self.lock), *probe, "--report-to", self.url,
                   "--report-host", host, "--report-group", GROUP, "--format", fmt,
                   env=_env(**extra))


@pytest.fixture
def site(store_url: str, tmp_path: Path) -> Iterator[Site]:
    lock = tmp_path / "site.lock"
    lock.write_bytes(mi300x_lock_bytes())
    with serving(store_url) as (url, _, _proc):
        publish = admin_token(store_url, "publish")
        done = pin("lock", "push", str(lock), "--to", url, "--assign-group", GROUP,
                   env=_env(PIN_TOKEN=publish))
        assert done.returncode == 0, done.stderr
        lock_hash = done.stdout.strip()
        assert lock_hash.startswith("sha256:") and len(lock_hash) == 71
        assert publish not in done.stdout + done.stderr
        assert _get(f"{url}/api/v1/assignments")["groups"] == {GROUP: lock_hash}
        yield Site(url, store_url, lock, lock_hash)


def test_a_matching_host_reports_with_a_token_and_is_listed_as_match(site: Site) -> None:
    token = admin_token(site.db_url, "report")
    done = site.verify(*PROBE, host="gpu01", token=token)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"reported to {site.url}: match"
    assert token not in done.stdout + done.stderr
    answer = _host(site.url, "gpu01")
    status = answer["host"]
    assert (status["result"], status["lock_hash"], status["group"]) == (
        "match", site.lock_hash, GROUP)
    assert status["reason"] is None and status["reasons"] == []
    assert [r["result"] for r in answer["history"]] == ["match"]
    assert _get(f"{site.url}/api/v1/hosts?status=match")["total"] == 1


def test_a_report_without_a_token_is_refused_and_nothing_stored(site: Site) -> None:
    done = site.verify(*PROBE, host="gpu01", token=None)
    assert done.returncode == 13, (done.stdout, done.stderr)
    assert "401" in done.stderr and "token" in done.stderr.lower(), done.stderr
    assert "Traceback" not in done.stderr
    assert _host(site.url, "gpu01") is None
    assert _get(f"{site.url}/api/v1/hosts")["total"] == 0


def test_a_drifting_host_is_6_locally_and_drift_on_the_service_with_the_same_reason(
        site: Site, host_copy: HostCopy) -> None:
    probe = _drifted(host_copy)
    token = admin_token(site.db_url, "report")
    done = site.verify(*probe, host="other-node", token=token, fmt="json")
    assert done.returncode == 6, done.stderr
    local = VerifyReport.model_validate(json.loads(done.stdout)["result"])
    assert local.result == "drift"
    status = _host(site.url, "other-node")["host"]
    assert status["result"] == "drift" and status["lock_hash"] == site.lock_hash
    reason = status["reason"]
    assert reason == short_reason(local.drift)  # the same words pin verify judged by
    assert reason == "pin: firmware.blocks[0] CP_MEC1=32959!=CP_MEC1=32960"
    assert f"reported to {site.url}: drift ({reason})" in done.stderr
    assert status["reasons"] == [reason.removeprefix("pin: ")]
    drift = _get(f"{site.url}/api/v1/hosts?status=drift")
    assert [h["host"] for h in drift["hosts"]] == ["other-node"]


def test_a_host_bound_token_cannot_report_as_another_host(site: Site) -> None:
    token = admin_token(site.db_url, "report", "node-a")
    done = site.verify(*PROBE, host="node-b", token=token)
    assert done.returncode == 13, (done.stdout, done.stderr)
    assert "403" in done.stderr
    assert _host(site.url, "node-b") is None
    ok = site.verify(*PROBE, host="node-a", token=token)
    assert ok.returncode == 0, ok.stderr
    assert _host(site.url, "node-a")["host"]["result"] == "match"


def test_pull_by_a_12_hex_prefix_gives_the_pushed_bytes(site: Site, tmp_path: Path) -> None:
    out = tmp_path / "pulled.lock"
    prefix = site.lock_hash.removeprefix("sha256:")[:12]
    done = pin("lock", "pull", prefix, "--from", site.url, "-o", str(out), env=_env())
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == site.lock.read_bytes()
    missing = pin("lock", "pull", "0" * 12, "--from", site.url, "-o",
                  str(tmp_path / "none.lock"), env=_env())
    assert missing.returncode == 13 and "404" in missing.stderr
    assert not (tmp_path / "none.lock").exists()


def test_pin_serve_with_no_options_keeps_sqlite_in_the_data_folder(tmp_path: Path) -> None:
    """``pin serve`` with no configuration (only ``--port 0``: 8470 may be taken here)."""
    data, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "pinning", "serve", "--port", "0"],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True,
                                env=_env(XDG_DATA_HOME=str(data), HOME=str(home)))
    try:
        deadline = time.monotonic() + 60
        while not (m := LISTENING.search(log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        db = data / "pin" / "pin.db"
        assert f"(database sqlite:///{db})" in log.read_text()
        assert db.is_file()
        health = _get(f"{m.group(1)}/api/v1/health")
        assert (health["status"], health["database"]) == ("ok", "sqlite")
        assert not (home / ".local").exists()
    finally:
        assert stop_serve(proc) == 0
