"""Benchmark (printed, not asserted): writing a lock is linear in its size.

Median wall time of ``write_lock`` (render + atomic write) of a frozen lock holding 5,000
and 20,000 packages: the example MI300X lock with a ``[packages]`` table added, as
``pin freeze`` writes it for a host with that many distributions. Targets: 1 s for 5,000,
4 s for 20,000 (linear; tomlkit's per-key table scan made these 4.6 s and 72 s).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from common import median_s, report

from pinning.lockfile.io import amend, read_lock, write_lock

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"


def main() -> None:
    base = read_lock(LOCK)
    results: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as d:
        for n, runs, target in ((5_000, 5, 1.0), (20_000, 3, 4.0)):
            lock = amend(base, packages={f"pkg-{i}": f"{i % 97}.{i % 13}.{i}"
                                         for i in range(n)})
            dest = Path(d) / f"frozen-{n}.lock"
            results[f"write_lock: {n:,} packages (s)"] = (
                median_s(lambda lock=lock, dest=dest: write_lock(lock, dest), runs), target)
    report(results)


if __name__ == "__main__":
    main()
