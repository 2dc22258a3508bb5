"""``pin audit``: the rules for Python code (read with :mod:`ast`; nothing is imported or run).

One parse and one walk of the tree per file find:

- device strings ROCm builds of PyTorch refuse (``torch.device("rocm")``, ``.to("hip")``,
  ``device="rocm:0"``), rule ``python.device-string``;
- NVML from Python (``import pynvml``, ``nvidia_smi``, ``py3nvml``; ``pynvml.nvmlInit()``),
  rules ``python.nvml-import`` / ``python.nvml-init``;
- ``nvidia-smi`` run from Python (``subprocess.*`` / ``os.system`` / ``os.popen`` with a
  literal command), rule ``python.nvidia-smi``;
- TF32 switches (``allow_tf32 = True``, ``fp32_precision = "tf32"``,
  ``torch.set_float32_matmul_precision("high" | "medium")``), rule ``python.tf32``;
- build hooks of ``torch.utils.cpp_extension`` (``CUDAExtension``, ``BuildExtension``,
  ``load`` / ``load_inline`` with CUDA sources, ``CUDA_HOME``), rules ``python.cuda-extension``,
  ``python.build-extension``, ``python.load-cuda``, ``python.cuda-home``; nvcc arch flags
  (``-arch=sm_80``, ``-gencode ...``) in ``{"nvcc": [...]}`` or ``extra_cuda_cflags``, rule
  ``python.nvcc-arch``; a CUDA extension built only under a condition a ROCm build does not
  meet (``if CUDA_HOME is not None: CUDAExtension ... else: CppExtension``), rule
  ``python.cuda-only-extension-gate`` (:mod:`pinning.audit.python_gate`);
- kernels embedded in Python (``cupy.RawKernel`` / ``RawModule`` / ``ElementwiseKernel`` /
  ``ReductionKernel``, ``numba.cuda.jit``, PyCUDA ``SourceModule``), rules
  ``python.cupy-kernel``, ``python.numba-cuda``, ``python.pycuda``. A kernel source that is a
  string literal (or a module-level name bound to one) is also handed to
  ``pinning.audit.kernels.scan_cuda_text`` and counted in ``kernel_lines``.

Names are resolved through the file's imports (``import torch as T``, ``from numba import
cuda``, ``from torch.utils.cpp_extension import CUDAExtension as CE``); a module-level
``def`` / ``class`` / assignment of the same name hides the import, so a local ``load()`` is
not ``cpp_extension.load``. Scopes are not modelled further: an import anywhere in the file
binds its name for the whole file. The walk is :class:`pinning.audit.python_walk.Walk`; this
module holds the rules' text and sources and turns the walk's hits into findings.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pinning.audit.files import read_text
from pinning.audit.kernels import scan_cuda_text
from pinning.audit.model import (
    CPP_EXTENSION,
    Citation,
    Context,
    FileScan,
    Finding,
    Kind,
    Skip,
    Verdict,
)
from pinning.audit.python_gate import GATE_RULE
from pinning.audit.python_walk import DEVICE_STRING_RULE, Walk, str_value

__all__ = ["RULES", "scan_python", "scan_python_text"]

# -- sources ------------------------------------------------------------------------------------

_HIP_NOTES = Citation(
    source="pytorch/pytorch@01800550d10752100a876246666bc1f4a60bc970:docs/source/notes/hip.rst",
    published_unknown="the page carries no date (GitHub shows the cited commit's date)")
_AMDSMI_PY = Citation(
    source="https://rocm.docs.amd.com/projects/amdsmi/en/docs-7.14.0/reference/"
           "amdsmi-py-api.html",
    published_unknown="the page (AMD SMI documentation for ROCm 7.14.0) carries no date")
_AMDSMI_CLI = Citation(
    source="https://rocm.docs.amd.com/projects/amdsmi/en/docs-7.14.0/how-to/"
           "amdsmi-cli-tool.html",
    published_unknown="the page (AMD SMI documentation for ROCm 7.14.0) carries no date")
_CUPY_ROCM = Citation(
    source="https://docs.cupy.dev/en/stable/install.html#using-cupy-on-amd-gpu-experimental",
    published_unknown="the page carries no date; `stable` is the documentation of CuPy's "
                      "latest release")
"""CuPy's install guide, "Using CuPy on AMD GPU (experimental)", Limitations: "Several options
in RawKernel/RawModule APIs: Jitify, dynamic parallelism" are not available."""
_NUMBA_HIP = Citation(
    source="https://github.com/ROCm/numba-hip",
    published_unknown="the repository's README carries no date")
"""ROCm's numba-hip: "a ROCm(TM) HIP backend for Numba", an "Experimental project" that "has
only been used and tested with AMD MI series GPUs on Linux systems"."""
_PYCUDA = Citation(
    source="https://pypi.org/project/pycuda/ (\"PyCUDA lets you access Nvidia's CUDA "
           "parallel computation API from Python\")",
    published_unknown="the project description carries no date")

@dataclass(frozen=True)
class _Rule:
    kind: Kind
    verdict: Verdict
    why: str
    todo: str
    citation: Citation
    replacement: str | None = None


RULES: dict[str, _Rule] = {
    DEVICE_STRING_RULE: _Rule(
        Kind.DEVICE_STRING, Verdict.PORT,
        "ROCm builds of PyTorch keep torch.cuda: the HIP device is \"cuda\", and \"rocm\" / "
        "\"hip\" are not valid device strings.",
        "Use \"cuda\" (or \"cuda:N\") on ROCm too.", _HIP_NOTES, '"cuda"'),
    "python.nvml-import": _Rule(
        Kind.NVML, Verdict.PORT,
        "NVML (pynvml / nvidia-ml-py) talks to NVIDIA's driver only; on AMD GPUs the "
        "management library is AMD SMI, whose Python API (amdsmi) has other names, handles "
        "and fields: not a drop-in.",
        "Query the GPUs through amdsmi (amdsmi_init, amdsmi_get_processor_handles, ...) on "
        "ROCm, or through torch.cuda where it suffices.", _AMDSMI_PY, "amdsmi"),
    "python.nvml-init": _Rule(
        Kind.NVML, Verdict.PORT,
        "nvmlInit() fails without NVIDIA's driver; AMD SMI's Python API starts with "
        "amdsmi_init() and is not a drop-in for the NVML calls that follow.",
        "Call amdsmi.amdsmi_init() on ROCm and port the NVML queries to amdsmi.",
        _AMDSMI_PY, "amdsmi.amdsmi_init"),
    "python.nvidia-smi": _Rule(
        Kind.NVIDIA_SMI, Verdict.PORT,
        "nvidia-smi exists only with NVIDIA's driver; AMD's command-line tool is amd-smi, "
        "whose subcommands and output differ.",
        "Run amd-smi (for example `amd-smi static` / `amd-smi metric`, with --json) on ROCm "
        "and parse its output instead.", _AMDSMI_CLI, "amd-smi"),
    "python.tf32": _Rule(
        Kind.TF32, Verdict.READY,
        "Works on ROCm, but numerics differ: TF32 is supported on MI300 (gfx942) via "
        "hipBLASLt with the same controls, and that path has hardware-level numerical "
        "differences from NVIDIA's.",
        "Expect results to differ from an NVIDIA run; compare with tolerances, or keep FP32 "
        "(\"highest\") where bitwise agreement matters.", _HIP_NOTES),
    "python.cuda-extension": _Rule(
        Kind.BUILD_HOOK, Verdict.PORT,
        "On a ROCm build of torch, CUDAExtension hipifies the CUDA sources (a text "
        "translation) and compiles them with hipcc; what hipify cannot translate (inline "
        "PTX, warp-size-32 assumptions, CUDA-only libraries) fails or miscomputes.",
        "Build against a ROCm torch and fix what the hipified sources leave (see the kernel "
        "findings for these sources).", CPP_EXTENSION),
    "python.build-extension": _Rule(
        Kind.BUILD_HOOK, Verdict.PORT,
        "BuildExtension compiles .cu sources with hipcc on a ROCm build of torch, adding "
        "--offload-arch flags from PYTORCH_ROCM_ARCH; the extension must build there.",
        "Build the extension with a ROCm torch and PYTORCH_ROCM_ARCH set to the GPU's gfx "
        "target.", CPP_EXTENSION),
    "python.load-cuda": _Rule(
        Kind.BUILD_HOOK, Verdict.PORT,
        "cpp_extension.load / load_inline with CUDA sources JIT-compiles them; on a ROCm "
        "build of torch they are hipified and compiled with hipcc, with hipify's limits.",
        "Run it against a ROCm torch and port what hipify leaves (inline PTX, warp size 32, "
        "CUDA-only libraries).", CPP_EXTENSION),
    "python.cuda-home": _Rule(
        Kind.BUILD_HOOK, Verdict.PORT,
        "CUDA_HOME names the NVIDIA toolkit; a ROCm build of torch uses ROCM_HOME (and "
        "IS_HIP_EXTENSION), so code keyed on CUDA_HOME takes the wrong branch.",
        "Check torch.version.hip / ROCM_HOME as well as CUDA_HOME.", CPP_EXTENSION,
        "ROCM_HOME"),
    GATE_RULE: _Rule(
        Kind.BUILD_HOOK, Verdict.PORT,
        "setup.py builds the CUDA extension only under a condition that is false on a ROCm "
        "build of torch: CUDA_HOME is None there unless a CUDA toolkit is installed too "
        "(cpp_extension looks for nvcc and /usr/local/cuda only) and torch.version.cuda is "
        "None; it falls back to a CppExtension (or none) and installs a CPU-only package "
        "without an error.",
        "Accept ROCm in the condition (CUDA_HOME or ROCM_HOME, torch.version.cuda or "
        "torch.version.hip, or cpp_extension.IS_HIP_EXTENSION): on ROCm, CUDAExtension "
        "hipifies the CUDA sources and builds them with hipcc.", CPP_EXTENSION,
        "IS_HIP_EXTENSION / ROCM_HOME"),
    "python.nvcc-arch": _Rule(
        Kind.ARCH_LIST, Verdict.PORT,
        "sm_XX / compute_XX name NVIDIA GPU architectures; on ROCm cpp_extension passes these "
        "flags to hipcc, and gfx targets come from --offload-arch / PYTORCH_ROCM_ARCH.",
        "Leave out -arch/-gencode on ROCm and set PYTORCH_ROCM_ARCH (or --offload-arch) to "
        "the GPU's gfx target, e.g. gfx942.", CPP_EXTENSION, "--offload-arch=gfxNNN"),
    "python.cupy-kernel": _Rule(
        Kind.EMBEDDED_KERNEL, Verdict.PORT,
        "CuPy's ROCm support is experimental; a CUDA kernel compiled at run time must build "
        "as HIP there, and Jitify and dynamic parallelism are not available.",
        "Install CuPy's ROCm build, check the kernel source compiles as HIP and fix what it "
        "assumes (warp size 32, PTX, CUDA-only headers).", _CUPY_ROCM),
    "python.numba-cuda": _Rule(
        Kind.EMBEDDED_KERNEL, Verdict.PORT,
        "Numba's @cuda.jit targets NVIDIA GPUs; on AMD GPUs the Numba route is ROCm's "
        "numba-hip, an experimental HIP backend used and tested on AMD Instinct MI series GPUs "
        "on Linux only.",
        "Try the kernel on numba-hip (experimental; MI series on Linux) or rewrite it (for "
        "example in Triton, a CuPy RawKernel or a HIP extension).", _NUMBA_HIP, "numba-hip"),
    "python.pycuda": _Rule(
        Kind.EMBEDDED_KERNEL, Verdict.BLOCKED,
        "PyCUDA is a wrapper of NVIDIA's CUDA API and compiles SourceModule with nvcc; it "
        "has no ROCm backend.",
        "Replace PyCUDA (for example with CuPy's ROCm build, HIP Python or a torch "
        "extension) and port the kernel source.", _PYCUDA),
}
"""Every rule of this module by id: kind, verdict, why, todo, source, replacement."""

# -- the scan ------------------------------------------------------------------------------------

KernelScanner = Callable[..., FileScan]


def _kernel_scanner() -> KernelScanner:
    """The scanner of embedded kernel strings, :func:`pinning.audit.kernels.scan_cuda_text`
    (a seam the tests replace).
    """
    return scan_cuda_text


def scan_python(path: Path, display: str, ctx: Context) -> FileScan:
    """Findings of the Python rules (:data:`RULES`) in the file ``path``, reported under
    ``display``; kernel strings embedded in it are scanned as CUDA and counted in
    ``kernel_lines`` (non-blank lines). Raises :class:`Skip` for a file
    :func:`~pinning.audit.files.read_text` refuses and for one that is not valid Python
    (``not valid Python (line N)``) or nests too deeply to parse; raises nothing else.
    """
    return scan_python_text(read_text(path), display, ctx)


TRIGGERS = ("rocm", "hip", "nvml", "nvidia", "tf32", "float32_matmul_precision",
            "fp32_precision", "cpp_extension", "CUDAExtension", "BuildExtension", "CUDA_HOME",
            "nvcc", "cupy", "numba", "pycuda", "SourceModule")
"""Words one of which every rule needs in the source (a device string, a module or name it
imports, a flag): a file with none of them cannot have a finding and is not parsed."""


def scan_python_text(text: str, display: str, ctx: Context) -> FileScan:
    """:func:`scan_python` on Python source ``text`` already read; raises :class:`Skip` when
    it does not parse. A file without any of the :data:`TRIGGERS` words is not parsed (no
    rule can fire on it), so most of a large tree costs one substring search per word.
    """
    if not any(word in text for word in TRIGGERS):
        return FileScan()
    walk = Walk()
    walk.walk(_parse(text, display))
    scan = FileScan(findings=_merge(_finding(hit, display, ctx) for hit in walk.hits))
    scanner = _kernel_scanner()
    for node in walk.kernels:
        sub = scanner(str_value(node) or "", display, ctx, line_offset=node.lineno - 1)
        scan.findings += sub.findings
        scan.kernel_lines += sub.kernel_lines
        scan.skipped += sub.skipped
    return scan


def _finding(hit: tuple[str, ast.AST, str], display: str, ctx: Context) -> Finding:
    """The finding of one ``(rule id, node, subject)`` hit of the walk."""
    rule_id, node, subject = hit
    rule = RULES[rule_id]
    why = rule.why
    if rule_id == "python.tf32" and ctx.gfx_targets and "gfx942" not in ctx.gfx_targets:
        gpu = ctx.gpu_name or ", ".join(ctx.gfx_targets)
        why += f" The source names MI300 (gfx942) for TF32; the move is to {gpu}."
    return Finding(
        kind=rule.kind, rule=rule_id, verdict=rule.verdict, subject=subject, path=display,
        line=max(1, getattr(node, "lineno", 1)), column=getattr(node, "col_offset", 0) + 1,
        why=why, todo=rule.todo, replacement=rule.replacement, citation=rule.citation)


def _parse(text: str, display: str) -> ast.Module:
    try:
        return ast.parse(text, filename=display)
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        raise Skip(f"not valid Python{where}") from None
    except ValueError:  # a NUL byte past the first 8 KiB
        raise Skip("not valid Python (NUL byte)") from None
    except (RecursionError, MemoryError):
        raise Skip("not valid Python (nested too deeply to parse)") from None


def _merge(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per ``(rule, subject)``, at its first place, with ``lines`` listing every
    line it occurs on when it occurs on more than one.
    """
    ordered = sorted(findings, key=lambda f: (f.line or 0, f.column or 0))
    first: dict[tuple[str, str], int] = {}
    lines: list[list[int]] = []
    out: list[Finding] = []
    for finding in ordered:
        key = (finding.rule, finding.subject)
        if key in first:
            seen = lines[first[key]]
            if finding.line is not None and finding.line not in seen:
                seen.append(finding.line)
            continue
        first[key] = len(out)
        out.append(finding)
        lines.append([finding.line] if finding.line is not None else [])
    return [f.model_copy(update={"lines": ls}) if len(ls) > 1 else f
            for f, ls in zip(out, lines, strict=True)]
