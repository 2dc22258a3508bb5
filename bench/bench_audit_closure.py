"""Benchmark (printed, not asserted): `pin audit --requirement` on a closure of 100 packages.

A local PEP 503 index on 127.0.0.1 (``tests/support/pyindex.py``: real wheels, PEP 658
metadata files) holds ``app==1.0``, whose closure is 100 distributions (two versions each, so
uv has choices to make). Medians of repeated runs, the uv cache warm (its simple pages are
revalidated each run, as the index sends no cache headers):

- ``uv pip compile`` alone, as a process, with the argv pin uses;
- ``resolve_closure`` (the same uv run plus pin's parsing) and, when
  ``pinning.audit.packages`` is present, the classification of every package with
  ``load_knowledge().classify(pkg, Context())``;
- pin's time beyond uv's own, twice: the difference of the two medians (noisy, clamped at
  0), and pin's own work timed directly (parsing uv's output, then classifying).
  Target (issue 13, section 5): <= 5 s.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from common import median_s, report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pinning.audit.closure import (  # noqa: E402 - after the path tweak
    DEFAULT_PLATFORM,
    parse_compile_output,
    resolve_closure,
    uv_compile_command,
    uv_environment,
)
from pinning.audit.model import Context  # noqa: E402
from tests.support.pyindex import serve_index  # noqa: E402

RUNS = 7
NAMED = ["torch", "triton", "flash-attn", "xformers", "bitsandbytes", "cupy-cuda12x",
         "nvidia-cublas-cu12", "nvidia-cudnn-cu12", "nvidia-nccl-cu12", "pynvml"]


def graph(n: int = 100) -> dict[str, list[str]]:
    """``app`` plus ``n - 1`` packages (a few named like the CUDA packages users hit, the rest
    ``pkg-NNN``), each at versions 1.0 and 2.0, as a tree of fan-out 10: ``app`` needs the
    first ten, package ``i`` needs packages ``10 * i + 10 .. 10 * i + 19``."""
    names = [*NAMED, *(f"pkg-{i:03d}" for i in range(n - 1 - len(NAMED)))]
    g: dict[str, list[str]] = {"app==1.0": [f"{x}>=1" for x in names[:10]]}
    for i, name in enumerate(names):
        kids = [f"{x}>=1" for x in names[10 * i + 10: 10 * i + 20]]
        g[f"{name}==1.0"] = kids
        g[f"{name}==2.0"] = kids
    return g


def classifier() -> Callable[[list[object]], None] | None:
    """A function classifying every package, or ``None`` when packages.py is not there."""
    try:
        packages = importlib.import_module("pinning.audit.packages")
    except ImportError:
        return None
    knowledge = packages.load_knowledge()
    ctx = Context()

    def classify(pkgs: list[object]) -> None:
        for pkg in pkgs:
            knowledge.classify(pkg, ctx)

    return classify


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        os.environ["UV_CACHE_DIR"] = str(Path(d) / "uv-cache")
        os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
        classify = classifier()
        with serve_index(Path(d), graph()) as (url, log):
            pkgs, skipped = resolve_closure(["app==1.0"], index_urls=[url])  # warm the cache
            assert len(pkgs) == 100 and not skipped, (len(pkgs), skipped)
            assert not [p for p in log if p.endswith(".whl")], "a wheel was downloaded"
            import uv
            cmd = uv_compile_command(str(uv.find_uv_bin()), [url],
                                     f"{sys.version_info.major}.{sys.version_info.minor}",
                                     DEFAULT_PLATFORM)
            env = uv_environment(os.environ)

            def uv_alone() -> None:
                subprocess.run(cmd, input="app==1.0\n", capture_output=True, text=True,
                               env=env, check=True)

            def pin() -> None:
                found, _ = resolve_closure(["app==1.0"], index_urls=[url])
                if classify is not None:
                    classify(list(found))

            out = subprocess.run(cmd, input="app==1.0\n", capture_output=True, text=True,
                                 env=env, check=True).stdout

            def pin_own() -> None:
                found, _ = parse_compile_output(out, "--requirement app==1.0", [url])
                if classify is not None:
                    classify(list(found))

            uv_s = median_s(uv_alone, RUNS)
            pin_s = median_s(pin, RUNS)
            own_s = median_s(pin_own, RUNS * 5)
    what = "resolve_closure + classify" if classify else "resolve_closure only"
    if classify is None:
        print("pinning.audit.packages is not there yet: timing resolve_closure only "
              "(no classification)")
    report({
        "uv pip compile alone, 100-package closure (s)": (uv_s, float("inf")),
        f"{what}, 100 packages (s)": (pin_s, float("inf")),
        "pin beyond uv: difference of the medians (s)": (max(pin_s - uv_s, 0.0), 5.0),
        "pin beyond uv: parse + classify in-process (s)": (own_s, 5.0),
    })


if __name__ == "__main__":
    main()
