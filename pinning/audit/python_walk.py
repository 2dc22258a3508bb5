"""What the Python rules of ``pin audit`` (:mod:`pinning.audit.python_rules`) look for in one
parsed file: one walk of its tree resolves names through the file's imports and yields
``(rule id, node, subject)`` hits and the string literals that are kernel sources; the rules'
text, sources and verdicts live in :data:`pinning.audit.python_rules.RULES`. A CUDA extension
built only under a CUDA-only condition is :mod:`pinning.audit.python_gate`'s.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from pinning.audit.python_gate import GATE_RULE, extension_gates

__all__ = ["DEVICE_STRING_RULE", "Walk", "device_strings", "is_rocm_device_string", "str_value"]

DEVICE_STRING_RULE = "python.device-string"

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


def device_strings(node: ast.Call) -> Iterator[tuple[ast.Call, str]]:
    """``(call, value)`` when ``node`` passes a device string ROCm builds of PyTorch refuse:
    the first argument of a function or method named ``device`` / ``to`` / ``cuda_device``,
    or a ``device=`` keyword. Names are not resolved (``x.to`` is any object's ``to``).
    """
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else (
        func.id if isinstance(func, ast.Name) else "")
    values: list[ast.expr] = []
    if name in ("device", "to", "cuda_device") and node.args:
        values.append(node.args[0])
    values += [kw.value for kw in node.keywords if kw.arg == "device"]
    for value in values:
        text = str_value(value)
        if text is not None and is_rocm_device_string(text):
            yield node, text


@dataclass
class Walk:
    """One file's walk: the names its imports bind, the nodes the rules judge, then ``hits``,
    ``(rule id, node, subject)`` per occurrence, and ``kernels``, the string literals that are
    CUDA kernel sources.
    """

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
    hits: list[tuple[str, ast.AST, str]] = field(default_factory=list)
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
        if any(v.startswith(_CPPEXT) for v in self.bindings.values()):
            for node, subject in extension_gates(tree, self._is_cuda_extension):
                self._add(GATE_RULE, node, subject)

    def _is_cuda_extension(self, node: ast.expr) -> bool:
        return self._qualname(node) == f"{_CPPEXT}.CUDAExtension"

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
                    if len(stmt.targets) == 1 and str_value(stmt.value) is not None:
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
            for node, value in device_strings(call):
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
                if key is not None and str_value(key) == "nvcc":
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
            if self._qualname(sub.value) == "os.environ" and str_value(sub.slice) == "CUDA_HOME":
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
            value = str_value(_arg(call, 0, "precision"))
            if value in ("high", "medium"):
                self._add("python.tf32", call, f"{written}({value!r})")
        elif name.startswith(f"{_CPPEXT}."):
            self._cpp_extension(call, name, written)
        elif (name in ("os.environ.get", "os.getenv")
              and str_value(_arg(call, 0, "key")) == "CUDA_HOME"):
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
        text = str_value(command)
        if text is not None:
            program = text.strip().split(None, 1)[0] if text.strip() else ""
            shown = text.strip()
        elif isinstance(command, (ast.List, ast.Tuple)) and command.elts:
            parts = [str_value(e) for e in command.elts]
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
            elif name in _TF32_PRECISION and str_value(value) == "tf32":
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
        names = [str_value(e) for e in sources.elts] if isinstance(
            sources, (ast.List, ast.Tuple)) else [str_value(sources)]
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
            flag = str_value(elt)
            if flag is None:
                continue
            subject = flag
            if flag in _ARCH_OPTIONS and i + 1 < len(elts):
                following = str_value(elts[i + 1])
                if following is not None:
                    subject, skip = f"{flag} {following}", True
            elif not flag.startswith(tuple(f"{o}=" for o in _ARCH_OPTIONS)):
                continue
            if "sm_" in subject or "compute_" in subject:
                self._add("python.nvcc-arch", elt, _short(subject))

    def _kernel(self, node: ast.expr | None) -> None:
        if isinstance(node, ast.Name) and node.id in self.strings:
            node = self.strings[node.id]
        if node is not None and str_value(node) is not None and all(k is not node for k in
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
        self.hits.append((rule_id, node, subject))


def str_value(node: ast.AST | None) -> str | None:
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
