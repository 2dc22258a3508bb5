"""Benchmarks for `pin fleet verify` (issues 17 and 33; printed, not asserted).

A realistic fleet (tests/support/fleetgen.py `realistic_hosts`): the recorded MI300X host
grown to 8 GPUs and 300 Python packages (about 29 kB a snapshot), probed live, every
snapshot distinct. What differs is what pin's snapshot format has per host: the GPUs' PCI
addresses and every sysfs path naming them, and the probe root (`/` on the host, `/host`
from the DaemonSet). pin's schema (pinning/probe/models.py) is strict and has no serial
number, telemetry, uptime or host name field, so those cannot differ; the Python paths,
ROCM_PATH and the model's location are the same on every host of one deployment. 30 % of
hosts drifted (a firmware block, the PLDM bundle, the driver, kernel, ROCm, a package
upgraded or removed, a behaviour variable; 64 drifted variants). The lock is frozen from
one such host.

Each figure is the CPU time (user + system, `os.wait4` of the child) of a whole
`pin fleet verify LOCK --from - -q` process on CPU 0, its snapshots piped in by this
script (whose own CPU time is not counted); runs are interleaved (one host, distinct,
identical, one host, ...) and the medians compared:

- per-host CPU ms of a distinct snapshot (goal <= 0.15 ms) and of an identical one (every
  host the same bytes): (run - one-host run) / hosts, so the start (imports, lock,
  matrix) is not spread over the hosts
- per-host CPU ms of the full path: 2,000 hosts that each differ in a package version or
  a variable (what verify reads), so none shares a verdict (goal 0.15 ms, printed to show
  what a fleet that really differs costs)
- the 10,000-host CPU time of the distinct fleet, start included (goal < 1 s)
- linear growth: per-host CPU at 100,000 hosts over that at 10,000 (goal <= 1.2x)
- peak RSS (ru_maxrss) of the 100,000-host run, text and --format json (goal <= 100 MiB:
  the output is streamed, only counts are kept)
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from common import report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fleetgen import host_text, realistic_base, realistic_hosts  # noqa: E402

PIN = str(Path(sys.executable).with_name("pin"))
SMALL, LARGE, FULL = 10_000, 100_000, 2_000
REPEATS = 3
CPU = 0


def one_core() -> None:
    """Pin the calling process (and what it starts) to CPU 0."""
    os.sched_setaffinity(0, {CPU})


def child(lock: str, lines: Iterable[str], *extra: str) -> tuple[float, float]:
    """Run `pin fleet verify LOCK --from - -q` with ``lines`` on its standard input; its
    CPU seconds and peak RSS in MiB. Exit 6 (some host drifts) or 0 is expected.
    """
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([PIN, "fleet", "verify", lock, "--from", "-", "-q", *extra],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err,
                                preexec_fn=one_core)
        assert proc.stdin is not None
        for line in lines:
            proc.stdin.write(line.encode() + b"\n")
        proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 6):
            err.seek(0)
            raise SystemExit(f"pin fleet verify exited {proc.returncode}: {err.read()[-500:]!r}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def full_path_hosts(base: dict[str, object], n: int) -> list[str]:
    """``n`` snapshots that each differ from ``base`` in something verify reads: one
    package's version (odd hosts) or one variable (even hosts: HIP_VISIBLE_DEVICES, run
    scoped, or PYTORCH_TUNABLEOP_ENABLED, judged), GPU addresses per host: no two share a
    shape, so every one takes the full path (parse, compare, rule findings).
    """
    import copy

    rng = random.Random(5)
    out = []
    for i in range(n):
        s: dict[str, Any] = copy.deepcopy(base)
        dists = s["python"]["distributions"]
        if i % 2:
            dists[rng.randrange(len(dists))]["version"] += f".post{i}"
        else:
            s["environment"][rng.choice(["HIP_VISIBLE_DEVICES",
                                         "PYTORCH_TUNABLEOP_ENABLED"])] = str(i)
        out.append(host_text(json.dumps(s, separators=(",", ":")), i, rng, 8))
    return out


def main() -> None:
    base = realistic_base()
    one = host_text(json.dumps(base, separators=(",", ":")), 0, random.Random(1), 8)
    with tempfile.TemporaryDirectory() as d:
        lock, host = f"{d}/pin.lock", f"{d}/host.json"
        Path(host).write_text(one + "\n")
        subprocess.run([PIN, "resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7",
                        "--rocm", "7.1.1", "-o", lock], check=True, capture_output=True)
        subprocess.run([PIN, "freeze", lock, "--host", host], check=True, capture_output=True)
        child(lock, [one] * 100)  # warm up
        start, distinct, identical = [], [], []
        for _ in range(REPEATS):  # interleaved
            start.append(child(lock, [one])[0])
            distinct.append(child(lock, realistic_hosts(base, SMALL))[0])
            identical.append(child(lock, [one] * SMALL)[0])
        first = statistics.median(start)
        small = statistics.median(distinct)
        same = statistics.median(identical)
        full = full_path_hosts(base, FULL)
        full_runs = [child(lock, full)[0] for _ in range(REPEATS)]
        large, rss_text = child(lock, realistic_hosts(base, LARGE))
        _, rss_json = child(lock, realistic_hosts(base, LARGE), "--format", "json")
    per_small = (small - first) / (SMALL - 1) * 1000
    per_same = (same - first) / (SMALL - 1) * 1000
    per_large = (large - first) / (LARGE - 1) * 1000
    per_full = (statistics.median(full_runs) - first) / FULL * 1000
    results = {
        "distinct snapshot, per host CPU ms": (per_small, 0.15),
        "identical snapshot, per host CPU ms": (per_same, float("inf")),
        "full path (a package or variable differs on every host), per host CPU ms":
            (per_full, 0.15),
        "10k distinct hosts, CPU s (start included)": (small, 1.0),
        "growth: per host at 100k / at 10k": (per_large / per_small, 1.2),
        "100k hosts peak RSS MiB (text)": (rss_text, 100.0),
        "100k hosts peak RSS MiB (--format json)": (rss_json, 100.0),
    }
    report(results)
    print(f"distinct / identical per host: {per_small / per_same:.2f}x; start {first:.2f} s; "
          f"runs (CPU s) one host {[round(x, 2) for x in start]}, "
          f"distinct {[round(x, 2) for x in distinct]}, "
          f"identical {[round(x, 2) for x in identical]}, 100k {large:.2f}")


if __name__ == "__main__":
    main()
