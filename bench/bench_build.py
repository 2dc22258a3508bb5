"""Benchmarks for issues 4, 16 and 33 §1 (printed, not asserted): a private dockerd and
registry are started here, as in the integration tests (tests/support/components.py).

- `pin build` of an unchanged lock whose image is already in the registry: skipped, whole
  process (target <= 2 s)
- build + push, the whole user-visible path: `pin build --no-cache` of the small lock (build,
  read the added layers, normalise, compress, push; the whole process) / `docker build
  --no-cache --network none` + `docker push` of the same rendered Dockerfile on the same
  engine (the classic builder, which pin's SDK uses), to the same registry, each round into
  fresh repositories of it (neither side finds its own layer there; both may mount the base
  from pin/base); interleaved, the order flipping every round, after one untimed warm-up
  pair; medians of :data:`ROUNDS` rounds (target <= 1.0x)
- the digests of those timed pin builds: all the same (target 1 distinct)
- layer compression: Python's single-stream gzip (what pin used before) vs pin's parallel
  gzip of a 150 MB random tar and a 150 MB text-like tar (informational)
- identical digests in 10 rebuilds from scratch (target 10 of 10)
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from common import median_s, report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pinning.image.build import build_once  # noqa: E402
from pinning.image.layers import compressor_identity, default_jobs, gzip_layer  # noqa: E402
from pinning.image.plan import plan_build, render_context  # noqa: E402
from pinning.image.record import record  # noqa: E402
from pinning.lockfile.io import write_lock  # noqa: E402
from pinning.oci.registry import Registry  # noqa: E402
from tests.support.components import (  # noqa: E402 - after the path tweak
    WHEELS,
    push_base,
    small_lock,
    start_dockerd,
    start_registry,
)

PIN = [str(Path(sys.executable).with_name("pin"))]
MIB = 1024 * 1024
ROUNDS = 6
"""Interleaved rounds of the build + push pair (after one untimed warm-up pair)."""


def one_file_tar(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def text_like(size: int) -> bytes:
    """``size`` bytes of word-like lines (compresses about 2:1, as source and metadata do)."""
    rnd = random.Random(16)
    words = [bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 10)))
             for _ in range(5000)]
    line_count = size // 60 + 1
    lines = (b" ".join(rnd.choices(words, k=12)) for _ in range(line_count))
    return b"\n".join(lines)[:size]


def single_stream_gzip(data: bytes) -> bytes:
    """What pin did before issue 16: one gzip stream, level 6, on one thread."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as gz:
        gz.write(data)
    return buf.getvalue()


def compression() -> list[str]:
    """Lines comparing the old and the new compressor on 150 MB random and text tars."""
    lines = [f"compressor: {compressor_identity()}, {default_jobs()} threads"]
    for label, payload in (("random", random.Random(1).randbytes(150 * MIB)),
                           ("text-like", text_like(150 * MIB))):
        tar = one_file_tar(label, payload)
        t = time.perf_counter()
        old = single_stream_gzip(tar)
        old_s = time.perf_counter() - t
        t = time.perf_counter()
        new = gzip_layer(tar)
        new_s = time.perf_counter() - t
        assert new.data is not None and gzip.decompress(new.data) == tar
        lines.append(f"compress {label} {len(tar) / MIB:.0f} MiB: single-stream {old_s:.2f} s "
                     f"({len(old) / MIB:.1f} MiB), parallel {new_s:.2f} s "
                     f"({len(new.data) / MIB:.1f} MiB, digest+diff ID included)")
    return lines


def _quiet(argv: list[str], env: dict[str, str]) -> str:
    """Run ``argv``; its standard output (a failure raises with its error text)."""
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:2]} exit {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def whole_path(engine: Any, registry: Any, base_ref: str, rounds: int
               ) -> tuple[list[float], list[float], set[str], list[str]]:
    """The user-visible path, side by side, interleaved (the order flips every round):
    ``pin build --no-cache`` of the small lock (build + normalise + compress + push,
    the whole process) vs ``docker build --no-cache --network none`` + ``docker push`` of
    the same rendered Dockerfile, both on the same engine (classic builder, as pin's SDK
    uses) to the same registry, each round into fresh repositories (``pin/rN``,
    ``docker/rN``) of it: neither finds its own layer already there, both may mount the
    base from ``pin/base``. One untimed warm-up pair first. Returns pin's and docker's
    seconds per round, the manifest digests pin pushed, and one line per round.
    """
    env = {**os.environ, "DOCKER_HOST": engine.url, "DOCKER_BUILDKIT": "0"}
    lock = small_lock()
    times: dict[str, list[float]] = {"pin": [], "docker": []}
    digests: set[str] = set()
    lines = []
    with tempfile.TemporaryDirectory(prefix="pin-bench-") as tmp:
        env["DOCKER_CONFIG"] = tmp  # no one's login: the registry is on loopback
        lock_path = Path(tmp) / "small.lock"
        write_lock(lock, lock_path)
        ctx = render_context(plan_build(lock, base_ref, WHEELS), WHEELS, Path(tmp) / "ctx")

        def pin(i: int) -> None:
            out = _quiet([*PIN, "build", str(lock_path), "--base", base_ref, "--wheelhouse",
                          str(WHEELS), "--registry", registry.url, "--repo", f"pin/r{i}",
                          "--engine", engine.url, "--no-cache", "-o",
                          str(Path(tmp) / f"r{i}.lock"), "--format", "json", "-q"], env)
            if i >= 0:
                digests.add(json.loads(out)["result"]["digest"])

        def docker(i: int) -> None:
            tag = f"{registry.host}/docker/r{i}:t"
            _quiet(["docker", "build", "-q", "--no-cache", "--network", "none", "-t", tag,
                    str(ctx)], env)
            _quiet(["docker", "push", "-q", tag], env)

        for i in range(-1, rounds):
            order = [("pin", pin), ("docker", docker)][:: 1 if i % 2 else -1]
            took = {}
            for name, run in order:
                t = time.perf_counter()
                run(i)
                took[name] = time.perf_counter() - t
            t = time.perf_counter()  # docker leaves its images; pin's own removal is timed
            _quiet(["docker", "rmi", f"{registry.host}/docker/r{i}:t"], env)
            rmi = time.perf_counter() - t
            if i < 0:
                continue
            for name in took:
                times[name].append(took[name])
            lines.append(f"round {i + 1} ({order[0][0]} first): pin build {took['pin']:.2f} s,"
                         f" docker build + push {took['docker']:.2f} s, ratio "
                         f"{took['pin'] / took['docker']:.2f} (docker rmi afterwards, "
                         f"untimed: {rmi:.2f} s)")
    return times["pin"], times["docker"], digests, lines


def main() -> None:
    engine = start_dockerd()
    registry = start_registry()
    try:
        repo, digest, _epoch = push_base(registry.url)
        base_ref = f"{registry.host}/{repo}@{digest}"
        lock = small_lock()
        first = build_once(engine.client, lock, base_ref, WHEELS, nocache=True)
        with Registry(registry.url) as reg:
            ref_digest = reg.push_image("pin/trial", "bench", first.docs)
        recorded = record(lock, first, f"{registry.host}/pin/trial@{ref_digest}")
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "trial.lock"
            write_lock(recorded, path)
            skip = median_s(lambda: subprocess.run(
                [*PIN, "build", str(path), "--wheelhouse", str(WHEELS), "--registry",
                 registry.url, "--engine", engine.url], check=True, capture_output=True), 5)

        pin_runs, docker_runs, digests, rounds = whole_path(engine, registry, base_ref, ROUNDS)

        same = 0
        for _ in range(10):
            again = build_once(engine.client, recorded, base_ref, WHEELS, nocache=True)
            same += again.docs.digest == ref_digest
    finally:
        registry.stop()
        engine.stop()
    squeeze = compression()
    pin_s, docker_s = statistics.median(pin_runs), statistics.median(docker_runs)
    pairs = statistics.median(p / d for p, d in zip(pin_runs, docker_runs, strict=True))
    report({
        "pin build, unchanged lock already pushed (process) s": (skip, 2.0),
        "pin build+push / docker build+push, small lock (ratio)": (pin_s / docker_s, 1.0),
        "rebuilds from scratch NOT identical (of 10)": (10 - same, 0.0),
        "distinct digests of the timed pin builds (goal 1)": (len(digests), 1.0),
    })
    print(f"build + push, small lock: pin {pin_s:.2f} s, docker {docker_s:.2f} s (medians of "
          f"{ROUNDS} interleaved rounds; median of per-round ratios {pairs:.2f}); each round "
          "pushes to fresh repositories of one registry (the base mountable from pin/base)")
    for line in rounds + squeeze:
        print(line)


if __name__ == "__main__":
    main()
