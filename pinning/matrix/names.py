"""Name tables: which distributions install what, which GPUs are which class, how an OS
is named. Data that code needs by name, each with its source.
"""

from __future__ import annotations

import re

OS_ID_VERSION = re.compile(r"^([a-z][a-z0-9]*)-([0-9]+(?:\.[0-9]+)*)$")
"""An OS as ``ID-VERSION_ID`` from /etc/os-release (``ubuntu-24.04``, ``rhel-9.6``)."""

# Distribution names that install the `triton` import package: the names AITER's setup looks
# for (ROCm/aiter@0132896:setup.py) and PyTorch's ROCm wheel dependencies (pytorch-triton-rocm,
# triton-rocm; ROCm/pytorch PRs #2518, #2634).
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
# applies to them (NVIDIA CUDA Compatibility, forward compatibility:
# https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html).
DATACENTER_NVIDIA: frozenset[str] = frozenset({"a100", "h100", "h200", "b200", "gb200"})


def os_matches(want: tuple[str, str], entry: str) -> bool:
    """``('ubuntu', '24.04')`` matches ``ubuntu-24.04.3``; ``('ol', '9.4')`` matches ``ol-9``."""
    m = OS_ID_VERSION.match(entry)
    if not m or m.group(1) != want[0]:
        return False
    a, b = want[1].split("."), m.group(2).split(".")
    n = min(len(a), len(b))
    return a[:n] == b[:n]


# AMD product series as AMD's pages name them -> the GPU ids (gpus.toml) of the series. "MI350
# Series" is MI350X and MI355X (AMD ROCm docs/reference/gpu-arch-specs.rst, ROCm/ROCm; both
# gfx950); the alias `MI350` names this series, not MI350X alone.
GPU_SERIES: dict[str, tuple[str, ...]] = {
    "mi350": ("mi355x", "mi350x"),
}

# The gfx targets of a series whose every product the series holds (a target to exclude when a
# footnote excludes the series): gfx950 is MI350X and MI355X only (same source).
SERIES_TARGETS: dict[str, tuple[str, ...]] = {
    "mi350": ("gfx950",),
}


def series_key(text: str) -> str | None:
    """``'AMD Instinct MI350 Series'`` / ``'MI350'`` -> ``'mi350'`` when that series is known."""
    m = re.search(r"\b(MI\d{3})\b(?:\s+Series)?", text, flags=re.I)
    key = m.group(1).lower() if m else None
    return key if key in GPU_SERIES else None

#: What the firmware column of AMD's release notes holds for each GPU family (the kind a
#: lock's firmware pin names).
FIRMWARE_KIND: dict[str, str] = {
    "MI355X": "pldm-bundle",
    "MI350X": "pldm-bundle",
    "MI325X": "pldm-bundle",
    "MI300X": "pldm-bundle",
    "MI300A": "bkc",
    "MI250X": "ifwi",
    "MI250": "ifwi",
    "MI210": "ifwi",
    "MI100": "vbios",
}
