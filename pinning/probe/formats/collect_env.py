"""Parser for pasted PyTorch ``collect_env`` / vLLM ``collect-env`` dumps.

``pip list`` / ``pip freeze`` is :mod:`pinning.probe.formats.pip_list`, SGLang's
``check_env`` :mod:`pinning.probe.formats.sglang`; finding the dumps inside one pasted file
is :mod:`pinning.probe.formats.split`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from pinning.errors import FormatError
from pinning.probe.formats.common import KEY_LINE, norm_key
from pinning.probe.formats.pip_list import LIB_LINE, pip_entry
from pinning.util.models import Strict

__all__ = [
    "PURE_RULER",
    "CollectEnv",
    "CondaPackage",
    "parse_collect_env",
]

_MISSING = {"", "none", "n/a", "na", "could not collect", "no cuda", "not available"}


def _is_version(value: str | None) -> bool:
    return bool(value) and value is not None and value[:1].isdigit()


class CondaPackage(Strict):
    """One ``[conda] name version build channel`` line of collect_env (values as printed)."""

    version: str
    build: str | None = None
    channel: str | None = None


class CollectEnv(Strict):
    """``python -m torch.utils.collect_env`` / ``vllm collect-env``.

    Every value is kept as printed (``No``, ``False``, ``N/A``, ``Could not collect``);
    absent lines are ``None``. ``cuda_built``/``rocm_built`` are the "CUDA/ROCM used to build
    PyTorch" lines. ``gpu_models`` is the raw "GPU models and configuration" text (with its
    continuation lines); ``gpus`` the names from its ``GPU n: name`` lines (or the one
    single-line name; empty for ``No CUDA``). ``pip_packages`` (PEP 503 names) and
    ``conda_packages`` (names as printed) are ``None`` when "Could not collect" or absent.
    ``vllm_*`` come from vLLM's "vLLM Info" section; ``env`` from its "Environment
    Variables" section. ``fields`` keeps every top-level ``Key: value`` line as printed.
    """

    torch_version: str | None = None
    debug_build: str | None = None
    cuda_built: str | None = None
    rocm_built: str | None = None
    os: str | None = None
    gcc_version: str | None = None
    clang_version: str | None = None
    cmake_version: str | None = None
    libc_version: str | None = None
    python_version: str | None = None
    python_platform: str | None = None
    cuda_available: str | None = None
    cuda_runtime_version: str | None = None
    cuda_module_loading: str | None = None
    gpu_models: str | None = None
    nvidia_driver_version: str | None = None
    cudnn_version: str | None = None
    hip_runtime_version: str | None = None
    miopen_runtime_version: str | None = None
    xnnpack_available: str | None = None
    gpus: list[str] = Field(default_factory=list)
    pip_packages: dict[str, str] | None = None
    conda_packages: dict[str, CondaPackage] | None = None
    vllm_rocm_version: str | None = None
    vllm_version: str | None = None
    vllm_build_flags: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    fields: dict[str, str] = Field(default_factory=dict)

    @property
    def torch_build(self) -> Literal["rocm", "cuda", "cpu", "unknown"] | None:
        """``rocm`` when "ROCM used to build" is a version, ``cuda`` when "CUDA used to build"
        is; else the wheel tag of the version (``+rocm6.1``, ``+cu121``, ``+cpu``); ``cpu``
        when "CUDA used to build" says ``None`` (``torch.version.cuda`` is ``None`` and no HIP
        version was printed); ``unknown`` otherwise ("Could not collect", ``N/A`` or absent
        say nothing about the build). ``None`` when no PyTorch version was printed.
        """
        if self.torch_version is None or self.torch_version.lower() in _MISSING:
            return None
        if _is_version(self.rocm_built):
            return "rocm"
        if _is_version(self.cuda_built):
            return "cuda"
        tag = self.torch_version.partition("+")[2].lower()
        if tag.startswith("rocm"):
            return "rocm"
        if re.match(r"cu\d", tag):
            return "cuda"
        if tag == "cpu" or (self.cuda_built or "").strip() == "None":
            return "cpu"
        return "unknown"


_CE_KEYS = {
    "pytorch version": "torch_version",
    "is debug build": "debug_build",
    "cuda used to build pytorch": "cuda_built",
    "rocm used to build pytorch": "rocm_built",
    "os": "os",
    "gcc version": "gcc_version",
    "clang version": "clang_version",
    "cmake version": "cmake_version",
    "libc version": "libc_version",
    "python version": "python_version",
    "python platform": "python_platform",
    "is cuda available": "cuda_available",
    "cuda runtime version": "cuda_runtime_version",
    "cuda_module_loading set to": "cuda_module_loading",
    "gpu models and configuration": "gpu_models",
    "nvidia driver version": "nvidia_driver_version",
    "cudnn version": "cudnn_version",
    "hip runtime version": "hip_runtime_version",
    "miopen runtime version": "miopen_runtime_version",
    "is xnnpack available": "xnnpack_available",
    "rocm version": "vllm_rocm_version",
    "vllm version": "vllm_version",
    "vllm build flags": "vllm_build_flags",
}
_CE_MULTILINE = {"gpu_models", "cudnn_version", "vllm_build_flags"}
_CE_OTHER_KEYS = {"cpu", "gpu topology", "neuron sdk version", "versions of relevant libraries",
                  "version of relevant libraries"}
_CE_TITLES = {"system info", "pytorch info", "python environment", "cuda / gpu info",
              "cpu info", "versions of relevant libraries", "vllm info",
              "environment variables"}
def _without_uuid(name: str) -> str:
    """``NVIDIA H100 80GB HBM3`` from ``NVIDIA H100 80GB HBM3 (UUID: GPU-...)``."""
    start = name.rfind("(UUID:")
    if start >= 0 and name.endswith(")") and ")" not in name[start:-1]:
        return name[:start].rstrip()
    return name


PURE_RULER = re.compile(r"^\s*=+\s*$")
"""A line of ``=`` only: vLLM's collect-env section rulers."""
_GPU_N = re.compile(r"^\s*GPU\s*(\d+)\s*[:：]\s*(\S.*|)$")
_ENV_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def _gpu_names(models: str | None) -> list[str]:
    if models is None:
        return []
    names: list[str] = []
    for line in models.splitlines():
        m = _GPU_N.match(line)
        if m:
            names.append(_without_uuid(m.group(2).strip()))
    if names:
        return names
    first = models.strip().splitlines()[0].strip() if models.strip() else ""
    if first.lower() in _MISSING:
        return []
    return [first]


# Line-oriented parser of every collect_env generation since 2018; one branch per line shape, in
# output order.
def parse_collect_env(text: str, *, source: str = "collect_env") -> CollectEnv:  # noqa: C901,PLR0915
    """Parse PyTorch's ``collect_env`` (any era) or vLLM's ``collect-env``.

    Tolerates ``PyTorch version 1.5.0`` without a colon, ``Os:``, full-width colons,
    ``Version(s) of relevant libraries``, the ``Collecting environment information...``
    banner, trailing IDE lines, vLLM's ``Key   : value`` alignment and ``=====`` titled
    sections, and GPU lists on the lines after "GPU models and configuration:". Raises
    ``FormatError`` naming ``source`` when no collect_env line is present.
    """
    values: dict[str, str | None] = {}
    fields: dict[str, str] = {}
    env: dict[str, str] = {}
    pip: dict[str, str] = {}
    conda: dict[str, CondaPackage] = {}
    pip_seen = conda_seen = False
    mode = "main"  # main | cpu | topology | env
    in_smi = False
    cont: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        low = norm_key(stripped)
        if mode == "topology":
            if "rocm system management interface" in low:
                in_smi = True
            elif "end of rocm smi log" in low:
                in_smi = False
            elif (PURE_RULER.match(line) and not in_smi) or low == "environment variables":
                mode = "env" if low == "environment variables" else "main"
            continue
        if not stripped:
            cont = None
            if mode == "cpu":
                mode = "main"
            continue
        if low in _CE_TITLES:
            cont = None
            mode = {"cpu info": "cpu", "environment variables": "env"}.get(low, "main")
            continue
        if PURE_RULER.match(line):
            cont = None
            continue
        lib = LIB_LINE.match(line)
        if lib:
            cont = None
            body = lib.group(2).strip()
            if lib.group(1) == "conda":
                conda_seen = True
                toks = body.split()
                if len(toks) >= 2 and body.lower() != "could not collect":
                    conda[toks[0]] = CondaPackage(
                        version=toks[1],
                        build=toks[2] if len(toks) > 2 else None,
                        channel=toks[3] if len(toks) > 3 else None,
                    )
            else:
                pip_seen = True
                entry = pip_entry(body)
                if entry is not None:
                    pip[entry[0]] = entry[1]
            continue
        if mode == "cpu":
            continue
        if mode == "env":
            m_env = _ENV_LINE.match(stripped)
            if m_env:
                env[m_env.group(1)] = m_env.group(2)
            continue
        m_torch = re.match(r"^PyTorch version\s+([^:\s：].*)$", stripped)
        m = KEY_LINE.match(line)
        if m_torch and not m:
            key, value = "pytorch version", m_torch.group(1).strip()
            raw_key = "PyTorch version"
        elif m:
            raw_key, value = m.group(1).strip(), m.group(2).strip()
            key = norm_key(raw_key)
        else:
            if cont is not None:
                prev = values.get(cont)
                values[cont] = f"{prev}\n{stripped}" if prev else stripped
            continue
        attr = _CE_KEYS.get(key)
        if attr is None and cont is not None and key not in _CE_OTHER_KEYS:
            prev = values.get(cont)
            values[cont] = f"{prev}\n{stripped}" if prev else stripped
            continue
        cont = None
        if key == "cpu" and not value:
            mode = "cpu"
            continue
        if key == "gpu topology":
            mode, in_smi = "topology", False
            continue
        if key in ("versions of relevant libraries", "version of relevant libraries"):
            continue
        fields.setdefault(raw_key, value)
        if attr is None:
            continue
        if attr not in values:
            values[attr] = value or None
        if attr in _CE_MULTILINE:
            cont = attr
    if not values and not pip_seen and not conda_seen:
        raise FormatError(
            f"{source}: no collect_env line found (expected 'PyTorch version: ...', "
            "'CUDA used to build PyTorch: ...' and the other `python -m torch.utils.collect_env` "
            "lines)"
        )
    pip_out = pip if pip else None
    conda_out = conda if conda else None
    return CollectEnv(
        gpus=_gpu_names(values.get("gpu_models")),
        pip_packages=pip_out,
        conda_packages=conda_out,
        env=env,
        fields=fields,
        **values,
    )
