"""``CppExtension if ... else CUDAExtension``: a ``setup.py`` that builds its CUDA extension
only under a condition a ROCm build of torch does not meet (``if CUDA_HOME is not None``,
``if torch.version.cuda``, ``torch.cuda.is_available() and CUDA_HOME is not None``) and
otherwise builds a ``CppExtension`` or nothing: on ROCm it installs a CPU-only package without
an error. Rule ``python.cuda-only-extension-gate`` of :mod:`pinning.audit.python_rules`.

A condition is judged by :class:`pinning.audit.platform_cond.Platforms` with environment
switches unset (a plain ``pip install``; ``FORCE_CUDA=1`` is named as the way out). It fires
only when a CUDA-only signal (``CUDA_HOME``, ``torch.version.cuda``) decides it: a condition
that accepts ROCm too (``CUDA_HOME or ROCM_HOME``, ``IS_HIP_EXTENSION``,
``torch.version.hip``) or that pin cannot decide (``torch.cuda.is_available()`` alone) gives
nothing, nor does an ``if torch.version.hip:`` that leaves ROCm out on purpose.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from pinning.audit.platform_cond import Platforms

__all__ = ["GATE_RULE", "extension_gates"]

GATE_RULE = "python.cuda-only-extension-gate"
_SUBJECT_MAX = 120


def extension_gates(tree: ast.Module, is_cuda_extension: Callable[[ast.expr], bool]
                    ) -> Iterator[tuple[ast.AST, str]]:
    """``(if node, subject)`` for each ``if`` / ``x if c else y`` of ``tree`` whose branch a
    ROCm build takes names no ``CUDAExtension`` while the other branch does, decided by a
    CUDA-only signal. ``is_cuda_extension`` says whether a name or attribute stands for
    ``torch.utils.cpp_extension.CUDAExtension`` (through the file's imports).
    """
    platforms = Platforms(tree, switch=False)
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            body: list[ast.AST] = list(node.body)
            orelse: list[ast.AST] = list(node.orelse)
        elif isinstance(node, ast.IfExp):
            body, orelse = [node.body], [node.orelse]
        else:
            continue
        if not (_names(body, is_cuda_extension) or _names(orelse, is_cuda_extension)):
            continue
        platforms.cuda_only, platforms.switches = [], []
        rocm = platforms.value(node.test, True)
        if rocm is None or not platforms.cuda_only:
            continue
        taken, other = (body, orelse) if rocm else (orelse, body)
        if _names(other, is_cuda_extension) and not _names(taken, is_cuda_extension):
            forced = Platforms(tree, switch=True).value(node.test, True) is (not rocm)
            yield node, _subject(node.test, platforms, forced)


def _names(nodes: list[ast.AST], is_cuda_extension: Callable[[ast.expr], bool]) -> bool:
    return any(isinstance(sub, (ast.Name, ast.Attribute)) and is_cuda_extension(sub)
               for node in nodes for sub in ast.walk(node))


def _subject(test: ast.expr, platforms: Platforms, forced: bool) -> str:
    """``CUDAExtension only if <condition> (false on ROCm: CUDA_HOME; unless FORCE_CUDA is
    set)``, the condition cut to fit; the switches are named when setting them (``forced``)
    turns the condition round.
    """
    condition = " ".join(ast.unparse(test).split())
    if len(condition) > _SUBJECT_MAX:
        condition = condition[:_SUBJECT_MAX - 3] + "..."
    why = f"false on ROCm: {', '.join(platforms.cuda_only)}"
    if platforms.switches and forced:
        why += f"; unless {' or '.join(platforms.switches)} is set"
    return f"CUDAExtension only if {condition} ({why})"
