"""Parser for pasted SGLang ``python3 -m sglang.check_env`` output."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from pinning.errors import FormatError
from pinning.probe.formats.common import KEY_LINE, norm_key
from pinning.util.models import Strict
from pinning.util.versions import normalize_name

__all__ = ["SglangCheckEnv", "parse_sglang_check_env"]


class SglangCheckEnv(Strict):
    """``python3 -m sglang.check_env`` (format of sgl-project/sglang
    ``python/sglang/check_env.py``).

    ``rocm_available``/``cuda_available``/``rocm_home``/``hipcc``/``rocm_driver_version``/
    ``compute_capability`` as printed (``hipcc`` is ``HIP version: 6.3.42131-fa1d09cbd``;
    ``hip_version`` its version). ``gpus`` lists one name per GPU index (from
    ``GPU 0,1,...: name``). ``packages`` maps PEP 503 names (``PyTorch`` -> ``torch``) to
    versions; ``Module Not Found`` entries are omitted. ``fields`` keeps every pair.
    """

    python: str | None = None
    rocm_available: str | None = None
    cuda_available: str | None = None
    rocm_home: str | None = None
    cuda_home: str | None = None
    hipcc: str | None = None
    hip_version: str | None = None
    nvcc: str | None = None
    rocm_driver_version: str | None = None
    cuda_driver_version: str | None = None
    compute_capability: str | None = None
    gpus: list[str] = Field(default_factory=list)
    packages: dict[str, str] = Field(default_factory=dict)
    fields: dict[str, str] = Field(default_factory=dict)


_SG_KEYS = {
    "python": "python",
    "rocm available": "rocm_available",
    "cuda available": "cuda_available",
    "rocm_home": "rocm_home",
    "cuda_home": "cuda_home",
    "hipcc": "hipcc",
    "nvcc": "nvcc",
    "rocm driver version": "rocm_driver_version",
    "cuda driver version": "cuda_driver_version",
    "cuda driver versions": "cuda_driver_version",
}
_SG_OTHER = {"hypervisor vendor", "ulimit soft", "amd topology", "nvidia topology"}
_SG_GPU = re.compile(r"^GPU\s+(\d[\d,\s]*)(Compute Capability)?$", re.IGNORECASE)


def parse_sglang_check_env(text: str, *, source: str = "sglang check_env") -> SglangCheckEnv:
    """Parse ``python3 -m sglang.check_env`` output.

    Lines are ``Key: value``; the ``AMD Topology:`` / ``NVIDIA Topology:`` block (a
    rocm-smi or ``nvidia-smi topo -m`` table) is skipped up to ``Hypervisor vendor:`` /
    ``ulimit soft:``. Raises ``FormatError`` naming ``source`` when neither a
    ``ROCM/CUDA available`` nor a ``PyTorch:`` line is present.
    """
    values: dict[str, Any] = {}
    fields: dict[str, str] = {}
    packages: dict[str, str] = {}
    by_index: dict[int, str] = {}
    topology = False
    recognised = False
    for line in text.splitlines():
        stripped = line.strip()
        m = KEY_LINE.match(stripped) if stripped else None
        key = norm_key(m.group(1)) if m else ""
        if topology and key not in ("hypervisor vendor", "ulimit soft"):
            continue
        topology = False
        if not m:
            continue
        raw_key, value = m.group(1).strip(), m.group(2).strip()
        fields.setdefault(raw_key, value)
        if key in ("amd topology", "nvidia topology"):
            topology = True
        elif _sg_line(raw_key, key, value, values, by_index, packages):
            recognised = True
    if not recognised:
        raise FormatError(
            f"{source}: no 'ROCM available:' / 'CUDA available:' / 'PyTorch:' line found "
            "(expected `python3 -m sglang.check_env` output)"
        )
    return SglangCheckEnv(
        gpus=[by_index[i] for i in sorted(by_index)],
        packages=packages,
        fields=fields,
        **values,
    )


# One branch per check_env line shape.
def _sg_line(raw_key: str, key: str, value: str, values: dict[str, Any],
             by_index: dict[int, str], packages: dict[str, str]) -> bool:
    """Store one ``Key: value`` line (a GPU, a known key, or a package version) in
    ``values``, ``by_index`` or ``packages``; True when it is a line that marks check_env
    output (``ROCM/CUDA available``, ``PyTorch``).
    """
    gpu = _SG_GPU.match(raw_key)
    if gpu:
        if gpu.group(2):
            values.setdefault("compute_capability", value)
        for i in ([] if gpu.group(2) else re.findall(r"\d{1,6}", gpu.group(1))):
            by_index.setdefault(int(i), value)
        return False
    attr = _SG_KEYS.get(key)
    if attr is not None:
        values.setdefault(attr, value or None)
        hv = re.search(r"HIP version\s*:\s*(\S+)", value) if attr == "hipcc" else None
        if hv:
            values.setdefault("hip_version", hv.group(1))
        return attr in ("rocm_available", "cuda_available")
    if key in _SG_OTHER or " " in raw_key.strip():
        return False
    name = "torch" if key == "pytorch" else normalize_name(raw_key)
    if value and value.lower() != "module not found" and re.fullmatch(r"[^\s]+", value):
        packages.setdefault(name, value)
    return key == "pytorch"
