"""Parser for pasted PyTorch ``collect_env`` / vLLM ``collect-env`` dumps.

``pip list`` / ``pip freeze`` is :mod:`pinning.probe.formats.pip_list`, SGLang's
``check_env`` :mod:`pinning.probe.formats.sglang`; finding the dumps inside one pasted file
is :mod:`pinning.probe.formats.split`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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


@dataclass
class _Reader:
    """The collect_env reader's state: what was read so far, the section it is in (``main``,
    ``cpu``, ``topology`` or ``env``) and the multi-line value being continued (``cont``).
    """

    values: dict[str, str | None] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    pip: dict[str, str] = field(default_factory=dict)
    conda: dict[str, CondaPackage] = field(default_factory=dict)
    libs_seen: bool = False
    mode: str = "main"
    in_smi: bool = False
    cont: str | None = None

    def feed(self, line: str) -> None:
        """Read one line: one branch per line shape, in output order."""
        stripped = line.strip()
        low = norm_key(stripped)
        if self.mode == "topology":
            self._topology(line, low)
        elif not stripped:
            self.cont = None
            self.mode = "main" if self.mode == "cpu" else self.mode
        elif low in _CE_TITLES:
            self.cont = None
            self.mode = {"cpu info": "cpu", "environment variables": "env"}.get(low, "main")
        elif PURE_RULER.match(line):
            self.cont = None
        elif lib := LIB_LINE.match(line):
            self.cont = None
            self._library(lib.group(1), lib.group(2).strip())
        elif self.mode == "env":
            if m_env := _ENV_LINE.match(stripped):
                self.env[m_env.group(1)] = m_env.group(2)
        elif self.mode != "cpu":
            self._key_line(line, stripped)

    def _topology(self, line: str, low: str) -> None:
        """A line of the GPU topology section (which may hold a whole ``rocm-smi`` log)."""
        if "rocm system management interface" in low:
            self.in_smi = True
        elif "end of rocm smi log" in low:
            self.in_smi = False
        elif (PURE_RULER.match(line) and not self.in_smi) or low == "environment variables":
            self.mode = "env" if low == "environment variables" else "main"

    def _library(self, kind: str, body: str) -> None:
        """A ``[pip3] name==version`` or ``[conda] name version build channel`` line."""
        self.libs_seen = True
        if kind != "conda":
            entry = pip_entry(body)
            if entry is not None:
                self.pip[entry[0]] = entry[1]
            return
        toks = body.split()
        if len(toks) >= 2 and body.lower() != "could not collect":
            self.conda[toks[0]] = CondaPackage(
                version=toks[1], build=toks[2] if len(toks) > 2 else None,
                channel=toks[3] if len(toks) > 3 else None)

    def _continue(self, stripped: str) -> None:
        """Append ``stripped`` to the multi-line value being read."""
        assert self.cont is not None
        prev = self.values.get(self.cont)
        self.values[self.cont] = f"{prev}\n{stripped}" if prev else stripped

    def _key_line(self, line: str, stripped: str) -> None:
        """A ``Key: value`` line (or ``PyTorch version 1.5.0``), or a continuation line."""
        m_torch = re.match(r"^PyTorch version\s+([^:\s：].*)$", stripped)
        m = KEY_LINE.match(line)
        if m_torch and not m:
            key, value, raw_key = "pytorch version", m_torch.group(1).strip(), "PyTorch version"
        elif m:
            raw_key, value = m.group(1).strip(), m.group(2).strip()
            key = norm_key(raw_key)
        else:
            if self.cont is not None:
                self._continue(stripped)
            return
        attr = _CE_KEYS.get(key)
        # cuDNN's extra lines are file paths: a `Key: value` line after them is a new field
        # (`Is XPU available: False`), not one more line of the cuDNN value.
        if (attr is None and self.cont not in (None, "cudnn_version")
                and key not in _CE_OTHER_KEYS):
            self._continue(stripped)
            return
        self.cont = None
        if key == "cpu" and not value:
            self.mode = "cpu"
        elif key == "gpu topology":
            self.mode, self.in_smi = "topology", False
        elif key not in ("versions of relevant libraries", "version of relevant libraries"):
            self.fields.setdefault(raw_key, value)
            if attr is not None:
                self.values.setdefault(attr, value or None)
                self.cont = attr if attr in _CE_MULTILINE else None


def parse_collect_env(text: str, *, source: str = "collect_env") -> CollectEnv:
    """Parse PyTorch's ``collect_env`` (any era since 2018) or vLLM's ``collect-env``.

    Tolerates ``PyTorch version 1.5.0`` without a colon, ``Os:``, full-width colons,
    ``Version(s) of relevant libraries``, the ``Collecting environment information...``
    banner, trailing IDE lines, vLLM's ``Key   : value`` alignment and ``=====`` titled
    sections, and GPU lists on the lines after "GPU models and configuration:". Raises
    ``FormatError`` naming ``source`` when no collect_env line is present.
    """
    reader = _Reader()
    for line in text.splitlines():
        reader.feed(line)
    if not reader.values and not reader.libs_seen:
        raise FormatError(
            f"{source}: no collect_env line found (expected 'PyTorch version: ...', "
            "'CUDA used to build PyTorch: ...' and the other `python -m torch.utils.collect_env` "
            "lines)"
        )
    return CollectEnv(
        gpus=_gpu_names(reader.values.get("gpu_models")),
        pip_packages=reader.pip or None,
        conda_packages=reader.conda or None,
        env=reader.env,
        fields=reader.fields,
        **reader.values,
    )
