"""Start ``pin serve`` for tests, as a real process on a free port, and the inputs its
report path needs (a lock that matches the recorded MI300X host, that host's snapshot and a
drifting copy of it).

``start_serve(db_url)`` creates an admin token in the database, runs ``python -m pinning
serve --port 0 --db URL``, waits for its ``pin serve: listening on http://...`` line and
returns ``(url, admin_secret, process)``; :func:`stop_serve` sends SIGTERM and waits.
``serving(db_url)`` does both around a ``with`` block.
"""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from tests.support.paths import ROOT

LISTENING = re.compile(r"pin serve: listening on (http://\S+) \(database ")
_READERS: dict[int, threading.Thread] = {}


def admin_token(db_url: str, scope: str = "admin", host: str | None = None) -> str:
    """A new token's secret of ``scope`` in the database ``db_url`` (migrated if new)."""
    from pinning.serve.storage import Store

    store = Store(db_url)
    try:
        return store.create_token(scope, host)[1]
    finally:
        store.close()


def start_serve(db_url: str, *, args: Sequence[str] = (), env: dict[str, str] | None = None,
                timeout_s: float = 60.0) -> tuple[str, str, subprocess.Popen[str]]:
    """Run ``pin serve --port 0 --db db_url [args]``; ``(url, admin secret, process)``
    once it listens. ``RuntimeError`` with its output when it exits or stays silent.
    """
    secret = admin_token(db_url)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pinning", "serve", "--port", "0", "--db", db_url, *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, **(env or {})})
    found: list[str] = []
    seen: list[str] = []
    ready = threading.Event()

    def read() -> None:  # keeps draining the pipe so the server never blocks on it
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            m = LISTENING.search(line)
            if m and not found:
                found.append(m.group(1))
                ready.set()
        ready.set()

    reader = _READERS[proc.pid] = threading.Thread(target=read, daemon=True)
    reader.start()
    ready.wait(timeout_s)
    if not found:
        stop_serve(proc)
        raise RuntimeError("pin serve did not start: " + "".join(seen)[-2000:])
    return found[0], secret, proc


def stop_serve(proc: subprocess.Popen[str], timeout_s: float = 30.0) -> int:
    """SIGTERM ``proc`` and wait for it; its exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(10)
    finally:
        reader = _READERS.pop(proc.pid, None)
        if reader is not None:
            reader.join(10)
        if proc.stdout is not None:
            proc.stdout.close()


@contextmanager
def serving(db_url: str, **kw: Any) -> Iterator[tuple[str, str, subprocess.Popen[str]]]:
    """:func:`start_serve` around a ``with`` block, :func:`stop_serve` after it."""
    url, secret, proc = start_serve(db_url, **kw)
    try:
        yield url, secret, proc
    finally:
        stop_serve(proc)


def mi300x_lock_bytes() -> bytes:
    """The MI300X / PyTorch 2.7 / ROCm 7.1.1 lock frozen from the recorded host
    ``tests/data/hosts/mi300x-rocm7.1``, as ``pin freeze`` writes it.
    """
    from pinning.lockfile.io import render
    from pinning.matrix.load import load_matrix
    from tests.support.locks import frozen_mi300x

    return render(frozen_mi300x(load_matrix())).encode()


def mi300x_snapshot() -> dict[str, Any]:
    """The recorded MI300X host as ``pin probe -o`` writes it (a JSON ``dict``)."""
    from tests.support.fleetgen import base_snapshot

    return base_snapshot("mi300x-rocm7.1")


def drifting(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``snapshot`` whose first GPU's MEC firmware is one step newer (what
    ``tests/data/hosts/mi300x-rocm7.1/out/amd-smi-firmware.txt`` edited would probe).
    """
    out = copy.deepcopy(snapshot)
    fw = out["gpus"][0]["firmware"]
    block = "mec" if "mec" in fw else sorted(fw)[0]
    value = fw[block]
    fw[block] = (f"0x{int(value, 16) + 1:0{len(value) - 2}x}" if value.startswith("0x")
                 else value + ".1")
    return out


def snapshot_bytes(snapshot: dict[str, Any]) -> bytes:
    """``snapshot`` as the JSON bytes a node posts."""
    return json.dumps(snapshot, indent=1).encode()


def manifest_argv(manifest: str, container: str, db_url: str, **flags: str) -> list[str]:
    """The command line a container of deploy/kubernetes/serve/``manifest`` runs, with
    ``$(PIN_DB_URL)`` set to ``db_url`` and each ``--flag`` in ``flags`` (``wait="0"``) given
    that value instead, as Kubernetes would expand it."""
    import yaml

    doc: dict[str, Any] = yaml.safe_load(
        (ROOT / "deploy" / "kubernetes" / "serve" / manifest).read_text())
    spec = doc["spec"]["template"]["spec"]
    (c,) = [c for c in [*spec.get("initContainers", []), *spec["containers"]]
            if c["name"] == container]
    argv = [a.replace("$(PIN_DB_URL)", db_url) for a in [*c["command"], *c["args"]]]
    for name, value in flags.items():
        argv[argv.index(f"--{name}") + 1] = value
    return argv


def image_builder() -> ModuleType:
    """deploy/image/build.py (what ``make image`` runs) loaded as a module (it is a script,
    not part of the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("pin_image_build",
                                                  ROOT / "deploy" / "image" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
