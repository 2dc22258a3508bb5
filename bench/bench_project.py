"""Benchmarks for issue 34 (printed, not asserted): medians of repeated runs, on a copy of
examples/migration (two targets: H100 and MI300X).

- `pin lock` (every target, one process, the matrix read once) against the peer a user had
  before: one `pin resolve --target NAME` process per target, interleaved (ratio <= 1.0:
  one lock of the project costs no more than its locks one by one; each <= 0.6 s, issue 2's
  0.3 s per resolve)
- `pin trial` from nothing (audit, lock, accept judge x2, cost, report; no build here;
  target <= 5 s), and
  run again with nothing changed (every stage `unchanged`: the inputs are hashed, nothing is
  re-run; target <= 0.5 s)

The issue names no speed goal: the targets here are the ones this file states.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import median_s, report

PIN = [str(Path(sys.executable).with_name("pin"))]
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "migration"


def _run(*args: str, cwd: Path) -> None:
    subprocess.run([*PIN, *args], check=True, capture_output=True, cwd=cwd)


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d) / "migration"
        shutil.copytree(EXAMPLE, folder)
        lock = folder / "pin.lock"

        def pin_lock() -> None:
            lock.unlink(missing_ok=True)
            _run("lock", cwd=folder)

        def one_by_one() -> None:
            for name in ("current", "candidate"):
                _run("resolve", "--target", name, "-o", f"{d}/{name}.lock", cwd=folder)

        rounds = [(median_s(pin_lock, 1), median_s(one_by_one, 1)) for _ in range(7)]
        together = sorted(a for a, _ in rounds)[3]
        apart = sorted(b for _, b in rounds)[3]
        ratio = sorted(a / b for a, b in rounds)[3]

        def fresh_trial() -> None:
            shutil.rmtree(folder / ".pin", ignore_errors=True)
            lock.unlink(missing_ok=True)
            _run("trial", cwd=folder)

        first = median_s(fresh_trial, 5)
        again = median_s(lambda: _run("trial", cwd=folder), 7)
    report({
        "pin lock, 2 targets (process) s": (together, 0.6),
        "pin resolve --target x2 (processes) s": (apart, 0.6),
        "pin lock / resolve one by one (interleaved)": (ratio, 1.0),
        "pin trial from nothing (process) s": (first, 5.0),
        "pin trial again, nothing changed (process) s": (again, 0.5),
    })


if __name__ == "__main__":
    main()
