"""The C/C++ macros a project's ``setup.py`` defines, for an AMD (ROCm) build or for CUDA
builds only, read statically (:mod:`ast`; the file is never run).

Read: ``("NAME", None)`` / ``("NAME", "2")`` pairs given as ``define_macros`` (a keyword, or a
name holding ``define`` / ``macros`` that is assigned, extended or appended to; never
``undef_macros``), and ``-DNAME`` / ``-DNAME=2`` strings anywhere (``extra_compile_args``'
``cxx`` and ``nvcc`` lists alike: on a ROCm build of torch ``BuildExtension`` hands the
``nvcc`` list to hipcc, see ``CPP_EXTENSION``), except in a statement that names ``cmake``
(arguments for CMake, not the compiler) and ``-DCMAKE_*``. Each define takes the ``if`` tests
(and ``x if c else y``) that enclose it, evaluated by :class:`pinning.audit.platform_cond.
Platforms`: under ``if torch.version.hip`` / ``IS_HIP_EXTENSION`` / ``is_rocm_pytorch()`` it
is defined for ROCm builds; in their ``else`` or under ``CUDA_HOME`` / ``torch.version.cuda``
only for CUDA builds; unconditionally for every build; under anything else it stays unknown.
The defines are project-wide: which extension or source file a flag reaches is not followed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from pinning.audit.platform_cond import Conditions, Platforms, statements
from pinning.audit.project_defines import NEVER, ProjectDefine, scope_of

__all__ = ["MAX_DEFINES", "setup_defines"]

MAX_DEFINES = 500
"""At most this many defines are read from one file."""


def setup_defines(text: str, display: str) -> list[ProjectDefine]:
    """The defines of the ``setup.py`` source ``text`` (shown as ``display``), in file order.
    Never raises: a file that does not parse (or nests too deeply) gives none.
    """
    if "-D" not in text and "macros" not in text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    platforms = Platforms(tree)
    out: list[ProjectDefine] = []
    for stmt, conds in statements(tree.body):
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef,
                             ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # their bodies come as statements of their own
        segment = (ast.get_source_segment(text, stmt) or "").lower()
        for node, inner, macros in _nodes(stmt, conds, _macro_statement(stmt)):
            for name, value in _defines(node, macros, segment):
                rocm, scope = _scope(platforms, inner)
                if scope == NEVER:
                    continue  # under a condition no build meets (``if False:``)
                line = getattr(node, "lineno", stmt.lineno)
                out.append(ProjectDefine(name, value, rocm, scope, f"{display}:{line}"))
            if len(out) >= MAX_DEFINES:
                return out
    return out


def _scope(platforms: Platforms, conds: Conditions) -> tuple[bool | None, str]:
    """``(rocm, scope)`` of a define under ``conds``. Tests that read no GPU platform
    (``sys.platform == "win32"``, ``suffix == "cuda"``) are left out when another test does:
    a define under ``if suffix == "cuda"`` and ``if torch.version.hip`` is a ROCm define.
    """
    values = [(test, way, platforms.value(test, True), platforms.value(test, False))
              for test, way in conds]
    decided = tuple((test, way) for test, way, rocm, cuda in values
                    if (rocm, cuda) != (None, None))
    chosen = decided if decided else conds
    return scope_of(platforms.under(chosen, True), platforms.under(chosen, False))


def _macro_statement(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` assigns, extends or appends to a ``define_macros``-like name."""
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(
            stmt.value.func, ast.Attribute) and stmt.value.func.attr in ("append", "extend"):
        targets = [stmt.value.func.value]
    return any(_macro_name(_last(t)) for t in targets)


def _macro_name(name: str) -> bool:
    low = name.lower()
    return "undef" not in low and ("define" in low or "macros" in low)


def _last(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _nodes(node: ast.AST, conds: Conditions,
           macros: bool) -> Iterator[tuple[ast.AST, Conditions, bool]]:
    """The nodes under ``node`` with their conditions and whether they sit in a
    ``define_macros`` value; ``a if c else b`` adds ``c``.
    """
    if isinstance(node, ast.IfExp):
        yield from _nodes(node.body, (*conds, (node.test, True)), macros)
        yield from _nodes(node.orelse, (*conds, (node.test, False)), macros)
        return
    if isinstance(node, ast.keyword) and node.arg and _macro_name(node.arg):
        macros = True
    yield node, conds, macros
    for child in ast.iter_child_nodes(node):
        yield from _nodes(child, conds, macros)


def _defines(node: ast.AST, macros: bool, segment: str) -> list[tuple[str, int | None]]:
    """``(name, value)`` of each macro ``node`` defines: a ``(name, value)`` pair in a
    ``define_macros`` value, or ``-DNAME[=value]`` words of a string.
    """
    if macros and isinstance(node, ast.Tuple) and len(node.elts) == 2:
        key, value = node.elts
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and \
                key.value.isidentifier() and isinstance(value, ast.Constant):
            return [(key.value, _value(value.value))]
        return []
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or "cmake" in segment:
        return []
    out: list[tuple[str, int | None]] = []
    for word in node.value.split():
        if word.startswith("-D") and not word.startswith("-DCMAKE_"):
            name, _, raw = word[2:].partition("=")
            if name.isidentifier():
                out.append((name, _value(raw if raw else None)))
    return out


def _value(raw: object) -> int | None:
    """A define's value: ``-DX`` and ``("X", None)`` are 1, an integer literal its value,
    anything else ``None`` (defined, value unknown).
    """
    if raw is None:
        return 1
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    try:
        return int(str(raw).rstrip("uUlL"), 0)
    except ValueError:
        return None
