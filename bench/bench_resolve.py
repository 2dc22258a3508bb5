"""Benchmarks for issue 2 (printed, not asserted): medians of repeated runs.

- `pin resolve` as a whole process (target <= 0.3 s)
- the resolve call in-process (target <= 5 ms)
- resolve against a synthetic matrix 100x the shipped one (target <= 50 ms)
- `pin --help` as a whole process (target <= 0.15 s)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from common import median_s, report

from pinning.matrix.load import LoadedFile, Matrix, load_matrix
from pinning.resolve.constraints import Constraints, parse_framework
from pinning.resolve.resolver import resolve

PIN = [str(Path(sys.executable).with_name("pin"))]



def synthetic(m: Matrix, factor: int) -> Matrix:
    """Every release row repeated ``factor`` times under distinct fake versions."""
    files = []
    for f in m.files:
        rels = []
        for k in range(factor):
            for r in f.data.releases:
                major, rest = r.version.split(".", 1)
                rels.append(r.model_copy(update={"version": f"{int(major) + 100 * k}.{rest}"}))
        data = f.data.model_copy(update={"releases": rels})
        files.append(LoadedFile(f.name, f.path, f.sha256, f.overlay, data))
    return Matrix(files)


def main() -> None:
    m = load_matrix()
    c = Constraints(gpu="mi300x", frameworks=(parse_framework("pytorch==2.13.0"),))
    resolve(m, c)
    big = synthetic(m, 100)
    resolve(big, c)
    with tempfile.TemporaryDirectory() as d:
        out = str(Path(d) / "pin.lock")
        proc = median_s(lambda: subprocess.run(
            [*PIN, "resolve", "--gpu", "mi300x", "--framework", "pytorch==2.13.0", "-o", out],
            check=True, capture_output=True), 15)
    helps = median_s(lambda: subprocess.run([*PIN, "--help"], check=True, capture_output=True), 15)
    results = {
        "pin resolve (process) s": (proc, 0.3),
        "resolve() in-process ms": (median_s(lambda: resolve(m, c), 300) * 1000, 5.0),
        f"resolve() 100x matrix ({sum(len(f.data.releases) for f in big.files)} releases) ms":
            (median_s(lambda: resolve(big, c), 30) * 1000, 50.0),
        "pin --help (process) s": (helps, 0.15),
    }
    report(results)


if __name__ == "__main__":
    main()
