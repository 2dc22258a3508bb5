"""Benchmarks for issues 4 and 16 (printed, not asserted): a private dockerd and registry are
started here, as in the integration tests.

- `pin build` of an unchanged lock whose image is already in the registry: skipped, whole
  process (target <= 2 s)
- the push ratio: pin's export + normalise + compress + push of a ~320 MB image (pin's base
  plus 150 MB of incompressible data) / `docker push` of the same image, in the same run,
  each to a fresh registry (medians of 3 rounds; target <= 1.0x)
- layer compression: Python's single-stream gzip (what pin used before) vs pin's parallel
  gzip of a 150 MB random tar and a 150 MB text-like tar (informational)
- identical digests in 10 rebuilds from scratch (target 10 of 10)
"""

from __future__ import annotations

import gzip
import io
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

from pinning.image.assemble import assemble  # noqa: E402
from pinning.image.build import base_docs, base_skip, build_once  # noqa: E402
from pinning.image.engine import export_layers  # noqa: E402
from pinning.image.layers import compressor_identity, default_jobs, gzip_layer  # noqa: E402
from pinning.image.plan import BuildPlan  # noqa: E402
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


def big_image(client: Any, base_ref: str) -> str:
    """An image of about 320 MB: the base plus 150 MB of incompressible data."""
    dockerfile = (f"FROM {base_ref}\n"
                  "RUN head -c 157286400 /dev/urandom > /opt/blob && sync\n").encode()
    image, _ = client.images.build(fileobj=io.BytesIO(dockerfile), network_mode="none",
                                   rm=True, tag="pin-bench:big")
    return str(image.id)


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


def push_ratio(engine: Any, base_ref: str) -> tuple[float, float, float, list[str]]:
    """Median seconds of pin (export + normalise + compress + push) and of `docker push`
    over 3 rounds, each to a fresh registry; the image's size in MB; per-round lines.
    """
    image_id = big_image(engine.client, base_ref)
    size_mb = engine.client.images.get(image_id).attrs["Size"] / 1e6
    plan = BuildPlan(base_ref=base_ref, wheels=(), epoch=1700000000,
                     input_hash="sha256:" + "0" * 64)
    runs: dict[str, list[float]] = {"pin": [], "docker": []}
    lines = []
    for i in range(3):
        # A fresh registry each round, so neither side finds its layers already there.
        fresh = start_registry()
        try:
            t0 = time.perf_counter()
            base = base_docs(base_ref)
            layers = export_layers(engine.client, image_id,
                                   skip=base_skip(engine.client, image_id, base))
            t1 = time.perf_counter()
            docs = assemble(plan, layers, base)
            t2 = time.perf_counter()
            with Registry(fresh.url) as reg:
                reg.push_image("pin/big", "x", docs)
            t3 = time.perf_counter()
            runs["pin"].append(t3 - t0)
            target = f"{fresh.host}/docker/big"
            engine.client.images.get(image_id).tag(target, f"r{i}")
            t = time.perf_counter()
            for line in engine.client.images.push(target, f"r{i}", stream=True, decode=True):
                if "error" in line:
                    raise RuntimeError(line["error"])
            runs["docker"].append(time.perf_counter() - t)
            lines.append(f"round {i + 1}: pin {t3 - t0:.2f} s (export {t1 - t0:.2f}, "
                         f"normalise+compress {t2 - t1:.2f}, push {t3 - t2:.2f}); "
                         f"docker push {runs['docker'][-1]:.2f} s")
        finally:
            fresh.stop()
    return (statistics.median(runs["pin"]), statistics.median(runs["docker"]), size_mb,
            lines)


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

        pin_s, docker_s, size_mb, rounds = push_ratio(engine, base_ref)

        same = 0
        for _ in range(10):
            again = build_once(engine.client, recorded, base_ref, WHEELS, nocache=True)
            same += again.docs.digest == ref_digest
    finally:
        registry.stop()
        engine.stop()
    squeeze = compression()
    report({
        "pin build, unchanged lock already pushed (process) s": (skip, 2.0),
        f"pin export+normalise+compress+push {size_mb:.0f} MB / docker push (ratio)":
            (pin_s / docker_s, 1.0),
        "rebuilds from scratch NOT identical (of 10)": (10 - same, 0.0),
    })
    print(f"push: pin {pin_s:.2f} s, docker push {docker_s:.2f} s (medians of 3)")
    for line in rounds + squeeze:
        print(line)


if __name__ == "__main__":
    main()
