"""Whether a condition in a ``setup.py`` holds on a ROCm build of torch or on a CUDA build,
read from the parsed file (:mod:`ast`; nothing is imported or run).

What ``torch.utils.cpp_extension`` sets (``pinning.audit.model.CPP_EXTENSION``,
``pytorch/pytorch@0011ec5c5d6171a395bb339b873343a4cdfebd18:torch/utils/cpp_extension.py``):
``CUDA_HOME = _find_cuda_home() if torch.cuda._is_compiled() else None``, and
``_find_cuda_home`` looks at ``$CUDA_HOME`` / ``$CUDA_PATH``, ``nvcc`` on ``PATH`` and
``/usr/local/cuda`` only, so ``CUDA_HOME`` is ``None`` on a ROCm machine without a CUDA toolkit;
``ROCM_HOME`` comes from ``$ROCM_HOME`` / ``$ROCM_PATH``, ``hipcc`` or ``/opt/rocm``,
``HIP_HOME`` from ``ROCM_HOME``, and ``IS_HIP_EXTENSION`` is true when ``ROCM_HOME`` is set
and ``torch.version.hip`` is not ``None``. ``torch.version.cuda`` and ``torch.version.hip``
are written by PyTorch's build from its CUDA / HIP version, ``None`` when it has none
(``pytorch/pytorch@07c6e4a24136a9e9209799c1c700dcd885b9614b:tools/generate_torch_version.py``):
on a ROCm build ``torch.version.cuda`` is ``None``. ``torch.cuda.is_available()`` is true on a
ROCm build with a GPU and depends on the build machine's GPU, so it stays undecided.

Values are three-valued (``True``, ``False``, ``None`` for undecided); ``not``, ``and``,
``or``, ``X is None``, ``X is not None`` and ``bool(X)`` combine them; a module name is
followed to the values assigned to it (a later assignment replaces the earlier ones under
the same or deeper tests; those left must agree). An environment switch
(``os.getenv("FORCE_CUDA")``, ``os.environ.get(...)``) is undecided, or takes the value
:attr:`Platforms.switch` when that is set (``False``: the default build of a ``pip
install``; ``True``: every switch on), and is then recorded in :attr:`Platforms.switches`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from pinning.audit.tristate import and3 as _and
from pinning.audit.tristate import not3 as _not
from pinning.audit.tristate import or3 as _or

__all__ = ["Conditions", "Platforms", "statements"]

Conditions = tuple[tuple[ast.expr, bool], ...]
"""The ``if`` tests enclosing a statement, each with ``True`` for its body and ``False`` for
its ``else``."""

_ROCM_NAMES = frozenset({"ROCM_HOME", "HIP_HOME", "IS_HIP_EXTENSION"})
_ROCM_CALLS = frozenset({"is_rocm_pytorch"})  # DeepSpeed's op_builder
_ENV_CALLS = frozenset({"getenv", "get"})
_MAX_DEPTH = 12


def statements(body: list[ast.stmt], conds: Conditions = ()) -> Iterator[
        tuple[ast.stmt, Conditions]]:
    """Every statement under ``body`` (nested bodies included) with the ``if`` tests that
    enclose it; loops, ``with``, ``try`` and function bodies add no condition.
    """
    for stmt in body:
        yield stmt, conds
        if isinstance(stmt, ast.If):
            yield from statements(stmt.body, (*conds, (stmt.test, True)))
            yield from statements(stmt.orelse, (*conds, (stmt.test, False)))
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from statements(inner, conds)
        for handler in getattr(stmt, "handlers", ()):
            yield from statements(handler.body, conds)


@dataclass
class Platforms:
    """The conditions of one parsed ``setup.py``: :meth:`value` of an expression and
    :meth:`under` of a statement's enclosing tests, on a ROCm build (``rocm=True``) or a CUDA
    build. ``switch`` is the value of every environment switch (``None``: undecided).
    ``cuda_only`` and ``switches`` collect, in order met, the CUDA-only signals and the
    environment switches read.
    """

    tree: ast.Module
    switch: bool | None = None
    names: dict[str, list[tuple[ast.expr, Conditions]]] = field(default_factory=dict)
    cuda_only: list[str] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for stmt, conds in statements(self.tree.body):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name):
                    self.names.setdefault(target.id, []).append((stmt.value, conds))
            elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and isinstance(
                    stmt.target, ast.Name) and stmt.value is not None:
                self.names.setdefault(stmt.target.id, []).append((stmt.value, ()))

    def under(self, conds: Conditions, rocm: bool, depth: int = 0) -> bool | None:
        """Whether every test of ``conds`` goes its way on that build."""
        out: bool | None = True
        for test, way in conds:
            value = self.value(test, rocm, depth)
            out = _and(out, value if way else _not(value))
        return out

    def value(self, node: ast.expr, rocm: bool, depth: int = 0) -> bool | None:
        """Whether ``node`` is true on a ROCm build (``rocm``) or a CUDA build of torch."""
        if depth > _MAX_DEPTH:
            return None
        depth += 1
        if isinstance(node, ast.Constant):
            return bool(node.value) if isinstance(node.value, (bool, int, type(None))) else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return _not(self.value(node.operand, rocm, depth))
        if isinstance(node, ast.BoolOp):
            values = [self.value(v, rocm, depth) for v in node.values]
            combine = _and if isinstance(node.op, ast.And) else _or
            out = values[0]
            for v in values[1:]:
                out = combine(out, v)
            return out
        if isinstance(node, ast.IfExp):
            test = self.value(node.test, rocm, depth)
            body, orelse = self.value(node.body, rocm, depth), self.value(node.orelse, rocm,
                                                                          depth)
            return body if test is True or body == orelse else orelse if test is False else None
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and _is_none(
                node.comparators[0]):
            value = self.value(node.left, rocm, depth)
            return value if isinstance(node.ops[0], (ast.IsNot, ast.NotEq)) else (
                _not(value) if isinstance(node.ops[0], (ast.Is, ast.Eq)) else None)
        if isinstance(node, ast.Compare):
            return self._switch(node.left)
        if isinstance(node, ast.Call):
            return self._call(node, rocm, depth)
        if isinstance(node, ast.Name) and node.id in self.names and node.id not in _ROCM_NAMES \
                and node.id != "CUDA_HOME":
            return self._name(node.id, rocm, depth)
        return self._signal(_dotted(node), rocm)

    def _call(self, node: ast.Call, rocm: bool, depth: int) -> bool | None:
        name = _dotted(node.func) or ""
        last = name.rsplit(".", 1)[-1]
        if last == "bool" and len(node.args) == 1:
            return self.value(node.args[0], rocm, depth)
        if last in _ROCM_CALLS:
            return rocm
        return self._switch(node)

    def _switch(self, node: ast.expr) -> bool | None:
        """An environment switch (``os.getenv("X", "0") == "1"``): :attr:`switch`."""
        if not isinstance(node, ast.Call):
            return None
        name = _dotted(node.func) or ""
        if name.rsplit(".", 1)[-1] not in _ENV_CALLS or "os" not in name.split("."):
            return None
        key = node.args[0] if node.args else None
        if self.switch is not None:
            label = key.value if isinstance(key, ast.Constant) and isinstance(
                key.value, str) else "an environment variable"
            if label not in self.switches:
                self.switches.append(label)
        return self.switch

    def _name(self, name: str, rocm: bool, depth: int) -> bool | None:
        """The value of a module or function name on that build: its assignments in file
        order, where one this build surely reaches replaces those before it (mmcv's
        ``is_rocm_pytorch = False`` then ``is_rocm_pytorch = True if torch.version.hip ...``)
        and one it may reach adds a possible value; undecided unless one value remains.
        """
        live: list[tuple[Conditions, bool | None]] = []
        for value, conds in self.names[name]:
            reached = self.under(conds, rocm, depth)
            if reached is False:
                continue  # an assignment this build does not reach
            # a surely reached one replaces all; else those under the same or deeper tests
            live = [] if reached is True else [(c, v) for c, v in live if not _within(c, conds)]
            live.append((conds, self.value(value, rocm, depth)))
        values = {v for _c, v in live}
        return values.pop() if len(values) == 1 else None

    def _signal(self, name: str | None, rocm: bool) -> bool | None:
        if name is None:
            return None
        parts = name.split(".")
        if parts[-2:] == ["version", "hip"]:
            return rocm
        if parts[-2:] == ["version", "cuda"]:
            return self._cuda_only("torch.version.cuda", rocm)
        if parts[-1] in _ROCM_NAMES:
            return True if rocm else None
        if parts[-1] == "CUDA_HOME":
            return self._cuda_only("CUDA_HOME", rocm)
        return None

    def _cuda_only(self, label: str, rocm: bool) -> bool:
        if rocm and label not in self.cuda_only:
            self.cuda_only.append(label)
        return not rocm


def _within(inner: Conditions, outer: Conditions) -> bool:
    """Whether ``outer``'s tests (the same nodes, the same ways) open ``inner``: a statement
    under ``inner`` runs only where one under ``outer`` does.
    """
    return len(inner) >= len(outer) and all(
        a is b and wa == wb for (a, wa), (b, wb) in zip(inner, outer, strict=False))


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
