"""Benchmark (printed, not asserted): hashing a model's files against ``sha256sum``.

A ~1 GB set of files in a temp folder (4 files of 224 MiB, as a sharded checkpoint, and 400
small ones of 4-64 KiB, as tokenizers and configs): pin's :class:`Hasher` (one worker, no
cache) against coreutils ``sha256sum`` on the same files, both pinned to one core with
``taskset -c 0`` when it is there, median of 3 runs (the files are read once before, so both
hash from the page cache). Goal: pin within 1.2x of ``sha256sum`` on one core. Then the
cached re-verify of the same set (a Hasher that loads the digest cache and only stats the
files): it costs per file, not per byte, so a 100 GB model of a few dozen files costs the
same few milliseconds. The throughput is printed in MB/s.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import median_s, report

from pinning.probe.hasher import Hasher

LARGE = (4, 224 * 1024 * 1024)
SMALL = 400
RUNS = 3


def make_files(top: Path) -> list[Path]:
    """The file set: ``LARGE`` big files and ``SMALL`` small ones of random bytes."""
    rng = random.Random(20)
    paths: list[Path] = []
    top.mkdir(parents=True, exist_ok=True)
    block = rng.randbytes(1024 * 1024)
    for i in range(LARGE[0]):
        p = top / f"model-{i:05d}-of-{LARGE[0]:05d}.safetensors"
        with open(p, "wb") as out:
            for j in range(LARGE[1] // len(block)):
                out.write(bytes([i, j % 256]) + block[2:])
        paths.append(p)
    for i in range(SMALL):
        p = top / "tok" / f"f{i:04d}.json"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(rng.randbytes(rng.randint(4, 64) * 1024))
        paths.append(p)
    return paths


def one_core(argv: list[str]) -> list[str]:
    """``argv`` run on core 0 when ``taskset`` is there."""
    return ["taskset", "-c", "0", *argv] if shutil.which("taskset") else argv


def main() -> None:
    results: dict[str, tuple[float, float]] = {}
    if sys.platform.startswith("linux") and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})  # pin's Hasher on core 0 too
    with tempfile.TemporaryDirectory() as d:
        top = Path(d)
        paths = make_files(top / "model")
        total = sum(p.stat().st_size for p in paths)
        Hasher(workers=1).digest_many(paths)  # warm the page cache
        pin_s = median_s(lambda: Hasher(workers=1).digest_many(paths), RUNS)
        tool = shutil.which("sha256sum")
        mb = total / 1e6
        print(f"{len(paths)} files, {mb:,.0f} MB; taskset: {bool(shutil.which('taskset'))}")
        results[f"pin Hasher, 1 worker, no cache: {mb:,.0f} MB (s)"] = (pin_s, float("inf"))
        print(f"pin Hasher: {mb / pin_s:,.0f} MB/s")
        if tool:
            argv = one_core([tool, *(str(p.relative_to(top)) for p in paths)])
            sum_s = median_s(lambda: subprocess.run(argv, check=True, cwd=top,
                                                    stdout=subprocess.DEVNULL), RUNS)
            results[f"sha256sum: {mb:,.0f} MB (s)"] = (sum_s, float("inf"))
            results["pin / sha256sum (ratio, goal 1.2)"] = (pin_s / sum_s, 1.2)
            print(f"sha256sum: {mb / sum_s:,.0f} MB/s")
        store = top / "cache" / "model-digests.json"
        Hasher(store).digest_many(paths)

        def cached() -> None:
            h = Hasher(store)
            h.digest_many(paths)
            assert h.bytes_read == 0

        results[f"cached re-verify: {len(paths)} files (s)"] = (median_s(cached, RUNS), 1.0)
    report(results)


if __name__ == "__main__":
    main()
