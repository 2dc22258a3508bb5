"""Benchmark for issue 33 §3 (printed, not asserted): hashing a model's files at the library
floor, ``openssl dgst -sha256`` and ``hashlib.file_digest``, in CPU time on one core.

A ~1 GB set of files in a temp folder (4 files of 224 MiB, as a sharded checkpoint, and 400
small ones of 4-64 KiB, as tokenizers and configs), read once before so everything hashes
from the page cache. Four contenders run interleaved in each round (their order rotates
round by round), all on core 0 (``taskset -c 0`` for the children when it is there, this
process's affinity for the in-process ones):

* ``openssl dgst -sha256`` of every file, one child process: the floor a user compares with
  (coreutils ``sha256sum`` is left out: it does not use the CPU's SHA extensions and would
  flatter pin);
* ``hashlib.file_digest`` of every file, in this process (Python's OpenSSL-backed sha256);
* pin's :class:`~pinning.probe.hasher.Hasher` (one worker, no cache), in this process;
* the whole ``pin lock model LOCK`` command as a child, with an empty digest cache each
  time (a fresh ``PIN_CACHE_DIR``), so it reads every byte.

CPU time is user + system: ``time.process_time`` for the in-process work,
``getrusage(RUSAGE_CHILDREN)`` before and after for a child. Each ratio printed is the median
of the per-round ratios, with its goal (<= 1.05x). The command also pays a fixed start cost
(the interpreter, its imports, reading and writing the lock) that does not grow with the
bytes: it is measured as the same command with a warm digest cache (it then stats the files
and reads none of them), beside ``python -c pass`` and ``pin --version``, and printed apart
with the command's ratio net of it and the size of files from which it is under 5% of
openssl's time. Last, the
cached re-verify in process (a Hasher that loads the digest cache and only stats the
files): it costs per file, not per byte, so a 100 GB model of a few dozen files costs the
same few milliseconds.
"""

from __future__ import annotations

import hashlib
import os
import random
import resource
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import report

from pinning.probe.hasher import Hasher

LARGE = (4, 224 * 1024 * 1024)
SMALL = 400
ROUNDS = 5
GOAL = 1.05
PIN = str(Path(sys.executable).with_name("pin"))
RESOLVE = ["resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1"]


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


def cpu_self(fn: Callable[[], object]) -> float:
    """CPU seconds (user + system, all of this process's threads) of one call of ``fn``."""
    t = time.process_time()
    fn()
    return time.process_time() - t


def cpu_child(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> float:
    """CPU seconds (user + system) of one run of ``argv`` to completion, as a child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def file_digests(paths: list[Path]) -> list[str]:
    """``hashlib.file_digest(f, "sha256")`` of each of ``paths``, hex."""
    out = []
    for p in paths:
        with open(p, "rb") as f:
            out.append(hashlib.file_digest(f, "sha256").hexdigest())
    return out


def agree(top: Path, paths: list[Path]) -> None:
    """Check the three give the same digests of ``paths`` (an ``AssertionError`` if not)."""
    ours = Hasher(workers=1).digest_many(paths)
    theirs = subprocess.run(["openssl", "dgst", "-sha256", "-r", *map(str, paths)], cwd=top,
                            check=True, capture_output=True, text=True).stdout.split()[::2]
    want = file_digests(paths)
    assert [v[1] for v in ours.values() if isinstance(v, tuple)] == want == theirs


def make_lock(top: Path, env: dict[str, str]) -> Path:
    """A lock in ``top`` whose ``[model]`` is the folder ``top/model`` (files not read yet)."""
    lock = top / "pin.lock"
    subprocess.run([PIN, *RESOLVE, "--model", "./model", "--no-model-files", "-o", str(lock)],
                   check=True, cwd=top, env=env, stdout=subprocess.DEVNULL)
    return lock


def contenders(top: Path, paths: list[Path], lock: Path) -> dict[str, Callable[[], float]]:
    """Each contender's one run, returning its CPU seconds; the command's digest cache is a
    fresh empty folder every run, so it reads every byte.
    """
    names = [str(p.relative_to(top)) for p in paths]
    openssl = one_core(["openssl", "dgst", "-sha256", *names])
    runs = iter(range(1_000_000))

    def command() -> float:
        env = {**os.environ, "PIN_CACHE_DIR": str(top / "cold" / str(next(runs)))}
        return cpu_child(one_core([PIN, "lock", "model", str(lock)]), cwd=top, env=env)

    return {"openssl": lambda: cpu_child(openssl, cwd=top),
            "file_digest": lambda: cpu_self(lambda: file_digests(paths)),
            "Hasher": lambda: cpu_self(lambda: Hasher(workers=1).digest_many(paths)),
            "command": command}


def rounds(runs: dict[str, Callable[[], float]]) -> dict[str, list[float]]:
    """``ROUNDS`` rounds of every contender, the order rotated each round: CPU seconds."""
    got: dict[str, list[float]] = {k: [] for k in runs}
    order = list(runs)
    for r in range(ROUNDS):
        for name in order[r % len(order):] + order[:r % len(order)]:
            got[name].append(runs[name]())
    return got


def start_costs(top: Path, lock: Path, env: dict[str, str]) -> dict[str, list[float]]:
    """The command's fixed start cost in CPU seconds, interleaved, with its parts: the
    interpreter alone, pin's CLI started (``pin --version``), and ``pin lock model`` with a
    warm digest cache (the imports, reading, checking and writing the lock, a stat per file;
    no byte of the model read).
    """
    argvs = {"python -c pass": [sys.executable, "-c", "pass"], "pin --version": [PIN, "--version"],
             "pin lock model, warm cache": [PIN, "lock", "model", str(lock)]}
    got: dict[str, list[float]] = {k: [] for k in argvs}
    for _ in range(ROUNDS):
        for k, argv in argvs.items():
            got[k].append(cpu_child(one_core(argv), cwd=top, env=env))
    return got


def paired(a: list[float], b: list[float]) -> float:
    """The median of the per-round ratios ``a[i] / b[i]``."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def main() -> None:
    if sys.platform.startswith("linux") and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})  # the in-process contenders on core 0 too
    with tempfile.TemporaryDirectory() as d:
        top = Path(d)
        paths = make_files(top / "model")
        total = sum(p.stat().st_size for p in paths)
        mb = total / 1e6
        env = {**os.environ, "PIN_CACHE_DIR": str(top / "warm")}
        lock = make_lock(top, env)
        subprocess.run([PIN, "lock", "model", str(lock)], check=True, cwd=top, env=env,
                       stdout=subprocess.DEVNULL)  # pins the files, warms the page cache
        agree(top, paths)
        print(f"{len(paths)} files, {mb:,.0f} MB; taskset: {bool(shutil.which('taskset'))}; "
              f"hashlib: {hashlib.sha256().__class__.__module__} "
              f"({ssl.OPENSSL_VERSION}); {ROUNDS} interleaved rounds, CPU time")
        got = rounds(contenders(top, paths, lock))
        fixed = start_costs(top, lock, env)
        cached = [cpu_self(lambda: _cached(Hasher(top / "warm" / "model-digests.json"), paths))
                  for _ in range(ROUNDS)]
    summary(got, fixed, cached, total, len(paths))


def summary(got: dict[str, list[float]], fixed: dict[str, list[float]], cached: list[float],
            total: int, files: int) -> None:
    """Print the medians, the command's fixed start cost and where it stops mattering, then
    the ratios with their goals (:func:`common.report`).
    """
    mb = total / 1e6
    med = {k: statistics.median(v) for k, v in got.items()}
    for k, m in med.items():
        print(f"{k:>12}: {m:.3f} s CPU, {mb / m:,.0f} MB/s per core")
    for k, runs in fixed.items():
        print(f"fixed start cost, {k}: {statistics.median(runs):.3f} s CPU")
    fix = statistics.median(fixed["pin lock model, warm cache"])
    net = paired([c - fix for c in got["command"]], got["openssl"])
    print(f"net of its fixed start cost, pin lock model / openssl: {net:.3f}x")
    size = fix / ((GOAL - 1) * med["openssl"] / total)
    print(f"the fixed start cost is under {GOAL - 1:.0%} of openssl's time from about "
          f"{size / 1e9:.1f} GB of files up (computed from these medians, not measured)")
    inf = float("inf")
    report({
        "Hasher / hashlib.file_digest (CPU ratio)": (paired(got["Hasher"], got["file_digest"]),
                                                     GOAL),
        "Hasher / openssl dgst -sha256 (CPU ratio)": (paired(got["Hasher"], got["openssl"]),
                                                      GOAL),
        "pin lock model / openssl (CPU ratio)": (paired(got["command"], got["openssl"]), GOAL),
        "file_digest / openssl (CPU ratio, the floor)": (
            paired(got["file_digest"], got["openssl"]), inf),
        f"openssl dgst -sha256: {mb:,.0f} MB (s CPU)": (med["openssl"], inf),
        "pin lock model fixed start cost (s CPU)": (fix, inf),
        f"cached re-verify: {files} files (s CPU)": (statistics.median(cached), 1.0),
    })


def _cached(h: Hasher, paths: list[Path]) -> None:
    """One cached re-verify of ``paths`` by ``h``: every file stat'ed, none read."""
    h.digest_many(paths)
    assert h.bytes_read == 0


if __name__ == "__main__":
    main()
