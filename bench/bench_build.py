"""Benchmarks for issue 4 (printed, not asserted): a private dockerd and registry are started
here, as in the integration tests.

- `pin build` of an unchanged lock whose image is already in the registry: skipped, whole
  process (target <= 2 s)
- normalising and pushing a ~300 MB image vs `docker push` of the same image, same run
  (target <= 1.5x)
- identical digests in 10 rebuilds from scratch (target 10 of 10)
"""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import median_s, report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pinning.image.engine import base_blobs_of, build_once, export_layers  # noqa: E402
from pinning.image.plan import BuildPlan, assemble  # noqa: E402
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


def big_image(client, base_ref: str) -> str:  # type: ignore[no-untyped-def]
    """An image of about 300 MB: the base plus 150 MB of incompressible data."""
    dockerfile = (f"FROM {base_ref}\n"
                  "RUN head -c 157286400 /dev/urandom > /opt/blob && sync\n").encode()
    image, _ = client.images.build(fileobj=io.BytesIO(dockerfile), network_mode="none",
                                   rm=True, tag="pin-bench:big")
    return str(image.id)


def main() -> None:
    engine = start_dockerd()
    registry = start_registry()
    try:
        repo, digest, _epoch = push_base(registry.url)
        base_ref = f"{registry.host}/{repo}@{digest}"
        reg = Registry(registry.url)
        lock = small_lock()
        first = build_once(engine.client, lock, base_ref, WHEELS, nocache=True)
        ref_digest = reg.push_image("pin/trial", "bench", first.docs)
        recorded = record(lock, first, f"{registry.host}/pin/trial@{ref_digest}")
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "trial.lock"
            write_lock(recorded, path)
            skip = median_s(lambda: subprocess.run(
                [*PIN, "build", str(path), "--wheelhouse", str(WHEELS), "--registry",
                 registry.url, "--engine", engine.url], check=True, capture_output=True), 5)

        image_id = big_image(engine.client, base_ref)
        size_mb = engine.client.images.get(image_id).attrs["Size"] / 1e6
        base_layers = len(engine.client.images.get(base_ref).attrs["RootFS"]["Layers"])
        plan = BuildPlan(base_ref=base_ref, wheels=(), epoch=1700000000, input_hash="bench")
        runs: dict[str, list[float]] = {"pin": [], "docker": []}
        for i in range(3):
            # A fresh registry each round, so neither side finds its layers already there.
            fresh = start_registry()
            try:
                t = time.perf_counter()
                docs = assemble(plan, export_layers(engine.client, image_id), base_layers,
                                base_blobs=base_blobs_of(base_ref))
                Registry(fresh.url).push_image("pin/big", "x", docs)
                runs["pin"].append(time.perf_counter() - t)
                target = f"{fresh.host}/docker/big"
                engine.client.images.get(image_id).tag(target, f"r{i}")
                t = time.perf_counter()
                for line in engine.client.images.push(target, f"r{i}", stream=True,
                                                      decode=True):
                    if "error" in line:
                        raise RuntimeError(line["error"])
                runs["docker"].append(time.perf_counter() - t)
            finally:
                fresh.stop()
        pin_s, docker_s = sorted(runs["pin"])[1], sorted(runs["docker"])[1]

        same = 0
        for _ in range(10):
            again = build_once(engine.client, recorded, base_ref, WHEELS, nocache=True)
            same += again.docs.digest == ref_digest
    finally:
        registry.stop()
        engine.stop()
    report({
        "pin build, unchanged lock already pushed (process) s": (skip, 2.0),
        f"normalise+push {size_mb:.0f} MB image / docker push (ratio)": (pin_s / docker_s, 1.5),
        "rebuilds from scratch NOT identical (of 10)": (10 - same, 0.0),
    })
    print(f"normalise+push {pin_s:.2f} s, docker push {docker_s:.2f} s (medians of 3)")


if __name__ == "__main__":
    main()
