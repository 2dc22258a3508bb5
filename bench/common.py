"""Shared helpers of the benchmark scripts: timing medians and the printed table."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable


def median_s(fn: Callable[[], object], n: int) -> float:
    """Median wall time of ``n`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def report(results: dict[str, tuple[float, float]]) -> None:
    """Print ``{name: (median, target)}`` as a table, then as one JSON line."""
    print(f"{'benchmark':<48} {'median':>10} {'target':>8}")
    for k, (v, target) in results.items():
        mark = "ok" if v <= target else "OVER"
        print(f"{k:<48} {v:>10.4f} {target:>8} {mark}")
    print(json.dumps({k: round(v, 5) for k, (v, _) in results.items()}))
