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
  ``python.nvcc-arch``;
- kernels embedded in Python (``cupy.RawKernel`` / ``RawModule`` / ``ElementwiseKernel`` /
  ``ReductionKernel``, ``numba.cuda.jit``, PyCUDA ``SourceModule``), rules
  ``python.cupy-kernel``, ``python.numba-cuda``, ``python.pycuda``. A kernel source that is a
  string literal (or a module-level name bound to one) is also handed to
  ``pinning.audit.kernels.scan_cuda_text`` and counted in ``kernel_lines``.

Names are resolved through the file's imports (``import torch as T``, ``from numba import
cuda``, ``from torch.utils.cpp_extension import CUDAExtension as CE``); a module-level
``def`` / ``class`` / assignment of the same name hides the import, so a local ``load()`` is
not ``cpp_extension.load``. Scopes are not modelled further: an import anywhere in the file
binds its name for the whole file.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from pinning.audit.files import read_text
from pinning.audit.model import Citation, Context, FileScan, Finding, Kind, Skip, Verdict

__all__ = [
    "DEVICE_STRING_RULE", "RULES", "device_string_calls", "is_rocm_device_string", "scan_python",
    "scan_python_text",
]

# -- sources ------------------------------------------------------------------------------------

_HIP_NOTES = Citation(
    source="pytorch/pytorch@01800550d10752100a876246666bc1f4a60bc970:docs/source/notes/hip.rst",
    published_unknown="the page carries no date (GitHub shows the cited commit's date)")
_CPP_EXTENSION = Citation(
    source="pytorch/pytorch@0011ec5c5d6171a395bb339b873343a4cdfebd18:"
           "torch/utils/cpp_extension.py",
    published_unknown="the source file carries no date (GitHub shows the cited commit's "
                      "date)")
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

DEVICE_STRING_RULE = "python.device-string"


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
        "findings for these sources).", _CPP_EXTENSION),
    "python.build-extension": _Rule(
        Kind.BUILD_HOOK, Verdict.PORT,
        "BuildExtension compiles .cu sources with hipcc on a ROCm build of torch, adding "
        "--offload-arch flags from PYTORCH_ROCM_ARCH; the extension must build there.",
        "Build the extension with a ROCm torch and PYTORCH_ROCM_ARCH set to the GPU's gfx "
        "target.", _CPP_EXTENSION),
    "python.load-cuda": _Rule(
        Kind.BUILD_HOOK, Verdict.PORT,
        "cpp_extension.load / load_inline with CUDA sources JIT-compiles them; on a ROCm "
        "build of torch they are hipified and compiled with hipcc, with hipify's limits.",
        "Run it against a ROCm torch and port what hipify leaves (inline PTX, warp size 32, "
        "CUDA-only libraries).", _CPP_EXTENSION),
    "python.cuda-home": _Rule(
        Kind.BUILD_HOOK, Verdict.PORT,
        "CUDA_HOME names the NVIDIA toolkit; a ROCm build of torch uses ROCM_HOME (and "
        "IS_HIP_EXTENSION), so code keyed on CUDA_HOME takes the wrong branch.",
        "Check torch.version.hip / ROCM_HOME as well as CUDA_HOME.", _CPP_EXTENSION,
        "ROCM_HOME"),
    "python.nvcc-arch": _Rule(
        Kind.ARCH_LIST, Verdict.PORT,
        "sm_XX / compute_XX name NVIDIA GPU architectures; on ROCm cpp_extension passes these "
        "flags to hipcc, and gfx targets come from --offload-arch / PYTORCH_ROCM_ARCH.",
        "Leave out -arch/-gencode on ROCm and set PYTORCH_ROCM_ARCH (or --offload-arch) to "
        "the GPU's gfx target, e.g. gfx942.", _CPP_EXTENSION, "--offload-arch=gfxNNN"),
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

# -- what the rules look for ---------------------------------------------------------------------

_NVML_MODULES = frozenset({"pynvml", "nvidia_smi", "py3nvml"})
_RUNNERS = frozenset({
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput", "os.system",
    "os.popen",
})
_TF32_FLAGS = frozenset({"torch.backends.cuda.matmul.allow_tf32",
                         "torch.backends.cudnn.allow_tf32"})
_TF32_PRECISION = frozenset({"torch.backends.cuda.matmul.fp32_precision",
                             "torch.backends.cudnn.conv.fp32_precision"})
_CPPEXT = "torch.utils.cpp_extension"
_CUPY_KERNELS = {  # class -> (positional index, keyword) of the CUDA source(s)
    "cupy.RawKernel": ((0, "code"),),
    "cupy.RawModule": ((0, "code"),),
    "cupy.ElementwiseKernel": ((2, "operation"), (-1, "preamble")),
    "cupy.ReductionKernel": ((2, "map_expr"), (3, "reduce_expr"), (4, "post_map_expr"),
                             (-1, "preamble")),
}
_PYCUDA_MODULES = frozenset({"pycuda.compiler.SourceModule",
                             "pycuda.compiler.DynamicSourceModule"})
# The last name of every call or attribute a rule resolves: nothing else is resolved, so a
# long attribute chain costs one step per node, not one per link.
_CALL_NAMES = frozenset({
    "nvmlInit", "run", "call", "check_call", "check_output", "Popen", "getoutput",
    "getstatusoutput", "system", "popen", "set_float32_matmul_precision", "CUDAExtension",
    "load", "load_inline", "RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel",
    "jit", "SourceModule", "DynamicSourceModule", "get", "getenv",
})
_REF_NAMES = frozenset({"BuildExtension", "CUDA_HOME"})
_ARCH_OPTIONS = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code",
                 "--gpu-code")
_SUBJECT_MAX = 80


def is_rocm_device_string(value: str) -> bool:
    """Whether ``value`` is ``rocm`` / ``hip``, optionally ``:N`` (N ASCII digits): a device
    string ROCm builds of PyTorch refuse (source: pytorch/pytorch docs/source/notes/hip.rst).
    """
    name, sep, index = value.partition(":")
    return name in ("rocm", "hip") and (not sep or (index.isascii() and index.isdigit()))


def device_string_calls(tree: ast.AST) -> Iterator[tuple[ast.Call, str]]:
    """``(call, value)`` for each call in ``tree`` that passes a ROCm-refused device string:
    the first argument of a function or method named ``device`` / ``to`` / ``cuda_device``,
    or any ``device=`` keyword. Names are not resolved (``x.to`` is any object's ``to``).
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield from _device_strings(node)


def _device_strings(node: ast.Call) -> Iterator[tuple[ast.Call, str]]:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else (
        func.id if isinstance(func, ast.Name) else "")
    values: list[ast.expr] = []
    if name in ("device", "to", "cuda_device") and node.args:
        values.append(node.args[0])
    values += [kw.value for kw in node.keywords if kw.arg == "device"]
    for value in values:
        text = _str(value)
        if text is not None and is_rocm_device_string(text):
            yield node, text


# -- the scan ------------------------------------------------------------------------------------

KernelScanner = Callable[..., FileScan]


def _kernel_scanner() -> KernelScanner | None:
    """``pinning.audit.kernels.scan_cuda_text`` when that module is present."""
    try:
        module = importlib.import_module("pinning.audit.kernels")
    except ImportError:
        return None
    scanner = getattr(module, "scan_cuda_text", None)
    return cast(KernelScanner, scanner) if callable(scanner) else None


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
    tree = _parse(text, display)
    found = _Walk(display, ctx)
    found.walk(tree)
    return found.result()


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


@dataclass
class _Walk:
    """The state of one file's scan: what the walk collected, then the findings."""

    display: str
    ctx: Context
    bindings: dict[str, str] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)
    strings: dict[str, ast.expr] = field(default_factory=dict)
    lists: dict[str, ast.expr] = field(default_factory=dict)
    calls: list[ast.Call] = field(default_factory=list)
    refs: list[ast.expr] = field(default_factory=list)
    assigns: list[ast.Assign] = field(default_factory=list)
    imports: list[ast.Import | ast.ImportFrom] = field(default_factory=list)
    decorated: list[ast.expr] = field(default_factory=list)
    dicts: list[ast.Dict] = field(default_factory=list)
    subscripts: list[ast.Subscript] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    kernels: list[ast.expr] = field(default_factory=list)

    def walk(self, tree: ast.Module) -> None:
        """One pass over ``tree`` collecting the nodes the rules judge, then the rules."""
        for stmt in tree.body:  # module-level names that hide an import of the same name
            self._module_names(stmt)
        for node in ast.walk(tree):
            self._collect(node)
        for imp in self.imports:
            self._bind(imp)
        for name in self.hidden:
            self.bindings.pop(name, None)
        self._judge()

    def _collect(self, node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            self.calls.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.imports.append(node)
        elif isinstance(node, ast.Assign):
            self.assigns.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.decorated += [d for d in node.decorator_list if not isinstance(d, ast.Call)]
        elif isinstance(node, ast.Dict):
            self.dicts.append(node)
        elif isinstance(node, ast.Subscript):
            self.subscripts.append(node)
        elif ((isinstance(node, ast.Attribute) and node.attr in _REF_NAMES)
              or (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load))):
            self.refs.append(node)  # names are filtered by the bindings once all are known

    def _module_names(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.hidden.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    self.hidden.add(target.id)
                    if len(stmt.targets) == 1 and _str(stmt.value) is not None:
                        self.strings[target.id] = stmt.value
                    elif len(stmt.targets) == 1 and isinstance(stmt.value, (ast.List, ast.Tuple)):
                        self.lists[target.id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            self.hidden.add(stmt.target.id)

    def _bind(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.bindings[alias.asname] = alias.name
                else:
                    top = alias.name.split(".", 1)[0]
                    self.bindings[top] = top
            return
        if node.level or not node.module:
            return  # relative imports name the project's own modules
        for alias in node.names:
            if alias.name != "*":
                self.bindings[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    # -- rules -----------------------------------------------------------------------------------

    def _judge(self) -> None:
        for imp in self.imports:
            self._nvml_import(imp)
        for call in self.calls:
            for node, value in _device_strings(call):
                self._add(DEVICE_STRING_RULE, node, f"{value!r} as a device")
            self._call(call)
        for assign in self.assigns:
            self._tf32_assign(assign)
        self._references()
        for deco in self.decorated:
            if self._qualname(deco) == "numba.cuda.jit":
                self._add("python.numba-cuda", deco, f"@{_written(deco)}")
        for table in self.dicts:
            for key, flags in zip(table.keys, table.values, strict=True):
                if key is not None and _str(key) == "nvcc":
                    self._nvcc_flags(flags)

    def _references(self) -> None:
        for ref in self.refs:
            if isinstance(ref, ast.Name) and ref.id not in self.bindings:
                continue
            name = self._qualname(ref)
            if name == f"{_CPPEXT}.BuildExtension":
                self._add("python.build-extension", ref, _written(ref))
            elif name == f"{_CPPEXT}.CUDA_HOME":
                self._add("python.cuda-home", ref, _written(ref))
        for sub in self.subscripts:
            if self._qualname(sub.value) == "os.environ" and _str(sub.slice) == "CUDA_HOME":
                self._add("python.cuda-home", sub, 'os.environ["CUDA_HOME"]')

    def _nvml_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".", 1)[0] in _NVML_MODULES:
                    self._add("python.nvml-import", node, f"import {alias.name}")
        elif not node.level and node.module and node.module.split(".", 1)[0] in _NVML_MODULES:
            self._add("python.nvml-import", node, f"from {node.module} import ...")

    def _call(self, call: ast.Call) -> None:
        func = call.func
        self._cuda_cflags(call)
        # A bare name is resolved whatever it is (it may be an alias: `CE(...)`); an
        # attribute chain only when its last name is one a rule looks for.
        if isinstance(func, ast.Attribute) and func.attr not in _CALL_NAMES:
            return
        name = self._qualname(func)
        if name is None:
            return
        last = name.rsplit(".", 1)[-1]
        written = _written(func)
        if last == "nvmlInit" and name.split(".", 1)[0] in _NVML_MODULES:
            self._add("python.nvml-init", call, f"{written}()")
        elif name in _RUNNERS:
            self._nvidia_smi(call, written)
        elif name == "torch.set_float32_matmul_precision":
            value = _str(_arg(call, 0, "precision"))
            if value in ("high", "medium"):
                self._add("python.tf32", call, f"{written}({value!r})")
        elif name.startswith(f"{_CPPEXT}."):
            self._cpp_extension(call, name, written)
        elif name in ("os.environ.get", "os.getenv") and _str(_arg(call, 0, "key")) == "CUDA_HOME":
            self._add("python.cuda-home", call, f'{written}("CUDA_HOME")')
        else:
            self._embedded(call, name, written)

    def _cpp_extension(self, call: ast.Call, name: str, written: str) -> None:
        if name == f"{_CPPEXT}.CUDAExtension":
            self._add("python.cuda-extension", call, f"{written}(...)")
        elif name in (f"{_CPPEXT}.load", f"{_CPPEXT}.load_inline"):
            self._load(call, name, written)

    def _embedded(self, call: ast.Call, name: str, written: str) -> None:
        if name in _CUPY_KERNELS:
            self._add("python.cupy-kernel", call, f"{written}(...)")
            for index, keyword in _CUPY_KERNELS[name]:
                self._kernel(_arg(call, index, keyword))
        elif name == "numba.cuda.jit":
            self._add("python.numba-cuda", call, f"{written}(...)")
        elif name in _PYCUDA_MODULES:
            self._add("python.pycuda", call, f"{written}(...)")
            self._kernel(_arg(call, 0, "source"))

    def _nvidia_smi(self, call: ast.Call, written: str) -> None:
        command = _arg(call, 0, "args") or _arg(call, 0, "cmd") or _arg(call, 0, "command")
        text = _str(command)
        if text is not None:
            program = text.strip().split(None, 1)[0] if text.strip() else ""
            shown = text.strip()
        elif isinstance(command, (ast.List, ast.Tuple)) and command.elts:
            parts = [_str(e) for e in command.elts]
            program = parts[0] or ""
            shown = " ".join(p if p is not None else "..." for p in parts)
        else:
            return
        if program.rsplit("/", 1)[-1] == "nvidia-smi":
            self._add("python.nvidia-smi", call, f"{written}({_short(shown)!r})")

    def _tf32_assign(self, node: ast.Assign) -> None:
        value = node.value
        for target in node.targets:
            name = self._qualname(target) if isinstance(target, ast.Attribute) else None
            if name in _TF32_FLAGS and isinstance(value, ast.Constant) and value.value is True:
                self._add("python.tf32", target, f"{_written(target)} = True")
            elif name in _TF32_PRECISION and _str(value) == "tf32":
                self._add("python.tf32", target, f'{_written(target)} = "tf32"')

    def _load(self, call: ast.Call, name: str, written: str) -> None:
        if name.endswith("load_inline"):
            cuda = _arg(call, -1, "cuda_sources")
            if cuda is None or (isinstance(cuda, ast.Constant) and cuda.value is None):
                return
            self._add("python.load-cuda", call, f"{written}(cuda_sources=...)")
            for source in cuda.elts if isinstance(cuda, (ast.List, ast.Tuple)) else [cuda]:
                self._kernel(source)
            return
        sources = _arg(call, 1, "sources")
        names = [_str(e) for e in sources.elts] if isinstance(
            sources, (ast.List, ast.Tuple)) else [_str(sources)]
        if any(n is not None and n.endswith((".cu", ".cuh")) for n in names):
            self._add("python.load-cuda", call, f"{written}(... .cu ...)")

    def _cuda_cflags(self, call: ast.Call) -> None:
        for kw in call.keywords:
            if kw.arg == "extra_cuda_cflags":
                self._nvcc_flags(kw.value)

    def _nvcc_flags(self, value: ast.expr) -> None:
        if isinstance(value, ast.Name) and value.id in self.lists:
            value = self.lists[value.id]
        if not isinstance(value, (ast.List, ast.Tuple)):
            return
        elts = value.elts
        skip = False
        for i, elt in enumerate(elts):
            if skip:
                skip = False
                continue
            flag = _str(elt)
            if flag is None:
                continue
            subject = flag
            if flag in _ARCH_OPTIONS and i + 1 < len(elts):
                following = _str(elts[i + 1])
                if following is not None:
                    subject, skip = f"{flag} {following}", True
            elif not flag.startswith(tuple(f"{o}=" for o in _ARCH_OPTIONS)):
                continue
            if "sm_" in subject or "compute_" in subject:
                self._add("python.nvcc-arch", elt, _short(subject))

    def _kernel(self, node: ast.expr | None) -> None:
        if isinstance(node, ast.Name) and node.id in self.strings:
            node = self.strings[node.id]
        if node is not None and _str(node) is not None and all(k is not node for k in
                                                               self.kernels):
            self.kernels.append(node)

    # -- helpers ---------------------------------------------------------------------------------

    def _qualname(self, node: ast.expr) -> str | None:
        """The dotted name ``node`` stands for through the file's imports, or ``None``."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.bindings.get(node.id)
        if base is None:
            return None
        return ".".join([base, *reversed(parts)])

    def _add(self, rule_id: str, node: ast.AST, subject: str) -> None:
        rule = RULES[rule_id]
        why = rule.why
        if rule_id == "python.tf32" and self.ctx.gfx_targets and (
                "gfx942" not in self.ctx.gfx_targets):
            gpu = self.ctx.gpu_name or ", ".join(self.ctx.gfx_targets)
            why += f" The source names MI300 (gfx942) for TF32; the move is to {gpu}."
        self.findings.append(Finding(
            kind=rule.kind, rule=rule_id, verdict=rule.verdict, subject=subject,
            path=self.display, line=max(1, getattr(node, "lineno", 1)),
            column=getattr(node, "col_offset", 0) + 1, why=why, todo=rule.todo,
            replacement=rule.replacement, citation=rule.citation))

    def result(self) -> FileScan:
        """The findings (one per rule and subject, every line listed), merged with the kernel
        scan of the embedded kernel strings, and their lines of kernel code.
        """
        scan = FileScan(findings=_merge(self.findings))
        scanner = _kernel_scanner()
        for node in self.kernels:
            text = _str(node) or ""
            lines = sum(1 for line in text.splitlines() if line.strip())
            if scanner is None:
                scan.kernel_lines += lines
                continue
            sub = scanner(text, self.display, self.ctx, line_offset=node.lineno - 1)
            scan.findings += sub.findings
            scan.kernel_lines += sub.kernel_lines
            scan.skipped += sub.skipped
        return scan


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


def _str(node: ast.AST | None) -> str | None:
    """The value of a string literal node, else ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _arg(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    """The argument at ``index`` (``-1``: keyword only) or named ``keyword`` of ``call``."""
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if 0 <= index < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[:index + 1]):
        return call.args[index]
    return None


def _written(node: ast.expr) -> str:
    """``node`` as written when it is a dotted name (``T.utils.cpp_extension.load``); the
    part that is not a name is shown as ``...``; at most 80 characters.
    """
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "...")
    return _short(".".join(reversed(parts)))


def _short(text: str) -> str:
    """``text`` on one line, cut to :data:`_SUBJECT_MAX` characters."""
    one = " ".join(text.split())
    return one if len(one) <= _SUBJECT_MAX else one[:_SUBJECT_MAX - 3] + "..."
