"""Name tables: which distributions install what, which GPUs are which class, how an OS
is named. Data that code needs by name, each with its source.
"""

from __future__ import annotations

import re

OS_ID_VERSION = re.compile(r"^([a-z][a-z0-9]*)-([0-9]+(?:\.[0-9]+)*)$")
"""An OS as ``ID-VERSION_ID`` from /etc/os-release (``ubuntu-24.04``, ``rhel-9.6``)."""

# Distribution names that install the `triton` import package (FACTS.md §3.1, §3.3).
TRITON_DISTRIBUTIONS: tuple[str, ...] = (
    "triton",
    "pytorch-triton-rocm",
    "triton-rocm",
    "pytorch-triton",
    "amd-triton",
)

# Framework name in the lock -> the distribution that carries it.
FRAMEWORK_DISTRIBUTIONS: dict[str, str] = {
    "pytorch": "torch",
    "jax": "jax",
    "tensorflow": "tensorflow",
    "vllm": "vllm",
    "sglang": "sglang",
    "triton": "triton",
    "flashattention": "flash-attn",
    "flash-attention": "flash-attn",
}

# NVIDIA Data Center GPUs in the matrix's identity table: cuda-compat forward compatibility
# applies to them (NVIDIA CUDA Compatibility, forward compatibility; FACTS.md §1.12).
DATACENTER_NVIDIA: frozenset[str] = frozenset({"a100", "h100", "h200", "b200", "gb200"})


def os_matches(want: tuple[str, str], entry: str) -> bool:
    """``('ubuntu', '24.04')`` matches ``ubuntu-24.04.3``; ``('ol', '9.4')`` matches ``ol-9``."""
    m = OS_ID_VERSION.match(entry)
    if not m or m.group(1) != want[0]:
        return False
    a, b = want[1].split("."), m.group(2).split(".")
    n = min(len(a), len(b))
    return a[:n] == b[:n]
