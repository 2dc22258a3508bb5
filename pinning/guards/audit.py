"""``pin audit PATH``: find device strings ROCm builds of PyTorch do not accept.

ROCm builds keep ``torch.cuda``: the HIP device is ``"cuda"``, and ``"rocm"`` / ``"hip"`` are
not valid device strings (FACTS.md §2.8, PyTorch HIP notes). The scan parses Python sources
with :mod:`ast` (nothing is imported or run) and reports each call that passes such a string
as a device: ``torch.device("rocm")``, ``x.to("hip")``, ``device="rocm:0"``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SOURCE = "pytorch/pytorch@0180055:docs/source/notes/hip.rst (via pin FACTS.md §2.8)"
_BAD = re.compile(r"^(rocm|hip)(:\d+)?$")
_SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "node_modules", "site-packages"}


@dataclass(frozen=True)
class AuditHit:
    """One offending device string: file, 1-based line and column, and the call."""

    path: str
    line: int
    column: int
    text: str


def _calls(tree: ast.AST) -> Iterator[tuple[ast.Call, str]]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else (
            func.id if isinstance(func, ast.Name) else "")
        values: list[ast.expr] = []
        if name in ("device", "to", "cuda_device") and node.args:
            values.append(node.args[0])
        values += [kw.value for kw in node.keywords if kw.arg == "device"]
        for value in values:
            if (isinstance(value, ast.Constant) and isinstance(value.value, str)
                    and _BAD.match(value.value)):
                yield node, value.value


def audit_source(text: str, path: str) -> list[AuditHit]:
    """Offending device strings in Python source ``text`` (a file that does not parse is
    reported as no hits; ``pin audit`` names it separately).
    """
    tree = ast.parse(text, filename=path)
    return [AuditHit(path, call.lineno, call.col_offset + 1, f'{value!r} as a device')
            for call, value in _calls(tree)]


def python_files(root: Path) -> Iterator[Path]:
    """Python files under ``root`` (or ``root`` itself), skipping virtualenvs and caches."""
    if root.is_file():
        yield root
        return
    for path in sorted(root.rglob("*.py")):
        if not _SKIP_DIRS.intersection(path.relative_to(root).parts):
            yield path
