"""Benchmark for issue 29 §3 (printed, not asserted): how fast ``pin resolve`` starts.

Runs ``pin resolve --gpu mi300x --framework pytorch==2.13.0 -o FILE`` and ``python -c pass``
alternately in one loop (so both see the same machine load) and prints the median of each
and their ratio. Targets: ``pin resolve`` <= 0.15 s on a quiet machine and <= 6x
``python -c pass``; on a busy machine the ratio is the figure to read.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import report

PIN = str(Path(sys.executable).with_name("pin"))
RUNS = 21


def _time(argv: list[str]) -> float:
    """Wall time of one run of ``argv`` to completion, in seconds."""
    t = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        resolve = [PIN, "resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0",
                   "-o", str(Path(d) / "pin.lock")]
        bare = [sys.executable, "-c", "pass"]
        _time(resolve)  # warm the file cache and write the lock once
        pins, pythons = [], []
        for _ in range(RUNS):
            pins.append(_time(resolve))
            pythons.append(_time(bare))
    pin_s, python_s = statistics.median(pins), statistics.median(pythons)
    report({
        "pin resolve (process) s": (pin_s, 0.15),
        "python -c pass (process) s": (python_s, 0.05),
        "ratio pin resolve / python -c pass": (pin_s / python_s, 6.0),
    })


if __name__ == "__main__":
    main()
