"""Kill -9 of `pin serve` while reports arrive loses no report it acknowledged.

A real `pin serve` process (SQLite file, and a real PostgreSQL server) takes reports from
eight concurrent clients; after some have been acknowledged (201 with an id), the server is
killed with SIGKILL while the clients are still posting. The database is then opened again:
every acknowledged report is there, with the host, lock and result it was answered with.
A report whose answer never arrived may or may not be stored; none is stored twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import requests

from pinning.serve.storage.store import Store
from tests.support.fleetgen import base_snapshot, generate
from tests.support.serve import admin_token, mi300x_lock_bytes, start_serve, stop_serve

CLIENTS = 8
#: Acknowledged reports to wait for before the kill (the clients keep posting meanwhile).
BEFORE_KILL = 150


def _serve_with_lock(url: str) -> tuple[str, subprocess.Popen[str], str]:
    """`pin serve` on ``url`` with the MI300X lock pushed and assigned to group ``kill``:
    its URL, process and the lock's hash.
    """
    base, admin, process = start_serve(url)
    auth = {"Authorization": f"Bearer {admin}"}
    pushed = requests.post(f"{base}/api/v1/locks", data=mi300x_lock_bytes(), timeout=30,
                           headers={**auth, "Content-Type": "application/toml"})
    assert pushed.status_code == 201, pushed.text
    lock_hash = pushed.json()["content_hash"]
    assigned = requests.put(f"{base}/api/v1/assignments/groups/kill", json={"lock": lock_hash},
                            headers=auth, timeout=30)
    assert assigned.status_code == 200, assigned.text
    return base, process, lock_hash


def _assert_all_stored(url: str, acked: list[tuple[int, str, str]], lock_hash: str) -> None:
    """Every acknowledged ``(id, host, result)`` is stored as it was answered, once."""
    store = Store(url)
    try:
        stored = {}
        for name in {h for _, h, _ in acked}:
            for record in store.host_history(name, limit=10_000):
                stored[record.id] = record
        missing = [(i, h) for i, h, _ in acked if i not in stored]
        assert not missing, f"acknowledged but lost after kill -9: {missing[:5]}"
        for i, h, result in acked:
            assert stored[i].host == h
            assert stored[i].result == result
            assert stored[i].lock_hash == lock_hash
        assert len({i for i, _, _ in acked}) == len(acked)
    finally:
        store.close()


def test_kill_9_loses_no_acknowledged_report(store_url: str) -> None:
    url = store_url
    reporter = admin_token(url, "report")
    base, process, lock_hash = _serve_with_lock(url)
    hosts = list(generate(base_snapshot(), 400, envelopes=0.0))
    acked: list[tuple[int, str, str]] = []  # (id, host, result)
    guard = threading.Lock()
    stop = threading.Event()

    def post(worker: int) -> None:
        session = requests.Session()
        i = worker
        while not stop.is_set():
            name, text = hosts[i % len(hosts)]
            i += CLIENTS
            try:
                resp = session.post(f"{base}/api/v1/hosts/{name}/reports",
                                    params={"group": "kill"}, data=text.encode(),
                                    headers={"Authorization": f"Bearer {reporter}",
                                             "Content-Type": "application/json"}, timeout=30)
            except requests.RequestException:
                return  # the server is gone
            if resp.status_code == 201:
                body = resp.json()
                with guard:
                    acked.append((body["id"], body["host"], body["result"]))

    threads = [threading.Thread(target=post, args=(w,)) for w in range(CLIENTS)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 120
        while len(acked) < BEFORE_KILL and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(acked) >= BEFORE_KILL, "the server acknowledged too few reports"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    stop_serve(process)  # reaps the output reader

    _assert_all_stored(url, acked, lock_hash)
    # The service starts again on the same database and serves what was stored.
    again, _, second = start_serve(url)
    try:
        listed = requests.get(f"{again}/api/v1/hosts", timeout=30).json()
        assert listed["total"] >= len({h for _, h, _ in acked})
    finally:
        stop_serve(second)
