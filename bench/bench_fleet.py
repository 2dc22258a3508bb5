"""Benchmarks for issue 17 (printed, not asserted): medians of repeated runs, on one core.

10,000 host snapshots generated from the recorded MI300X host (tests/support/fleetgen.py:
most hosts unchanged, 30 % with one or two drifts, 10 % written as the probe envelope, 3
broken), verified against its frozen lock:

- `pin fleet verify LOCK DIR` as a whole process, pinned to CPU 0 (target <= 10 s)
- `pin fleet verify LOCK --from FILE.jsonl`, the same hosts as JSON Lines (target <= 10 s)
- the per-host cost of the folder run, in ms (target <= 1 ms)
- FleetVerifier in-process with identical snapshots verified again each time (memo off),
  i.e. 10,000 distinct snapshots (target <= 10 s)
- the old path: read_snapshot + verify() per host, on a sample, extrapolated to 10,000
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import median_s, report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pinning.fleet.batch import FleetVerifier, jsonl_inputs  # noqa: E402
from pinning.guards import engine  # noqa: E402
from pinning.lockfile.io import read_lock  # noqa: E402
from pinning.matrix.load import load_matrix  # noqa: E402
from pinning.probe.snapshot import read_snapshot  # noqa: E402
from pinning.verify.report import verify  # noqa: E402
from tests.support.fleetgen import (  # noqa: E402 - after the path tweak
    base_snapshot,
    generate,
    write_folder,
    write_jsonl,
)

PIN = [str(Path(sys.executable).with_name("pin"))]
HOST = ROOT / "tests/data/hosts/mi300x-rocm7.1"
HOSTS = 10_000
SAMPLE = 300  # hosts timed on the old path
CPU = 0


def one_core() -> None:
    """Pin the calling process (and what it starts) to CPU 0."""
    os.sched_setaffinity(0, {CPU})


def run(*args: str) -> None:
    subprocess.run([*PIN, *args], check=True, capture_output=True)


def fleet_run(*args: str) -> None:
    """`pin fleet verify ...` on CPU 0; exit 6 (some hosts drift) is the expected result."""
    done = subprocess.run([*PIN, "fleet", "verify", *args, "-q"], capture_output=True,
                          preexec_fn=one_core)
    if done.returncode != 6:
        raise SystemExit(f"pin fleet verify exited {done.returncode}: {done.stderr[-500:]!r}")


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        lock = str(tmp / "pin.lock")
        run("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1",
            "-o", lock)
        run("freeze", lock, "--root", str(HOST / "root"), "--replay",
            str(HOST / "commands.toml"))
        base = base_snapshot()
        folder, lines = tmp / "snapshots", tmp / "fleet.jsonl"
        write_folder(folder, generate(base, HOSTS, unreadable=3))
        write_jsonl(lines, generate(base, HOSTS, unreadable=3))
        fleet_run(lock, str(folder))  # warm the page cache
        by_dir = median_s(lambda: fleet_run(lock, str(folder)), 5)
        by_lines = median_s(lambda: fleet_run(lock, "--from", str(lines)), 5)

        one_core()  # the in-process figures on CPU 0 too
        lk, matrix = read_lock(Path(lock)), load_matrix()

        def distinct() -> None:
            verifier = FleetVerifier(lk, matrix, lock_name=lock, memo=False)
            with lines.open("rb") as f:
                verifier.run(jsonl_inputs(f, str(lines)))

        no_memo = median_s(distinct, 3)
        files = sorted(folder.glob("*.json"))[:: HOSTS // SAMPLE][:SAMPLE]
        per_host = []
        for _ in range(3):
            t = time.perf_counter()
            for path in files:
                try:
                    facts = read_snapshot(path)
                except Exception:  # the broken ones: the old path stops there too
                    continue
                verify(lk, facts, matrix, lock_name=lock, host_name=path.stem)
            per_host.append((time.perf_counter() - t) / len(files))
        old = statistics.median(per_host) * HOSTS
        before = []  # as before issue 17: verify() read the guard rules file on every call
        for _ in range(3):
            t = time.perf_counter()
            for path in files[:100]:
                try:
                    facts = read_snapshot(path)
                except Exception:
                    continue
                engine._SHIPPED = None
                verify(lk, facts, matrix, lock_name=lock, host_name=path.stem)
            before.append((time.perf_counter() - t) / 100)
        older = statistics.median(before) * HOSTS
    results = {
        "pin fleet verify 10k, folder, 1 core s": (by_dir, 10.0),
        "pin fleet verify 10k, JSON Lines, 1 core s": (by_lines, 10.0),
        "pin fleet verify per host (folder) ms": (by_dir / HOSTS * 1000, 1.0),
        "FleetVerifier 10k all verified (memo off) s": (no_memo, 10.0),
        "old: snapshot + verify() x 10k (extrapol.) s": (old, float("inf")),
        "pre-#17: rules read per verify() x 10k s": (older, float("inf")),
    }
    report(results)
    print(f"old path / pin fleet verify (folder): {old / by_dir:.1f}x "
          f"(pre-#17: {older / by_dir:.1f}x); per host {old / HOSTS * 1000:.2f} ms "
          f"(pre-#17 {older / HOSTS * 1000:.2f} ms) -> {by_dir / HOSTS * 1000:.3f} ms")


if __name__ == "__main__":
    main()
