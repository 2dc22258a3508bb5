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


MAX_SOURCE_BYTES = 10 * 1024 * 1024


def python_files(root: Path, problems: list[str]) -> Iterator[Path]:
    """Regular ``*.py`` files under ``root`` (or ``root`` itself), skipping virtualenvs and
    caches. What cannot be scanned (an unreadable folder, a FIFO, a dangling link, a file
    over 10 MiB) is added to ``problems`` instead of stopping the scan.
    """
    import os

    if not root.is_dir():
        candidates = [root]
    else:
        candidates = []

        def onerror(exc: OSError) -> None:
            problems.append(f"{exc.filename}: cannot be listed ({exc.strerror or exc})")

        for base, dirs, files in os.walk(root, onerror=onerror):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            candidates += [Path(base) / f for f in sorted(files) if f.endswith(".py")]
    for path in candidates:
        try:
            if not path.is_file():
                problems.append(f"{path}: not a regular file; not scanned")
                continue
            if path.stat().st_size > MAX_SOURCE_BYTES:
                problems.append(f"{path}: larger than 10 MiB; not scanned")
                continue
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror or exc}; not scanned")
            continue
        yield path


@dataclass(frozen=True)
class AuditResult:
    """What a scan found: the ``hits`` and, per file that could not be scanned, a line
    saying why (``unparsed``).
    """

    hits: list[AuditHit]
    unparsed: list[str]


def audit_paths(paths: list[Path]) -> AuditResult:
    """Scan every Python file under ``paths`` (files or folders). Files that are not valid
    Python or cannot be read are listed in ``unparsed``, not fatal; raises nothing.
    """
    hits: list[AuditHit] = []
    unparsed: list[str] = []
    for root in paths:
        for path in python_files(root, unparsed):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
                hits += audit_source(text, str(path))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                unparsed.append(f"{path}: not valid Python; not scanned")
            except OSError as exc:
                unparsed.append(f"{path}: {exc.strerror or exc}; not scanned")
    return AuditResult(hits=hits, unparsed=unparsed)
