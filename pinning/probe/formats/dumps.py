"""Parsers for pasted environment dumps: PyTorch/vLLM ``collect_env``, SGLang ``check_env``
and ``pip list``/``pip freeze`` (FACTS.md §2.9, §2.10). Finding the dumps inside one pasted
file is :mod:`pinning.probe.formats.split`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from pinning.errors import FormatError
from pinning.util.models import Strict
from pinning.util.versions import normalize_name

__all__ = [
    "CollectEnv",
    "CondaPackage",
    "SglangCheckEnv",
    "parse_collect_env",
    "parse_pip_list",
    "parse_sglang_check_env",
]

_MISSING = {"", "none", "n/a", "na", "could not collect", "no cuda", "not available"}


def _is_version(value: str | None) -> bool:
    return bool(value) and value is not None and value[:1].isdigit()


# ----------------------------------------------------------------------- collect_env


class CondaPackage(Strict):
    """One ``[conda] name version build channel`` line of collect_env (values as printed)."""

    version: str
    build: str | None = None
    channel: str | None = None


class CollectEnv(Strict):
    """``python -m torch.utils.collect_env`` / ``vllm collect-env`` (FACTS.md §2.9).

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
    def torch_build(self) -> Literal["rocm", "cuda", "cpu"] | None:
        """``rocm`` when "ROCM used to build" is a version, ``cuda`` when "CUDA used to build"
        is, ``cpu`` otherwise; ``None`` when no PyTorch version was printed.
        """
        if self.torch_version is None or self.torch_version.lower() in _MISSING:
            return None
        if _is_version(self.rocm_built):
            return "rocm"
        if _is_version(self.cuda_built):
            return "cuda"
        return "cpu"


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
_KEY_LINE = re.compile(r"^\s*([^:：]+?)\s*[:：](.*)$")
PURE_RULER = re.compile(r"^\s*=+\s*$")
_GPU_N = re.compile(r"^\s*GPU\s*(\d+)\s*[:：]\s*(.*?)\s*$")
_LIB_LINE = re.compile(r"^\s*\[(pip\d*|conda)\]\s*(.*?)\s*$")
_ENV_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def _key(raw: str) -> str:
    return " ".join(raw.lower().split())


def _gpu_names(models: str | None) -> list[str]:
    if models is None:
        return []
    names: list[str] = []
    for line in models.splitlines():
        m = _GPU_N.match(line)
        if m:
            names.append(re.sub(r"\s*\(UUID:[^)]*\)\s*$", "", m.group(2)))
    if names:
        return names
    first = models.strip().splitlines()[0].strip() if models.strip() else ""
    if first.lower() in _MISSING:
        return []
    return [first]


def _pip_entry(text: str) -> tuple[str, str] | None:
    m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*(\S+)", text)
    if m:
        return normalize_name(m.group(1)), m.group(2)
    m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*\(([0-9][^)\s]*)\)", text)
    if m:
        return normalize_name(m.group(1)), m.group(2)
    m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s+([0-9]\S*)(?:\s+.*)?", text)
    if m:
        return normalize_name(m.group(1)), m.group(2)
    return None


def parse_collect_env(text: str, *, source: str = "collect_env") -> CollectEnv:
    """Parse PyTorch's ``collect_env`` (any era) or vLLM's ``collect-env`` (FACTS.md §2.9).

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
        low = _key(stripped)
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
        lib = _LIB_LINE.match(line)
        if lib:
            cont = None
            body = lib.group(2)
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
                entry = _pip_entry(body)
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
        m = _KEY_LINE.match(line)
        if m_torch and not m:
            key, value = "pytorch version", m_torch.group(1).strip()
            raw_key = "PyTorch version"
        elif m:
            raw_key, value = m.group(1).strip(), m.group(2).strip()
            key = _key(raw_key)
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


# ------------------------------------------------------------------ sglang check_env


class SglangCheckEnv(Strict):
    """``python3 -m sglang.check_env`` (FACTS.md §2.9; format of ``sglang/check_env.py``).

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
_SG_GPU = re.compile(r"^GPU\s+([\d,\s]+?)(\s+Compute Capability)?$", re.IGNORECASE)


def parse_sglang_check_env(text: str, *, source: str = "sglang check_env") -> SglangCheckEnv:
    """Parse ``python3 -m sglang.check_env`` output (FACTS.md §2.9).

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
        m = _KEY_LINE.match(stripped) if stripped else None
        key = _key(m.group(1)) if m else ""
        if topology:
            if key in ("hypervisor vendor", "ulimit soft"):
                topology = False
            else:
                continue
        if not m:
            continue
        raw_key, value = m.group(1).strip(), m.group(2).strip()
        if key in ("amd topology", "nvidia topology"):
            topology = True
            fields.setdefault(raw_key, value)
            continue
        fields.setdefault(raw_key, value)
        gpu = _SG_GPU.match(raw_key)
        if gpu:
            idx = [int(t) for t in re.findall(r"\d{1,6}", gpu.group(1))]
            if gpu.group(2):
                values.setdefault("compute_capability", value)
            else:
                for i in idx:
                    by_index.setdefault(i, value)
            continue
        attr = _SG_KEYS.get(key)
        if attr is not None:
            values.setdefault(attr, value or None)
            if attr in ("rocm_available", "cuda_available"):
                recognised = True
            if attr == "hipcc":
                hv = re.search(r"HIP version\s*:\s*(\S+)", value)
                if hv:
                    values.setdefault("hip_version", hv.group(1))
            continue
        if key in _SG_OTHER or " " in raw_key.strip():
            continue
        if key == "pytorch":
            recognised = True
            name = "torch"
        else:
            name = normalize_name(raw_key)
        if value and value.lower() != "module not found" and re.fullmatch(r"[^\s]+", value):
            packages.setdefault(name, value)
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


# -------------------------------------------------------------------------- pip list


PIP_RULER = re.compile(r"^-{3,}(\s+-{3,})*\s*$")
PIP_HEADER = re.compile(r"^Package\s+Version\b")


def parse_pip_list(text: str, *, source: str = "pip list") -> dict[str, str]:
    """Parse ``pip list`` columns (header and ruler optional) or ``pip freeze`` lines.

    Returns PEP 503 names -> versions as printed. ``name==version`` and ``name (version)``
    are read; ``name @ url``, ``-e ...`` and comments are skipped; a version must start with
    a digit. Raises ``FormatError`` naming ``source`` when no package line is present.
    """
    out: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "-e ", "--")):
            continue
        if PIP_HEADER.match(stripped) or PIP_RULER.match(stripped):
            continue
        lib = _LIB_LINE.match(stripped)
        if lib:
            if lib.group(1) == "conda":
                continue
            stripped = lib.group(2)
        entry = _pip_entry(stripped)
        if entry is not None:
            out[entry[0]] = entry[1]
    if not out:
        raise FormatError(
            f"{source}: no package line found (expected `pip list` columns "
            "'name  version' or `pip freeze` lines 'name==version')"
        )
    return out
